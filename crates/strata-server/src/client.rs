//! `Client`, the library tests and benchmarks use to talk to a strata cluster: it sends each call
//! to the node it believes leads, follows forward-to-leader answers, and retries with a bounded
//! backoff while a retry cannot apply a write twice (see [`ClientError`]). Clones share one
//! connection pool and one leader hint. It holds no cluster state beyond that hint.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;
use strata_raft::{Compare, NodeId, Op};

use crate::api::{
    self, path, AddLearnerRequest, ApiError, ApiResult, NodeStatus, PartitionRequest, ScanRequest, TxnRequest,
};
use crate::http::{HttpClient, TransportError};

/// Why a call failed. Unless the variant says otherwise, a failed write's outcome is unknown: it
/// may or may not have been applied (as with etcd).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientError {
    /// No node knew a leader until the deadline (an election, or no quorum). Not applied.
    NoLeader,
    /// No node could take the request until the deadline (connections refused, node partitioned
    /// off or shutting down). Not applied.
    Unavailable(String),
    /// The request was sent but no answer came in time.
    Timeout(String),
    /// The connection failed after the request was sent.
    Io(String),
    /// The cluster refused the request (already initialised, membership change in progress ...).
    Rejected(String),
    /// The server answered with an error (bad request, storage or Raft failure).
    Server(String),
}

impl ClientError {
    /// Whether the call certainly did not apply anything.
    pub fn not_applied(&self) -> bool {
        matches!(self, ClientError::NoLeader | ClientError::Unavailable(_) | ClientError::Rejected(_))
    }
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::NoLeader => write!(f, "no leader"),
            ClientError::Unavailable(m) => write!(f, "unavailable: {m}"),
            ClientError::Timeout(m) => write!(f, "timed out: {m}"),
            ClientError::Io(m) => write!(f, "i/o error: {m}"),
            ClientError::Rejected(m) => write!(f, "rejected: {m}"),
            ClientError::Server(m) => write!(f, "server error: {m}"),
        }
    }
}

impl std::error::Error for ClientError {}

/// The default bound on a whole call, retries included.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

const FIRST_BACKOFF: Duration = Duration::from_millis(20);
const MAX_BACKOFF: Duration = Duration::from_millis(500);
/// Forwards followed without waiting, per call.
const MAX_FREE_HOPS: u32 = 3;

/// A cluster client; cheap to clone.
#[derive(Clone)]
pub struct Client {
    endpoints: Arc<Vec<String>>,
    http: HttpClient,
    leader: Arc<Mutex<Option<String>>>,
    next: Arc<AtomicUsize>,
    timeout: Duration,
}

/// What one try of a call leads to.
enum Step<Resp> {
    Done(Result<Resp, ClientError>),
    /// Go to the leader at this address.
    Follow(String),
    /// Try again (elsewhere) after a pause; the error is what the call fails with if time is up.
    Retry(ClientError),
}

/// Whether a call may be sent again after its request was sent but got no answer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Retry {
    /// Reads: sending twice changes nothing.
    Always,
    /// Writes: only if the earlier attempt certainly did not apply.
    IfNotApplied,
}

impl Client {
    /// A client of the cluster whose nodes listen on `endpoints` ("127.0.0.1:7001" ...).
    pub fn new(endpoints: Vec<String>) -> Client {
        Client {
            endpoints: Arc::new(endpoints),
            http: HttpClient::new(),
            leader: Arc::new(Mutex::new(None)),
            next: Arc::new(AtomicUsize::new(0)),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The same client with another bound on each whole call.
    pub fn with_timeout(mut self, timeout: Duration) -> Client {
        self.timeout = timeout;
        self
    }

    pub async fn put(&self, key: &[u8], value: &[u8]) -> Result<(), ClientError> {
        self.write(vec![Op::Put { key: key.to_vec(), value: value.to_vec() }]).await
    }

    pub async fn delete(&self, key: &[u8]) -> Result<(), ClientError> {
        self.write(vec![Op::Delete { key: key.to_vec() }]).await
    }

    /// Applies every op atomically; Ok means committed on a majority and applied.
    pub async fn write(&self, ops: Vec<Op>) -> Result<(), ClientError> {
        self.call(path::KV_WRITE, &ops, Retry::IfNotApplied).await
    }

    /// If every compare holds, applies `success`, else `failure`; answers which.
    pub async fn txn(
        &self,
        compares: Vec<Compare>,
        success: Vec<Op>,
        failure: Vec<Op>,
    ) -> Result<bool, ClientError> {
        self.call(path::KV_TXN, &TxnRequest { compares, success, failure }, Retry::IfNotApplied).await
    }

    /// A linearizable read: the leader confirms its leadership with a quorum (read index) and
    /// waits until it has applied that far before reading.
    pub async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, ClientError> {
        self.call(path::KV_GET, &key.to_vec(), Retry::Always).await
    }

    /// Up to `limit` pairs with `start <= key < end` in key order, read as [`Client::get`] reads.
    pub async fn scan(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, ClientError> {
        let request =
            ScanRequest { start: start.to_vec(), end: end.map(<[u8]>::to_vec), limit: limit as u64 };
        self.call(path::KV_SCAN, &request, Retry::Always).await
    }

    /// Forms a cluster of `members` (all voters), sent to `endpoint` only.
    pub async fn init(&self, endpoint: &str, members: BTreeMap<u64, String>) -> Result<(), ClientError> {
        self.call_one(endpoint, path::CLUSTER_INIT, &members).await
    }

    /// Adds a learner and waits until it has caught up (sent to the leader).
    pub async fn add_learner(&self, id: u64, addr: &str) -> Result<(), ClientError> {
        let request = AddLearnerRequest { id, addr: addr.to_string() };
        self.call(path::CLUSTER_ADD_LEARNER, &request, Retry::IfNotApplied).await
    }

    /// Makes `voters` the voting members (sent to the leader); others are removed.
    pub async fn change_membership(&self, voters: BTreeSet<u64>) -> Result<(), ClientError> {
        self.call(path::CLUSTER_CHANGE_MEMBERSHIP, &voters, Retry::IfNotApplied).await
    }

    /// `endpoint`'s view of the cluster.
    pub async fn status(&self, endpoint: &str) -> Result<NodeStatus, ClientError> {
        let (_, bytes) =
            self.http.get(endpoint, path::CLUSTER_STATUS, self.timeout).await.map_err(transport)?;
        answer(&bytes)
    }

    /// `endpoint`'s `strata.stats` (its database's statistics, as `strata stats` prints them).
    pub async fn stats(&self, endpoint: &str) -> Result<String, ClientError> {
        let (_, bytes) = self.http.get(endpoint, path::ADMIN_STATS, self.timeout).await.map_err(transport)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// A property of `endpoint`'s database (`strata get_property`); `None` if it has none.
    pub async fn property(&self, endpoint: &str, name: &str) -> Result<Option<String>, ClientError> {
        // Encoded by the crate axum's `Query` decodes it with.
        let query = serde_urlencoded::to_string([("name", name)])
            .map_err(|e| ClientError::Rejected(format!("property name {name:?}: {e}")))?;
        let route = format!("{}?{query}", path::ADMIN_PROPERTY);
        let (status, bytes) = self.http.get(endpoint, &route, self.timeout).await.map_err(transport)?;
        Ok((status != 404).then(|| String::from_utf8_lossy(&bytes).into_owned()))
    }

    /// Compacts `endpoint`'s whole database (Raft log and state machine), on that node only.
    pub async fn compact(&self, endpoint: &str) -> Result<(), ClientError> {
        self.call_one(endpoint, path::ADMIN_COMPACT, &()).await
    }

    /// Cuts `endpoint` off from `peers` (messages both ways dropped); an empty set heals it.
    pub async fn set_partition(&self, endpoint: &str, peers: BTreeSet<NodeId>) -> Result<(), ClientError> {
        self.call_one(endpoint, path::ADMIN_PARTITION, &PartitionRequest { peers }).await
    }

    /// One request to one node, no redirection or retry.
    async fn call_one<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        endpoint: &str,
        route: &str,
        request: &Req,
    ) -> Result<Resp, ClientError> {
        let body = api::encode(request);
        let (_, bytes) = self.http.post(endpoint, route, body, self.timeout).await.map_err(transport)?;
        answer(&bytes)
    }

    /// Sends to the leader (as far as known), follows hints, retries what may be retried.
    async fn call<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        route: &str,
        request: &Req,
        retry: Retry,
    ) -> Result<Resp, ClientError> {
        let deadline = Instant::now() + self.timeout;
        let body = api::encode(request);
        let mut backoff = FIRST_BACKOFF;
        let mut hops = 0;
        let mut last = ClientError::NoLeader;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(last);
            }
            let target = self.target();
            last = match self.attempt(&target, route, body.clone(), left, retry).await {
                Step::Done(result) => return result,
                Step::Follow(addr) => {
                    self.set_leader(Some(addr));
                    hops += 1;
                    // A fresh hint is followed at once; nodes with stale views could send the
                    // call round in circles, so past a few hops it waits like any retry.
                    if hops <= MAX_FREE_HOPS {
                        last = ClientError::NoLeader;
                        continue;
                    }
                    ClientError::NoLeader
                }
                Step::Retry(e) => {
                    self.forget_leader(&target);
                    e
                }
            };
            let left = deadline.saturating_duration_since(Instant::now());
            tokio::time::sleep(backoff.min(left)).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// One try at `target`, and what to do next.
    async fn attempt<Resp: DeserializeOwned>(
        &self,
        target: &str,
        route: &str,
        body: Vec<u8>,
        left: Duration,
        retry: Retry,
    ) -> Step<Resp> {
        match self.http.post(target, route, body, left).await {
            Ok((_, bytes)) => match api::decode::<ApiResult<Resp>>(&bytes) {
                Ok(Ok(resp)) => Step::Done(Ok(resp)),
                Ok(Err(ApiError::ForwardToLeader { leader: Some((_, addr)) })) if addr != target => {
                    Step::Follow(addr)
                }
                Ok(Err(ApiError::ForwardToLeader { .. })) => Step::Retry(ClientError::NoLeader),
                Ok(Err(ApiError::Unavailable(m))) => Step::Retry(ClientError::Unavailable(m)),
                Ok(Err(e)) => Step::Done(Err(from_api(e))),
                Err(e) => Step::Done(Err(ClientError::Server(format!("answer from {target}: {e}")))),
            },
            Err(TransportError::NotSent(m)) => {
                Step::Retry(ClientError::Unavailable(format!("{target}: {m}")))
            }
            Err(e) if retry == Retry::Always => Step::Retry(transport(e)),
            Err(e) => Step::Done(Err(transport(e))),
        }
    }

    /// The leader hint, or the next endpoint in turn.
    fn target(&self) -> String {
        if let Some(leader) = self.leader.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            return leader;
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        self.endpoints.get(i % self.endpoints.len().max(1)).cloned().unwrap_or_default()
    }

    fn set_leader(&self, addr: Option<String>) {
        *self.leader.lock().unwrap_or_else(|p| p.into_inner()) = addr;
    }

    /// Drops the hint if it still names `failed`, so the next try goes round the endpoints.
    fn forget_leader(&self, failed: &str) {
        let mut leader = self.leader.lock().unwrap_or_else(|p| p.into_inner());
        if leader.as_deref() == Some(failed) {
            *leader = None;
        }
    }
}

fn answer<Resp: DeserializeOwned>(bytes: &[u8]) -> Result<Resp, ClientError> {
    match api::decode::<ApiResult<Resp>>(bytes) {
        Ok(Ok(resp)) => Ok(resp),
        Ok(Err(e)) => Err(from_api(e)),
        Err(e) => Err(ClientError::Server(e.to_string())),
    }
}

fn from_api(e: ApiError) -> ClientError {
    match e {
        ApiError::ForwardToLeader { .. } => ClientError::NoLeader,
        ApiError::Unavailable(m) => ClientError::Unavailable(m),
        ApiError::Rejected(m) => ClientError::Rejected(m),
        other => ClientError::Server(other.to_string()),
    }
}

fn transport(e: TransportError) -> ClientError {
    match e {
        TransportError::NotSent(m) => ClientError::Unavailable(m),
        TransportError::Failed(m) => ClientError::Io(m),
        TransportError::Timeout => ClientError::Timeout("no answer before the deadline".into()),
    }
}
