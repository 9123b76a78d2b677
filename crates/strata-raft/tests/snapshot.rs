//! Snapshots: built on one store and installed on another whatever its prior data, empty
//! state machines, damaged files refused before anything changes, the current snapshot kept
//! across reopen (older files deleted), and an install a crash interrupted redone on open.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::RaftSnapshotBuilder;
use strata_raft::{RaftStore, TypeConfig};

fn open(dir: &Path) -> RaftStore {
    RaftStore::open(dir).unwrap()
}

/// A store with some applied data and a membership, and a snapshot built of it.
async fn leader(dir: &Path) -> (RaftStore, Snapshot<TypeConfig>) {
    let store = open(dir);
    let mut sm = store.state_machine();
    let ops = (0..500).map(|i| put(&format!("key{i:04}"), &format!("value{i}"))).collect();
    sm.apply([
        membership(1, 1, &[1, 2]),
        normal(1, 2, write(ops)),
        normal(2, 3, write(vec![del("key0007"), put("", "empty")])),
    ])
    .await
    .unwrap();
    let snapshot = sm.get_snapshot_builder().await.build_snapshot().await.unwrap();
    (store, snapshot)
}

/// A store holding other data: keys before, among and after the leader's.
async fn follower(dir: &Path) -> RaftStore {
    let store = open(dir);
    let ops = vec![
        put("", "old"),
        put("a-before", "x"),
        put("key0003", "stale"),
        put("key0007", "resurrected"),
        put("zzz", "after"),
    ];
    store.state_machine().apply([blank(1, 1), normal(1, 2, write(ops))]).await.unwrap();
    store
}

fn snapshot_files(store: &RaftStore) -> Vec<PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(store.snapshot_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "snap"))
        .collect();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread")]
async fn installed_snapshot_replaces_the_followers_state() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (leader, snapshot) = leader(a.path()).await;
    assert_eq!(snapshot.meta.last_log_id, Some(log_id(2, 3)));
    let follower = follower(b.path()).await;
    let mut sm = follower.state_machine();
    let mut received = sm.begin_receiving_snapshot().await.unwrap();
    assert!(received.starts_with(follower.snapshot_dir()));
    std::fs::copy(&*snapshot.snapshot, &*received).unwrap();
    sm.install_snapshot(&snapshot.meta, std::mem::take(&mut received)).await.unwrap();

    assert_eq!(dump(&follower), dump(&leader));
    assert_eq!(dump(&follower).len(), 500);
    let mut leader_sm = leader.state_machine();
    assert_eq!(sm.applied_state().await.unwrap(), leader_sm.applied_state().await.unwrap());
    let current = sm.get_current_snapshot().await.unwrap().unwrap();
    assert_eq!(current.meta, snapshot.meta);
    assert_eq!(snapshot_files(&follower), vec![*current.snapshot]);
    // The follower goes on applying after the snapshot.
    sm.apply([normal(2, 4, write(vec![put("new", "1")]))]).await.unwrap();
    assert_eq!(follower.get(b"new").unwrap().as_deref(), Some(&b"1"[..]));
}

#[tokio::test(flavor = "multi_thread")]
async fn empty_state_machine_snapshots_and_installs() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let empty = open(a.path());
    let snapshot = empty.state_machine().get_snapshot_builder().await.build_snapshot().await.unwrap();
    assert_eq!(snapshot.meta.last_log_id, None);
    let follower = follower(b.path()).await;
    let mut sm = follower.state_machine();
    sm.install_snapshot(&snapshot.meta, snapshot.snapshot).await.unwrap();
    assert!(dump(&follower).is_empty());
    assert_eq!(sm.applied_state().await.unwrap(), (None, Default::default()));
}

#[tokio::test(flavor = "multi_thread")]
async fn damaged_snapshot_file_is_refused_before_anything_changes() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_leader, snapshot) = leader(a.path()).await;
    let follower = follower(b.path()).await;
    let before = dump(&follower);
    let mut sm = follower.state_machine();
    let applied_before = sm.applied_state().await.unwrap();
    let bytes = std::fs::read(&*snapshot.snapshot).unwrap();
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 0x40;
    for damaged in [flipped, bytes[..bytes.len() - 3].to_vec(), bytes[..bytes.len() / 2].to_vec()] {
        let received = sm.begin_receiving_snapshot().await.unwrap();
        std::fs::write(&*received, &damaged).unwrap();
        let r = sm.install_snapshot(&snapshot.meta, received).await;
        assert!(r.is_err(), "damaged file of {} bytes installed", damaged.len());
        assert_eq!(dump(&follower), before);
        assert_eq!(sm.applied_state().await.unwrap(), applied_before);
    }
    let sm_cf = follower.db().cf(strata_raft::codec::SM_META_CF).unwrap();
    assert_eq!(follower.db().get_cf(&sm_cf, strata_raft::codec::INSTALLING_KEY).unwrap(), None);
}

#[tokio::test(flavor = "multi_thread")]
async fn current_snapshot_survives_reopen_and_older_files_go() {
    let a = tempfile::tempdir().unwrap();
    let (first_meta, second) = {
        let (store, first) = leader(a.path()).await;
        let mut sm = store.state_machine();
        sm.apply([normal(3, 4, write(vec![put("more", "1")]))]).await.unwrap();
        let second = sm.get_snapshot_builder().await.build_snapshot().await.unwrap();
        assert_eq!(snapshot_files(&store), vec![(*second.snapshot).clone()]);
        (first.meta, second)
    };
    assert_ne!(first_meta, second.meta);
    let store = open(a.path());
    let current = store.state_machine().get_current_snapshot().await.unwrap().unwrap();
    assert_eq!(current.meta, second.meta);
    assert_eq!(*current.snapshot, *second.snapshot);
    assert_eq!(snapshot_files(&store), vec![*current.snapshot]);
}

#[tokio::test(flavor = "multi_thread")]
async fn received_file_never_installed_is_dropped_on_open() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_leader, snapshot) = leader(a.path()).await;
    {
        let follower = follower(b.path()).await;
        let name = snapshot.snapshot.file_name().unwrap();
        // As if the crash came after adopting the file, before the marker.
        std::fs::copy(&*snapshot.snapshot, follower.snapshot_dir().join(name)).unwrap();
    }
    let follower = open(b.path());
    assert!(follower.state_machine().get_current_snapshot().await.unwrap().is_none());
    assert!(snapshot_files(&follower).is_empty());
    assert_eq!(follower.get(b"zzz").unwrap().as_deref(), Some(&b"after"[..]));
}

#[tokio::test(flavor = "multi_thread")]
async fn install_interrupted_after_the_marker_is_redone_on_open() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (leader, snapshot) = leader(a.path()).await;
    let expected = dump(&leader);
    let expected_state = leader.state_machine().applied_state().await.unwrap();
    {
        let follower = follower(b.path()).await;
        let name = snapshot.snapshot.file_name().unwrap().to_str().unwrap();
        std::fs::copy(&*snapshot.snapshot, follower.snapshot_dir().join(name)).unwrap();
        let db = follower.db();
        let sm_cf = db.cf(strata_raft::codec::SM_META_CF).unwrap();
        let sync = strata::WriteOptions { sync: true, disable_wal: false };
        db.put_cf_opt(&sm_cf, &sync, strata_raft::codec::INSTALLING_KEY, name.as_bytes()).unwrap();
        // Partway: part of the old data cleared, part of the snapshot's keys in.
        db.delete(b"a-before").unwrap();
        db.put(b"key0001", b"value1").unwrap();
    }
    for _ in 0..2 {
        let follower = open(b.path());
        assert_eq!(dump(&follower), expected);
        let mut sm = follower.state_machine();
        assert_eq!(sm.applied_state().await.unwrap(), expected_state);
        assert_eq!(sm.get_current_snapshot().await.unwrap().unwrap().meta, snapshot.meta);
        let sm_cf = follower.db().cf(strata_raft::codec::SM_META_CF).unwrap();
        assert_eq!(follower.db().get_cf(&sm_cf, strata_raft::codec::INSTALLING_KEY).unwrap(), None);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn snapshot_id_that_is_not_a_file_name_is_refused() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_leader, snapshot) = leader(a.path()).await;
    let follower = follower(b.path()).await;
    let mut meta = snapshot.meta.clone();
    meta.snapshot_id = "../../escape".into();
    assert!(follower.state_machine().install_snapshot(&meta, snapshot.snapshot).await.is_err());
    assert_eq!(follower.get(b"zzz").unwrap().as_deref(), Some(&b"after"[..]));
}
