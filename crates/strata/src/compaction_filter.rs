//! Compaction filters: an application's hook for dropping or rewriting values as compactions
//! rewrite them (RocksDB's `CompactionFilter`), set per column family in
//! [`Options::compaction_filter`](crate::Options::compaction_filter).
//!
//! This module owns the public trait and its [`Decision`]. It must not know how a compaction
//! runs: which entries are offered, and what a decision turns into on disk, is
//! `compaction::filtering`'s business.

/// What a [`CompactionFilter`] decides for one value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Keep the value as it is.
    Keep,
    /// Make the key read as deleted.
    Remove,
    /// Replace the value with this one.
    ChangeValue(Vec<u8>),
}

/// Decides, while a compaction rewrites a key, whether its value stays, goes, or changes:
/// RocksDB's `CompactionFilter`. Use it to expire data (see [`crate::ttl`]), to drop a tenant's
/// keys in the background, or to migrate a value format lazily.
///
/// What the filter is called on, and what its decision does:
///
/// - It runs in compactions only: flushes and ingested files
///   ([`Db::ingest_external_file`](crate::Db::ingest_external_file)) do not call it, and neither
///   do trivial moves (a file moved to another level without being rewritten), so a value may be read long after the
///   filter would have removed it, until a compaction rewrites its file
///   ([`Db::compact_range`](crate::Db::compact_range) rewrites everything in its range).
/// - It sees the newest version of a key only, and only when that version is a value (a put):
///   deletions, range deletions and merge operands are never passed to it, nor is a value a
///   compaction has just folded from merge operands, nor one a range deletion hides. Older versions of a key are not offered either; they are
///   shadowed by the newest one.
/// - It does not see a value that a live [`Snapshot`](crate::Snapshot) can read (one written at
///   or before the newest snapshot's sequence number): what a snapshot reads never changes. The
///   value is offered to a later compaction once the snapshot is released.
/// - A value stored in a blob file is read from it first, so the filter always sees the value
///   the application wrote.
/// - [`Decision::Remove`] makes the key read as deleted. At the bottommost level (nothing older
///   of the key below) the entry is simply dropped; above it, a deletion tombstone replaces the
///   value, so older versions in lower levels stay hidden.
/// - [`Decision::ChangeValue`] replaces the value, as a write would: a new value of at least
///   [`Options::min_blob_size`](crate::Options::min_blob_size) bytes goes to a blob file.
/// - `level` is the level the compaction writes its output to (1 to
///   [`NUM_LEVELS`](crate::options::NUM_LEVELS)` - 1`).
/// - A filter that panics fails the compaction: the database turns read-only with an
///   [`Error::Background`](crate::Error::Background) naming the filter and the panic (as a
///   panicking merge operator does); nothing is written, and reopening with a fixed filter
///   recovers every write.
///
/// The filter is called from background threads, several at once for different column families
/// (hence `Send + Sync`), and must be deterministic enough that a repeated compaction is
/// harmless. Its name is recorded in the OPTIONS file (`compaction_filter=NAME`); the filter
/// itself must be set in code at every open.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use std::sync::Arc;
/// use strata::{CompactionFilter, Db, Decision, Options};
///
/// /// Drops every key of the `tmp:` namespace and upper-cases the rest.
/// struct Cleanup;
///
/// impl CompactionFilter for Cleanup {
///     fn name(&self) -> &str {
///         "cleanup"
///     }
///     fn filter(&self, _level: usize, key: &[u8], value: &[u8]) -> Decision {
///         if key.starts_with(b"tmp:") {
///             Decision::Remove
///         } else {
///             Decision::ChangeValue(value.to_ascii_uppercase())
///         }
///     }
/// }
///
/// let db = Db::open(dir.path(), Options { compaction_filter: Some(Arc::new(Cleanup)), ..Options::default() })?;
/// db.put("tmp:session", "x")?;
/// db.put("user:1", "ada")?;
/// assert_eq!(db.get("tmp:session")?.as_deref(), Some(&b"x"[..])); // not compacted yet
/// db.compact_range(None, None)?;
/// assert_eq!(db.get("tmp:session")?, None);
/// assert_eq!(db.get("user:1")?.as_deref(), Some(&b"ADA"[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait CompactionFilter: Send + Sync {
    /// A stable name identifying the filter, recorded in the OPTIONS file
    /// (`compaction_filter=`).
    fn name(&self) -> &str;

    /// Decides what becomes of `value`, the newest value of `key`, in a compaction writing to
    /// `level`. See [`CompactionFilter`] for which values are offered.
    fn filter(&self, level: usize, key: &[u8], value: &[u8]) -> Decision;
}
