//! Model-based randomized test of `WriteBatchWithIndex`: random committed writes go to a `Db`
//! (default family and one other, both with `uint64add`), random uncommitted writes with
//! savepoints and rollbacks go to a `WriteBatchWithIndex`. Its point reads, full scans both ways,
//! and seeks followed by random steps in both directions (with bounds and prefixes) must agree
//! with a `BTreeMap` model of the database with the batch applied; once written, the database
//! must equal that model.

use std::collections::BTreeMap;

use proptest::prelude::*;
use strata::txn::{BatchLookup, WriteBatchWithIndex};
use strata::{merge, ColumnFamily, Db, Options, ReadOptions, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const FAMILIES: usize = 2;

#[derive(Debug, Clone)]
enum Write {
    Put(Vec<u8>),
    Delete,
    Merge(u64),
}

#[derive(Debug, Clone, Copy)]
struct Bounds {
    lower: Option<u8>,
    upper: Option<u8>,
    /// The tens digit: a prefix of `k{digit}`.
    prefix: Option<u8>,
}

#[derive(Debug, Clone)]
enum Op {
    Db(usize, u8, Write),
    Flush(usize),
    Batch(usize, u8, Write),
    SetSavePoint,
    RollbackToSavePoint,
    PopSavePoint,
    Clear,
    Get(usize, u8),
    MultiGet(usize, Vec<u8>),
    Scan(usize, Bounds),
    Walk(usize, Bounds, WalkPlan),
}

/// A seek and the steps after it.
#[derive(Debug, Clone)]
struct WalkPlan {
    target: u8,
    /// `seek_for_prev` instead of `seek`.
    back: bool,
    /// `true`: `next`, `false`: `prev`.
    steps: Vec<bool>,
}

fn key(k: u8) -> Vec<u8> {
    format!("k{k:02}").into_bytes()
}

fn as_u64(v: &[u8]) -> u64 {
    <[u8; 8]>::try_from(v).map(u64::from_le_bytes).unwrap_or(0)
}

fn merged(base: Option<&[u8]>, n: u64) -> Vec<u8> {
    base.map_or(0, as_u64).wrapping_add(n).to_le_bytes().to_vec()
}

fn write_strategy() -> impl Strategy<Value = Write> {
    prop_oneof![
        4 => (0u64..1000).prop_map(|n| Write::Put(n.to_le_bytes().to_vec())),
        1 => prop::collection::vec(any::<u8>(), 0..4).prop_map(Write::Put),
        2 => Just(Write::Delete),
        3 => (1u64..100).prop_map(Write::Merge),
    ]
}

fn bounds_strategy() -> impl Strategy<Value = Bounds> {
    let edge = prop::option::weighted(0.3, 0u8..30);
    (edge.clone(), edge, prop::option::weighted(0.2, 0u8..3)).prop_map(|(lower, upper, prefix)| Bounds {
        lower,
        upper,
        prefix,
    })
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let cf = 0..FAMILIES;
    let k = 0u8..30;
    prop_oneof![
        6 => (cf.clone(), k.clone(), write_strategy()).prop_map(|(c, k, w)| Op::Db(c, k, w)),
        1 => cf.clone().prop_map(Op::Flush),
        10 => (cf.clone(), k.clone(), write_strategy()).prop_map(|(c, k, w)| Op::Batch(c, k, w)),
        2 => Just(Op::SetSavePoint),
        2 => Just(Op::RollbackToSavePoint),
        1 => Just(Op::PopSavePoint),
        1 => Just(Op::Clear),
        5 => (cf.clone(), k.clone()).prop_map(|(c, k)| Op::Get(c, k)),
        2 => (cf.clone(), prop::collection::vec(k.clone(), 0..6)).prop_map(|(c, ks)| Op::MultiGet(c, ks)),
        2 => (cf.clone(), bounds_strategy()).prop_map(|(c, b)| Op::Scan(c, b)),
        4 => (cf, bounds_strategy(), k, any::<bool>(), prop::collection::vec(any::<bool>(), 0..12))
            .prop_map(|(c, b, target, back, steps)| Op::Walk(c, b, WalkPlan { target, back, steps })),
    ]
}

fn apply(model: &mut Model, key: &[u8], w: &Write) {
    match w {
        Write::Put(v) => {
            model.insert(key.to_vec(), v.clone());
        }
        Write::Delete => {
            model.remove(key);
        }
        Write::Merge(n) => {
            let v = merged(model.get(key).map(Vec::as_slice), *n);
            model.insert(key.to_vec(), v);
        }
    }
}

/// The uncommitted writes, oldest first, and the savepoints (log lengths).
#[derive(Default)]
struct BatchModel {
    log: Vec<(usize, Vec<u8>, Write)>,
    save_points: Vec<usize>,
}

impl BatchModel {
    fn view(&self, db: &[Model], cf: usize) -> Model {
        let mut m = db[cf].clone();
        for (c, k, w) in &self.log {
            if *c == cf {
                apply(&mut m, k, w);
            }
        }
        m
    }

    fn lookup(&self, cf: usize, key: &[u8]) -> BatchLookup {
        let ops: Vec<&Write> =
            self.log.iter().filter(|(c, k, _)| *c == cf && k == key).map(|(_, _, w)| w).collect();
        if ops.is_empty() {
            return BatchLookup::NotFound;
        }
        let Some(last_base) = ops.iter().rposition(|w| !matches!(w, Write::Merge(_))) else {
            let operands = ops.iter().filter_map(|w| match w {
                Write::Merge(n) => Some(n.to_le_bytes().to_vec()),
                _ => None,
            });
            return BatchLookup::MergeOnly(operands.collect());
        };
        let mut m = Model::new();
        for w in &ops[last_base..] {
            apply(&mut m, key, w);
        }
        match m.remove(key) {
            Some(v) => BatchLookup::Found(v),
            None => BatchLookup::Deleted,
        }
    }
}

fn read_options(b: Bounds) -> ReadOptions {
    ReadOptions {
        lower_bound: b.lower.map(key),
        upper_bound: b.upper.map(key),
        prefix: b.prefix.map(|d| format!("k{d}").into_bytes()),
        ..ReadOptions::new()
    }
}

/// The model's entries inside the bounds, in order.
fn bounded(model: &Model, b: Bounds) -> Vec<(Vec<u8>, Vec<u8>)> {
    let ro = read_options(b);
    model
        .iter()
        .filter(|(k, _)| ro.lower_bound.as_ref().is_none_or(|l| *k >= l))
        .filter(|(k, _)| ro.upper_bound.as_ref().is_none_or(|u| *k < u))
        .filter(|(k, _)| ro.prefix.as_ref().is_none_or(|p| k.starts_with(p)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

struct Fixture {
    db: Db,
    cfs: Vec<ColumnFamily>,
    _dir: tempfile::TempDir,
}

impl Fixture {
    fn open() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let opts = || Options { merge_operator: merge::builtin("uint64add"), ..Options::default() };
        let db = Db::open_cf(dir.path(), opts(), [("other", opts())]).unwrap();
        let cfs = vec![db.default_cf(), db.cf("other").unwrap()];
        Self { db, cfs, _dir: dir }
    }

    /// The family argument of the batch's reads: `None` for the default family, to cover it.
    fn cf_arg(&self, cf: usize) -> Option<&ColumnFamily> {
        (cf != 0).then(|| &self.cfs[cf])
    }

    fn base_iter(&self, cf: usize, b: Bounds) -> strata::DbIterator {
        self.db.cursor_cf(&self.cfs[cf], &read_options(b)).unwrap()
    }
}

fn scan_both_ways(fx: &Fixture, wb: &WriteBatchWithIndex, cf: usize, b: Bounds, want: &[(Vec<u8>, Vec<u8>)]) {
    let mut it = wb.iter_with_base(fx.cf_arg(cf), fx.base_iter(cf, b));
    let mut got = Vec::new();
    it.seek_to_first();
    while it.valid() {
        got.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    assert_eq!(got, want, "forward scan of family {cf} {b:?}");
    got.clear();
    it.seek_to_last();
    while it.valid() {
        got.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status().unwrap();
    got.reverse();
    assert_eq!(got, want, "backward scan of family {cf} {b:?}");
}

fn walk(
    fx: &Fixture,
    wb: &WriteBatchWithIndex,
    cf: usize,
    b: Bounds,
    plan: &WalkPlan,
    want: &[(Vec<u8>, Vec<u8>)],
) {
    let WalkPlan { target, back, ref steps } = *plan;
    let mut it = wb.iter_with_base(fx.cf_arg(cf), fx.base_iter(cf, b));
    let target = key(target);
    let mut at: Option<usize> = if back {
        it.seek_for_prev(&target);
        want.iter().rposition(|(k, _)| *k <= target)
    } else {
        it.seek(&target);
        want.iter().position(|(k, _)| *k >= target)
    };
    for step in std::iter::once(None).chain(steps.iter().map(Some)) {
        match step {
            Some(true) => {
                it.next();
                at = at.and_then(|i| (i + 1 < want.len()).then_some(i + 1));
            }
            Some(false) => {
                it.prev();
                at = at.and_then(|i| i.checked_sub(1));
            }
            None => {}
        }
        let ctx = format!("family {cf} {b:?} target {target:?} back {back} steps {steps:?}");
        match at {
            Some(i) => {
                assert!(it.valid(), "{ctx}: expected {:?}", want[i].0);
                assert_eq!((it.key(), it.value()), (want[i].0.as_slice(), want[i].1.as_slice()), "{ctx}");
            }
            None => {
                assert!(!it.valid(), "{ctx}: unexpected {:?}", it.key());
                it.status().unwrap();
                return;
            }
        }
    }
}

fn run(ops: Vec<Op>) {
    let fx = Fixture::open();
    let mut db_model: Vec<Model> = vec![Model::new(); FAMILIES];
    let mut bm = BatchModel::default();
    let mut wb = WriteBatchWithIndex::new();
    let (w, ro) = (WriteOptions::default(), ReadOptions::new());
    for op in ops {
        match op {
            Op::Db(c, k, write) => {
                let cf = &fx.cfs[c];
                match &write {
                    Write::Put(v) => fx.db.put_cf_opt(cf, &w, &key(k), v),
                    Write::Delete => fx.db.delete_cf_opt(cf, &w, &key(k)),
                    Write::Merge(n) => fx.db.merge_cf_opt(cf, &w, &key(k), &n.to_le_bytes()),
                }
                .unwrap();
                apply(&mut db_model[c], &key(k), &write);
            }
            Op::Flush(c) => fx.db.flush_cf(&fx.cfs[c]).unwrap(),
            Op::Batch(c, k, write) => {
                let cf = &fx.cfs[c];
                match &write {
                    Write::Put(v) if c == 0 => wb.put(key(k), v),
                    Write::Put(v) => wb.put_cf(cf, key(k), v),
                    Write::Delete if c == 0 => wb.delete(key(k)),
                    Write::Delete => wb.delete_cf(cf, key(k)),
                    Write::Merge(n) if c == 0 => wb.merge(key(k), n.to_le_bytes()),
                    Write::Merge(n) => wb.merge_cf(cf, key(k), n.to_le_bytes()),
                };
                bm.log.push((c, key(k), write));
            }
            Op::SetSavePoint => {
                wb.set_save_point();
                bm.save_points.push(bm.log.len());
            }
            Op::RollbackToSavePoint => match bm.save_points.pop() {
                Some(n) => {
                    wb.rollback_to_save_point().unwrap();
                    bm.log.truncate(n);
                }
                None => assert!(wb.rollback_to_save_point().is_err()),
            },
            Op::PopSavePoint => {
                assert_eq!(wb.pop_save_point().is_ok(), bm.save_points.pop().is_some());
            }
            Op::Clear => {
                wb.clear();
                bm = BatchModel::default();
            }
            Op::Get(c, k) => {
                let want = bm.view(&db_model, c).get(&key(k)).cloned();
                assert_eq!(wb.get_from_batch_and_db(&fx.db, fx.cf_arg(c), &ro, &key(k)).unwrap(), want);
                let lookup = wb.get_from_batch(Some(&fx.cfs[c]), &key(k)).unwrap();
                assert_eq!(lookup, bm.lookup(c, &key(k)), "get_from_batch of {k} in family {c}");
            }
            Op::MultiGet(c, ks) => {
                let view = bm.view(&db_model, c);
                let keys: Vec<Vec<u8>> = ks.iter().map(|&k| key(k)).collect();
                let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                let got = wb.multi_get_from_batch_and_db(&fx.db, fx.cf_arg(c), &ro, &refs);
                let got: Vec<_> = got.into_iter().map(Result::unwrap).collect();
                let want: Vec<_> = keys.iter().map(|k| view.get(k).cloned()).collect();
                assert_eq!(got, want);
            }
            Op::Scan(c, b) => scan_both_ways(&fx, &wb, c, b, &bounded(&bm.view(&db_model, c), b)),
            Op::Walk(c, b, plan) => walk(&fx, &wb, c, b, &plan, &bounded(&bm.view(&db_model, c), b)),
        }
        assert_eq!(wb.len(), bm.log.len());
    }
    let views: Vec<Model> = (0..FAMILIES).map(|c| bm.view(&db_model, c)).collect();
    fx.db.write_opt(&w, wb.into_batch()).unwrap();
    for (c, view) in views.iter().enumerate() {
        let all = Bounds { lower: None, upper: None, prefix: None };
        scan_both_ways(&fx, &WriteBatchWithIndex::new(), c, all, &bounded(view, all));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn batch_reads_match_the_model_and_writing_it_gives_the_model(ops in prop::collection::vec(op_strategy(), 1..80)) {
        run(ops);
    }
}

/// A merge in the batch over a put in the database, seen from a walk that changes direction on
/// it, and a deleted key between two live ones.
#[test]
fn direction_changes_across_merged_and_deleted_keys() {
    let fx = Fixture::open();
    let w = WriteOptions::default();
    for (k, n) in [(1u8, 10u64), (2, 20), (3, 30)] {
        fx.db.put_opt(&w, &key(k), &n.to_le_bytes()).unwrap();
    }
    let mut wb = WriteBatchWithIndex::new();
    wb.merge(key(1), 5u64.to_le_bytes()).delete(key(2)).put(key(4), 40u64.to_le_bytes());
    let mut it = wb.iter_with_base(None, fx.db.cursor(&ReadOptions::new()).unwrap());
    it.seek(&key(2));
    assert_eq!((it.key(), as_u64(it.value())), (&key(3)[..], 30));
    it.prev();
    assert_eq!((it.key(), as_u64(it.value())), (&key(1)[..], 15));
    it.next();
    assert_eq!(it.key(), key(3));
    it.next();
    assert_eq!((it.key(), as_u64(it.value())), (&key(4)[..], 40));
    it.prev();
    it.prev();
    assert_eq!(it.key(), key(1));
    it.prev();
    assert!(!it.valid());
    it.status().unwrap();
}
