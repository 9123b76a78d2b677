"""Exception classes raised by strata. Every one derives from :class:`Error`."""

__all__ = [
    "Error",
    "CorruptionError",
    "InvalidArgumentError",
    "LockedError",
    "NotADatabaseError",
    "AlreadyExistsError",
    "UnsupportedVersionError",
    "BackgroundError",
    "ClosedError",
    "MergeError",
    "StrataIOError",
    "TransactionConflictError",
    "LockTimeoutError",
    "DeadlockError",
    "ReadOnlyError",
    "IteratorInvalidError",
]


class Error(Exception):
    """Base class of every error raised by strata."""


class CorruptionError(Error):
    """Stored bytes failed a checksum or could not be decoded."""


class InvalidArgumentError(Error, ValueError):
    """An argument or option is invalid (e.g. a key over 64 KiB); the message names it."""


class LockedError(Error):
    """Another handle, in this process or another, has the database open."""


class NotADatabaseError(Error):
    """The path holds no strata database and ``create_if_missing`` is False."""


class AlreadyExistsError(Error):
    """The database exists and ``error_if_exists`` is True."""


class UnsupportedVersionError(Error):
    """A file was written by a newer, unknown format version."""


class BackgroundError(Error):
    """A background flush or compaction, or a WAL write or sync, failed; the database is read-only
    until ``DB.resume()`` clears a retryable error, or until it is reopened.

    ``cause`` is the exception the failed step met (a ``StrataIOError`` with ``errno`` ENOSPC for a
    full disk, a ``CorruptionError`` for a damaged table), also set as ``__cause__``; it is None when
    the step panicked. ``retryable`` is True when ``DB.resume()`` may clear the error.
    """

    def __init__(self, message, cause=None, retryable=False):
        super().__init__(message)
        self.cause = cause
        self.retryable = retryable


class ClosedError(Error, RuntimeError):
    """The database, snapshot or iterator has been closed."""


class MergeError(Error):
    """A merge operand could not be applied. When a merge operator written in Python raised, its
    exception is the ``__cause__``."""


class StrataIOError(Error, OSError):
    """An operating-system IO error (``errno`` is set when known)."""


class TransactionConflictError(Error):
    """A transaction conflicts with a write committed since its snapshot (an optimistic commit, or
    a pessimistic transaction begun with ``set_snapshot=True`` claiming such a key). Nothing of the
    transaction was written: retry it from the start. RocksDB's ``Status::Busy``."""


class LockTimeoutError(Error):
    """A pessimistic transaction waited longer than its lock timeout for a key another transaction
    holds. The call did nothing; retry it, or roll the transaction back."""


class DeadlockError(Error):
    """Waiting for a lock would close a cycle of transactions waiting for each other. The call did
    nothing; roll the transaction back and retry it."""


class ReadOnlyError(Error):
    """A write, flush or compaction on a database opened with ``read_only=True``."""


class IteratorInvalidError(Error):
    """A ``RawIterator`` method that needs a current entry (``next``, ``prev``, ``key``,
    ``value``, ``item``) was called while the iterator is not ``valid()`` (plyvel's class)."""


# Report the public location (``strata.LockedError``) in tracebacks and reprs.
for _cls in (
    Error,
    CorruptionError,
    InvalidArgumentError,
    LockedError,
    NotADatabaseError,
    AlreadyExistsError,
    UnsupportedVersionError,
    BackgroundError,
    ClosedError,
    MergeError,
    StrataIOError,
    TransactionConflictError,
    LockTimeoutError,
    DeadlockError,
    ReadOnlyError,
    IteratorInvalidError,
):
    _cls.__module__ = "strata"
del _cls
