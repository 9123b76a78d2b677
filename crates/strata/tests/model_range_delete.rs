//! Model-based randomized test of range deletions: puts, deletes, merges, `delete_range` (alone
//! and inside batches) run against strata and a `BTreeMap`, with snapshots held across flushes,
//! compactions and reopens. (Tombstones straddling output tables: `range_delete.rs`.) Every
//! point read, multi-get and iteration (cursor and std iterator, both directions, with bounds)
//! must agree with the model, at the latest state and at every held snapshot.

use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Unbounded};

use proptest::prelude::*;
use strata::{merge, Db, Options, ReadOptions, Snapshot, WriteBatch};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Debug, Clone)]
enum Op {
    Put(u8, usize),
    Delete(u8),
    Merge(u8, u64),
    DeleteRange(u8, u8),
    /// Puts (`Some(len)`) and range deletions up to the paired key (`None`), in one batch.
    Batch(Vec<(u8, Option<usize>, u8)>),
    Get(u8, usize),
    MultiGet(Vec<u8>, usize),
    /// Bounds, reverse, and which snapshot (index into the held ones; past the end: latest).
    Scan(Option<u8>, Option<u8>, bool, usize),
    Walk(Vec<Step>, usize),
    TakeSnapshot,
    ReleaseSnapshot(usize),
    Flush,
    Compact(Option<u8>, Option<u8>),
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
        2 => (0u8..50).prop_map(Step::Seek),
        1 => (0u8..50).prop_map(Step::SeekForPrev),
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
    let k = 0u8..48;
    let len = prop_oneof![0usize..16, 40usize..200];
    let snap = 0usize..6;
    prop_oneof![
        12 => (k.clone(), len.clone()).prop_map(|(k, l)| Op::Put(k, l)),
        2 => k.clone().prop_map(Op::Delete),
        2 => (k.clone(), 1u64..1000).prop_map(|(k, n)| Op::Merge(k, n)),
        4 => (k.clone(), 0u8..50).prop_map(|(a, b)| Op::DeleteRange(a, b)),
        2 => prop::collection::vec((k.clone(), prop::option::of(len), 0u8..50), 1..6).prop_map(Op::Batch),
        5 => (k.clone(), snap.clone()).prop_map(|(k, s)| Op::Get(k, s)),
        1 => (prop::collection::vec(k.clone(), 1..6), snap.clone()).prop_map(|(ks, s)| Op::MultiGet(ks, s)),
        3 => (prop::option::of(k.clone()), prop::option::of(k.clone()), any::<bool>(), snap.clone())
            .prop_map(|(a, b, r, s)| Op::Scan(a, b, r, s)),
        2 => (prop::collection::vec(step(), 1..30), snap.clone()).prop_map(|(st, s)| Op::Walk(st, s)),
        2 => Just(Op::TakeSnapshot),
        1 => (0usize..4).prop_map(Op::ReleaseSnapshot),
        2 => Just(Op::Flush),
        1 => (prop::option::of(k.clone()), prop::option::of(k)).prop_map(|(a, b)| Op::Compact(a, b)),
        1 => Just(Op::Reopen),
    ]
}

fn options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size: 64 << 10,
        min_blob_size: 100,
        level0_compaction_trigger: 2,
        merge_operator: merge::builtin("uint64add"),
        ..Options::default()
    }
}

fn merged(base: Option<&Vec<u8>>, n: u64) -> Vec<u8> {
    let b = base.and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok()).map_or(0, u64::from_le_bytes);
    b.wrapping_add(n).to_le_bytes().to_vec()
}

fn delete_range(model: &mut Model, a: u8, b: u8) {
    let (a, b) = (key(a), key(b));
    if a < b {
        model.retain(|k, _| k < &a || k >= &b);
    }
}

/// The read options and model of snapshot `i`, or of the latest state past the held ones.
fn view<'a>(snaps: &'a [(Snapshot, Model)], latest: &'a Model, i: usize) -> (ReadOptions, &'a Model) {
    match snaps.get(i) {
        Some((s, m)) => (ReadOptions { snapshot: Some(s.clone()), ..ReadOptions::new() }, m),
        None => (ReadOptions::new(), latest),
    }
}

fn scan(db: &Db, mut ro: ReadOptions, model: &Model, lo: Option<u8>, hi: Option<u8>, reverse: bool) {
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
    assert_eq!(got, want, "cursor scan lo={lo:?} hi={hi:?} reverse={reverse}");
    // The std iterator, built on the cursor, in the other direction.
    let mut std_got: Vec<(Vec<u8>, Vec<u8>)> = if reverse {
        db.iter_opt(&ro).collect::<strata::Result<_>>().unwrap()
    } else {
        db.iter_opt(&ro).rev().collect::<strata::Result<_>>().unwrap()
    };
    if !reverse {
        std_got.reverse();
    }
    assert_eq!(std_got, want, "std iterator lo={lo:?} hi={hi:?} reverse={}", !reverse);
}

fn walk(db: &Db, ro: &ReadOptions, model: &Model, steps: &[Step]) {
    let mut it = db.cursor(ro).unwrap();
    let mut at: Option<Vec<u8>> = None;
    for s in steps {
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

fn write(db: &Db, model: &mut Model, op: Op) {
    match op {
        Op::Put(k, l) => {
            db.put(key(k), value(k, l)).unwrap();
            model.insert(key(k), value(k, l));
        }
        Op::Delete(k) => {
            db.delete(key(k)).unwrap();
            model.remove(&key(k));
        }
        Op::Merge(k, n) => {
            db.merge(key(k), n.to_le_bytes()).unwrap();
            let v = merged(model.get(&key(k)), n);
            model.insert(key(k), v);
        }
        Op::DeleteRange(a, b) => {
            db.delete_range(key(a), key(b)).unwrap();
            delete_range(model, a, b);
        }
        Op::Batch(items) => {
            let mut batch = WriteBatch::new();
            for (k, l, end) in items {
                match l {
                    Some(l) => {
                        batch.put(key(k), value(k, l));
                        model.insert(key(k), value(k, l));
                    }
                    None => {
                        batch.delete_range(key(k), key(end));
                        delete_range(model, k, end);
                    }
                }
            }
            db.write(batch).unwrap();
        }
        other => unreachable!("{other:?} is not a write"),
    }
}

fn check_all(db: &Db, model: &Model, snaps: &[(Snapshot, Model)]) {
    for i in 0..=snaps.len() {
        let (ro, m) = view(snaps, model, i);
        scan(db, ro.clone(), m, None, None, false);
        for k in 0..48u8 {
            assert_eq!(db.get_opt(&ro, &key(k)).unwrap(), m.get(&key(k)).cloned(), "key {k} view {i}");
        }
    }
}

fn run(ops: Vec<Op>) {
    let dir = tempfile::tempdir().unwrap();
    let mut db = Db::open(dir.path(), options()).unwrap();
    let mut model = Model::new();
    let mut snaps: Vec<(Snapshot, Model)> = Vec::new();
    for op in ops {
        match op {
            Op::Get(k, s) => {
                let (ro, m) = view(&snaps, &model, s);
                assert_eq!(db.get_opt(&ro, &key(k)).unwrap(), m.get(&key(k)).cloned(), "get {k} at {s}");
            }
            Op::MultiGet(ks, s) => {
                let (ro, m) = view(&snaps, &model, s);
                let keys: Vec<Vec<u8>> = ks.iter().map(|&k| key(k)).collect();
                let slices: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                let got: Vec<Option<Vec<u8>>> =
                    db.multi_get_opt(&ro, &slices).into_iter().map(|r| r.unwrap()).collect();
                let want: Vec<Option<Vec<u8>>> = keys.iter().map(|k| m.get(k).cloned()).collect();
                assert_eq!(got, want, "multi_get at {s}");
            }
            Op::Scan(lo, hi, rev, s) => {
                let (ro, m) = view(&snaps, &model, s);
                scan(&db, ro, m, lo, hi, rev);
            }
            Op::Walk(steps, s) => {
                let (ro, m) = view(&snaps, &model, s);
                walk(&db, &ro, m, &steps);
            }
            Op::TakeSnapshot => snaps.push((db.snapshot(), model.clone())),
            Op::ReleaseSnapshot(i) => {
                if i < snaps.len() {
                    snaps.remove(i);
                }
            }
            Op::Flush => db.flush().unwrap(),
            Op::Compact(a, b) => {
                let (a, b) = (a.map(key), b.map(key));
                db.compact_range(a.as_deref(), b.as_deref()).unwrap();
            }
            Op::Reopen => {
                snaps.clear();
                drop(db);
                db = Db::open(dir.path(), options()).unwrap();
            }
            write_op => write(&db, &mut model, write_op),
        }
    }
    check_all(&db, &model, &snaps);
    db.compact_range(None, None).unwrap();
    check_all(&db, &model, &snaps);
    snaps.clear();
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    check_all(&db, &model, &[]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn range_deletes_agree_with_a_btreemap(ops in prop::collection::vec(op(), 1..200)) {
        run(ops);
    }
}

/// Tombstones spread over every level and many output tables, with snapshots in between.
#[test]
fn layered_range_deletes_across_levels_and_snapshots() {
    let mut ops = Vec::new();
    for round in 0..5u8 {
        for k in 0..48u8 {
            ops.push(Op::Put(k, 60 + usize::from(round) * 20));
        }
        ops.push(Op::TakeSnapshot);
        ops.push(Op::DeleteRange(round * 7, round * 7 + 13));
        ops.push(Op::Put(round * 7 + 3, 5));
        ops.push(if round % 2 == 0 { Op::Flush } else { Op::Compact(None, None) });
        ops.push(Op::Merge(round * 7 + 4, 9));
        ops.push(Op::Scan(None, None, true, 9));
        ops.push(Op::Scan(Some(2), Some(40), false, usize::from(round)));
    }
    ops.push(Op::ReleaseSnapshot(1));
    ops.push(Op::Compact(Some(5), Some(30)));
    ops.push(Op::Reopen);
    ops.push(Op::DeleteRange(0, 49));
    ops.push(Op::Flush);
    run(ops);
}
