//! Three nodes in one process on loopback ports, over the real HTTP network: writes through any
//! node reach every store, transactions take the right branch, reads are linearizable, a
//! partitioned minority stops acknowledging writes while the majority goes on, and a late learner
//! catches up by snapshot.

use std::collections::BTreeSet;
use std::time::Duration;

use strata_server::local_cluster::{fast_timeouts, LocalCluster};
use strata_server::node::NodeConfig;
use strata_server::{Client, ClientError, Compare, Op};

const WAIT: Duration = Duration::from_secs(10);

async fn three_nodes(dir: &std::path::Path, tune: fn(&mut NodeConfig)) -> LocalCluster {
    let cluster = LocalCluster::start(3, dir, tune).await.expect("start nodes");
    cluster.init().await.expect("init");
    let all: BTreeSet<u64> = [1, 2, 3].into();
    cluster.wait_leader(&all, WAIT).await.expect("a leader is elected");
    cluster
}

/// The leader's last applied index, once every node has applied it.
async fn wait_all_applied(cluster: &LocalCluster, ids: &[u64]) -> u64 {
    let leader = cluster.wait_leader(&ids.iter().copied().collect(), WAIT).await.expect("leader");
    let index = cluster.status(leader).and_then(|s| s.last_applied).expect("leader applied something");
    for id in ids {
        assert!(cluster.wait_applied(*id, index, WAIT).await, "node {id} applies up to {index}");
    }
    index
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_writes_through_any_node_reach_every_store() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = three_nodes(dir.path(), fast_timeouts).await;
    for (i, endpoint) in cluster.endpoints().into_iter().enumerate() {
        // Each client knows one node only: followers must send it to the leader.
        let client = Client::new(vec![endpoint]);
        client.put(format!("key{i}").as_bytes(), format!("value{i}").as_bytes()).await.unwrap();
        assert_eq!(
            client.get(format!("key{i}").as_bytes()).await.unwrap(),
            Some(format!("value{i}").into_bytes())
        );
    }
    let client = cluster.client();
    client.delete(b"key1").await.unwrap();
    assert_eq!(client.get(b"key1").await.unwrap(), None);
    client
        .write(vec![
            Op::Put { key: b"a".to_vec(), value: b"1".to_vec() },
            Op::Delete { key: b"key2".to_vec() },
        ])
        .await
        .unwrap();
    wait_all_applied(&cluster, &[1, 2, 3]).await;
    for (id, running) in &cluster.nodes {
        let store = &running.node.store;
        assert_eq!(store.get(b"key0").unwrap(), Some(b"value0".to_vec()), "node {id}");
        assert_eq!(store.get(b"key1").unwrap(), None, "node {id}");
        assert_eq!(store.get(b"key2").unwrap(), None, "node {id}");
        assert_eq!(store.get(b"a").unwrap(), Some(b"1".to_vec()), "node {id}");
    }
    let scanned = client.scan(b"", None, 10).await.unwrap();
    assert_eq!(scanned, vec![(b"a".to_vec(), b"1".to_vec()), (b"key0".to_vec(), b"value0".to_vec())]);
    assert_eq!(client.scan(b"b", Some(b"key1"), 10).await.unwrap().len(), 1);
    assert_eq!(client.scan(b"", None, 1).await.unwrap().len(), 1);
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_txn_takes_the_branch_its_compares_choose() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = three_nodes(dir.path(), fast_timeouts).await;
    let client = cluster.client();
    let absent = vec![Compare::ValueIs { key: b"lock".to_vec(), value: None }];
    let take = vec![Op::Put { key: b"lock".to_vec(), value: b"me".to_vec() }];
    let lost = vec![Op::Put { key: b"lost".to_vec(), value: b"yes".to_vec() }];
    assert!(client.txn(absent.clone(), take.clone(), lost.clone()).await.unwrap());
    assert!(!client.txn(absent, take, lost).await.unwrap());
    assert_eq!(client.get(b"lock").await.unwrap(), Some(b"me".to_vec()));
    assert_eq!(client.get(b"lost").await.unwrap(), Some(b"yes".to_vec()));
    let held = vec![Compare::ValueIs { key: b"lock".to_vec(), value: Some(b"me".to_vec()) }];
    assert!(client.txn(held, vec![Op::Delete { key: b"lock".to_vec() }], vec![]).await.unwrap());
    assert_eq!(client.get(b"lock").await.unwrap(), None);
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_partitioned_leader_stops_acking_and_majority_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = three_nodes(dir.path(), fast_timeouts).await;
    let client = cluster.client();
    client.put(b"before", b"1").await.unwrap();
    let all: BTreeSet<u64> = [1, 2, 3].into();
    let old = cluster.wait_leader(&all, WAIT).await.unwrap();
    let rest: BTreeSet<u64> = all.iter().copied().filter(|id| *id != old).collect();
    client.set_partition(&cluster.addr(old), rest.clone()).await.unwrap();
    for id in &rest {
        client.set_partition(&cluster.addr(*id), [old].into()).await.unwrap();
    }
    // The isolated old leader cannot commit: a write sent to it alone fails or times out.
    let isolated = Client::new(vec![cluster.addr(old)]).with_timeout(Duration::from_secs(2));
    assert!(isolated.put(b"lost", b"x").await.is_err());
    let read = isolated.get(b"before").await;
    assert!(matches!(read, Err(ClientError::Unavailable(_))), "no read index without a quorum: {read:?}");
    // The majority elects a new leader among itself and goes on.
    let new = cluster.wait_leader(&rest, WAIT).await.expect("majority elects a leader");
    assert_ne!(new, old);
    let majority = Client::new(rest.iter().map(|id| cluster.addr(*id)).collect());
    majority.put(b"after", b"2").await.unwrap();
    assert_eq!(majority.get(b"after").await.unwrap(), Some(b"2".to_vec()));
    // Healed, the old leader follows and gets the majority's write.
    cluster.heal();
    let index = wait_all_applied(&cluster, &[1, 2, 3]).await;
    assert!(cluster.wait_applied(old, index, WAIT).await);
    let store = &cluster.nodes[&old].node.store;
    assert_eq!(store.get(b"after").unwrap(), Some(b"2".to_vec()));
    assert_eq!(client.get(b"lost").await.unwrap(), None, "the minority's write was never committed");
    cluster.shutdown().await;
}

fn snapshot_often(config: &mut NodeConfig) {
    fast_timeouts(config);
    config.snapshot_logs = 50;
    config.logs_kept_after_snapshot = 0;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_learner_catches_up_by_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = three_nodes(dir.path(), snapshot_often).await;
    let client = cluster.client();
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let client = client.clone();
            tokio::spawn(async move {
                for i in 0..40 {
                    let key = format!("k{w:02}-{i:03}");
                    client.put(key.as_bytes(), key.as_bytes()).await.unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    let leader = cluster.wait_leader(&[1, 2, 3].into(), WAIT).await.unwrap();
    let purged =
        wait_for(|| cluster.status(leader).and_then(|s| s.snapshot_index).is_some_and(|i| i > 100)).await;
    assert!(purged, "the leader took a snapshot: {:?}", cluster.status(leader));
    let addr = cluster.start_node(4).await.unwrap();
    client.add_learner(4, &addr).await.unwrap();
    let index = cluster.status(leader).and_then(|s| s.last_applied).unwrap();
    assert!(cluster.wait_applied(4, index, WAIT).await, "{:?}", cluster.status(4));
    let status = cluster.status(4).unwrap();
    assert!(status.snapshot_index.is_some(), "the learner installed a snapshot: {status:?}");
    assert!(status.learners.contains(&4));
    let store = &cluster.nodes[&4].node.store;
    let got = store.scan(b"k", None, 1000).unwrap();
    let missing: Vec<String> = (0..8)
        .flat_map(|w| (0..40).map(move |i| format!("k{w:02}-{i:03}")))
        .filter(|k| !got.iter().any(|(key, _)| key == k.as_bytes()))
        .collect();
    assert!(missing.is_empty(), "the learner lacks {missing:?}; its status {status:?}");
    assert_eq!(store.get(b"k07-039").unwrap(), Some(b"k07-039".to_vec()));
    cluster.shutdown().await;
}

async fn wait_for(mut check: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + WAIT;
    while std::time::Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_client_gives_up_in_time_when_no_node_answers() {
    // Bind then drop a listener: nothing listens on that port afterwards.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let client = Client::new(vec![format!("127.0.0.1:{port}")]).with_timeout(Duration::from_millis(500));
    let started = std::time::Instant::now();
    let err = client.put(b"k", b"v").await.unwrap_err();
    assert!(matches!(err, ClientError::Unavailable(_)), "{err:?}");
    assert!(err.not_applied());
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(400) && elapsed < Duration::from_secs(3), "{elapsed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_membership_change_promotes_a_learner_and_removes_a_voter() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = three_nodes(dir.path(), fast_timeouts).await;
    let client = cluster.client();
    client.put(b"k", b"v").await.unwrap();
    let addr = cluster.start_node(4).await.unwrap();
    client.add_learner(4, &addr).await.unwrap();
    client.change_membership([2, 3, 4].into()).await.unwrap();
    let voters: BTreeSet<u64> = [2, 3, 4].into();
    cluster.wait_leader(&voters, WAIT).await.expect("the new voters agree on a leader");
    // A client that knows only node 4 (not a starting member) can write.
    Client::new(vec![addr]).put(b"k2", b"v2").await.unwrap();
    assert_eq!(client.get(b"k2").await.unwrap(), Some(b"v2".to_vec()));
    let leader = cluster.wait_leader(&voters, WAIT).await.unwrap();
    let status = cluster.status(leader).unwrap();
    assert_eq!(status.voters, voters);
    assert!(status.learners.is_empty(), "{status:?}");
    assert!(!status.nodes.contains_key(&1), "{status:?}");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_admin_routes_answer() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = three_nodes(dir.path(), fast_timeouts).await;
    let http = strata_server::http::HttpClient::new();
    let addr = cluster.addr(2);
    let t = Duration::from_secs(5);
    let (code, body) = http.get(&addr, "/cluster/status?format=json", t).await.unwrap();
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!((code, json["id"].as_u64()), (200, Some(2)));
    assert_eq!(json["voters"], serde_json::json!([1, 2, 3]));
    let (code, body) = http.get(&addr, "/admin/stats", t).await.unwrap();
    assert_eq!(code, 200);
    assert!(String::from_utf8_lossy(&body).contains("Level"), "{body:?}");
    let (code, body) = http.get(&addr, "/admin/property?name=strata.num-files-at-level0", t).await.unwrap();
    assert_eq!(code, 200);
    assert!(String::from_utf8_lossy(&body).trim().parse::<u64>().is_ok(), "{body:?}");
    let (code, _) = http.get(&addr, "/admin/property?name=no.such", t).await.unwrap();
    assert_eq!(code, 404);
    let (code, _) = http.post(&addr, "/admin/compact", Vec::new(), t).await.unwrap();
    assert_eq!(code, 200);
    let (code, _) = http.post(&addr, "/kv/write", b"\xff\xff garbage".to_vec(), t).await.unwrap();
    assert!(code == 400 || code == 421, "a follower forwards or refuses garbage, got {code}");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_restarted_leader_rejoins_with_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = three_nodes(dir.path(), fast_timeouts).await;
    let client = cluster.client();
    client.put(b"one", b"1").await.unwrap();
    let all: BTreeSet<u64> = [1, 2, 3].into();
    let old = cluster.wait_leader(&all, WAIT).await.unwrap();
    assert!(cluster.stop_node(old).await);
    let rest: BTreeSet<u64> = all.iter().copied().filter(|id| *id != old).collect();
    cluster.wait_leader(&rest, WAIT).await.expect("the others elect a leader");
    client.put(b"two", b"2").await.unwrap();
    cluster.restart_node(old).await.unwrap();
    wait_all_applied(&cluster, &[1, 2, 3]).await;
    let store = &cluster.nodes[&old].node.store;
    assert_eq!(store.get(b"one").unwrap(), Some(b"1".to_vec()), "kept across the restart");
    assert_eq!(store.get(b"two").unwrap(), Some(b"2".to_vec()), "replicated after it");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_isolated_follower_misses_writes_until_healed() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = three_nodes(dir.path(), fast_timeouts).await;
    let all: BTreeSet<u64> = [1, 2, 3].into();
    let leader = cluster.wait_leader(&all, WAIT).await.unwrap();
    let follower = all.iter().copied().find(|id| *id != leader).unwrap();
    cluster.split(&[follower].into());
    let majority: Vec<String> =
        all.iter().filter(|id| **id != follower).map(|id| cluster.addr(*id)).collect();
    let client = Client::new(majority);
    client.put(b"k", b"while split").await.unwrap();
    let index = cluster.status(leader).and_then(|s| s.last_applied).unwrap();
    assert!(!cluster.wait_applied(follower, index, Duration::from_millis(500)).await, "nothing reaches it");
    assert_eq!(cluster.nodes[&follower].node.store.get(b"k").unwrap(), None);
    cluster.heal();
    assert!(cluster.wait_applied(follower, index, WAIT).await, "it catches up once healed");
    assert_eq!(cluster.nodes[&follower].node.store.get(b"k").unwrap(), Some(b"while split".to_vec()));
    cluster.shutdown().await;
}

/// Concurrent writes share log entries (the proposer batches them), and each is still answered
/// on its own: of many compare-and-sets racing on one key from the same start, exactly one
/// succeeds, and every plain put lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_concurrent_writes_share_entries_and_are_answered_each() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = three_nodes(dir.path(), fast_timeouts).await;
    let client = cluster.client();
    client.put(b"race", b"start").await.unwrap();
    let before = wait_all_applied(&cluster, &[1, 2, 3]).await;
    let tasks: Vec<_> = (0..64u32)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                client.put(format!("p{i:02}").as_bytes(), b"v").await.unwrap();
                let compare = Compare::ValueIs { key: b"race".to_vec(), value: Some(b"start".to_vec()) };
                let win = Op::Put { key: b"race".to_vec(), value: i.to_be_bytes().to_vec() };
                client.txn(vec![compare], vec![win], vec![]).await.unwrap()
            })
        })
        .collect();
    let mut winners = 0;
    for t in tasks {
        winners += usize::from(t.await.unwrap());
    }
    assert_eq!(winners, 1, "exactly one compare-and-set from the same start wins");
    let after = wait_all_applied(&cluster, &[1, 2, 3]).await;
    assert!(after - before < 128, "128 writes took {} log entries: none was batched", after - before);
    let puts = client.scan(b"p", Some(b"q"), 1000).await.unwrap();
    assert_eq!(puts.len(), 64);
    cluster.shutdown().await;
}

/// `strata-server admin ...` runs the admin commands against a remote node: writes and reads
/// through the cluster, the node's statistics and properties, a compaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_admin_commands_reach_a_remote_node() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = three_nodes(dir.path(), fast_timeouts).await;
    let endpoint = cluster.endpoints()[1].clone();
    let run = move |args: Vec<&'static str>| {
        let endpoint = endpoint.clone();
        tokio::task::spawn_blocking(move || {
            let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_strata-server"));
            command.arg("admin").arg(args[0]).arg("--endpoint").arg(&endpoint).args(&args[1..]);
            let out = command.output().expect("run strata-server admin");
            (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
        })
    };
    assert_eq!(run(vec!["put", "fruit", "apple"]).await.unwrap(), (true, "OK\n".into()));
    assert_eq!(run(vec!["get", "fruit"]).await.unwrap(), (true, "apple\n".into()));
    assert_eq!(run(vec!["scan", "--from", "f"]).await.unwrap(), (true, "fruit ==> apple\n".into()));
    assert_eq!(run(vec!["delete", "fruit"]).await.unwrap(), (true, "OK\n".into()));
    assert!(!run(vec!["get", "fruit"]).await.unwrap().0, "a deleted key is not found");
    let (ok, stats) = run(vec!["stats"]).await.unwrap();
    assert!(ok && !stats.is_empty(), "stats: {stats:?}");
    let (ok, files) = run(vec!["get-property", "strata.num-files-at-level0"]).await.unwrap();
    assert!(ok && files.trim().parse::<u64>().is_ok(), "property: {files:?}");
    assert!(!run(vec!["get-property", "no.such.property"]).await.unwrap().0);
    assert_eq!(run(vec!["compact"]).await.unwrap(), (true, "compacted\n".into()));
    cluster.shutdown().await;
}
