//! strata: an embedded, durable, ordered key-value store built as a log-structured merge tree with
//! key-value separation. See `docs/format.md` for the bytes on disk and `docs/durability.md` for
//! what survives a crash.
//!
//! The API follows RocksDB and LevelDB: open a [`Db`] with [`Options`] (or a [`Preset`]), write
//! with [`Db::put`], [`Db::delete`], [`Db::merge`] or an atomic [`WriteBatch`], read with
//! [`Db::get`] and a [`DbIterator`] under [`ReadOptions`] (optionally at a [`Snapshot`]). Every
//! fallible call returns [`Result`] with a typed [`Error`].
//!
//! ```
//! # let dir = tempfile::tempdir()?;
//! use strata::{Db, Preset, ReadOptions, WriteBatch, WriteOptions};
//! let db = Db::open(dir.path(), Preset::ReadHeavy.options())?;
//! let mut batch = WriteBatch::new();
//! batch.put(b"fruit:apple", b"red").put(b"fruit:kiwi", b"green").put(b"veg:leek", b"green");
//! db.write_opt(&WriteOptions { sync: true, disable_wal: false }, batch)?;
//!
//! let mut it = db.cursor(&ReadOptions { prefix: Some(b"fruit:".to_vec()), ..ReadOptions::new() })?;
//! let mut fruit = Vec::new();
//! it.seek_to_first();
//! while it.valid() {
//!     fruit.push(String::from_utf8(it.key().to_vec())?);
//!     it.next();
//! }
//! it.status()?;
//! assert_eq!(fruit, ["fruit:apple", "fruit:kiwi"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Also public: [`merge`] (built-in merge operators), [`compaction_filter`] (dropping or
//! rewriting values as compactions rewrite them), [`ttl`] (a database whose entries expire),
//! [`metrics`] (latency histograms), [`verify::verify_db`] (offline checksum verification) and
//! [`fs`] (the filesystem seam, for instrumentation and fault injection).
//!
//! # Internals
//!
//! Everything else (the memtable, tables, blob files, the write-ahead log, the MANIFEST,
//! compaction, caches) is private to the crate. Strata's own tools (the `strata` admin commands,
//! the stress test, the fuzzers, the golden-bytes tests) read the files directly through
//! [`internal`], which carries no stability promise. The on-disk formats are specified in
//! `docs/format.md`.

#![warn(missing_docs)]

#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

// Dependencies point down only: db over the components (wal, memtable, sst, blob, version,
// compaction, cache, iter), over options/batch/wal_header, over fs, filenames and key, over
// util and error; verify and internal sit on top. scripts/module-deps.sh lists and checks it.
pub mod batch;
pub(crate) mod blob;
pub(crate) mod cache;
pub(crate) mod compaction;
pub mod compaction_filter;
pub mod db;
pub mod error;
pub(crate) mod filenames;
pub mod fs;
pub mod internal;
pub(crate) mod iter;
pub(crate) mod key;
pub(crate) mod memtable;
pub mod merge;
pub mod metrics;
pub mod options;
pub mod presets;
pub(crate) mod range_del;
pub mod snapshot;
pub(crate) mod sst;
pub mod ttl;
pub mod txn;
pub(crate) mod util;
pub mod verify;
pub(crate) mod version;
pub(crate) mod wal;
pub(crate) mod wal_header;

pub use batch::WriteBatch;
pub use db::{
    ColumnFamily, Db, DbIterator, DroppedTail, ExternalFileInfo, IngestOptions, Iter, RecoveryReport,
    RepairReport, SstFileWriter, Stats,
};
pub use error::{Error, Result};
pub use merge::MergeOperator;
pub use options::{Compression, Options, PrefixExtractor, ReadOptions, WalRecoveryMode, WriteOptions};
pub use presets::Preset;
pub use snapshot::Snapshot;

pub use compaction_filter::{CompactionFilter, Decision};
