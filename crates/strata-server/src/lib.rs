//! strata-server: a replicated strata. Nodes run openraft over HTTP (`network`), serve the
//! client, cluster and admin API (`server`), and `Client` is the library that talks to them.
//! Storage (the Raft log and state machine on strata) is strata-raft's, not this crate's.

pub mod api;
pub mod client;
pub mod http;
pub mod network;

pub use api::{ApiError, NodeStatus};
pub use client::{Client, ClientError};
pub use strata_raft::{Compare, NodeId, Op};
