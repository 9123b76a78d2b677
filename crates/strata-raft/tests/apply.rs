//! Applying entries: writes, transactions (compares see earlier entries of the same call),
//! membership and blank entries, requests strata would refuse, and the reads the server serves.

mod common;

use common::*;
use openraft::storage::RaftStateMachine;
use strata_raft::{RaftStore, Response};

fn ok(succeeded: bool) -> Response {
    Response { succeeded, each: Vec::new() }
}

#[tokio::test(flavor = "multi_thread")]
async fn txn_takes_the_branch_its_compares_choose() {
    let dir = tempfile::tempdir().unwrap();
    let store = RaftStore::open(dir.path()).unwrap();
    let mut sm = store.state_machine();
    sm.apply([normal(1, 1, write(vec![put("k", "v1")]))]).await.unwrap();
    let r = sm
        .apply([
            normal(1, 2, txn(vec![value_is("k", Some("v1"))], vec![put("t", "yes")], vec![put("f", "yes")])),
            normal(
                1,
                3,
                txn(vec![value_is("k", Some("other"))], vec![put("t2", "yes")], vec![put("f2", "yes")]),
            ),
            normal(1, 4, txn(vec![value_is("absent", None)], vec![put("t3", "yes")], vec![])),
        ])
        .await
        .unwrap();
    assert_eq!(r, vec![ok(true), ok(false), ok(true)]);
    assert_eq!(store.get(b"t").unwrap().as_deref(), Some(&b"yes"[..]));
    assert_eq!(store.get(b"f").unwrap(), None);
    assert_eq!(store.get(b"t2").unwrap(), None);
    assert_eq!(store.get(b"f2").unwrap().as_deref(), Some(&b"yes"[..]));
    assert_eq!(store.get(b"t3").unwrap().as_deref(), Some(&b"yes"[..]));
}

/// A batch of requests in one entry answers each as if it were alone, in order: a transaction
/// sees the writes before it in the batch, and a refused request does not spoil the others.
#[tokio::test(flavor = "multi_thread")]
async fn a_batch_entry_answers_each_request_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = RaftStore::open(dir.path()).unwrap();
    let mut sm = store.state_machine();
    let too_long = String::from_utf8(vec![b'k'; strata::batch::MAX_KEY_LEN + 1]).unwrap();
    let batch = strata_raft::Request::Batch(vec![
        write(vec![put("k", "1")]),
        txn(vec![value_is("k", Some("1"))], vec![put("seen", "yes")], vec![]),
        write(vec![put(&too_long, "x")]),
        txn(vec![value_is("k", Some("2"))], vec![put("wrong", "1")], vec![]),
        write(vec![del("k")]),
    ]);
    let r = sm.apply([normal(1, 1, batch)]).await.unwrap();
    assert_eq!(r, vec![Response { succeeded: false, each: vec![true, true, false, false, true] }]);
    assert_eq!(dump(&store), vec![("seen".into(), "yes".into())]);
}

#[tokio::test(flavor = "multi_thread")]
async fn compares_see_earlier_entries_of_the_same_call() {
    let dir = tempfile::tempdir().unwrap();
    let store = RaftStore::open(dir.path()).unwrap();
    let mut sm = store.state_machine();
    sm.apply([normal(1, 1, write(vec![put("gone", "x")]))]).await.unwrap();
    let r = sm
        .apply([
            normal(1, 2, write(vec![put("a", "1"), del("gone")])),
            normal(
                1,
                3,
                txn(vec![value_is("a", Some("1")), value_is("gone", None)], vec![put("b", "2")], vec![]),
            ),
            normal(1, 4, txn(vec![value_is("b", Some("2"))], vec![del("a")], vec![put("wrong", "1")])),
            normal(1, 5, txn(vec![value_is("a", Some("1"))], vec![put("wrong", "2")], vec![put("c", "3")])),
        ])
        .await
        .unwrap();
    assert_eq!(r, vec![ok(true), ok(true), ok(true), ok(false)]);
    assert_eq!(dump(&store), vec![("b".into(), "2".into()), ("c".into(), "3".into())]);
    let (applied, _) = sm.applied_state().await.unwrap();
    assert_eq!(applied, Some(log_id(1, 5)));
}

#[tokio::test(flavor = "multi_thread")]
async fn refused_requests_have_no_effect_and_do_not_stop_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let store = RaftStore::open(dir.path()).unwrap();
    let mut sm = store.state_machine();
    let huge_key = "k".repeat(strata::batch::MAX_KEY_LEN + 1);
    let r = sm
        .apply([
            normal(1, 1, write(vec![put("ok", "1"), put(&huge_key, "v")])),
            normal(
                1,
                2,
                txn(vec![value_is(&huge_key, None)], vec![put("t", "1"), put(&huge_key, "x")], vec![]),
            ),
            normal(1, 3, txn(vec![value_is("absent", Some("x"))], vec![], vec![put(&huge_key, "x")])),
            normal(1, 4, write(vec![put("after", "1"), put("", "empty key is a key")])),
        ])
        .await
        .unwrap();
    assert_eq!(r, vec![ok(false), ok(false), ok(false), ok(true)]);
    assert_eq!(dump(&store), vec![("".into(), "empty key is a key".into()), ("after".into(), "1".into())]);
    assert_eq!(sm.applied_state().await.unwrap().0, Some(log_id(1, 4)));
}

#[tokio::test(flavor = "multi_thread")]
async fn membership_and_blank_entries_advance_applied_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = RaftStore::open(dir.path()).unwrap();
    let mut sm = store.state_machine();
    let r = sm
        .apply([membership(1, 1, &[1]), blank(1, 2), membership(2, 3, &[1, 2]), blank(2, 4)])
        .await
        .unwrap();
    assert_eq!(r, vec![ok(true); 4]);
    let (applied, m) = sm.applied_state().await.unwrap();
    assert_eq!(applied, Some(log_id(2, 4)));
    assert_eq!(m.log_id(), &Some(log_id(2, 3)));
    assert_eq!(m.voter_ids().collect::<Vec<_>>(), vec![1, 2]);
    assert!(dump(&store).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn scan_honours_bounds_and_limit() {
    let dir = tempfile::tempdir().unwrap();
    let store = RaftStore::open(dir.path()).unwrap();
    let ops = ["a", "b", "c", "d", "e"].iter().map(|k| put(k, k)).collect();
    store.state_machine().apply([normal(1, 1, write(ops))]).await.unwrap();
    let keys = |v: Vec<(Vec<u8>, Vec<u8>)>| {
        v.into_iter().map(|(k, _)| String::from_utf8(k).unwrap()).collect::<Vec<_>>()
    };
    assert_eq!(keys(store.scan(b"b", Some(b"d"), 10).unwrap()), ["b", "c"]);
    assert_eq!(keys(store.scan(b"b", None, 2).unwrap()), ["b", "c"]);
    assert_eq!(keys(store.scan(b"c", None, 10).unwrap()), ["c", "d", "e"]);
    assert!(store.scan(b"z", None, 10).unwrap().is_empty());
}
