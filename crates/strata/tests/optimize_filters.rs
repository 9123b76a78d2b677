//! `Options::optimize_filters_for_hits`: tables compaction writes to the last level carry no bloom
//! filter, tables above it keep theirs, and reads find the same keys either way.

use std::path::Path;

use strata::internal::sst::format::{Footer, FOOTER_LEN};
use strata::{options::NUM_LEVELS, Db, Options};

/// The filter block size of every table in `dir`, by whether the table has one.
fn tables_with_and_without_filter(dir: &Path) -> (usize, usize) {
    let (mut with, mut without) = (0, 0);
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "sst") {
            let bytes = std::fs::read(&path).unwrap();
            let footer = Footer::decode(&bytes[bytes.len() - FOOTER_LEN..], 0).unwrap();
            if footer.filter.size == 0 {
                without += 1;
            } else {
                with += 1;
            }
        }
    }
    (with, without)
}

fn fill(db: &Db, round: u32) {
    for i in (0..4000u32).step_by(2) {
        db.put(format!("key{i:06}"), format!("value{i}-{round}")).unwrap();
    }
}

fn check_reads(db: &Db, round: u32) {
    for i in 0..4000u32 {
        let got = db.get(format!("key{i:06}")).unwrap();
        let want = (i % 2 == 0).then(|| format!("value{i}-{round}").into_bytes());
        assert_eq!(got, want, "key{i:06}");
    }
}

#[test]
fn last_level_tables_have_no_filter_and_upper_levels_keep_theirs() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { optimize_filters_for_hits: true, ..Options::default() };
    let db = Db::open(dir.path(), opts).unwrap();
    fill(&db, 0);
    db.compact_range(None, None).unwrap();
    let last = format!("strata.num-files-at-level{}", NUM_LEVELS - 1);
    assert_eq!(db.property(&last).as_deref(), Some("1"));
    assert_eq!(tables_with_and_without_filter(dir.path()), (0, 1), "the last level's table");
    check_reads(&db, 0);

    // A flush writes L0, which keeps its filter; the reads see the newer values over it.
    fill(&db, 1);
    db.flush().unwrap();
    assert_eq!(tables_with_and_without_filter(dir.path()), (1, 1), "an L0 table beside it");
    check_reads(&db, 1);
    drop(db);

    let db = Db::open(dir.path(), Options::default()).unwrap();
    check_reads(&db, 1);
}

#[test]
fn without_the_option_the_last_level_keeps_its_filter() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    fill(&db, 0);
    db.compact_range(None, None).unwrap();
    assert_eq!(tables_with_and_without_filter(dir.path()), (1, 0));
    check_reads(&db, 0);
}

#[test]
fn the_option_is_named_as_rocksdb_names_it() {
    let opts = Options::default().with_option_string("optimize_filters_for_hits=true").unwrap();
    assert!(opts.optimize_filters_for_hits);
}
