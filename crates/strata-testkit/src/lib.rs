//! Test support for strata's reliability tests. It owns two [`strata::fs::FileSystem`]
//! implementations — [`MemFs`] (in memory, with power-loss simulation) and [`FaultFs`] (a wrapper
//! that injects IO errors by rule) — plus a model of expected contents ([`History`]), a seeded
//! random generator ([`Rng`]), a watch for panics in strata's background threads, and a
//! linearizability checker for register histories recorded against a cluster ([`lincheck`]).
//!
//! Nothing here is used by the engine itself; this crate must not reach into engine internals
//! beyond the public filesystem seam and the public `Db` API.

mod faultfs;
pub mod lincheck;
mod log_files;
mod memfs;
mod model;
mod panics;
mod rng;

pub use faultfs::{Effect, FaultFs, Op, Rule, When};
pub use log_files::{record_extents, replace_file};
pub use memfs::{CrashMode, MemFs, PAGE_SIZE};
pub use model::{apply, diff, dump, write_batch, History, Kv, Mutation};
pub use panics::{background_panics, watch_background_panics};
pub use rng::Rng;
