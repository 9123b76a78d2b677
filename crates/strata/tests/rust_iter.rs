//! `Db::iter`, `range`, `prefix` and the short forms against a `BTreeMap`: both ends of a
//! double-ended walk, Rust ranges of every bound kind, across a flush, and at one snapshot.

use std::collections::BTreeMap;
use std::ops::Bound;

use proptest::prelude::*;
use strata::{Db, Options, ReadOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn small_key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(0u8..4, 0..3)
}

fn collect(it: impl Iterator<Item = strata::Result<(Vec<u8>, Vec<u8>)>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.collect::<strata::Result<_>>().unwrap()
}

fn model_range(m: &Model, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    m.range((lo, hi)).map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Takes from the front when the bit is set, from the back otherwise, until both ends meet.
fn zigzag(mut it: strata::Iter, sides: &[bool]) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let (mut front, mut back) = (Vec::new(), Vec::new());
    for &from_front in sides.iter().cycle().take(64) {
        let next = if from_front { it.next() } else { it.next_back() };
        match next {
            Some(kv) => {
                let key = kv.unwrap().0;
                if from_front {
                    front.push(key)
                } else {
                    back.push(key)
                }
            }
            None => break,
        }
    }
    (front, back)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn iterators_match_a_btreemap(
        ops in prop::collection::vec((small_key(), prop::option::of(prop::collection::vec(any::<u8>(), 0..4))), 1..40),
        flush_at in 0usize..40,
        lo in prop::option::of((small_key(), any::<bool>())),
        hi in prop::option::of((small_key(), any::<bool>())),
        sides in prop::collection::vec(any::<bool>(), 1..8),
        prefix in small_key(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        let mut model = Model::new();
        for (i, (key, value)) in ops.iter().enumerate() {
            if i == flush_at {
                db.flush().unwrap();
            }
            match value {
                Some(v) => {
                    db.put(key, v).unwrap();
                    model.insert(key.clone(), v.clone());
                }
                None => {
                    db.delete(key).unwrap();
                    model.remove(key);
                }
            }
        }
        let all: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        prop_assert_eq!(collect(db.iter()), all.clone());
        let mut reversed = all.clone();
        reversed.reverse();
        prop_assert_eq!(collect(db.iter().rev()), reversed);

        // Both ends together give every key once, the front part ascending and the back descending.
        let (front, mut back) = zigzag(db.iter(), &sides);
        back.reverse();
        let met: Vec<Vec<u8>> = front.into_iter().chain(back).collect();
        prop_assert_eq!(met, model.keys().cloned().collect::<Vec<_>>());

        let to_bound = |b: &Option<(Vec<u8>, bool)>| match b {
            None => Bound::Unbounded,
            Some((k, true)) => Bound::Included(k.clone()),
            Some((k, false)) => Bound::Excluded(k.clone()),
        };
        let (lo, hi) = (to_bound(&lo), to_bound(&hi));
        let empty_range = match (&lo, &hi) {
            (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
                a > b || (a == b && !(matches!(lo, Bound::Included(_)) && matches!(hi, Bound::Included(_))))
            }
            _ => false,
        };
        if !empty_range {
            // BTreeMap::range panics on an empty range; strata's gives nothing.
            prop_assert_eq!(collect(db.range((lo.clone(), hi.clone()))), model_range(&model, lo, hi));
        } else {
            prop_assert_eq!(collect(db.range((lo, hi))), Vec::new());
        }

        let with_prefix: Vec<_> = all.iter().filter(|(k, _)| k.starts_with(&prefix)).cloned().collect();
        prop_assert_eq!(collect(db.prefix(&prefix)), with_prefix);
    }
}

#[test]
fn an_iterator_reads_one_point_in_time_from_both_ends() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for k in ["a", "b", "c"] {
        db.put(k, "old").unwrap();
    }
    let mut it = db.iter();
    assert_eq!(it.next().unwrap().unwrap(), (b"a".to_vec(), b"old".to_vec()));
    // Written after the iterator was made, before its back end opened its cursor.
    db.put("d", "new").unwrap();
    db.put("c", "new").unwrap();
    assert_eq!(it.next_back().unwrap().unwrap(), (b"c".to_vec(), b"old".to_vec()));
    assert_eq!(it.next().unwrap().unwrap().0, b"b");
    assert!(it.next().is_none() && it.next_back().is_none());
    assert_eq!(db.iter().count(), 4);
}

#[test]
fn iter_opt_keeps_the_callers_snapshot_and_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put("k1", "v1").unwrap();
    let snap = db.snapshot();
    db.put("k2", "v2").unwrap();
    db.put("k0", "v0").unwrap();
    let ro = ReadOptions { snapshot: Some(snap), lower_bound: Some(b"k1".to_vec()), ..ReadOptions::new() };
    assert_eq!(collect(db.iter_opt(&ro)), vec![(b"k1".to_vec(), b"v1".to_vec())]);
    assert_eq!(db.range("k0"..).count(), 3);
}

#[test]
fn short_forms_take_any_bytes_and_column_families_have_them_too() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put("s", String::from("string")).unwrap();
    db.put(vec![1u8, 2], [3u8; 4]).unwrap();
    assert_eq!(db.get("s").unwrap(), Some(b"string".to_vec()));
    assert_eq!(
        db.multi_get(["s", "missing"]).into_iter().map(Result::unwrap).collect::<Vec<_>>(),
        [Some(b"string".to_vec()), None]
    );
    let cf = db.create_cf("users", Options::default()).unwrap();
    db.put_cf(&cf, "u1", "ada").unwrap();
    db.put_cf(&cf, "u2", "bob").unwrap();
    db.delete_cf(&cf, "u2").unwrap();
    assert_eq!(db.get_cf(&cf, "u1").unwrap(), Some(b"ada".to_vec()));
    assert_eq!(db.get("u1").unwrap(), None, "the default family does not see it");
    assert_eq!(collect(db.iter_cf(&cf)), vec![(b"u1".to_vec(), b"ada".to_vec())]);
    assert_eq!(db.range_cf(&cf, "u2"..).count(), 0);
}
