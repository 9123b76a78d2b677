//! `Db::open_read_only`: sees flushed and unflushed data, refuses writes, takes no lock, and
//! leaves the directory byte-identical.

use std::collections::BTreeMap;
use std::path::Path;

use strata::{Db, Error, Options, ReadOptions, WriteOptions};

fn snapshot_dir(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap())
        })
        .collect()
}

#[test]
fn read_only_open_sees_everything_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let writer = Db::open(dir.path(), Options::default()).unwrap();
    let w = WriteOptions::default();
    for i in 0..1000u32 {
        writer.put_opt(&w, format!("k{i:04}").as_bytes(), &[7u8; 300]).unwrap();
    }
    writer.flush().unwrap();
    writer.put_opt(&w, b"only-in-the-wal", b"v").unwrap();
    writer.delete_opt(&w, b"k0001").unwrap();

    // The writer still holds the lock: a read-only handle does not need it.
    let ro = Db::open_read_only(dir.path(), Options::default()).unwrap();
    assert_eq!(ro.get(b"only-in-the-wal").unwrap().unwrap(), b"v");
    drop(ro);
    drop(writer);

    let before = snapshot_dir(dir.path());
    {
        let ro = Db::open_read_only(dir.path(), Options::default()).unwrap();
        let r = ReadOptions::new();
        assert_eq!(ro.get_opt(&r, b"k0000").unwrap().unwrap(), vec![7u8; 300]);
        assert_eq!(ro.get_opt(&r, b"only-in-the-wal").unwrap().unwrap(), b"v");
        assert_eq!(ro.get_opt(&r, b"k0001").unwrap(), None);
        let mut it = ro.cursor(&r).unwrap();
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.next();
        }
        assert_eq!(n, 1000);
        assert!(matches!(ro.put_opt(&w, b"x", b"y"), Err(Error::ReadOnly)));
        assert!(matches!(ro.flush(), Err(Error::ReadOnly)));
        assert!(matches!(ro.compact_range(None, None), Err(Error::ReadOnly)));
    }
    assert_eq!(snapshot_dir(dir.path()), before, "a read-only open must not touch the directory");
}

#[test]
fn read_only_open_of_a_missing_database_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        Db::open_read_only(dir.path().join("nope"), Options::default()),
        Err(Error::NotADatabase(_))
    ));
    assert!(matches!(Db::open_read_only(dir.path(), Options::default()), Err(Error::NotADatabase(_))));
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}
