//! Model-based randomized test with column families: the same operations run against strata and
//! one `BTreeMap` per family (default plus three), with atomic batches across families,
//! per-family flushes and compactions, a family dropped and recreated, and reopens (which replay
//! the shared WAL into each family, skipping what a family already flushed). Every read and
//! every scan must agree with the model.

use std::collections::BTreeMap;

use proptest::prelude::*;
use strata::{merge, ColumnFamily, Db, Options, ReadOptions, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Families by index: 0 is `default`; 3 is the one dropped and recreated.
const NAMES: [&str; 4] = ["default", "index", "counters", "scratch"];

#[derive(Debug, Clone)]
enum Op {
    Put(usize, u8, usize),
    Delete(usize, u8),
    Merge(u8, u64),
    /// (family, key, value length or delete)
    Batch(Vec<(usize, u8, Option<usize>)>),
    Get(usize, u8),
    Scan(usize, bool),
    Flush(usize),
    Compact(usize),
    DropAndRecreate,
    Reopen,
}

fn key(k: u8) -> Vec<u8> {
    format!("k{k:03}").into_bytes()
}

fn value(k: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| k.wrapping_add(i as u8)).collect()
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0u8..40;
    let cf = 0usize..4;
    let len = prop_oneof![0usize..16, 40usize..2000];
    prop_oneof![
        10 => (cf.clone(), k.clone(), len.clone()).prop_map(|(c, k, l)| Op::Put(c, k, l)),
        3 => (cf.clone(), k.clone()).prop_map(|(c, k)| Op::Delete(c, k)),
        3 => (k.clone(), 1u64..1000).prop_map(|(k, n)| Op::Merge(k, n)),
        4 => prop::collection::vec((cf.clone(), k.clone(), prop::option::of(len)), 1..8).prop_map(Op::Batch),
        5 => (cf.clone(), k).prop_map(|(c, k)| Op::Get(c, k)),
        2 => (cf.clone(), any::<bool>()).prop_map(|(c, r)| Op::Scan(c, r)),
        1 => cf.clone().prop_map(Op::Flush),
        1 => cf.prop_map(Op::Compact),
        1 => Just(Op::DropAndRecreate),
        1 => Just(Op::Reopen),
    ]
}

fn family_options(i: usize) -> Options {
    let base = Options { write_buffer_size: 64 << 10, level0_compaction_trigger: 2, ..Options::default() };
    match i {
        1 => Options { bloom_bits_per_key: 0, block_size: 1024, ..base },
        2 => Options { merge_operator: merge::builtin("uint64add"), ..base },
        3 => Options { min_blob_size: 64, ..base },
        _ => Options { min_blob_size: 512, ..base },
    }
}

fn open(dir: &std::path::Path) -> (Db, Vec<ColumnFamily>) {
    let named = (1..4).map(|i| (NAMES[i], family_options(i)));
    let db = Db::open_cf(dir, family_options(0), named).unwrap();
    let handles = NAMES.iter().map(|n| db.cf(n).unwrap()).collect();
    (db, handles)
}

fn merged(base: Option<&Vec<u8>>, n: u64) -> Vec<u8> {
    let b = base.and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok()).map_or(0, u64::from_le_bytes);
    b.wrapping_add(n).to_le_bytes().to_vec()
}

fn scan(db: &Db, cf: &ColumnFamily, model: &Model, reverse: bool) {
    let mut it = db.cursor_cf(cf, &ReadOptions::new()).unwrap();
    let mut got = Vec::new();
    if reverse {
        it.seek_to_last();
        while it.valid() {
            got.push((it.key().to_vec(), it.value().to_vec()));
            it.prev();
        }
        got.reverse();
    } else {
        it.seek_to_first();
        while it.valid() {
            got.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
    }
    it.status().unwrap();
    let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(got, want, "scan of {} reverse={reverse}", cf.name());
}

fn check_all(db: &Db, cfs: &[ColumnFamily], models: &[Model]) {
    for (cf, model) in cfs.iter().zip(models) {
        scan(db, cf, model, false);
    }
}

fn run(ops: Vec<Op>) {
    let dir = tempfile::tempdir().unwrap();
    let (mut db, mut cfs) = open(dir.path());
    let mut models: Vec<Model> = vec![Model::new(); 4];
    let w = WriteOptions::default();
    for op in ops {
        match op {
            Op::Put(c, k, l) => {
                db.put_cf_opt(&cfs[c], &w, &key(k), &value(k, l)).unwrap();
                models[c].insert(key(k), value(k, l));
            }
            Op::Delete(c, k) => {
                db.delete_cf_opt(&cfs[c], &w, &key(k)).unwrap();
                models[c].remove(&key(k));
            }
            Op::Merge(k, n) => {
                db.merge_cf_opt(&cfs[2], &w, &key(k), &n.to_le_bytes()).unwrap();
                let next = merged(models[2].get(&key(k)), n);
                models[2].insert(key(k), next);
            }
            Op::Batch(entries) => {
                let mut batch = WriteBatch::new();
                for &(c, k, l) in &entries {
                    match l {
                        Some(l) => batch.put_cf(&cfs[c], key(k), value(k, l)),
                        None => batch.delete_cf(&cfs[c], key(k)),
                    };
                }
                db.write_opt(&w, batch).unwrap();
                for (c, k, l) in entries {
                    match l {
                        Some(l) => models[c].insert(key(k), value(k, l)),
                        None => models[c].remove(&key(k)),
                    };
                }
            }
            Op::Get(c, k) => {
                let got = db.get_cf(&cfs[c], key(k)).unwrap();
                assert_eq!(got.as_ref(), models[c].get(&key(k)), "get {k} in {}", NAMES[c]);
            }
            Op::Scan(c, reverse) => scan(&db, &cfs[c], &models[c], reverse),
            Op::Flush(c) => db.flush_cf(&cfs[c]).unwrap(),
            Op::Compact(c) => db.compact_range_cf(&cfs[c], None, None).unwrap(),
            Op::DropAndRecreate => {
                db.drop_cf(&cfs[3]).unwrap();
                assert!(db.get_cf(&cfs[3], b"k000").is_err());
                cfs[3] = db.create_cf(NAMES[3], family_options(3)).unwrap();
                models[3].clear();
            }
            Op::Reopen => {
                drop(cfs);
                db.close().unwrap();
                (db, cfs) = open(dir.path());
                check_all(&db, &cfs, &models);
            }
        }
    }
    check_all(&db, &cfs, &models);
    drop(cfs);
    db.close().unwrap();
    assert_eq!(Db::list_cf(dir.path(), Options::default()).unwrap(), NAMES);
    let (db, cfs) = open(dir.path());
    check_all(&db, &cfs, &models);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn strata_agrees_with_one_btreemap_per_family(ops in prop::collection::vec(op(), 1..250)) {
        run(ops);
    }
}

/// Enough writes to switch every family's memtable many times, so WALs are shared by families
/// flushed at different times, then a reopen: nothing lost, and no WAL kept forever.
#[test]
fn wals_shared_by_families_flushed_at_different_times() {
    let dir = tempfile::tempdir().unwrap();
    let (db, cfs) = open(dir.path());
    let mut models: Vec<Model> = vec![Model::new(); 4];
    let w = WriteOptions::default();
    for i in 0..6000u32 {
        // Family 1 gets most writes; family 3 a trickle; default and 2 in between.
        let c = [1, 1, 1, 0, 1, 2, 1, 0, 1, 3][(i % 10) as usize];
        let k = (i % 300) as u8;
        let v = value(k, 100 + (i % 7) as usize);
        if c == 2 {
            db.merge_cf_opt(&cfs[2], &w, &key(k), &1u64.to_le_bytes()).unwrap();
            let next = merged(models[2].get(&key(k)), 1);
            models[2].insert(key(k), next);
        } else {
            db.put_cf_opt(&cfs[c], &w, &key(k), &v).unwrap();
            models[c].insert(key(k), v);
        }
    }
    db.wait_for_compactions(None).unwrap();
    check_all(&db, &cfs, &models);
    let wals = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".log"))
            .count()
    };
    assert!(wals() > 1, "the trickle family holds old WALs until it flushes");
    // Every family flushes once: the WALs before the current one are no longer needed.
    for cf in &cfs {
        db.flush_cf(cf).unwrap();
    }
    // Obsolete files are deleted by the flush job after the flush is visible: wait for it.
    db.wait_for_compactions(None).unwrap();
    assert_eq!(wals(), 1, "only the current WAL is left once every family has flushed");
    drop(cfs);
    db.close().unwrap();
    let (db, cfs) = open(dir.path());
    check_all(&db, &cfs, &models);
}

/// A family written rarely does not keep every WAL since its last flush: once the WALs still
/// needed pass `max_total_wal_size`, the families holding the oldest are flushed.
#[test]
fn a_rarely_written_family_does_not_keep_every_wal() {
    let dir = tempfile::tempdir().unwrap();
    let db_opts = Options { max_total_wal_size: 512 << 10, ..family_options(0) };
    let named = (1..4).map(|i| (NAMES[i], family_options(i)));
    let db = Db::open_cf(dir.path(), db_opts.clone(), named).unwrap();
    let cfs: Vec<ColumnFamily> = NAMES.iter().map(|n| db.cf(n).unwrap()).collect();
    let w = WriteOptions::default();
    let mut models: Vec<Model> = vec![Model::new(); 4];
    let mut most_wals = 0;
    for i in 0..30_000u32 {
        // Family 1 takes nearly every write; family 3 one in a thousand.
        let c = if i % 1000 == 0 { 3 } else { 1 };
        let k = (i % 250) as u8;
        db.put_cf_opt(&cfs[c], &w, &key(k), &value(k, 100)).unwrap();
        models[c].insert(key(k), value(k, 100));
        if i % 500 == 0 {
            db.wait_for_compactions(None).unwrap();
            let wals = std::fs::read_dir(dir.path())
                .unwrap()
                .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".log"))
                .count();
            most_wals = most_wals.max(wals);
        }
    }
    // 30,000 writes of ~110 bytes are ~50 memtable switches of family 1: without the limit the
    // rare family would keep every one of their WALs.
    assert!(most_wals <= 16, "{most_wals} WALs were kept at once");
    check_all(&db, &cfs, &models);
    drop(cfs);
    db.close().unwrap();
    let (db, cfs) = open(dir.path());
    check_all(&db, &cfs, &models);
}
