//! strata as the storage of a Raft cluster built on openraft.
//!
//! This crate owns what openraft asks of its storage: the Raft log, the vote and the state
//! machine, all kept in one strata database (docs/replication.md says where each lives and what
//! survives a crash). It does not own the network or the server: those are `strata-server`'s.
//! Consensus itself (elections, replication, commit) is openraft's and is not reimplemented here.

mod apply;
pub mod codec;
mod error;
mod install;
mod log_store;
mod log_writer;
mod snapshot;
pub mod snapshot_file;
mod state_machine;
mod store;
pub mod types;

pub use log_store::LogStore;
pub use state_machine::StateMachine;
pub use store::RaftStore;
pub use types::{Compare, NodeId, Op, Request, Response, TypeConfig};
