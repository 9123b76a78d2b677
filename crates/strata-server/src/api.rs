//! The wire types of strata-server's HTTP API: request and response bodies (postcard), the typed
//! error every route can answer, and the route paths. Client and server both use this module, so
//! a change here is a protocol change; it holds no logic beyond encoding and decoding.

use std::collections::{BTreeMap, BTreeSet};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use strata_raft::{Compare, NodeId, Op};

/// Route paths. Raft RPCs are node to node; the rest serve clients and operators.
pub mod path {
    pub const RAFT_APPEND: &str = "/raft/append";
    pub const RAFT_VOTE: &str = "/raft/vote";
    pub const RAFT_SNAPSHOT: &str = "/raft/snapshot";
    pub const KV_WRITE: &str = "/kv/write";
    pub const KV_TXN: &str = "/kv/txn";
    pub const KV_GET: &str = "/kv/get";
    pub const KV_SCAN: &str = "/kv/scan";
    pub const CLUSTER_INIT: &str = "/cluster/init";
    pub const CLUSTER_ADD_LEARNER: &str = "/cluster/add-learner";
    pub const CLUSTER_CHANGE_MEMBERSHIP: &str = "/cluster/change-membership";
    pub const CLUSTER_STATUS: &str = "/cluster/status";
    pub const ADMIN_STATS: &str = "/admin/stats";
    pub const ADMIN_PROPERTY: &str = "/admin/property";
    pub const ADMIN_COMPACT: &str = "/admin/compact";
    pub const ADMIN_PARTITION: &str = "/admin/partition";
}

/// Header of `POST /raft/snapshot` carrying the postcard-encoded, hex-spelled
/// [`SnapshotHeader`]; the body is the snapshot file's bytes.
pub const SNAPSHOT_HEADER: &str = "x-strata-snapshot";

/// A Raft RPC with its sender, so a receiver can refuse messages from peers it is partitioned from.
#[derive(Serialize, Deserialize)]
#[serde(bound = "T: Serialize + DeserializeOwned")]
pub struct RaftRpc<T> {
    pub from: NodeId,
    pub rpc: T,
}

/// What travels beside a snapshot's bytes.
#[derive(Serialize, Deserialize)]
pub struct SnapshotHeader {
    pub from: NodeId,
    pub vote: openraft::Vote<NodeId>,
    pub meta: openraft::SnapshotMeta<NodeId, openraft::BasicNode>,
}

/// `POST /kv/txn`: etcd's compare-and-swap transaction.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TxnRequest {
    pub compares: Vec<Compare>,
    pub success: Vec<Op>,
    pub failure: Vec<Op>,
}

/// `POST /kv/scan`: up to `limit` pairs with `start <= key < end`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ScanRequest {
    pub start: Vec<u8>,
    pub end: Option<Vec<u8>>,
    pub limit: u64,
}

/// `POST /cluster/add-learner`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AddLearnerRequest {
    pub id: NodeId,
    pub addr: String,
}

/// `POST /admin/partition`: the peers this node stops talking to (empty heals it).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PartitionRequest {
    pub peers: BTreeSet<NodeId>,
}

/// One node's view of the cluster (`GET /cluster/status`, postcard or, with `?format=json`, JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeStatus {
    pub id: NodeId,
    /// "Leader", "Follower", "Candidate", "Learner" or "Shutdown".
    pub state: String,
    pub leader: Option<NodeId>,
    pub term: u64,
    pub last_log_index: Option<u64>,
    pub last_applied: Option<u64>,
    pub snapshot_index: Option<u64>,
    /// Log entries up to here are deleted (covered by the snapshot).
    pub purged_index: Option<u64>,
    pub voters: BTreeSet<NodeId>,
    pub learners: BTreeSet<NodeId>,
    /// Every member's address.
    pub nodes: BTreeMap<NodeId, String>,
}

/// The typed error of every route. Which variants mean "not applied" matters to clients: see
/// [`ApiError::retry_safe`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ApiError {
    /// This node is not the leader; `leader` is the one it knows of (id and address), if any.
    ForwardToLeader { leader: Option<(NodeId, String)> },
    /// The node cannot serve now (shutting down, or the request's sender is partitioned off).
    Unavailable(String),
    /// The request cannot be decoded or makes no sense.
    BadRequest(String),
    /// The cluster refused the request (membership change in progress, already initialised ...).
    Rejected(String),
    /// Raft or storage failed after the request may have been proposed: the outcome is unknown.
    Internal(String),
}

impl ApiError {
    /// Whether the request was certainly not applied, so sending it again cannot apply it twice.
    pub fn retry_safe(&self) -> bool {
        matches!(self, ApiError::ForwardToLeader { .. } | ApiError::Unavailable(_))
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiError::ForwardToLeader { leader: Some((id, addr)) } => {
                write!(f, "not the leader; leader is {id} at {addr}")
            }
            ApiError::ForwardToLeader { leader: None } => write!(f, "not the leader; no leader known"),
            ApiError::Unavailable(m) => write!(f, "unavailable: {m}"),
            ApiError::BadRequest(m) => write!(f, "bad request: {m}"),
            ApiError::Rejected(m) => write!(f, "rejected: {m}"),
            ApiError::Internal(m) => write!(f, "internal error: {m}"),
        }
    }
}

impl std::error::Error for ApiError {}

/// The body of every postcard response: the answer or the typed error.
pub type ApiResult<T> = Result<T, ApiError>;

/// Encodes a body. postcard fails only on types it cannot represent (none of this module's);
/// should it, the body is empty and the receiver refuses it as a `BadRequest`.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    postcard::to_stdvec(value).unwrap_or_default()
}

/// Decodes a body, naming what it expected on failure.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    postcard::from_bytes(bytes)
        .map_err(|e| ApiError::BadRequest(format!("cannot decode {}: {e}", std::any::type_name::<T>())))
}

/// Hex spelling for the snapshot header (header values must be visible ASCII).
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The inverse of [`to_hex`]; `None` on odd length or a non-hex digit.
pub fn from_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_rejects_garbage() {
        let bytes = vec![0u8, 1, 0xab, 0xff];
        assert_eq!(from_hex(&to_hex(&bytes)), Some(bytes));
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("zz"), None);
    }

    #[test]
    fn only_unapplied_errors_are_retry_safe() {
        assert!(ApiError::ForwardToLeader { leader: None }.retry_safe());
        assert!(ApiError::Unavailable("x".into()).retry_safe());
        assert!(!ApiError::Internal("x".into()).retry_safe());
    }
}
