//! strata as the storage of a Raft cluster built on openraft.
//!
//! This crate owns what openraft asks of its storage: the Raft log, the vote and the state
//! machine, all kept in one strata database (docs/replication.md says where each lives and what
//! survives a crash). It does not own the network or the server: those are `strata-server`'s.
//! Consensus itself (elections, replication, commit) is openraft's and is not reimplemented here.

pub mod types;

pub use types::{Compare, NodeId, Op, Request, Response, TypeConfig};
