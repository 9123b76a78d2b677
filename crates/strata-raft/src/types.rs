//! The types a strata Raft cluster agrees on: what a log entry asks of the state machine
//! (`Request`), what applying it answers (`Response`), and openraft's type configuration.
//!
//! These values travel in the Raft log and over the network, so their serialised form is part of
//! the log's on-disk format (docs/format.md, "Raft storage"): add variants only at the end.

use serde::{Deserialize, Serialize};

/// A node's identity in the cluster.
pub type NodeId = u64;

/// One change to the replicated key space.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    Put { key: Vec<u8>, value: Vec<u8> },
    Delete { key: Vec<u8> },
}

/// A condition a transaction checks against the state machine when its entry is applied.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Compare {
    /// Holds when the key's current value is `value` (`None`: the key is absent).
    ValueIs { key: Vec<u8>, value: Option<Vec<u8>> },
}

/// What a client asks the cluster to apply, as one Raft log entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// Apply every op atomically (a put, a delete or a batch).
    Write(Vec<Op>),
    /// If every compare holds, apply `success` atomically, else `failure`: etcd's `Txn`. The
    /// compares are evaluated at apply time, in log order, so a transaction is serialisable
    /// with every other entry; clients build optimistic transactions on it.
    Txn { compares: Vec<Compare>, success: Vec<Op>, failure: Vec<Op> },
    /// Several requests proposed as one entry, applied in order, each exactly as it would be
    /// alone (a transaction sees the effects of the requests before it); `Response::each`
    /// answers each. A server batches concurrent clients' proposals this way so that one log
    /// write, one fsync and one replication round carry them all.
    Batch(Vec<Request>),
}

/// What applying an entry answered.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Response {
    /// For `Txn`, whether every compare held; `true` for `Write` and for membership entries;
    /// for `Batch`, whether every request in it succeeded.
    pub succeeded: bool,
    /// For `Batch`, each request's `succeeded`, in order; empty otherwise.
    #[serde(default)]
    pub each: Vec<bool>,
}

openraft::declare_raft_types!(
    /// openraft's type configuration for strata clusters. A snapshot is a file on disk, named
    /// by its path, not an in-memory buffer.
    pub TypeConfig:
        D = Request,
        R = Response,
        NodeId = NodeId,
        Node = openraft::BasicNode,
        SnapshotData = std::path::PathBuf,
);
