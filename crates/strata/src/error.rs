//! The engine's error type. Every fallible public call returns [`Result`]; bad input and bad
//! files become typed errors, never panics.

use std::path::PathBuf;

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in strata.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system IO error, with the file it concerned when known.
    #[error("io error{}: {source}", path_suffix(.path))]
    Io {
        /// The file or directory involved, if any.
        path: Option<PathBuf>,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Stored bytes failed a checksum or could not be decoded.
    #[error("corruption: {0}")]
    Corruption(String),
    /// An argument or option is invalid; the message names it.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Another handle (this process or another) holds the database lock.
    #[error("database is locked by another handle: {0}")]
    Locked(PathBuf),
    /// The path does not hold a strata database and `create_if_missing` is off.
    #[error("not a strata database (no CURRENT file): {0}")]
    NotADatabase(PathBuf),
    /// The database exists and `error_if_exists` is set.
    #[error("database already exists: {0}")]
    AlreadyExists(PathBuf),
    /// A file was written by a newer, unknown format version.
    #[error("unsupported format version {found} in {what} (this build supports up to {supported})")]
    UnsupportedVersion {
        /// Which file kind.
        what: &'static str,
        /// The version found on disk.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// A background flush or compaction failed; the database is read-only until reopened.
    #[error("database is read-only after a background error: {0}")]
    Background(String),
    /// The database has been closed.
    #[error("database is closed")]
    Closed,
    /// The database was opened read-only.
    #[error("database was opened read-only")]
    ReadOnly,
    /// A merge was attempted without a configured merge operator, or the operator failed.
    #[error("merge error: {0}")]
    Merge(String),
}

fn path_suffix(p: &Option<PathBuf>) -> String {
    match p {
        Some(p) => format!(" on {}", p.display()),
        None => String::new(),
    }
}

impl Error {
    /// Wraps an IO error with the path it concerned.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: Some(path.into()), source }
    }

    /// Builds a corruption error from anything printable.
    pub fn corruption(msg: impl Into<String>) -> Self {
        Error::Corruption(msg.into())
    }

    /// True for [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption(_))
    }

    /// A cheap clone used to hand the same background error to many callers.
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
            Error::Background(m) => Error::Background(m.clone()),
            Error::Closed => Error::Closed,
            Error::ReadOnly => Error::ReadOnly,
            Error::Merge(m) => Error::Merge(m.clone()),
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(source: std::io::Error) -> Self {
        Error::Io { path: None, source }
    }
}
