//! What survives dropping and reopening a `RaftStore`: the vote, the committed log id, the
//! log (with its truncations and purges), the applied log id, the membership and the data.

mod common;

use common::*;
use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftStateMachine};
use openraft::{RaftLogReader, Vote};
use strata_raft::{RaftStore, Response};

#[tokio::test(flavor = "multi_thread")]
async fn log_store_state_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = RaftStore::open(dir.path()).unwrap();
        let mut log = store.log_store();
        log.save_vote(&Vote::new(3, 2)).await.unwrap();
        log.blocking_append((1..=10).map(|i| blank(1, i))).await.unwrap();
        log.save_committed(Some(log_id(1, 7))).await.unwrap();
        log.truncate(log_id(1, 9)).await.unwrap();
        log.blocking_append([blank(2, 9)]).await.unwrap();
        log.purge(log_id(1, 2)).await.unwrap();
    }
    let store = RaftStore::open(dir.path()).unwrap();
    let mut log = store.log_store();
    assert_eq!(log.read_vote().await.unwrap(), Some(Vote::new(3, 2)));
    assert_eq!(log.read_committed().await.unwrap(), Some(log_id(1, 7)));
    let state = log.get_log_state().await.unwrap();
    assert_eq!(state.last_purged_log_id, Some(log_id(1, 2)));
    assert_eq!(state.last_log_id, Some(log_id(2, 9)));
    let ids: Vec<_> = log.try_get_log_entries(0..100).await.unwrap().into_iter().map(|e| e.log_id).collect();
    let mut expected: Vec<_> = (3..=8).map(|i| log_id(1, i)).collect();
    expected.push(log_id(2, 9));
    assert_eq!(ids, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn purging_everything_leaves_the_purged_id_as_last() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = RaftStore::open(dir.path()).unwrap();
        let mut log = store.log_store();
        log.blocking_append((1..=4).map(|i| blank(1, i))).await.unwrap();
        log.purge(log_id(1, 4)).await.unwrap();
    }
    let mut log = RaftStore::open(dir.path()).unwrap().log_store();
    let state = log.get_log_state().await.unwrap();
    assert_eq!((state.last_purged_log_id, state.last_log_id), (Some(log_id(1, 4)), Some(log_id(1, 4))));
    assert!(log.try_get_log_entries(..).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn applied_state_and_data_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = RaftStore::open(dir.path()).unwrap();
        let mut sm = store.state_machine();
        let entries = vec![
            membership(1, 1, &[1, 2, 3]),
            normal(1, 2, write(vec![put("a", "1"), put("b", "2")])),
            normal(1, 3, write(vec![del("a")])),
            blank(2, 4),
        ];
        let responses = sm.apply(entries).await.unwrap();
        assert_eq!(responses, vec![Response { succeeded: true, each: Vec::new() }; 4]);
    }
    let store = RaftStore::open(dir.path()).unwrap();
    let (applied, membership) = store.state_machine().applied_state().await.unwrap();
    assert_eq!(applied, Some(log_id(2, 4)));
    assert_eq!(membership.log_id(), &Some(log_id(1, 1)));
    assert_eq!(membership.voter_ids().collect::<Vec<_>>(), vec![1, 2, 3]);
    assert_eq!(dump(&store), vec![("b".into(), "2".into())]);
}

#[tokio::test(flavor = "multi_thread")]
async fn damaged_records_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let store = RaftStore::open(dir.path()).unwrap();
    let db = store.db();
    let meta = db.cf(strata_raft::codec::META_CF).unwrap();
    db.put_cf(&meta, strata_raft::codec::VOTE_KEY, [0xff, 0xff, 0xff]).unwrap();
    let log_cf = db.cf(strata_raft::codec::LOG_CF).unwrap();
    db.put_cf(&log_cf, 5u64.to_be_bytes(), b"not an entry").unwrap();
    let sm_cf = db.cf(strata_raft::codec::SM_META_CF).unwrap();
    db.put_cf(&sm_cf, strata_raft::codec::APPLIED_KEY, [0xff; 20]).unwrap();

    let mut log = store.log_store();
    assert!(log.read_vote().await.is_err());
    assert!(log.try_get_log_entries(0..10).await.is_err());
    assert!(log.get_log_state().await.is_err());
    assert!(store.state_machine().applied_state().await.is_err());
}
