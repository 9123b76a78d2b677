//! Fault tests of a three-node strata-server cluster, each node its own process on loopback:
//! kill -9 of the leader under write load, a wiped follower that rejoins by snapshot, a
//! partitioned minority, and a linearizability check of random clients across leader crashes
//! and partitions.
//!
//! The tests share one lock so that only one cluster runs at a time: the election bound they
//! assert would otherwise also measure another test's load. The `#[ignore]`d variants run more
//! rounds (`STRATA_FAULTS_ROUNDS`, see scripts/cluster-faults-long.sh).

#[path = "faults/cluster.rs"]
mod cluster;
#[path = "faults/workload.rs"]
mod workload;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cluster::{store_contents, Cluster, Timing, FAST, WAIT};
use strata_server::Client;
use strata_testkit::lincheck::{self, Action, Failure, Operation, Recorder};

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Rounds for a long variant: `STRATA_FAULTS_ROUNDS`, else `default`.
fn long_rounds(default: usize) -> usize {
    std::env::var("STRATA_FAULTS_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn others(ids: &BTreeSet<u64>, id: u64) -> BTreeSet<u64> {
    ids.iter().copied().filter(|&i| i != id).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_killed_under_write_load_loses_no_acknowledged_write() {
    leader_crashes_under_write_load(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: scripts/cluster-faults-long.sh"]
async fn leader_killed_under_write_load_many_times() {
    leader_crashes_under_write_load(long_rounds(10)).await;
}

async fn leader_crashes_under_write_load(rounds: usize) {
    let _serial = SERIAL.lock().await;
    let mut c = Cluster::start(3, FAST).await;
    let client = c.client().with_timeout(Duration::from_secs(5));
    let stop = Arc::new(AtomicBool::new(false));
    let (acks, writers) = workload::write_load(&client, 4, "w", &stop);
    let mut last_kill = Instant::now();
    for round in 0..rounds {
        tokio::time::sleep(Duration::from_millis(700)).await;
        let old = c.wait_leader(&c.ids(), WAIT).await.expect("a leader");
        c.kill(old);
        last_kill = Instant::now();
        let survivors = others(&c.ids(), old);
        let new = c.wait_leader(&survivors, WAIT).await.expect("a new leader among the survivors");
        let took = last_kill.elapsed();
        eprintln!("round {round}: leader {old} killed, {new} elected after {took:?}");
        let bound = FAST.election_bound();
        assert!(took <= bound, "electing a new leader took {took:?}, more than {bound:?}");
        // The load goes on against the new leader, then everything acknowledged so far is read
        // back from it while the old leader is still down.
        tokio::time::sleep(Duration::from_millis(700)).await;
        workload::assert_readable(&client, "w", &workload::snapshot(&acks)).await;
        c.restart(old).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.expect("writer task");
    }
    let acked = workload::snapshot(&acks);
    assert!(acked.iter().any(|a| a.at > last_kill), "no write was acknowledged after the last failover");
    workload::assert_readable(&client, "w", &acked).await;
    c.wait_caught_up(&c.ids()).await;
    c.crash_all_and_restart().await;
    c.wait_leader(&c.ids(), WAIT).await.expect("a leader after the whole cluster restarted");
    workload::assert_readable(&client, "w", &acked).await;
    eprintln!("{} acknowledged writes survived {rounds} leader crashes and a full crash", acked.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wiped_follower_rejoins_by_snapshot() {
    let _serial = SERIAL.lock().await;
    let timing = Timing { snapshot_logs: 100, ..FAST };
    let mut c = Cluster::start(3, timing).await;
    let client = c.client().with_timeout(Duration::from_secs(10));
    let all = c.ids();
    // Enough entries that the leader snapshots and purges log the wiped node would need (the
    // server keeps 1000 entries behind a snapshot). Concurrent puts share entries (the server
    // batches proposals), so write until the leader has purged.
    let mut written = 0;
    let (leader, purged) = loop {
        put_many(&client, "s", written..written + 400).await;
        written += 400;
        let leader = c.wait_leader(&all, WAIT).await.expect("a leader");
        let status = c.status(leader).await.expect("leader status");
        if let Some(purged) = status.purged_index {
            break (leader, purged);
        }
        assert!(written < 20_000, "the leader has not purged its log after {written} writes");
    };
    let follower = *others(&all, leader).first().expect("a follower");

    c.kill(follower);
    client.change_membership(others(&all, follower)).await.expect("remove the dead follower");
    c.wipe(follower);
    c.restart(follower).await;
    let empty = c.status(follower).await.expect("the wiped node answers");
    assert_eq!((empty.last_applied, empty.snapshot_index), (None, None), "the node starts empty");
    client.add_learner(follower, &c.addr(follower)).await.expect("add the wiped node as learner");
    client.change_membership(all.clone()).await.expect("make it a voter again");
    put_many(&client, "t", 0..20).await;
    c.wait_caught_up(&all).await;

    let rejoined = c.status(follower).await.expect("rejoined status");
    assert!(rejoined.voters.contains(&follower), "{rejoined:?}");
    // Entries up to `purged` exist nowhere as log any more: the node can only hold their effect
    // through an installed snapshot that covers them.
    let installed = rejoined.snapshot_index.expect("the rejoined node has a snapshot");
    assert!(installed > purged, "snapshot at {installed}, leader purged up to {purged}");
    eprintln!(
        "node {follower} rejoined with a snapshot at {installed}; the leader had purged up to {purged}"
    );
    for id in all.iter().copied().collect::<Vec<_>>() {
        c.kill(id);
    }
    let reference = store_contents(&c, leader);
    assert_eq!(reference.iter().filter(|(k, _)| k.starts_with(b"s/")).count(), written);
    cluster::assert_same_stores(&c, leader, &all);
}

/// Puts the keys `<prefix>/<i>` for `i` in `keys` through 8 concurrent tasks; every put must
/// succeed.
async fn put_many(client: &Client, prefix: &str, keys: std::ops::Range<usize>) {
    let tasks: Vec<_> = (0..8)
        .map(|t| {
            let client = client.clone();
            let prefix = prefix.to_string();
            let keys = keys.clone();
            tokio::spawn(async move {
                for i in (keys.start + t..keys.end).step_by(8) {
                    let key = format!("{prefix}/{i:06}");
                    client.put(key.as_bytes(), b"x").await.unwrap_or_else(|e| panic!("put {key}: {e}"));
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("writer task");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitioned_minority_stops_acknowledging_and_catches_up() {
    let _serial = SERIAL.lock().await;
    let mut c = Cluster::start(3, FAST).await;
    let all = c.ids();
    let client = c.client().with_timeout(Duration::from_secs(10));
    client.put(b"before", b"1").await.expect("write before the partition");
    let isolated = c.wait_leader(&all, WAIT).await.expect("a leader");
    let majority = others(&all, isolated);
    c.isolate(isolated).await;

    // The old leader cannot commit, nor serve a linearizable read, whatever it believes.
    let minority = Client::new(vec![c.addr(isolated)]).with_timeout(Duration::from_secs(2));
    let write = minority.put(b"minority", b"lost").await;
    assert!(write.is_err(), "the isolated node acknowledged a write: {write:?}");
    let read = minority.get(b"before").await;
    assert!(read.is_err(), "the isolated node served a read: {read:?}");

    let new = c.wait_leader(&majority, WAIT).await.expect("the majority elects a leader");
    let majority_client = Client::new(majority.iter().map(|&id| c.addr(id)).collect());
    put_many(&majority_client, "m", 0..50).await;
    assert_eq!(majority_client.get(b"m/000049").await.expect("majority read"), Some(b"x".to_vec()));

    c.heal().await;
    c.wait_caught_up(&all).await;
    let leader = c.wait_leader(&all, WAIT).await.expect("a leader after healing");
    eprintln!("isolated {isolated}, majority elected {new}, leader after healing {leader}");
    assert_eq!(client.get(b"minority").await.expect("read after healing"), None, "the unacknowledged write");
    for id in all.iter().copied().collect::<Vec<_>>() {
        c.kill(id);
    }
    let reference = store_contents(&c, new);
    assert_eq!(reference.iter().filter(|(k, _)| k.starts_with(b"m/")).count(), 50);
    cluster::assert_same_stores(&c, new, &all);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_clients_stay_linearizable_across_leader_crashes_and_partitions() {
    linearizable_across_faults(3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: scripts/cluster-faults-long.sh"]
async fn random_clients_stay_linearizable_across_many_leader_faults() {
    linearizable_across_faults(long_rounds(20)).await;
}

/// `faults` rounds, alternately a kill -9 and restart of the leader and an isolation of the
/// leader that is healed later.
async fn linearizable_across_faults(faults: usize) {
    let _serial = SERIAL.lock().await;
    let mut c = Cluster::start(3, FAST).await;
    let recorder = Arc::new(Recorder::new());
    let stop = Arc::new(AtomicBool::new(false));
    let client = c.client().with_timeout(Duration::from_secs(3));
    let clients: Vec<_> = (0..6)
        .map(|id| {
            tokio::spawn(workload::random_client(client.clone(), id, 10, recorder.clone(), stop.clone()))
        })
        .collect();
    for round in 0..faults {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let leader = c.wait_leader(&c.ids(), WAIT).await.expect("a leader");
        if round % 2 == 0 {
            c.kill(leader);
            tokio::time::sleep(Duration::from_millis(800)).await;
            c.restart(leader).await;
        } else {
            // A leader cut off still believes it leads for a while: it must not answer reads
            // or acknowledge writes meanwhile.
            c.isolate(leader).await;
            tokio::time::sleep(Duration::from_millis(1200)).await;
            c.heal().await;
        }
    }
    tokio::time::sleep(Duration::from_millis(1000)).await;
    stop.store(true, Ordering::Relaxed);
    for t in clients {
        t.await.expect("client task");
    }
    let history = recorder.history();
    let count = |f: fn(&Operation) -> bool| history.iter().filter(|o| f(o)).count();
    let unknown = count(|o| o.ret.is_none());
    let swaps = count(|o| o.ret.is_some() && matches!(o.action, Action::Cas { swapped: true, .. }));
    let misses = count(|o| o.ret.is_some() && matches!(o.action, Action::Cas { swapped: false, .. }));
    let checked = lincheck::check(&history).unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "{checked:?}: {unknown} with unknown outcome; compare-and-sets: {swaps} swapped, {misses} not; {faults} leader faults"
    );
    assert!(history.len() > 100, "too little happened to check: {}", history.len());

    // The same history with one read made stale must fail: the check above can fail.
    let mut broken = history;
    let r = workload::make_read_stale(&mut broken).expect("a read to make stale");
    assert!(
        matches!(lincheck::check(&broken), Err(Failure::NotLinearizable { .. })),
        "stale read {r} accepted"
    );
}

/// The checker as the linearizability test uses it, on a history of the workload's shape that is
/// broken by hand: no cluster needed, and it shows the test above can fail.
#[test]
fn checker_rejects_a_broken_recorded_history() {
    let op = |client, call, ret, action| Operation { client, key: b"reg1".to_vec(), call, ret, action };
    let put = |v: &str| Action::Write(Some(v.as_bytes().to_vec()));
    let read = |v: &str| Action::Read(Some(v.as_bytes().to_vec()));
    let mut history = vec![
        op(0, 10, Some(20), put("c0-0")),
        op(1, 30, None, put("c1-0")),
        op(2, 40, Some(50), put("c2-0")),
        op(3, 60, Some(70), read("c2-0")),
        op(3, 80, Some(90), read("c1-0")),
    ];
    lincheck::check(&history).expect("the unknown-outcome put may land late");
    history[4].action = read("c0-0");
    let verdict = lincheck::check(&history);
    assert!(matches!(&verdict, Err(Failure::NotLinearizable { key, .. }) if key == b"reg1"), "{verdict:?}");
    let mut again = history.clone();
    again[4].action = read("c1-0");
    assert_eq!(workload::make_read_stale(&mut again), Some(4));
    assert!(lincheck::check(&again).is_err());
}
