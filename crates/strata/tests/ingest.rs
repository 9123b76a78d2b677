//! `SstFileWriter` and `Db::ingest_external_file`: ingested entries are newer than every
//! earlier write (in the memtable or in tables), older than every later one, invisible to
//! earlier snapshots, durable across reopen, and bad files are refused with typed errors.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use strata::{Db, Error, IngestOptions, Options, ReadOptions, SstFileWriter};

fn write_file(dir: &Path, name: &str, entries: &[(&str, Option<&str>)]) -> PathBuf {
    let path = dir.join(name);
    let mut w = SstFileWriter::create(&path, &Options::default()).unwrap();
    for (k, v) in entries {
        match v {
            Some(v) => w.put(k, v).unwrap(),
            None => w.delete(k).unwrap(),
        }
    }
    w.finish().unwrap();
    path
}

fn ingest(db: &Db, paths: &[&Path]) -> strata::Result<()> {
    db.ingest_external_file(paths, &IngestOptions::default())
}

#[test]
fn ingested_entries_are_newer_than_memtable_and_tables_and_older_than_later_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
    db.put("a", "table").unwrap();
    db.put("gone", "table").unwrap();
    db.flush().unwrap();
    db.put("b", "memtable").unwrap();
    let before = db.snapshot();
    let file = write_file(dir.path(), "f.sst", &[("a", Some("file")), ("b", Some("file")), ("gone", None)]);
    ingest(&db, &[&file]).unwrap();
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"file"[..]));
    assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"file"[..]));
    assert_eq!(db.get("gone").unwrap(), None, "a delete in the file hides the older value");
    let at = ReadOptions { snapshot: Some(before), ..ReadOptions::new() };
    assert_eq!(db.get_opt(&at, b"a").unwrap().as_deref(), Some(&b"table"[..]), "an earlier snapshot");
    assert_eq!(db.get_opt(&at, b"gone").unwrap().as_deref(), Some(&b"table"[..]));
    db.put("a", "later").unwrap();
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"later"[..]));
    assert!(file.exists(), "the caller's file is only read");
}

/// A range deletion in the memtable covers older entries in the tables below it; the ingested
/// file is newer than the deletion, so it must not be placed where the deletion hides it.
#[test]
fn ingested_entries_are_newer_than_a_range_deletion_in_the_memtable() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
    db.put("a", "old").unwrap();
    db.put("c", "old").unwrap();
    db.flush().unwrap();
    db.delete_range("a", "d").unwrap();
    let file = write_file(dir.path(), "f.sst", &[("a", Some("new")), ("b", Some("new"))]);
    ingest(&db, &[&file]).unwrap();
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(db.get("c").unwrap(), None, "the deletion still hides what it covered");
    let got: Vec<_> = db.iter().map(|e| e.unwrap().0).collect();
    assert_eq!(got, vec![b"a".to_vec(), b"b".to_vec()]);
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"new"[..]), "after compaction");
}

#[test]
fn ingestion_survives_reopen_and_sequence_numbers_go_on_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::open(&path, Options::default()).unwrap();
    let file = write_file(dir.path(), "f.sst", &[("k1", Some("v1")), ("k2", Some("v2"))]);
    ingest(&db, &[&file]).unwrap();
    db.close().unwrap();

    let db = Db::open(&path, Options::default()).unwrap();
    assert_eq!(db.get("k1").unwrap().as_deref(), Some(&b"v1"[..]));
    // A write after the reopen must be newer than the ingested entries.
    db.put("k2", "after reopen").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get("k2").unwrap().as_deref(), Some(&b"after reopen"[..]));
    let keys: Vec<_> = db.iter().map(|kv| kv.unwrap().0).collect();
    assert_eq!(keys, [b"k1".to_vec(), b"k2".to_vec()]);
}

#[test]
fn bad_files_and_bad_orders_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();

    let mut w = SstFileWriter::create(dir.path().join("order.sst"), &Options::default()).unwrap();
    w.put("b", "1").unwrap();
    assert!(matches!(w.put("a", "2"), Err(Error::InvalidArgument(_))));
    assert!(matches!(w.put("b", "2"), Err(Error::InvalidArgument(_))), "a repeated key");
    let empty = SstFileWriter::create(dir.path().join("empty.sst"), &Options::default()).unwrap();
    assert!(matches!(empty.finish(), Err(Error::InvalidArgument(_))));

    let one = write_file(dir.path(), "one.sst", &[("a", Some("1")), ("m", Some("1"))]);
    let two = write_file(dir.path(), "two.sst", &[("k", Some("2")), ("z", Some("2"))]);
    assert!(matches!(ingest(&db, &[&one, &two]), Err(Error::InvalidArgument(_))), "overlapping files");
    assert_eq!(db.get("a").unwrap(), None, "nothing of a refused ingestion is applied");
    let none: [&Path; 0] = [];
    assert!(matches!(ingest(&db, &none), Err(Error::InvalidArgument(_))));

    // A table of a database holds sequence numbers other than 0: not an external file.
    db.put("x", "1").unwrap();
    db.flush().unwrap();
    let own = std::fs::read_dir(dir.path().join("db"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sst"))
        .unwrap();
    assert!(matches!(ingest(&db, &[&own]), Err(Error::InvalidArgument(_))));

    let mut bytes = std::fs::read(&one).unwrap();
    let mid = bytes.len() / 3;
    bytes[mid] ^= 0x55;
    let damaged = dir.path().join("damaged.sst");
    std::fs::write(&damaged, &bytes).unwrap();
    assert!(matches!(ingest(&db, &[&damaged]), Err(Error::Corruption(_))));
    assert!(matches!(ingest(&db, &[&dir.path().join("missing.sst")]), Err(Error::Io { .. })));
}

#[test]
fn writers_running_during_an_ingestion_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
    let entries: Vec<(String, Option<String>)> =
        (0..5000).map(|i| (format!("bulk{i:06}"), Some(format!("v{i}")))).collect();
    let refs: Vec<(&str, Option<&str>)> = entries.iter().map(|(k, v)| (k.as_str(), v.as_deref())).collect();
    let file = write_file(dir.path(), "bulk.sst", &refs);
    std::thread::scope(|s| {
        let writer = s.spawn(|| {
            for i in 0..3000 {
                db.put(format!("live{i:06}"), "x").unwrap();
            }
        });
        ingest(&db, &[&file]).unwrap();
        writer.join().unwrap();
    });
    assert_eq!(db.prefix("live").count(), 3000);
    assert_eq!(db.prefix("bulk").count(), 5000);
    assert_eq!(db.get("bulk004999").unwrap().as_deref(), Some(&b"v4999"[..]));
}

#[derive(Debug, Clone)]
enum Op {
    Put(u8, u8),
    Delete(u8),
    DeleteRange(u8, u8),
    Flush,
    Compact,
    /// Background compactions run, the memtable stays.
    Settle,
    Ingest(BTreeMap<u8, Option<u8>>),
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..40, any::<u8>()).prop_map(|(k, v)| Op::Put(k, v)),
        1 => (0u8..40).prop_map(Op::Delete),
        1 => (0u8..40, 0u8..12).prop_map(|(k, n)| Op::DeleteRange(k, k.saturating_add(n))),
        1 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Settle),
        2 => prop::collection::btree_map(0u8..40, prop::option::of(any::<u8>()), 1..12).prop_map(Op::Ingest),
        1 => Just(Op::Reopen),
    ]
}

fn key(k: u8) -> String {
    format!("k{k:02}")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn ingestion_agrees_with_a_btreemap(ops in prop::collection::vec(op(), 1..30)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let mut db = Db::open(&path, Options::default()).unwrap();
        let mut model: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        for (i, op) in ops.iter().enumerate() {
            match op {
                Op::Put(k, v) => {
                    db.put(key(*k), [*v]).unwrap();
                    model.insert(key(*k), vec![*v]);
                }
                Op::Delete(k) => {
                    db.delete(key(*k)).unwrap();
                    model.remove(&key(*k));
                }
                Op::DeleteRange(begin, end) => {
                    db.delete_range(key(*begin), key(*end)).unwrap();
                    model.retain(|k, _| *k < key(*begin) || *k >= key(*end));
                }
                Op::Flush => db.flush().unwrap(),
                Op::Compact => db.compact_range(None, None).unwrap(),
                Op::Settle => {
                    db.wait_for_compactions(None).unwrap();
                }
                Op::Ingest(entries) => {
                    let file = dir.path().join(format!("{i}.sst"));
                    let mut w = SstFileWriter::create(&file, &Options::default()).unwrap();
                    for (k, v) in entries {
                        match v {
                            Some(v) => {
                                w.put(key(*k), [*v]).unwrap();
                                model.insert(key(*k), vec![*v]);
                            }
                            None => {
                                w.delete(key(*k)).unwrap();
                                model.remove(&key(*k));
                            }
                        }
                    }
                    w.finish().unwrap();
                    ingest(&db, &[&file]).unwrap();
                }
                Op::Reopen => {
                    db.close().unwrap();
                    db = Db::open(&path, Options::default()).unwrap();
                }
            }
        }
        let got: Vec<(Vec<u8>, Vec<u8>)> = db.iter().map(Result::unwrap).collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone().into_bytes(), v.clone())).collect();
        prop_assert_eq!(got, want);
        for k in 0..40u8 {
            prop_assert_eq!(db.get(key(k)).unwrap(), model.get(&key(k)).cloned());
        }
    }
}

/// Replacing a range's contents as a Raft snapshot install does: delete the old range, ingest
/// the new contents. The old contents sit in the last level, so the new file goes to the level
/// above, and a background compaction then merges the two into the last level, where entries
/// every reader sees get sequence number 0. A deletion still in the memtable, older than the
/// ingested entries but above them, must not then hide them.
#[test]
fn ingested_entries_survive_a_compaction_below_an_older_range_deletion() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
    let old = write_file(dir.path(), "old.sst", &[("a", Some("old")), ("b", Some("old"))]);
    ingest(&db, &[&old]).unwrap();
    db.delete_range("a", "b\0").unwrap();
    let new =
        write_file(dir.path(), "new.sst", &[("a", Some("new")), ("b", Some("new")), ("c", Some("new"))]);
    ingest(&db, &[&new]).unwrap();
    assert!(db.wait_for_compactions(None).unwrap());
    let want: Vec<(Vec<u8>, Vec<u8>)> = ["a", "b", "c"].map(|k| (k.into(), b"new".to_vec())).into();
    let got: Vec<_> = db.iter().map(Result::unwrap).collect();
    assert_eq!(got, want);
    db.flush().unwrap();
    assert!(db.wait_for_compactions(None).unwrap());
    assert_eq!(db.iter().map(Result::unwrap).collect::<Vec<_>>(), want, "after the deletion's flush");
}
