//! A database whose entries expire: RocksDB's `DBWithTTL`. [`TtlDb`] wraps a [`Db`], stores each
//! value with its write time appended (docs/format.md, "TTL values"), installs a compaction
//! filter that drops entries older than the TTL, and hides expired entries from every read.
//!
//! This module owns the value suffix, the expiry rule and the clock seam. It must not reach into
//! the engine: everything goes through the public [`Db`] API and [`Options::compaction_filter`],
//! so a `TtlDb`'s files are an ordinary database's.
//!
//! Unlike RocksDB, whose TTL database may return an expired value until a compaction removes it,
//! reads here ([`TtlDb::get`], [`TtlDb::multi_get`], [`TtlDb::iter`], [`TtlDb::cursor`]) never
//! return an expired entry: an entry is gone for readers the second it expires, and gone from
//! disk once a compaction rewrites its file.

mod iter;

use std::fmt;
use std::ops::RangeBounds;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use iter::{TtlCursor, TtlIter};

use crate::batch::WriteBatch;
use crate::compaction_filter::{CompactionFilter, Decision};
use crate::db::Db;
use crate::error::{Error, Result};
use crate::key::{ValueKind, DEFAULT_FAMILY};
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::snapshot::Snapshot;

/// Bytes of the write-time suffix every stored value ends with: seconds since the Unix epoch as
/// a little-endian `u64`.
pub const TIMESTAMP_LEN: usize = 8;

/// The name the TTL compaction filter is recorded under in the OPTIONS file.
pub const FILTER_NAME: &str = "strata.ttl";

/// Where a [`TtlDb`] gets the time from: the system clock, or a fake one in tests.
pub trait Clock: Send + Sync {
    /// Seconds since the Unix epoch.
    fn now_secs(&self) -> u64;
}

/// The operating system's wall clock (0 if it is set before 1970).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_secs(&self) -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
    }
}

/// How long entries live, and the clock that says how old they are.
#[derive(Clone)]
pub struct TtlOptions {
    /// How long an entry stays readable after it was written; whole seconds (a fraction is
    /// dropped), at least one.
    pub ttl: Duration,
    /// The clock write times are taken from and expiry is judged by (default [`SystemClock`]).
    pub clock: Arc<dyn Clock>,
}

impl TtlOptions {
    /// `ttl` on the system clock.
    pub fn new(ttl: Duration) -> Self {
        TtlOptions { ttl, clock: Arc::new(SystemClock) }
    }
}

impl fmt::Debug for TtlOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TtlOptions").field("ttl", &self.ttl).finish_non_exhaustive()
    }
}

/// The expiry rule: an entry written at second `t` is readable while `now <= t + ttl`, so it
/// lives at least `ttl` and less than `ttl` plus one second (RocksDB's rule).
#[derive(Clone)]
struct Expiry {
    ttl_secs: u64,
    clock: Arc<dyn Clock>,
}

impl Expiry {
    fn now(&self) -> u64 {
        self.clock.now_secs()
    }

    fn expired(&self, written: u64, now: u64) -> bool {
        now > written.saturating_add(self.ttl_secs)
    }

    /// The user's part of `stored` if it has not expired at `now`.
    fn live<'v>(&self, stored: &'v [u8], now: u64) -> Result<Option<&'v [u8]>> {
        let (value, written) = split(stored)?;
        Ok((!self.expired(written, now)).then_some(value))
    }

    /// [`Expiry::live`] for an owned value, trimmed in place.
    fn live_owned(&self, mut stored: Vec<u8>, now: u64) -> Result<Option<Vec<u8>>> {
        let len = self.live(&stored, now)?.map(<[u8]>::len);
        Ok(len.map(|len| {
            stored.truncate(len);
            stored
        }))
    }
}

/// Splits a stored value into the user's value and its write time.
fn split(stored: &[u8]) -> Result<(&[u8], u64)> {
    let Some(at) = stored.len().checked_sub(TIMESTAMP_LEN) else {
        return Err(Error::corruption(format!(
            "TTL value of {} bytes is shorter than its {TIMESTAMP_LEN}-byte timestamp",
            stored.len()
        )));
    };
    let (value, stamp) = stored.split_at(at);
    let mut buf = [0u8; TIMESTAMP_LEN];
    buf.copy_from_slice(stamp);
    Ok((value, u64::from_le_bytes(buf)))
}

/// `value` with the write time `now` appended.
fn stamp(value: &[u8], now: u64) -> Vec<u8> {
    let mut stored = Vec::with_capacity(value.len() + TIMESTAMP_LEN);
    stored.extend_from_slice(value);
    stored.extend_from_slice(&now.to_le_bytes());
    stored
}

/// Drops expired entries, then hands the rest (without the suffix) to the application's own
/// filter, if there is one.
struct TtlFilter {
    expiry: Expiry,
    user: Option<Arc<dyn CompactionFilter>>,
}

impl CompactionFilter for TtlFilter {
    fn name(&self) -> &str {
        FILTER_NAME
    }

    fn filter(&self, level: usize, key: &[u8], stored: &[u8]) -> Decision {
        // A value too short for a timestamp was not written through a TtlDb: it is kept, and a
        // read reports it as corruption.
        let Ok((value, written)) = split(stored) else { return Decision::Keep };
        if self.expiry.expired(written, self.expiry.now()) {
            return Decision::Remove;
        }
        match self.user.as_ref().map(|f| f.filter(level, key, value)) {
            None | Some(Decision::Keep) => Decision::Keep,
            Some(Decision::Remove) => Decision::Remove,
            Some(Decision::ChangeValue(new)) => Decision::ChangeValue(stamp(&new, written)),
        }
    }
}

/// A database whose entries expire `ttl` after they were written; see the [module](self) docs.
///
/// Every value is stored with an 8-byte write time appended ([`TIMESTAMP_LEN`]); reads strip it
/// and hide entries older than the TTL, and compactions drop them (through a compaction filter
/// that also runs the application's own [`Options::compaction_filter`] on live values). Expiry
/// is judged by the time of the read, also for reads at a [`Snapshot`]. [`TtlDb::db`] gives the
/// wrapped database, whose reads return the stored form (value and suffix) and whose writes
/// bypass the suffix: values written there without one read back as corruption here.
///
/// Limits: the default column family only, and no merge operator (open refuses one).
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use std::time::Duration;
/// use strata::ttl::TtlDb;
/// use strata::Options;
/// let db = TtlDb::open(dir.path(), Options::default(), Duration::from_secs(3600))?;
/// db.put("session:1", "ada")?;
/// assert_eq!(db.get("session:1")?.as_deref(), Some(&b"ada"[..]));
/// let stored = db.db().get("session:1")?.unwrap();
/// assert_eq!(stored.len(), 3 + strata::ttl::TIMESTAMP_LEN); // the value and its write time
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct TtlDb {
    db: Db,
    expiry: Expiry,
}

impl fmt::Debug for TtlDb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TtlDb").field("ttl_secs", &self.expiry.ttl_secs).finish_non_exhaustive()
    }
}

/// The options the wrapped database opens with: `opts` with the TTL filter in front of the
/// application's own filter.
fn prepare(mut opts: Options, ttl: TtlOptions) -> Result<(Options, Expiry)> {
    let ttl_secs = ttl.ttl.as_secs();
    if ttl_secs == 0 {
        return Err(Error::InvalidArgument("ttl: must be at least one second".into()));
    }
    if opts.merge_operator.is_some() {
        return Err(Error::InvalidArgument("merge_operator: a TtlDb does not support merge".into()));
    }
    let expiry = Expiry { ttl_secs, clock: ttl.clock };
    let user = opts.compaction_filter.take();
    opts.compaction_filter = Some(Arc::new(TtlFilter { expiry: expiry.clone(), user }));
    Ok((opts, expiry))
}

impl TtlDb {
    /// Opens (or creates, per `opts`) the database at `path` with entries living `ttl`, on the
    /// system clock.
    ///
    /// # Errors
    /// As [`Db::open`]; `InvalidArgument` for a `ttl` under one second or a merge operator.
    pub fn open(path: impl AsRef<Path>, opts: Options, ttl: Duration) -> Result<TtlDb> {
        TtlDb::open_with(path, opts, TtlOptions::new(ttl))
    }

    /// [`TtlDb::open`] with a clock of your choice.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use strata::ttl::{Clock, TtlDb, TtlOptions};
    /// use strata::Options;
    ///
    /// struct Fake(AtomicU64);
    /// impl Clock for Fake {
    ///     fn now_secs(&self) -> u64 {
    ///         self.0.load(Ordering::Relaxed)
    ///     }
    /// }
    /// let clock = Arc::new(Fake(AtomicU64::new(1_000)));
    /// let ttl = TtlOptions { ttl: Duration::from_secs(60), clock: clock.clone() };
    /// let db = TtlDb::open_with(dir.path(), Options::default(), ttl)?;
    /// db.put("k", "v")?;
    /// clock.0.store(1_060, Ordering::Relaxed);
    /// assert!(db.get("k")?.is_some()); // 60 s old: still readable
    /// clock.0.store(1_061, Ordering::Relaxed);
    /// assert_eq!(db.get("k")?, None); // expired
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`TtlDb::open`].
    pub fn open_with(path: impl AsRef<Path>, opts: Options, ttl: TtlOptions) -> Result<TtlDb> {
        let (opts, expiry) = prepare(opts, ttl)?;
        Ok(TtlDb { db: Db::open(path, opts)?, expiry })
    }

    /// Opens the database at `path` read-only (see [`Db::open_read_only`]); reads hide expired
    /// entries as in a read-write open.
    ///
    /// # Errors
    /// As [`Db::open_read_only`] and [`TtlDb::open`].
    pub fn open_read_only(path: impl AsRef<Path>, opts: Options, ttl: Duration) -> Result<TtlDb> {
        TtlDb::open_read_only_with(path, opts, TtlOptions::new(ttl))
    }

    /// [`TtlDb::open_read_only`] with a clock of your choice.
    ///
    /// # Errors
    /// As [`TtlDb::open_read_only`].
    pub fn open_read_only_with(path: impl AsRef<Path>, opts: Options, ttl: TtlOptions) -> Result<TtlDb> {
        let (opts, expiry) = prepare(opts, ttl)?;
        Ok(TtlDb { db: Db::open_read_only(path, opts)?, expiry })
    }

    /// The wrapped database: its reads return stored values (value and write-time suffix, expired
    /// or not), and it has everything this wrapper does not (properties, checkpoints, column
    /// families).
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// How long entries live, in whole seconds.
    pub fn ttl(&self) -> Duration {
        Duration::from_secs(self.expiry.ttl_secs)
    }

    /// Sets `key` to `value`, written now; see [`Db::put`].
    ///
    /// # Errors
    /// As [`Db::put_opt`].
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_opt(&WriteOptions::default(), key.as_ref(), value.as_ref())
    }

    /// [`TtlDb::put`] with write options.
    ///
    /// # Errors
    /// As [`Db::put_opt`].
    pub fn put_opt(&self, opts: &WriteOptions, key: &[u8], value: &[u8]) -> Result<()> {
        self.db.put_opt(opts, key, &stamp(value, self.expiry.now()))
    }

    /// Deletes `key`; see [`Db::delete`].
    ///
    /// # Errors
    /// As [`Db::delete_opt`].
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.db.delete(key)
    }

    /// [`TtlDb::delete`] with write options.
    ///
    /// # Errors
    /// As [`Db::delete_opt`].
    pub fn delete_opt(&self, opts: &WriteOptions, key: &[u8]) -> Result<()> {
        self.db.delete_opt(opts, key)
    }

    /// Applies `batch` atomically, every put stamped with the same write time; see [`Db::write`].
    ///
    /// # Errors
    /// `InvalidArgument` for a batch with a merge or a record for a column family other than the
    /// default; else as [`Db::write_opt`].
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(&WriteOptions::default(), batch)
    }

    /// [`TtlDb::write`] with write options.
    ///
    /// # Errors
    /// As [`TtlDb::write`].
    pub fn write_opt(&self, opts: &WriteOptions, batch: WriteBatch) -> Result<()> {
        let now = self.expiry.now();
        let mut stamped = WriteBatch::new();
        for record in batch.records() {
            let (family, kind, key, value) = record?;
            if family != DEFAULT_FAMILY {
                return Err(Error::InvalidArgument("a TtlDb writes the default column family only".into()));
            }
            match kind {
                ValueKind::Put => stamped.put(key, stamp(value, now)),
                ValueKind::Delete => stamped.delete(key),
                _ => return Err(Error::InvalidArgument("a TtlDb does not support merge".into())),
            };
        }
        self.db.write_opt(opts, stamped)
    }

    /// The latest value of `key`, `None` when absent or expired; see [`Db::get`].
    ///
    /// # Errors
    /// As [`Db::get_opt`]; `Corruption` for a stored value too short to carry a write time.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_opt(&ReadOptions::new(), key.as_ref())
    }

    /// [`TtlDb::get`] with read options (a snapshot); expiry is judged by the time of the read.
    ///
    /// # Errors
    /// As [`TtlDb::get`].
    pub fn get_opt(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let now = self.expiry.now();
        match self.db.get_opt(opts, key)? {
            Some(stored) => self.expiry.live_owned(stored, now),
            None => Ok(None),
        }
    }

    /// The latest values of `keys` at one point in time; see [`Db::multi_get`].
    pub fn multi_get<K: AsRef<[u8]>>(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> Vec<Result<Option<Vec<u8>>>> {
        let keys: Vec<K> = keys.into_iter().collect();
        let slices: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
        self.multi_get_opt(&ReadOptions::new(), &slices)
    }

    /// [`TtlDb::multi_get`] with read options.
    pub fn multi_get_opt(&self, opts: &ReadOptions, keys: &[&[u8]]) -> Vec<Result<Option<Vec<u8>>>> {
        let now = self.expiry.now();
        let values = self.db.multi_get_opt(opts, keys);
        values
            .into_iter()
            .map(|r| r.and_then(|v| v.map_or(Ok(None), |v| self.expiry.live_owned(v, now))))
            .collect()
    }

    /// Every live key and value in key order; see [`TtlIter`].
    pub fn iter(&self) -> TtlIter {
        self.iter_opt(&ReadOptions::new())
    }

    /// [`TtlDb::iter`] with read options: a snapshot, bounds, a prefix.
    pub fn iter_opt(&self, opts: &ReadOptions) -> TtlIter {
        TtlIter::new(self.db.iter_opt(opts), self.expiry.clone())
    }

    /// The live keys in `range`; see [`Db::range`].
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> TtlIter {
        TtlIter::new(self.db.range(range), self.expiry.clone())
    }

    /// The live keys that start with `prefix`.
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> TtlIter {
        TtlIter::new(self.db.prefix(prefix), self.expiry.clone())
    }

    /// A cursor (seek, next, prev) over the live entries; see [`TtlCursor`].
    ///
    /// # Errors
    /// As [`Db::cursor`].
    pub fn cursor(&self, opts: &ReadOptions) -> Result<TtlCursor> {
        Ok(TtlCursor::new(self.db.cursor(opts)?, self.expiry.clone()))
    }

    /// A snapshot of the wrapped database, for [`ReadOptions::snapshot`].
    pub fn snapshot(&self) -> Snapshot {
        self.db.snapshot()
    }

    /// Flushes the memtable; see [`Db::flush`].
    ///
    /// # Errors
    /// As [`Db::flush`].
    pub fn flush(&self) -> Result<()> {
        self.db.flush()
    }

    /// Compacts `[start, end]`, dropping the expired entries it rewrites; see
    /// [`Db::compact_range`].
    ///
    /// # Errors
    /// As [`Db::compact_range`].
    pub fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.db.compact_range(start, end)
    }
}
