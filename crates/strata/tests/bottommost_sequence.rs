//! Bottommost sequence zeroing: a compaction into the last level writes sequence number 0 for
//! a value every snapshot sees, and keeps the number of anything a snapshot, a range
//! tombstone or a transaction still orders against it. Reads, snapshot reads, transactions'
//! conflict checks and reopen give the same answers either way.

use strata::internal::{db::for_each_internal_entry, key};
use strata::{Db, Error, Options, ReadOptions, WriteOptions};

/// (user key, sequence number, kind) of every internal entry of the default family.
fn entries(db: &Db) -> Vec<(Vec<u8>, u64, key::ValueKind)> {
    let mut seen = Vec::new();
    for_each_internal_entry(db, None, None, &mut |ikey: &[u8], _: &[u8]| {
        let p = key::parse(ikey).expect("an internal key");
        seen.push((p.user_key.to_vec(), p.seq, p.kind));
        Ok(true)
    })
    .unwrap();
    seen
}

fn seqs_of(db: &Db, user_key: &str) -> Vec<u64> {
    entries(db).into_iter().filter(|(k, _, _)| k == user_key.as_bytes()).map(|(_, s, _)| s).collect()
}

fn get(db: &Db, k: &str) -> Option<String> {
    db.get(k).unwrap().map(|v| String::from_utf8(v).unwrap())
}

#[test]
fn without_snapshots_the_last_level_holds_only_sequence_zero() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for i in 0..500u32 {
        db.put(format!("k{i:04}"), format!("v{i}")).unwrap();
    }
    db.delete("k0007").unwrap();
    db.compact_range(None, None).unwrap();
    let all = entries(&db);
    assert_eq!(all.len(), 499, "the tombstone and what it hid are gone");
    assert!(all.iter().all(|(_, seq, kind)| *seq == 0 && *kind == key::ValueKind::Put), "{:?}", &all[..3]);

    // Newer writes above sequence-0 values win, in the memtable, on L0 and after compaction.
    db.put("k0001", "newer").unwrap();
    assert_eq!(get(&db, "k0001").as_deref(), Some("newer"));
    db.flush().unwrap();
    assert!(seqs_of(&db, "k0001")[0] > 0, "L0 keeps its numbers");
    assert_eq!(get(&db, "k0001").as_deref(), Some("newer"));
    db.compact_range(None, None).unwrap();
    assert_eq!(seqs_of(&db, "k0001"), vec![0]);
    drop(db);

    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(get(&db, "k0001").as_deref(), Some("newer"));
    assert_eq!(get(&db, "k0002").as_deref(), Some("v2"));
    assert_eq!(get(&db, "k0007"), None);
    // Sequence numbers go on from where they were, not from the zeros.
    let before = db.latest_sequence();
    db.put("k0003", "after reopen").unwrap();
    assert!(db.latest_sequence() > before && before > 500);
}

#[test]
fn a_snapshot_keeps_the_numbers_of_what_it_must_not_see() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put("a", "old").unwrap();
    db.put("b", "kept").unwrap();
    let snap = db.snapshot();
    db.put("a", "new").unwrap();
    db.put("c", "later").unwrap();
    db.compact_range(None, None).unwrap();

    let newest_a = seqs_of(&db, "a");
    assert_eq!(newest_a.len(), 2, "both versions of a: the snapshot reads the old one");
    assert!(newest_a[0] > snap.sequence() && newest_a[1] == 0, "{newest_a:?}");
    assert_eq!(seqs_of(&db, "b"), vec![0]);
    assert!(seqs_of(&db, "c")[0] > snap.sequence());

    let at = ReadOptions { snapshot: Some(snap.clone()), ..ReadOptions::new() };
    assert_eq!(db.get_opt(&at, b"a").unwrap().as_deref(), Some(&b"old"[..]));
    assert_eq!(db.get_opt(&at, b"c").unwrap(), None);
    assert_eq!(get(&db, "a").as_deref(), Some("new"));

    // Once the snapshot is gone, the next compaction zeroes the rest.
    drop(at);
    drop(snap);
    db.compact_range(None, None).unwrap();
    assert!(entries(&db).iter().all(|(_, seq, _)| *seq == 0));
    assert_eq!(get(&db, "a").as_deref(), Some("new"));
}

#[test]
fn a_range_tombstone_a_snapshot_keeps_still_hides_only_what_is_older() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put("m1", "before").unwrap();
    let before_delete = db.snapshot();
    db.delete_range("m", "n").unwrap();
    db.put("m2", "after").unwrap();
    db.compact_range(None, None).unwrap();
    // m1 is zeroed (every snapshot sees it) and still hidden by the newer tombstone; m2 is newer
    // than the tombstone and keeps its number.
    assert_eq!(seqs_of(&db, "m1"), vec![0]);
    assert_eq!(get(&db, "m1"), None);
    assert_eq!(get(&db, "m2").as_deref(), Some("after"));
    let at = ReadOptions { snapshot: Some(before_delete), ..ReadOptions::new() };
    assert_eq!(db.get_opt(&at, b"m1").unwrap().as_deref(), Some(&b"before"[..]));
    assert_eq!(db.get_opt(&at, b"m2").unwrap(), None);
}

#[test]
fn transactions_check_conflicts_against_zeroed_and_kept_numbers_alike() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let w = WriteOptions::default();
    db.put("counter", "1").unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(seqs_of(&db, "counter"), vec![0]);

    // Written before the transaction began (and zeroed): no conflict.
    let mut txn = db.begin_transaction(&w);
    assert_eq!(txn.get_for_update(b"counter").unwrap().as_deref(), Some(&b"1"[..]));
    txn.put(b"counter", b"2").unwrap();
    txn.commit().unwrap();

    // Written after it began, then compacted to the last level: its snapshot keeps the number.
    let mut txn = db.begin_transaction(&w);
    assert_eq!(txn.get_for_update(b"counter").unwrap().as_deref(), Some(&b"2"[..]));
    db.put("counter", "other").unwrap();
    db.compact_range(None, None).unwrap();
    txn.put(b"counter", b"3").unwrap();
    assert!(matches!(txn.commit(), Err(Error::Busy(_))));
    assert_eq!(get(&db, "counter").as_deref(), Some("other"));
}

#[test]
fn merge_operands_keep_their_numbers_and_fold_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::default().with_option_string("merge_operator=uint64add").unwrap();
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let snap = db.snapshot();
    db.merge("n", 5u64.to_le_bytes()).unwrap();
    db.merge("n", 7u64.to_le_bytes()).unwrap();
    db.compact_range(None, None).unwrap();
    let n = entries(&db).into_iter().filter(|(k, _, _)| k == b"n").collect::<Vec<_>>();
    assert!(n.iter().all(|(_, seq, _)| *seq > snap.sequence()), "{n:?}");
    assert_eq!(db.get("n").unwrap(), Some(12u64.to_le_bytes().to_vec()));
    drop(snap);
    db.compact_range(None, None).unwrap();
    assert_eq!(seqs_of(&db, "n"), vec![0], "folded into a value every reader sees");
    assert_eq!(db.get("n").unwrap(), Some(12u64.to_le_bytes().to_vec()));
}
