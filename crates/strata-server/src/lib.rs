//! strata-server: a replicated strata. Each node runs openraft over HTTP (`network`) on a
//! strata-raft `RaftStore` (`node`), serves the Raft, key-value, cluster and admin routes
//! (`routes*`), and `Client` is the library that talks to a cluster. Storage (the Raft log and
//! state machine on strata) is strata-raft's, not this crate's.

pub mod api;
pub mod client;
pub mod errors;
pub mod http;
pub mod local_cluster;
pub mod network;
pub mod node;
pub mod proposer;
pub mod routes;
pub mod routes_admin;
pub mod routes_kv;

pub use api::{ApiError, NodeStatus};
pub use client::{Client, ClientError};
pub use strata_raft::{Compare, NodeId, Op};
