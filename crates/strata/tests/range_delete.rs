//! Range deletions beyond the model test: tombstones straddling compaction output tables,
//! recovery after a power loss and after a killed process, column families, transactions,
//! repair, checkpoints, blob garbage, argument checks, and the format versions a table and the
//! MANIFEST take only once a range deletion exists.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use strata::txn::WriteBatchWithIndex;
use strata::{Db, Error, Options, ReadOptions, WriteOptions};
use strata_testkit::{CrashMode, MemFs};

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// Incompressible bytes, so table sizes follow the value sizes.
fn value(i: u32, len: usize) -> Vec<u8> {
    let mut x = u64::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn keys(db: &Db, ro: &ReadOptions) -> Vec<Vec<u8>> {
    db.iter_opt(ro).map(|kv| kv.map(|(k, _)| k)).collect::<strata::Result<_>>().unwrap()
}

fn sync() -> WriteOptions {
    WriteOptions { sync: true, disable_wal: false }
}

fn table_versions(dir: &Path) -> Vec<u32> {
    let mut versions = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "sst") {
            let bytes = std::fs::read(&path).unwrap();
            let at = bytes.len() - 16;
            versions.push(u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()));
        }
    }
    versions
}

#[test]
fn tombstones_straddling_output_tables_keep_levels_disjoint() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { target_file_size: 64 << 10, write_buffer_size: 256 << 10, ..Options::default() };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    for i in 0..4000 {
        db.put(key(i), value(i, 200)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let before: usize = (1..7)
        .map(|l| db.property(&format!("strata.num-files-at-level{l}")).unwrap().parse::<usize>().unwrap())
        .sum();
    assert!(before > 4, "several output tables ({before})");
    let snap = db.snapshot();
    db.delete_range(key(500), key(3300)).unwrap();
    db.put(key(1000), b"after").unwrap();
    db.delete_range(key(3200), key(3400)).unwrap();
    db.flush().unwrap();
    // Compaction keeps the tombstones (the snapshot needs the keys) and cuts them at table edges.
    db.compact_range(None, None).unwrap();
    let want: Vec<Vec<u8>> = (0..500).chain([1000]).chain(3400..4000).map(key).collect();
    assert_eq!(keys(&db, &ReadOptions::new()), want);
    let at_snap = ReadOptions { snapshot: Some(snap.clone()), ..ReadOptions::new() };
    assert_eq!(keys(&db, &at_snap).len(), 4000);
    assert_eq!(db.get_opt(&at_snap, &key(2000)).unwrap(), Some(value(2000, 200)));
    assert_eq!(db.get(key(2000)).unwrap(), None);
    drop((snap, at_snap));
    db.compact_range(None, None).unwrap();
    drop(db);
    let db = Db::open(dir.path(), opts).unwrap();
    // Released: the covered entries and the tombstones left the bottom level (the files the
    // iterators above kept alive are gone once reopened).
    assert!(table_versions(dir.path()).iter().all(|&v| v == 1), "{:?}", table_versions(dir.path()));
    assert_eq!(keys(&db, &ReadOptions::new()), want);
    assert_eq!(db.get(key(1000)).unwrap(), Some(b"after".to_vec()));
}

#[test]
fn a_database_that_never_deletes_a_range_keeps_version_1_tables() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put(b"a", b"1").unwrap();
    db.delete_range(b"z", b"b").unwrap(); // empty: no record, no tombstone
    db.flush().unwrap();
    assert_eq!(table_versions(dir.path()), [1]);
    db.delete_range(b"a", b"b").unwrap();
    db.flush().unwrap(); // a table holding only a tombstone
    let mut v = table_versions(dir.path());
    v.sort_unstable();
    assert_eq!(v, [1, 2]);
    assert_eq!(db.get(b"a").unwrap(), None);
}

#[test]
fn a_synced_range_delete_survives_power_loss_without_a_flush() {
    for mode in [CrashMode::DropUnsynced, CrashMode::Pages(7), CrashMode::Pages(99), CrashMode::Seeded(3)] {
        let fs = MemFs::new();
        let opts = || Options { fs: Arc::new(fs.clone()), ..Options::default() };
        let db = Db::open("/db", opts()).unwrap();
        for i in 0..300 {
            db.put(key(i), value(i, 50)).unwrap();
        }
        db.flush().unwrap();
        for i in 300..400 {
            db.put(key(i), value(i, 50)).unwrap();
        }
        db.delete_range_opt(&sync(), &key(100), &key(350)).unwrap();
        fs.crash_with(mode);
        drop(db);
        let db = Db::open("/db", opts()).unwrap();
        let want: Vec<Vec<u8>> = (0..100).chain(350..400).map(key).collect();
        assert_eq!(keys(&db, &ReadOptions::new()), want, "{mode:?}");
        assert_eq!(db.get(key(200)).unwrap(), None);
        assert_eq!(db.get(key(320)).unwrap(), None);
    }
}

#[test]
fn a_dropped_database_replays_its_range_delete_from_the_wal() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for i in 0..50 {
        db.put(key(i), b"v").unwrap();
    }
    db.flush().unwrap();
    db.delete_range(key(10), key(40)).unwrap();
    db.put(key(20), b"again").unwrap();
    drop(db);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let want: Vec<Vec<u8>> = (0..10).chain([20]).chain(40..50).map(key).collect();
    assert_eq!(keys(&db, &ReadOptions::new()), want);
}

/// The child of `a_killed_process_keeps_its_synced_range_delete`: runs only when the parent
/// sets STRATA_RANGE_DEL_DIR.
#[test]
#[ignore = "run by a_killed_process_keeps_its_synced_range_delete as a child process"]
fn range_delete_child() {
    let Ok(dir) = std::env::var("STRATA_RANGE_DEL_DIR") else { return };
    let db = Db::open(&dir, Options::default()).unwrap();
    for i in 0..200 {
        db.put(key(i), value(i, 30)).unwrap();
    }
    db.delete_range_opt(&sync(), &key(50), &key(150)).unwrap();
    println!("<deleted>");
    loop {
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_killed_process_keeps_its_synced_range_delete() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["range_delete_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env("STRATA_RANGE_DEL_DIR", dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let acked = BufReader::new(stdout).lines().map_while(Result::ok).any(|l| l.contains("<deleted>"));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(acked, "the child acknowledged the range delete");
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let want: Vec<Vec<u8>> = (0..50).chain(150..200).map(key).collect();
    assert_eq!(keys(&db, &ReadOptions::new()), want);
}

#[test]
fn column_families_are_separate_keyspaces() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let cf = db.create_cf("other", Options::default()).unwrap();
    for k in ["a", "b", "c"] {
        db.put(k, "default").unwrap();
        db.put_cf(&cf, k, "other").unwrap();
    }
    db.delete_range_cf(&cf, "a", "c").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get_cf(&cf, "b").unwrap(), None);
    assert_eq!(db.get_cf(&cf, "c").unwrap(), Some(b"other".to_vec()));
    assert_eq!(db.get("b").unwrap(), Some(b"default".to_vec()));
    drop(cf);
    drop(db);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let cf = db.cf("other").unwrap();
    assert_eq!(db.get_cf(&cf, "a").unwrap(), None);
    assert_eq!(db.get("a").unwrap(), Some(b"default".to_vec()));
}

#[test]
fn arguments_are_checked_and_empty_ranges_do_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put(b"", b"empty key").unwrap();
    db.put(b"m", b"1").unwrap();
    let long = vec![b'k'; strata::batch::MAX_KEY_LEN + 1];
    assert!(matches!(db.delete_range(b"a", &long), Err(Error::InvalidArgument(_))));
    assert!(matches!(db.delete_range(&long, b"a"), Err(Error::InvalidArgument(_))));
    db.delete_range(b"z", b"a").unwrap();
    db.delete_range(b"m", b"m").unwrap();
    assert_eq!(db.get(b"m").unwrap(), Some(b"1".to_vec()));
    db.delete_range(b"", b"a").unwrap(); // the empty key is the smallest key
    assert_eq!(db.get(b"").unwrap(), None);
    assert_eq!(db.get(b"m").unwrap(), Some(b"1".to_vec()));
}

#[test]
fn transactions_and_indexed_batches_refuse_range_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put(b"a", b"1").unwrap();
    let mut txn = db.begin_transaction(&WriteOptions::default());
    assert!(matches!(txn.delete_range(b"a", b"b"), Err(Error::NotSupported(_))));
    txn.commit().unwrap();
    let mut wb = WriteBatchWithIndex::new();
    assert!(matches!(wb.delete_range(b"a", b"b"), Err(Error::NotSupported(_))));
    assert!(wb.is_empty());
    assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
}

#[test]
fn an_optimistic_transaction_conflicts_with_a_range_delete_of_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put(b"k", b"1").unwrap();
    let mut txn = db.begin_transaction(&WriteOptions::default());
    assert_eq!(txn.get_for_update(b"k").unwrap(), Some(b"1".to_vec()));
    db.delete_range(b"a", b"z").unwrap();
    txn.put(b"k", b"2").unwrap();
    assert!(matches!(txn.commit(), Err(Error::Busy(_))));
}

#[test]
fn checkpoints_and_repair_keep_keys_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for i in 0..100 {
        db.put(key(i), b"v").unwrap();
    }
    db.flush().unwrap();
    db.delete_range(key(20), key(80)).unwrap();
    db.flush().unwrap();
    db.delete_range(key(0), key(5)).unwrap(); // only in the memtable and WAL
    let cp = tempfile::tempdir().unwrap();
    let target = cp.path().join("cp");
    db.checkpoint(&target).unwrap();
    drop(db);
    let want: Vec<Vec<u8>> = (5..20).chain(80..100).map(key).collect();
    let copy = Db::open(&target, Options::default()).unwrap();
    assert_eq!(keys(&copy, &ReadOptions::new()), want);
    drop(copy);
    // Repair rebuilds the MANIFEST from the tables (the tombstones' table intact).
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let path = e.unwrap().path();
        if path.file_name().unwrap().to_string_lossy().starts_with("MANIFEST") {
            std::fs::remove_file(path).unwrap();
        }
    }
    Db::repair(dir.path(), Options::default()).unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(keys(&db, &ReadOptions::new()), want);
    assert_eq!(db.get(key(50)).unwrap(), None);
}

#[test]
fn range_deleted_blob_values_become_garbage_and_their_file_goes() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { min_blob_size: 64, ..Options::default() };
    let db = Db::open(dir.path(), opts).unwrap();
    for i in 0..100 {
        db.put(key(i), value(i, 500)).unwrap();
    }
    db.flush().unwrap();
    let blob_bytes = || db.property("strata.total-blob-file-size").unwrap().parse::<u64>().unwrap();
    assert!(blob_bytes() > 0);
    db.delete_range(key(0), key(100)).unwrap();
    db.put(b"small", b"v").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(blob_bytes(), 0, "every value of the blob file was range-deleted");
    assert_eq!(keys(&db, &ReadOptions::new()), [b"small".to_vec()]);
}
