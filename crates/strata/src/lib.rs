//! strata: an embedded, durable, ordered key-value store built as a log-structured merge tree with
//! key-value separation. See `docs/format.md` for the bytes on disk and `docs/durability.md` for
//! what survives a crash.

#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

pub mod batch;
pub mod blob;
pub mod cache;
pub mod compaction;
pub mod db;
pub mod error;
pub mod fs;
pub mod iter;
pub mod key;
pub mod memtable;
pub mod merge;
pub mod metrics;
pub mod options;
pub mod presets;
pub mod snapshot;
pub mod sst;
pub mod util;
pub mod verify;
pub mod version;
pub mod wal;

pub use batch::WriteBatch;
pub use db::{Db, DbIterator, Stats};
pub use error::{Error, Result};
pub use merge::MergeOperator;
pub use options::{Compression, Options, ReadOptions, WriteOptions};
pub use presets::Preset;
pub use snapshot::Snapshot;
