//! The engine's error type. Every fallible public call returns [`Result`]; bad input and bad
//! files become typed errors, never panics.

use std::path::PathBuf;

/// Result alias used across the crate: `Result<T>` is `std::result::Result<T, strata::Error>`.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::{Db, Options, ReadOptions};
/// fn read_counter(db: &Db, key: &[u8]) -> strata::Result<u64> {
///     let v = db.get(key)?.unwrap_or_else(|| vec![0; 8]);
///     let bytes = <[u8; 8]>::try_from(v.as_slice())
///         .map_err(|_| strata::Error::InvalidArgument(format!("{key:?} is not a counter")))?;
///     Ok(u64::from_le_bytes(bytes))
/// }
/// let db = Db::open(dir.path(), Options::default())?;
/// assert_eq!(read_counter(&db, b"hits")?, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in strata. Bad input and damaged files become one of these,
/// never a panic. The enum is `#[non_exhaustive]`: match with a wildcard arm.
///
/// The `Display` text starts with the kind of error (`invalid argument: ...`, `corruption: ...`)
/// and names the option, file or key involved.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::{Db, Error, Options, WriteOptions};
/// // No database in the directory and `create_if_missing` is off.
/// let existing_only = Options { create_if_missing: false, ..Options::default() };
/// assert!(matches!(Db::open(dir.path(), existing_only), Err(Error::NotADatabase(_))));
///
/// let db = Db::open(dir.path(), Options::default())?;
/// // A second handle on an open database.
/// assert!(matches!(Db::open(dir.path(), Options::default()), Err(Error::Locked(_))));
/// // Bad input is `InvalidArgument`, and the message says what is wrong.
/// let err = db.put(vec![b'k'; 70_000], b"v").unwrap_err();
/// assert!(matches!(err, Error::InvalidArgument(_)));
/// assert_eq!(err.to_string(), "invalid argument: key is 70000 bytes, the limit is 65536");
/// drop(db);
///
/// // `error_if_exists` refuses an existing database.
/// let fresh_only = Options { error_if_exists: true, ..Options::default() };
/// assert!(matches!(Db::open(dir.path(), fresh_only), Err(Error::AlreadyExists(_))));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system IO error, with the file it concerned when known. Any call that touches
    /// the disk can return it.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Error, Options};
    /// let missing = dir.path().join("no-such-OPTIONS");
    /// match Options::load(&missing) {
    ///     Err(Error::Io { path, source }) => {
    ///         assert_eq!(path.as_deref(), Some(missing.as_path()));
    ///         assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    ///     }
    ///     other => panic!("expected an IO error, got {other:?}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[error("io error{}: {source}", path_suffix(.path))]
    Io {
        /// The file or directory involved, if any.
        path: Option<PathBuf>,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Stored bytes failed a checksum or could not be decoded. Reads, iterators, `Db::open` and
    /// compactions return it for a damaged file; see the example on [`Error::is_corruption`].
    #[error("corruption: {0}")]
    Corruption(String),
    /// An argument or option is invalid; the message names it. Returned by `Db::open` and
    /// [`Options::validate`](crate::Options::validate) for a bad option, by writes for an empty or
    /// oversized key or value, and by the options-file readers. See the example on [`Error`].
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Another handle (this process or another) holds the database lock; returned by `Db::open`.
    /// Holds the database directory. See the example on [`Error`].
    #[error("database is locked by another handle: {0}")]
    Locked(PathBuf),
    /// The path does not hold a strata database and `create_if_missing` is off; returned by
    /// `Db::open`, `Db::open_read_only` and `verify_db`. Holds the path. See the example on
    /// [`Error`].
    #[error("not a strata database (no CURRENT file): {0}")]
    NotADatabase(PathBuf),
    /// The database exists and `error_if_exists` is set; returned by `Db::open`. Holds the path.
    /// See the example on [`Error`].
    #[error("database already exists: {0}")]
    AlreadyExists(PathBuf),
    /// A file was written by a newer, unknown format version (an SST or blob file, or an OPTIONS
    /// file). Upgrade strata to read it.
    ///
    /// ```
    /// use strata::{Error, Options};
    /// let from_the_future = "[Version]\n  options_file_version=2\n";
    /// match Options::from_ini_str(from_the_future) {
    ///     Err(Error::UnsupportedVersion { what, found, supported }) => {
    ///         assert_eq!((what, found, supported), ("OPTIONS file", 2, 1));
    ///     }
    ///     other => panic!("expected UnsupportedVersion, got {other:?}"),
    /// }
    /// ```
    #[error("unsupported format version {found} in {what} (this build supports up to {supported})")]
    UnsupportedVersion {
        /// Which file kind.
        what: &'static str,
        /// The version found on disk.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// A background flush or compaction (or a WAL write or sync) failed; the database is
    /// read-only until [`Db::resume`](crate::Db::resume) clears the error or the database is
    /// reopened. Every later write, `flush`, `compact_range` and `close` returns it; the message
    /// names the failed job and its cause. [`Error::background_cause`] gives the cause as a typed
    /// error and [`Error::is_retryable`] says whether `resume` may clear it. See the
    /// fault-injection example on [`FileSystem`](crate::fs::FileSystem).
    ///
    /// ```
    /// use strata::Error;
    /// let full = std::io::Error::from(std::io::ErrorKind::StorageFull);
    /// let e = Error::Background {
    ///     context: "flush".to_string(),
    ///     cause: Some(Box::new(Error::io("/db/000012.sst", full))),
    /// };
    /// assert!(e.to_string().starts_with("database is read-only after a background error: flush: io error"));
    /// assert!(matches!(e.background_cause(), Some(Error::Io { source, .. })
    ///     if source.kind() == std::io::ErrorKind::StorageFull));
    /// assert!(e.is_retryable());
    /// ```
    #[error("database is read-only after a background error: {context}{}", cause_suffix(.cause))]
    Background {
        /// What failed: `"flush"`, `"compaction"`, `"manual compaction"`, `"WAL write"`,
        /// `"creating a WAL"`, `"syncing the WAL"`, or for a panic `"<job> panicked: <message>"`.
        context: String,
        /// The error the failed step returned; `None` when it panicked (the panic message is in
        /// `context`). Never itself a `Background` error.
        #[source]
        cause: Option<Box<Error>>,
    },
    /// The database is closing: returned to a `flush` or background job still waiting when the
    /// last handle is dropped. Not normally seen by callers, since every method needs a live handle
    /// (so there is no deterministic example).
    #[error("database is closed")]
    Closed,
    /// The database was opened with `Db::open_read_only`; writes, `flush` and `compact_range`
    /// return this.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Error, Options, WriteOptions};
    /// drop(Db::open(dir.path(), Options::default())?); // create it
    /// let reader = Db::open_read_only(dir.path(), Options::default())?;
    /// assert!(matches!(reader.put(b"k", b"v"), Err(Error::ReadOnly)));
    /// assert!(matches!(reader.flush(), Err(Error::ReadOnly)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[error("database was opened read-only")]
    ReadOnly,
    /// Merge operands could not be folded: the operator's `full_merge` returned `None`, or the
    /// database holds operands but was reopened without a merge operator. Returned by reads
    /// (`get`, iterators). (Writing a merge without an operator is `InvalidArgument`.) See the
    /// example on [`MergeOperator`](crate::MergeOperator).
    #[error("merge error: {0}")]
    Merge(String),
    /// A transaction conflicts with a write committed since its snapshot (optimistic commit, or
    /// a pessimistic lock on a key written since the snapshot). Nothing of the transaction was
    /// written: retry it from the start (RocksDB's `Status::Busy`).
    #[error("transaction conflict: {0}")]
    Busy(String),
    /// A pessimistic transaction waited longer than its lock timeout for a key another
    /// transaction holds; the operation did nothing and the transaction may go on or roll back.
    #[error("lock wait timed out: {0}")]
    LockTimeout(String),
    /// Waiting for the lock would close a cycle of transactions waiting for each other; the
    /// operation did nothing, and the transaction should roll back and retry.
    #[error("deadlock: {0}")]
    Deadlock(String),
    /// The operation exists in strata but not where it was asked for: a range deletion in a
    /// transaction or an indexed batch (as in RocksDB, whose `WriteBatchWithIndex` refuses
    /// `DeleteRange`). Nothing was done; use [`Db::delete_range`](crate::Db::delete_range).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{txn::WriteBatchWithIndex, Db, Error, Options};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// let mut batch = WriteBatchWithIndex::new();
    /// assert!(matches!(batch.delete_range(b"a", b"z"), Err(Error::NotSupported(_))));
    /// assert!(batch.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[error("not supported: {0}")]
    NotSupported(String),
}

fn path_suffix(p: &Option<PathBuf>) -> String {
    match p {
        Some(p) => format!(" on {}", p.display()),
        None => String::new(),
    }
}

fn cause_suffix(cause: &Option<Box<Error>>) -> String {
    match cause {
        Some(c) => format!(": {c}"),
        None => String::new(),
    }
}

impl Error {
    /// Wraps an IO error with the path it concerned, as [`Error::Io`]. For
    /// [`FileSystem`](crate::fs::FileSystem) implementations.
    ///
    /// ```
    /// use strata::Error;
    /// let e = Error::io("/db/000007.sst", std::io::Error::from(std::io::ErrorKind::PermissionDenied));
    /// assert!(e.to_string().starts_with("io error on /db/000007.sst: "));
    /// ```
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: Some(path.into()), source }
    }

    /// Builds an [`Error::Corruption`] from a message. For
    /// [`FileSystem`](crate::fs::FileSystem) implementations and tools that decode strata files.
    ///
    /// ```
    /// let e = strata::Error::corruption("block checksum mismatch");
    /// assert!(e.is_corruption());
    /// assert_eq!(e.to_string(), "corruption: block checksum mismatch");
    /// ```
    pub fn corruption(msg: impl Into<String>) -> Self {
        Error::Corruption(msg.into())
    }

    /// True for [`Error::Corruption`]: stored bytes are damaged, and retrying will not help.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, ReadOptions, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"k", b"v")?;
    /// db.flush()?;
    /// drop(db);
    /// // Damage the first data block of the table.
    /// let sst = std::fs::read_dir(dir.path())?
    ///     .map(|e| e.map(|e| e.path()))
    ///     .collect::<Result<Vec<_>, _>>()?
    ///     .into_iter()
    ///     .find(|p| p.extension().is_some_and(|e| e == "sst"))
    ///     .unwrap();
    /// let mut bytes = std::fs::read(&sst)?;
    /// bytes[0] ^= 0xff;
    /// std::fs::write(&sst, bytes)?;
    ///
    /// let db = Db::open(dir.path(), Options::default())?;
    /// let err = db.get(b"k").unwrap_err();
    /// assert!(err.is_corruption(), "{err}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption(_))
    }

    /// The typed cause of an [`Error::Background`]: the IO error, corruption or other error the
    /// failed flush, compaction or WAL write returned. `None` for every other variant, and for a
    /// background error caused by a panic.
    ///
    /// ```
    /// use strata::Error;
    /// let cause = Some(Box::new(Error::corruption("bad block")));
    /// let e = Error::Background { context: "compaction".into(), cause };
    /// assert!(e.background_cause().is_some_and(Error::is_corruption));
    /// assert!(Error::corruption("bad block").background_cause().is_none());
    /// ```
    pub fn background_cause(&self) -> Option<&Error> {
        match self {
            Error::Background { cause, .. } => cause.as_deref(),
            _ => None,
        }
    }

    /// True when the error may go away without anything being repaired, so that retrying the
    /// operation (or [`Db::resume`](crate::Db::resume) after a background error) can succeed:
    /// an IO error of kind `StorageFull` (ENOSPC), `QuotaExceeded` (EDQUOT), `Interrupted` or
    /// `TimedOut`, or a [`Error::Background`] whose cause is one. False for everything else:
    /// corruption, a panic, a merge error, and IO errors such as EIO that say the device or the
    /// file is bad.
    ///
    /// Whether the failed operation was an fsync does not matter here: after a failed fsync the
    /// file's unsynced pages may be lost (docs/durability.md, "Assumptions"), so `resume` never
    /// syncs or appends to that file again; it starts a new WAL and flushes the memtables whose
    /// writes were in the old one.
    ///
    /// ```
    /// use std::io::{Error as IoError, ErrorKind};
    /// use strata::Error;
    /// assert!(Error::io("/db/000005.log", IoError::from(ErrorKind::StorageFull)).is_retryable());
    /// assert!(!Error::io("/db/000005.log", IoError::other("EIO")).is_retryable());
    /// assert!(!Error::corruption("block checksum mismatch").is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        use std::io::ErrorKind as K;
        match self {
            Error::Io { source, .. } => {
                matches!(source.kind(), K::StorageFull | K::QuotaExceeded | K::Interrupted | K::TimedOut)
            }
            Error::Background { cause: Some(cause), .. } => cause.is_retryable(),
            _ => false,
        }
    }

    /// Wraps `cause` as the [`Error::Background`] of a failed `context` (a job or WAL step),
    /// unless it already is one, which is kept as it is.
    pub(crate) fn background(context: &str, cause: Error) -> Error {
        match cause {
            Error::Background { .. } => cause,
            other => Error::Background { context: context.to_string(), cause: Some(Box::new(other)) },
        }
    }

    /// The [`Error::Background`] of a `context` that panicked with `message`.
    pub(crate) fn background_panic(context: &str, message: &str) -> Error {
        Error::Background { context: format!("{context} panicked: {message}"), cause: None }
    }

    /// A copy of this error (`Error` is not `Clone` because `std::io::Error` is not): the same
    /// variant and message, and for [`Error::Io`] the same path and `io::ErrorKind` (the source is
    /// rebuilt from its message).
    ///
    /// ```
    /// use strata::Error;
    /// let e = Error::io("/db/LOCK", std::io::Error::from(std::io::ErrorKind::NotFound));
    /// let copy = e.duplicate();
    /// assert_eq!(copy.to_string(), e.to_string());
    /// assert!(matches!(copy, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound));
    /// ```
    pub fn duplicate(&self) -> Error {
        match self {
            Error::Io { path, source } => Error::Io {
                path: path.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            Error::Corruption(m) => Error::Corruption(m.clone()),
            Error::InvalidArgument(m) => Error::InvalidArgument(m.clone()),
            Error::Locked(p) => Error::Locked(p.clone()),
            Error::NotADatabase(p) => Error::NotADatabase(p.clone()),
            Error::AlreadyExists(p) => Error::AlreadyExists(p.clone()),
            Error::UnsupportedVersion { what, found, supported } => {
                Error::UnsupportedVersion { what, found: *found, supported: *supported }
            }
            Error::Background { context, cause } => Error::Background {
                context: context.clone(),
                cause: cause.as_ref().map(|c| Box::new(c.duplicate())),
            },
            Error::Closed => Error::Closed,
            Error::ReadOnly => Error::ReadOnly,
            Error::Merge(m) => Error::Merge(m.clone()),
            Error::Busy(m) => Error::Busy(m.clone()),
            Error::LockTimeout(m) => Error::LockTimeout(m.clone()),
            Error::Deadlock(m) => Error::Deadlock(m.clone()),
            Error::NotSupported(m) => Error::NotSupported(m.clone()),
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(source: std::io::Error) -> Self {
        Error::Io { path: None, source }
    }
}
