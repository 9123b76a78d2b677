//! The fault tests' harness: `strata-server` processes on loopback ports, each with its data and
//! log under one temporary directory, that a test can kill -9, wipe and restart. It starts,
//! inspects and stops processes; what a test asserts is the test's business. Children are killed
//! when the cluster is dropped, and their logs printed if the test is panicking.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::OpenOptions;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use strata_server::{Client, NodeStatus};
use tempfile::TempDir;

/// The timing flags every node gets.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub heartbeat_ms: u64,
    /// The minimum election timeout; a node waits a random time in [MIN, 2*MIN).
    pub election_ms: u64,
    /// `--snapshot-logs`: entries between snapshots.
    pub snapshot_logs: u64,
}

/// Short timeouts so failovers fit in a test, yet a heartbeat is far inside an election timeout
/// even on a loaded machine.
pub const FAST: Timing = Timing { heartbeat_ms: 50, election_ms: 300, snapshot_logs: 10_000 };

impl Timing {
    /// How long electing a new leader after the old one died may take. openraft 0.9 lets a
    /// follower stand only once the leader's lease (the longest election timeout, 2*MIN) and its
    /// own random timeout (< 2*MIN) have passed since it last heard from the leader: 4*MIN. A
    /// first candidate with the shorter log is refused, and the other survivor may then find
    /// that term taken and need one more timeout: 2 rounds of 2*MIN more. 2 s of slack absorb
    /// scheduling delays of debug builds on a busy 2-core machine.
    pub fn election_bound(&self) -> Duration {
        Duration::from_millis(8 * self.election_ms + 2000)
    }
}

/// Long enough for anything but a lost cluster.
pub const WAIT: Duration = Duration::from_secs(20);

struct Proc {
    addr: String,
    child: Option<Child>,
}

/// Nodes 1..=n of one cluster.
pub struct Cluster {
    root: TempDir,
    timing: Timing,
    nodes: BTreeMap<u64, Proc>,
    probe: Client,
}

impl Cluster {
    /// Starts `n` nodes, forms the cluster through node 1 and waits for a leader.
    pub async fn start(n: u64, timing: Timing) -> Cluster {
        let root = tempfile::tempdir().expect("temporary directory");
        let probe = Client::new(Vec::new()).with_timeout(Duration::from_millis(500));
        let mut cluster = Cluster { root, timing, nodes: BTreeMap::new(), probe };
        for id in 1..=n {
            let addr = free_addr();
            cluster.nodes.insert(id, Proc { addr, child: None });
            cluster.spawn(id).await;
        }
        let members: BTreeMap<u64, String> =
            cluster.nodes.iter().map(|(&id, p)| (id, p.addr.clone())).collect();
        let first = cluster.addr(1);
        cluster.client().init(&first, members).await.expect("init the cluster");
        cluster.wait_leader(&cluster.ids(), WAIT).await.expect("a first leader");
        cluster
    }

    pub fn ids(&self) -> BTreeSet<u64> {
        self.nodes.keys().copied().collect()
    }

    pub fn addr(&self, id: u64) -> String {
        self.nodes[&id].addr.clone()
    }

    pub fn endpoints(&self) -> Vec<String> {
        self.nodes.values().map(|p| p.addr.clone()).collect()
    }

    /// A client that knows every node.
    pub fn client(&self) -> Client {
        Client::new(self.endpoints())
    }

    pub fn data_dir(&self, id: u64) -> PathBuf {
        self.root.path().join(format!("node{id}"))
    }

    fn log_path(&self, id: u64) -> PathBuf {
        self.root.path().join(format!("node{id}.log"))
    }

    /// Starts node `id`'s process on its address and waits until it answers.
    async fn spawn(&mut self, id: u64) {
        let log = OpenOptions::new().create(true).append(true).open(self.log_path(id)).expect("node log");
        let t = self.timing;
        let child = Command::new(env!("CARGO_BIN_EXE_strata-server"))
            .args(["--id", &id.to_string(), "--listen", &self.addr(id)])
            .arg("--dir")
            .arg(self.data_dir(id))
            .args(["--heartbeat-ms", &t.heartbeat_ms.to_string()])
            .args(["--election-timeout-ms", &t.election_ms.to_string()])
            .args(["--snapshot-logs", &t.snapshot_logs.to_string()])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log)
            .spawn()
            .expect("start strata-server");
        self.nodes.get_mut(&id).expect("known node").child = Some(child);
        let deadline = Instant::now() + WAIT;
        while self.status(id).await.is_none() {
            assert!(Instant::now() < deadline, "node {id} does not answer:\n{}", self.log(id));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// kill -9, and reap the process.
    pub fn kill(&mut self, id: u64) {
        if let Some(mut child) = self.nodes.get_mut(&id).and_then(|p| p.child.take()) {
            // SIGKILL: no shutdown code runs, as in a crash.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub async fn restart(&mut self, id: u64) {
        self.kill(id);
        self.spawn(id).await;
    }

    /// Deletes node `id`'s data (the node must be down).
    pub fn wipe(&self, id: u64) {
        std::fs::remove_dir_all(self.data_dir(id)).expect("delete the data directory");
    }

    /// Node `id`'s output so far.
    pub fn log(&self, id: u64) -> String {
        std::fs::read_to_string(self.log_path(id)).unwrap_or_default()
    }

    /// Node `id`'s view, or `None` if it does not answer.
    pub async fn status(&self, id: u64) -> Option<NodeStatus> {
        self.probe.status(&self.addr(id)).await.ok()
    }

    /// Waits until one of `among` leads, with every node of `among` naming it.
    pub async fn wait_leader(&self, among: &BTreeSet<u64>, timeout: Duration) -> Option<u64> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            let mut named = BTreeSet::new();
            for &id in among {
                named.insert(self.status(id).await.and_then(|s| s.leader));
            }
            if let [Some(leader)] = named.into_iter().collect::<Vec<_>>()[..] {
                if among.contains(&leader) && self.status(leader).await.is_some_and(|s| s.state == "Leader") {
                    return Some(leader);
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        None
    }

    /// Waits until every node of `ids` has applied what the leader among them has applied.
    pub async fn wait_caught_up(&self, ids: &BTreeSet<u64>) {
        let leader = self.wait_leader(ids, WAIT).await.expect("a leader");
        let target = self.status(leader).await.and_then(|s| s.last_applied).expect("leader's applied index");
        let deadline = Instant::now() + WAIT;
        for &id in ids {
            while self.status(id).await.and_then(|s| s.last_applied).is_none_or(|a| a < target) {
                assert!(
                    Instant::now() < deadline,
                    "node {id} does not apply up to {target}:\n{}",
                    self.log(id)
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }

    /// Cuts node `id` off from every other node, both ways (the nodes must be up).
    pub async fn isolate(&self, id: u64) {
        let rest: BTreeSet<u64> = self.ids().into_iter().filter(|&i| i != id).collect();
        self.probe.set_partition(&self.addr(id), rest.clone()).await.expect("cut the node off");
        for other in rest {
            self.probe.set_partition(&self.addr(other), [id].into()).await.expect("cut the node off");
        }
    }

    /// Ends every partition.
    pub async fn heal(&self) {
        for id in self.ids() {
            self.probe.set_partition(&self.addr(id), BTreeSet::new()).await.expect("heal");
        }
    }

    /// kill -9 of every node, then all started again.
    pub async fn crash_all_and_restart(&mut self) {
        for id in self.ids() {
            self.kill(id);
        }
        for id in self.ids() {
            self.spawn(id).await;
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for id in self.ids() {
            self.kill(id);
        }
        if std::thread::panicking() {
            for id in self.ids() {
                let log = self.log(id);
                let tail: Vec<&str> = log.lines().rev().take(40).collect();
                eprintln!("--- node {id} log (last lines) ---");
                tail.iter().rev().for_each(|l| eprintln!("{l}"));
            }
        }
    }
}

/// A loopback address with a port the OS just handed out and took back: free unless another
/// process grabs it in between, which the node's start would then report.
fn free_addr() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("its address").to_string()
}

/// Opens a killed node's store and reads every user key, as the node would serve them.
pub fn store_contents(cluster: &Cluster, id: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    let store = strata_raft::RaftStore::open(&cluster.data_dir(id)).expect("open the node's store");
    store.scan(b"", None, usize::MAX).expect("scan the node's store")
}

/// Asserts that the killed nodes `ids` hold the same user keys and values as node `reference`,
/// naming the first differences.
pub fn assert_same_stores(cluster: &Cluster, reference: u64, ids: &BTreeSet<u64>) {
    let expected: BTreeMap<Vec<u8>, Vec<u8>> = store_contents(cluster, reference).into_iter().collect();
    for &id in ids {
        let actual: BTreeMap<Vec<u8>, Vec<u8>> = store_contents(cluster, id).into_iter().collect();
        let show = |k: &Vec<u8>| String::from_utf8_lossy(k).into_owned();
        let missing: Vec<String> = expected.keys().filter(|k| !actual.contains_key(*k)).map(show).collect();
        let extra: Vec<String> = actual.keys().filter(|k| !expected.contains_key(*k)).map(show).collect();
        let changed: Vec<String> = actual
            .iter()
            .filter(|(k, v)| expected.get(*k).is_some_and(|e| e != *v))
            .map(|(k, _)| show(k))
            .collect();
        assert!(
            missing.is_empty() && extra.is_empty() && changed.is_empty(),
            "node {id} differs from node {reference} ({} keys): {} missing {:?}, {} extra {:?}, {} changed {:?}",
            expected.len(),
            missing.len(),
            &missing[..missing.len().min(8)],
            extra.len(),
            &extra[..extra.len().min(8)],
            changed.len(),
            &changed[..changed.len().min(8)],
        );
    }
}
