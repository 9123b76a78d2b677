//! Values moved for range scans (`blob_scan_runs`): after random overwrites settle into the last
//! level, neighbouring keys' values lie in a few runs of blob records rather than one per value,
//! and every value still reads back as written, before and after a reopen.

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::Rng;
use proptest::test_runner::{RngAlgorithm, TestRng};
use strata::internal::blob::BlobPointer;
use strata::internal::db::for_each_internal_entry;
use strata::internal::key::{self, ValueKind};
use strata::{Db, Options};

const KEYS: u64 = 24_000;
/// A scan's length in the seeks the benchmarks run (seek + 20 next).
const SCAN: usize = 21;

fn options(scan_runs: usize) -> Options {
    Options {
        write_buffer_size: 128 << 10,
        target_file_size: 64 << 10,
        max_bytes_for_level_base: 1 << 20,
        min_blob_size: 100,
        blob_scan_runs: scan_runs,
        info_log: false,
        ..Options::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn value(i: u64, round: u32) -> Vec<u8> {
    format!("{i}:{round}:").repeat(30).into_bytes()
}

/// Loads the keys in order, then overwrites random ones in rounds, and waits for compactions.
fn load(dir: &Path, scan_runs: usize) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let db = Db::open(dir, options(scan_runs)).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..KEYS {
        db.put(key(i), value(i, 0)).unwrap();
        model.insert(key(i), value(i, 0));
    }
    let mut rng = TestRng::deterministic_rng(RngAlgorithm::ChaCha);
    for round in 1..=4 {
        for _ in 0..KEYS / 2 {
            let i = rng.next_u64() % KEYS;
            db.put(key(i), value(i, round)).unwrap();
            model.insert(key(i), value(i, round));
        }
        db.flush().unwrap();
    }
    assert!(db.wait_for_compactions(Some(std::time::Duration::from_secs(60))).unwrap());
    model
}

/// The pointers of the newest version of every key, in key order.
fn pointers(db: &Db) -> Vec<BlobPointer> {
    let mut out: Vec<(Vec<u8>, BlobPointer)> = Vec::new();
    for_each_internal_entry(db, None, None, &mut |ikey: &[u8], v: &[u8]| {
        let p = key::parse(ikey).expect("an internal key");
        if out.last().is_none_or(|(k, _)| k.as_slice() != p.user_key) {
            assert_eq!(p.kind, ValueKind::Blob, "every value is separated");
            out.push((p.user_key.to_vec(), BlobPointer::decode(v)?));
        }
        Ok(true)
    })
    .unwrap();
    out.into_iter().map(|(_, p)| p).collect()
}

/// Places a scan of `SCAN` keys reads, on average: a value starts a new place unless it lies in
/// the same file within 8 KiB past a value the scan already read.
fn places_per_scan(ptrs: &[BlobPointer]) -> f64 {
    let windows: Vec<usize> =
        ptrs.windows(SCAN)
            .map(|w| {
                let mut ends: Vec<(u64, u64)> = Vec::new();
                for p in w {
                    match ends.iter_mut().find(|(f, end)| {
                        *f == p.file_number && p.offset >= *end && p.offset - *end <= 8 << 10
                    }) {
                        Some(run) => run.1 = p.offset + p.size,
                        None => ends.push((p.file_number, p.offset + p.size)),
                    }
                }
                ends.len()
            })
            .collect();
    windows.iter().sum::<usize>() as f64 / windows.len() as f64
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let got: Vec<(Vec<u8>, Vec<u8>)> =
        db.iter().map(|kv| kv.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap()).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert!(got == want, "a scan returns every key's newest value");
    for i in (0..KEYS).step_by(97) {
        assert_eq!(db.get(key(i)).unwrap().as_deref(), model.get(&key(i)).map(Vec::as_slice));
    }
}

#[test]
fn moved_values_cut_the_places_a_scan_reads_and_read_back_intact() {
    let (moved_dir, kept_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let model = load(moved_dir.path(), 2);
    assert_eq!(load(kept_dir.path(), 0), model, "the same writes");
    let places = |dir: &Path, runs| {
        let db = Db::open(dir, options(runs)).unwrap();
        check(&db, &model);
        places_per_scan(&pointers(&db))
    };
    let (moved, kept) = (places(moved_dir.path(), 2), places(kept_dir.path(), 0));
    assert!(kept > 6.0, "random overwrites scatter values: {kept:.2} places per scan");
    eprintln!("places per scan: {moved:.2} moved, {kept:.2} kept");
    assert!(moved < kept / 2.0, "{moved:.2} places per scan with moves, {kept:.2} without");
}
