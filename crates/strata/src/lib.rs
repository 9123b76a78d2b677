//! strata: an embedded, durable, ordered key-value store built as a log-structured merge tree with
//! key-value separation. See `docs/format.md` for the bytes on disk and `docs/durability.md` for
//! what survives a crash.
//!
//! # Internals
//!
//! The modules `blob`, `cache`, `compaction`, `iter`, `key`, `memtable`, `sst`, `util`, `version`
//! and `wal` (and a few items elsewhere, such as `db::filenames` and `batch::decode_payload`) are
//! public only so that strata's own tools (`strata` admin commands, the stress test, the fuzzers)
//! can read the files directly. They are hidden from these docs and carry no stability promise:
//! they may change in any release. Their on-disk formats are specified in `docs/format.md`.

#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

pub mod batch;
// Public only for strata's own tools and fuzzers; no stability promise.
#[doc(hidden)]
pub mod blob;
// Public only for strata's own tools and fuzzers; no stability promise.
#[doc(hidden)]
pub mod cache;
// Public only for strata's own tools and fuzzers; no stability promise.
#[doc(hidden)]
pub mod compaction;
pub mod db;
pub mod error;
pub mod fs;
// Public only for strata's own tools and fuzzers; no stability promise.
#[doc(hidden)]
pub mod iter;
// Public only for strata's own tools and fuzzers; no stability promise.
#[doc(hidden)]
pub mod key;
// Public only for strata's own tools and fuzzers; no stability promise.
#[doc(hidden)]
pub mod memtable;
pub mod merge;
pub mod metrics;
pub mod options;
pub mod presets;
pub mod snapshot;
// Public only for strata's own tools and fuzzers; no stability promise.
#[doc(hidden)]
pub mod sst;
// Public only for strata's own tools and fuzzers; no stability promise.
#[doc(hidden)]
pub mod util;
pub mod verify;
// Public only for strata's own tools and fuzzers; no stability promise.
#[doc(hidden)]
pub mod version;
// Public only for strata's own tools and fuzzers; no stability promise.
#[doc(hidden)]
pub mod wal;

pub use batch::WriteBatch;
pub use db::{Db, DbIterator, Stats};
pub use error::{Error, Result};
pub use merge::MergeOperator;
pub use options::{Compression, Options, ReadOptions, WriteOptions};
pub use presets::Preset;
pub use snapshot::Snapshot;
