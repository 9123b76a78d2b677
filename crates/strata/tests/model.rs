//! Model-based randomized test: the same operations run against strata and a `BTreeMap`, with
//! flushes, compactions, reopens and snapshots mixed in; every read and every iteration (both
//! directions, with bounds) must agree with the model.

use std::collections::BTreeMap;

use proptest::prelude::*;
use strata::{merge, Db, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Debug, Clone)]
enum Op {
    Put(u8, usize),
    Delete(u8),
    Merge(u8, u64),
    Batch(Vec<(u8, Option<usize>)>),
    Get(u8),
    GetAtSnapshot(u8),
    Scan(Option<u8>, Option<u8>, bool),
    /// A cursor moving every which way, at the last snapshot when the flag is set.
    Walk(Vec<Step>, bool),
    TakeSnapshot,
    Flush,
    Compact,
    Reopen,
}

#[derive(Debug, Clone)]
enum Step {
    Seek(u8),
    SeekForPrev(u8),
    First,
    Last,
    Next,
    Prev,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => (0u8..64).prop_map(Step::Seek),
        1 => (0u8..64).prop_map(Step::SeekForPrev),
        1 => Just(Step::First),
        1 => Just(Step::Last),
        4 => Just(Step::Next),
        3 => Just(Step::Prev),
    ]
}

/// Key 0 is the empty key, the smallest there is.
fn key(k: u8) -> Vec<u8> {
    if k == 0 {
        return Vec::new();
    }
    format!("k{k:03}").into_bytes()
}

fn value(k: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| k.wrapping_add(i as u8)).collect()
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0u8..60;
    let len = prop_oneof![0usize..16, 40usize..300];
    prop_oneof![
        10 => (k.clone(), len.clone()).prop_map(|(k, l)| Op::Put(k, l)),
        3 => k.clone().prop_map(Op::Delete),
        3 => (k.clone(), 1u64..1000).prop_map(|(k, n)| Op::Merge(k, n)),
        2 => prop::collection::vec((k.clone(), prop::option::of(len)), 1..8).prop_map(Op::Batch),
        5 => k.clone().prop_map(Op::Get),
        2 => k.clone().prop_map(Op::GetAtSnapshot),
        2 => (prop::option::of(k.clone()), prop::option::of(k), any::<bool>()).prop_map(|(a, b, r)| Op::Scan(a, b, r)),
        2 => (prop::collection::vec(step(), 1..40), any::<bool>()).prop_map(|(s, snap)| Op::Walk(s, snap)),
        1 => Just(Op::TakeSnapshot),
        1 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Reopen),
    ]
}

fn options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        min_blob_size: 32,
        // Background compactions into the last level move scattered values (and keep others),
        // under snapshots, merges and reopens.
        blob_scan_runs: 1,
        level0_compaction_trigger: 2,
        merge_operator: merge::builtin("uint64add"),
        ..Options::default()
    }
}

fn merged(base: Option<&Vec<u8>>, n: u64) -> Vec<u8> {
    let b = base.and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok()).map_or(0, u64::from_le_bytes);
    b.wrapping_add(n).to_le_bytes().to_vec()
}

fn scan(db: &Db, model: &Model, lo: Option<u8>, hi: Option<u8>, reverse: bool) {
    let mut ro = ReadOptions::new();
    ro.lower_bound = lo.map(key);
    ro.upper_bound = hi.map(key);
    let want: Vec<(Vec<u8>, Vec<u8>)> = model
        .iter()
        .filter(|(k, _)| {
            ro.lower_bound.as_ref().is_none_or(|l| *k >= l) && ro.upper_bound.as_ref().is_none_or(|u| *k < u)
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut it = db.cursor(&ro).unwrap();
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
    assert_eq!(got, want, "scan lo={lo:?} hi={hi:?} reverse={reverse}");
}

/// Moves one cursor through `steps` and checks each position against the model's.
fn walk(db: &Db, model: &Model, steps: &[Step], snapshot: Option<&Snapshot>) {
    use std::ops::Bound::{Excluded, Unbounded};
    let ro = ReadOptions { snapshot: snapshot.cloned(), ..ReadOptions::new() };
    let mut it = db.cursor(&ro).unwrap();
    let mut at: Option<Vec<u8>> = None;
    for s in steps {
        // Stepping an unpositioned iterator leaves it so; the model does the same.
        let next = |k: &Vec<u8>| model.range::<Vec<u8>, _>((Excluded(k), Unbounded)).next();
        at = match s {
            Step::Seek(k) => {
                it.seek(&key(*k));
                model.range(key(*k)..).next().map(|(k, _)| k.clone())
            }
            Step::SeekForPrev(k) => {
                it.seek_for_prev(&key(*k));
                model.range(..=key(*k)).next_back().map(|(k, _)| k.clone())
            }
            Step::First => {
                it.seek_to_first();
                model.keys().next().cloned()
            }
            Step::Last => {
                it.seek_to_last();
                model.keys().next_back().cloned()
            }
            Step::Next => {
                it.next();
                at.as_ref().and_then(next).map(|(k, _)| k.clone())
            }
            Step::Prev => {
                it.prev();
                at.as_ref().and_then(|k| model.range(..k.clone()).next_back()).map(|(k, _)| k.clone())
            }
        };
        assert_eq!(it.valid(), at.is_some(), "after {s:?}");
        if let Some(k) = &at {
            assert_eq!(
                (it.key(), Some(it.value())),
                (k.as_slice(), model.get(k).map(Vec::as_slice)),
                "after {s:?}"
            );
        }
    }
    it.status().unwrap();
}

fn run(ops: Vec<Op>) {
    let dir = tempfile::tempdir().unwrap();
    let mut db = Db::open(dir.path(), options()).unwrap();
    let mut model = Model::new();
    let mut snaps: Vec<(Snapshot, Model)> = Vec::new();
    let w = WriteOptions::default();
    for op in ops {
        match op {
            Op::Put(k, l) => {
                db.put_opt(&w, &key(k), &value(k, l)).unwrap();
                model.insert(key(k), value(k, l));
            }
            Op::Delete(k) => {
                db.delete_opt(&w, &key(k)).unwrap();
                model.remove(&key(k));
            }
            Op::Merge(k, n) => {
                db.merge_opt(&w, &key(k), &n.to_le_bytes()).unwrap();
                let v = merged(model.get(&key(k)), n);
                model.insert(key(k), v);
            }
            Op::Batch(items) => {
                let mut b = WriteBatch::new();
                for (k, l) in items {
                    match l {
                        Some(l) => {
                            b.put(key(k), value(k, l));
                            model.insert(key(k), value(k, l));
                        }
                        None => {
                            b.delete(key(k));
                            model.remove(&key(k));
                        }
                    }
                }
                db.write_opt(&w, b).unwrap();
            }
            Op::Get(k) => {
                assert_eq!(db.get(key(k)).unwrap(), model.get(&key(k)).cloned())
            }
            Op::GetAtSnapshot(k) => {
                if let Some((s, m)) = snaps.last() {
                    let mut ro = ReadOptions::new();
                    ro.snapshot = Some(s.clone());
                    assert_eq!(db.get_opt(&ro, &key(k)).unwrap(), m.get(&key(k)).cloned(), "at snapshot");
                }
            }
            Op::Scan(lo, hi, rev) => scan(&db, &model, lo, hi, rev),
            Op::Walk(steps, at_snapshot) => match snaps.last() {
                Some((s, m)) if at_snapshot => walk(&db, m, &steps, Some(s)),
                _ => walk(&db, &model, &steps, None),
            },
            Op::TakeSnapshot => snaps.push((db.snapshot(), model.clone())),
            Op::Flush => db.flush().unwrap(),
            Op::Compact => db.compact_range(None, None).unwrap(),
            Op::Reopen => {
                snaps.clear();
                drop(db);
                db = Db::open(dir.path(), options()).unwrap();
            }
        }
    }
    scan(&db, &model, None, None, false);
    for (s, m) in &snaps {
        let mut ro = ReadOptions::new();
        ro.snapshot = Some(s.clone());
        let mut it = db.cursor(&ro).unwrap();
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            assert_eq!(m.get(it.key()).map(Vec::as_slice), Some(it.value()));
            n += 1;
            it.next();
        }
        assert_eq!(n, m.len());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn strata_agrees_with_a_btreemap(ops in prop::collection::vec(op(), 1..300)) {
        run(ops);
    }
}

#[test]
fn many_versions_cross_memtables_and_levels() {
    let mut ops = Vec::new();
    for round in 0..6u8 {
        for k in 0..60u8 {
            ops.push(Op::Put(k, 200 + round as usize));
            if k % 5 == 0 {
                ops.push(Op::Merge(k, 3));
            }
        }
        ops.push(Op::TakeSnapshot);
        ops.push(if round % 2 == 0 { Op::Flush } else { Op::Compact });
        for k in (0..60u8).step_by(4) {
            ops.push(Op::Delete(k));
        }
    }
    ops.push(Op::Scan(None, None, true));
    ops.push(Op::Reopen);
    ops.push(Op::Compact);
    ops.push(Op::Scan(Some(3), Some(50), true));
    run(ops);
}
