//! End-to-end behaviour of the public API on a real directory: writes, reads, iteration in both
//! directions, snapshots, merges, flush, compaction and reopen.

use strata::{merge, Db, Options, ReadOptions, WriteBatch, WriteOptions};

fn opts() -> Options {
    Options { write_buffer_size: 64 << 10, merge_operator: merge::builtin("uint64add"), ..Options::default() }
}

fn collect(db: &Db, ro: &ReadOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.cursor(ro).unwrap();
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

#[test]
fn put_get_delete_survive_flush_compaction_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let w = WriteOptions::default();
    let r = ReadOptions::new();
    {
        let db = Db::open(dir.path(), opts()).unwrap();
        for i in 0..5000u32 {
            let v = vec![(i % 251) as u8; if i % 3 == 0 { 400 } else { 20 }];
            db.put_opt(&w, format!("key{i:06}").as_bytes(), &v).unwrap();
        }
        for i in (0..5000u32).step_by(7) {
            db.delete_opt(&w, format!("key{i:06}").as_bytes()).unwrap();
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        assert_eq!(db.get_opt(&r, b"key000001").unwrap().unwrap(), vec![1u8; 20]);
        assert_eq!(db.get_opt(&r, b"key000003").unwrap().unwrap(), vec![3u8; 400]);
        assert_eq!(db.get_opt(&r, b"key000007").unwrap(), None);
    }
    let db = Db::open(dir.path(), opts()).unwrap();
    assert_eq!(db.get_opt(&r, b"key000003").unwrap().unwrap(), vec![3u8; 400]);
    assert_eq!(db.get_opt(&r, b"key000014").unwrap(), None);
    let all = collect(&db, &r);
    assert_eq!(all.len(), 5000 - 5000usize.div_ceil(7));
}

#[test]
fn unflushed_writes_are_recovered_from_the_wal() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), opts()).unwrap();
        db.put(b"a", b"1").unwrap();
        let mut b = WriteBatch::new();
        b.put(b"b", b"2").delete(b"a").merge(b"c", 5u64.to_le_bytes());
        db.write_opt(&WriteOptions { sync: true, disable_wal: false }, b).unwrap();
    }
    let db = Db::open(dir.path(), opts()).unwrap();
    let r = ReadOptions::new();
    assert_eq!(db.get_opt(&r, b"a").unwrap(), None);
    assert_eq!(db.get_opt(&r, b"b").unwrap().unwrap(), b"2");
    assert_eq!(db.get_opt(&r, b"c").unwrap().unwrap(), 5u64.to_le_bytes());
}

#[test]
fn snapshots_iterators_and_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts()).unwrap();
    let w = WriteOptions::default();
    for k in ["a", "b", "c", "d", "e"] {
        db.put_opt(&w, k.as_bytes(), b"old").unwrap();
    }
    let snap = db.snapshot();
    db.put_opt(&w, b"c", b"new").unwrap();
    db.delete_opt(&w, b"d").unwrap();
    db.flush().unwrap();

    let mut at = ReadOptions::new();
    at.snapshot = Some(snap);
    assert_eq!(db.get_opt(&at, b"c").unwrap().unwrap(), b"old");
    assert_eq!(collect(&db, &at).len(), 5);
    assert_eq!(collect(&db, &ReadOptions::new()).len(), 4);

    let mut bounded = ReadOptions::new();
    bounded.lower_bound = Some(b"b".to_vec());
    bounded.upper_bound = Some(b"e".to_vec());
    let keys: Vec<_> = collect(&db, &bounded).into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, vec![b"b".to_vec(), b"c".to_vec()]);

    let mut it = db.cursor(&ReadOptions::new()).unwrap();
    it.seek_to_last();
    assert_eq!(it.key(), b"e");
    it.prev();
    assert_eq!((it.key(), it.value()), (&b"c"[..], &b"new"[..]));
    it.next();
    assert_eq!(it.key(), b"e");
    it.seek_for_prev(b"d");
    assert_eq!(it.key(), b"c");
}

#[test]
fn merges_fold_across_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts()).unwrap();
    let w = WriteOptions::default();
    for round in 0..10u64 {
        for k in 0..100u64 {
            db.merge_opt(&w, format!("counter{k}").as_bytes(), &(round + 1).to_le_bytes()).unwrap();
        }
        if round % 3 == 0 {
            db.flush().unwrap();
        }
    }
    db.compact_range(None, None).unwrap();
    let v = db.get(b"counter42").unwrap().unwrap();
    assert_eq!(u64::from_le_bytes(v.try_into().unwrap()), 55);
}
