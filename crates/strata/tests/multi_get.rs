//! `Db::multi_get`: the same answers as `get` for every key, wherever its entries live, and one
//! consistent view across the keys of a call while writers run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use strata::{Db, Options, ReadOptions, WriteBatch, WriteOptions};
use strata_testkit::Rng;

#[test]
fn answers_as_get_does_across_memtables_files_blobs_and_merges() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 64 << 10,
        min_blob_size: 300,
        merge_operator: strata::merge::builtin("stringappend"),
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let mut rng = Rng::new(9);
    let w = WriteOptions::default();
    for round in 0..6 {
        for _ in 0..800 {
            let key = format!("k{:04}", rng.below(1_000));
            match rng.below(8) {
                0 => db.delete_opt(&w, key.as_bytes()).unwrap(),
                1 => db.merge_opt(&w, key.as_bytes(), b"+m").unwrap(),
                _ => {
                    let len = if rng.below(2) == 0 { 10 } else { 500 };
                    db.put_opt(&w, key.as_bytes(), &vec![b'a' + round as u8; len]).unwrap();
                }
            }
        }
        if round % 2 == 0 {
            db.flush().unwrap();
        }
    }
    let keys: Vec<Vec<u8>> = (0..1_100).map(|i| format!("k{i:04}").into_bytes()).collect();
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let ro = ReadOptions::new();
    for chunk in refs.chunks(37) {
        let got = db.multi_get_opt(&ro, chunk);
        assert_eq!(got.len(), chunk.len());
        for (k, r) in chunk.iter().zip(got) {
            assert_eq!(r.unwrap(), db.get_opt(&ro, k).unwrap(), "{}", String::from_utf8_lossy(k));
        }
    }
    assert!(db.multi_get_opt(&ro, &[]).is_empty());
    // At a snapshot, as get at that snapshot.
    let snap = db.snapshot();
    db.put_opt(&w, b"k0001", b"later").unwrap();
    let at = ReadOptions { snapshot: Some(snap), ..ReadOptions::new() };
    assert_eq!(db.multi_get_opt(&at, &[b"k0001"])[0].as_ref().unwrap(), &db.get_opt(&at, b"k0001").unwrap());
    assert_eq!(db.multi_get_opt(&ro, &[b"k0001"])[0].as_ref().unwrap().as_deref(), Some(&b"later"[..]));
}

/// A writer sets two keys to the same counter in one batch; every multi-get of both sees them
/// equal, as reads under one snapshot would.
#[test]
fn the_keys_of_one_call_are_read_at_one_point_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { write_buffer_size: 64 << 10, ..Options::default() };
    let db = Db::open(dir.path(), opts).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let mut batch = WriteBatch::new();
                batch.put(b"left", i.to_be_bytes()).put(b"right", i.to_be_bytes());
                db.write(batch).unwrap();
                i += 1;
            }
        })
    };
    // At least 20,000 calls, and on until more than ten values have been seen (at most 10 s):
    // on two busy cores a thread just spawned, or one the parallel test crowds out, may not
    // write at all during 20,000 calls (a few milliseconds), or write only in one burst.
    let mut distinct = std::collections::HashSet::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut calls = 0u64;
    while calls < 20_000 || (distinct.len() <= 10 && std::time::Instant::now() < deadline) {
        calls += 1;
        let got = db.multi_get([&b"left"[..], b"right"]);
        let (l, r) = (got[0].as_ref().unwrap(), got[1].as_ref().unwrap());
        assert_eq!(l, r);
        distinct.insert(l.clone());
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert!(distinct.len() > 10, "the writer ran during the reads ({} values seen)", distinct.len());
}
