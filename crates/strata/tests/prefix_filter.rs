//! `Options::prefix_extractor`: tables add key prefixes to their bloom filters, and an iterator
//! over one prefix leaves out the tables that hold none of it, with the same results as a scan
//! that reads every table.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use proptest::prelude::*;
use strata::{Db, Options, PrefixExtractor, ReadOptions};

fn opts(extractor: Option<PrefixExtractor>) -> Options {
    Options { prefix_extractor: extractor, ..Options::default() }
}

fn scan(db: &Db, prefix: &[u8]) -> Vec<Vec<u8>> {
    db.prefix(prefix).map(|kv| kv.unwrap().0).collect()
}

fn skips(db: &Db) -> u64 {
    db.stats().prefix_filter_skips.load(Ordering::Relaxed)
}

#[test]
fn tables_without_the_prefix_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts(Some(PrefixExtractor::Fixed(4)))).unwrap();
    // One table holding aaaa and cccc keys (bbbb falls inside its key range), one of bbbb keys.
    for p in ["aaaa", "cccc"] {
        for i in 0..50 {
            db.put(format!("{p}{i:03}"), "v").unwrap();
        }
    }
    db.flush().unwrap();
    assert!(scan(&db, b"bbbb").is_empty());
    assert_eq!(skips(&db), 1, "the table's range covers bbbb but its filter has no bbbb");
    for i in 0..50 {
        db.put(format!("bbbb{i:03}"), "v").unwrap();
    }
    db.flush().unwrap();
    assert_eq!(scan(&db, b"bbbb").len(), 50);
    assert_eq!(skips(&db), 2, "the first table again; the second is read");
    assert_eq!(scan(&db, b"aaaa00").len(), 10, "a longer prefix probes its first 4 bytes");
    let before = skips(&db);
    assert_eq!(scan(&db, b"bb").len(), 50, "a shorter prefix cannot use the filter");
    assert_eq!(skips(&db), before);

    // After a compaction the tables are deeper; the level's iterator skips them the same way.
    db.compact_range(None, None).unwrap();
    assert_eq!(scan(&db, b"cccc").len(), 50);
    assert!(scan(&db, b"dddd").is_empty());
}

#[test]
fn tables_written_without_an_extractor_are_read_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts(None)).unwrap();
    for k in ["aaaa1", "cccc1", "bbbb1"] {
        db.put(k, "v").unwrap();
        db.flush().unwrap();
    }
    db.close().unwrap();
    let db = Db::open(dir.path(), opts(Some(PrefixExtractor::Fixed(4)))).unwrap();
    assert_eq!(scan(&db, b"bbbb"), [b"bbbb1".to_vec()]);
    assert_eq!(skips(&db), 0, "filters without prefixes say nothing about prefixes");
    let db2 = db.clone();
    drop(db);
    // A different extractor does not trust filters built with another one either.
    db2.put("bbbb2", "v").unwrap();
    db2.flush().unwrap();
    db2.close().unwrap();
    let db = Db::open(dir.path(), opts(Some(PrefixExtractor::Capped(4)))).unwrap();
    assert_eq!(scan(&db, b"bbbb").len(), 2);
    assert_eq!(skips(&db), 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn prefix_scans_agree_with_a_btreemap(
        keys in prop::collection::vec(prop::collection::vec(0u8..3, 0..7), 1..60),
        flush_every in 1usize..20,
        capped in any::<bool>(),
        queries in prop::collection::vec(prop::collection::vec(0u8..3, 0..5), 1..10),
    ) {
        let extractor = if capped { PrefixExtractor::Capped(3) } else { PrefixExtractor::Fixed(3) };
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), opts(Some(extractor))).unwrap();
        let mut model = BTreeMap::new();
        for (i, k) in keys.iter().enumerate() {
            db.put(k, [i as u8]).unwrap();
            model.insert(k.clone(), vec![i as u8]);
            if i % flush_every == 0 {
                db.flush().unwrap();
            }
        }
        for q in &queries {
            let want: Vec<Vec<u8>> = model.keys().filter(|k| k.starts_with(q)).cloned().collect();
            prop_assert_eq!(scan(&db, q), want.clone());
            let mut backwards: Vec<Vec<u8>> = db
                .iter_opt(&ReadOptions { prefix: Some(q.clone()), ..ReadOptions::new() })
                .rev()
                .map(|kv| kv.unwrap().0)
                .collect();
            backwards.reverse();
            prop_assert_eq!(backwards, want);
        }
    }
}
