"""strata: an embedded, durable, ordered key-value store (LSM tree with key-value separation).

Keys and values are ``bytes``. The API is plyvel's (``DB``, ``WriteBatch``, ``Snapshot``,
``Iterator``, ``RawIterator``, ``PrefixedDB``, ``repair_db``, ``destroy_db``), plus merges, range
deletions, column families, transactions and bulk loading (``SstFileWriter``). Quick start::

    import strata

    with strata.DB("/tmp/example", create_if_missing=True) as db:
        db.put(b"key", b"value")
        assert db.get(b"key") == b"value"
        with db.write_batch() as wb:
            wb.put(b"a", b"1")
            wb.delete(b"key")
        for key, value in db.iterator(prefix=b"a"):
            print(key, value)
        with db.transaction() as txn:  # commits here, or rolls back on an exception
            txn.put(b"n", b"%d" % (int(txn.get_for_update(b"n", b"0")) + 1))
"""

from ._errors import (
    AlreadyExistsError,
    BackgroundError,
    ClosedError,
    CorruptionError,
    DeadlockError,
    Error,
    InvalidArgumentError,
    IteratorInvalidError,
    LockedError,
    LockTimeoutError,
    MergeError,
    NotADatabaseError,
    ReadOnlyError,
    StrataIOError,
    TransactionConflictError,
    UnsupportedVersionError,
)
from ._strata import (
    DB,
    ColumnFamily,
    ExternalFileInfo,
    Iterator,
    PrefixedDB,
    RawIterator,
    Snapshot,
    SstFileWriter,
    Transaction,
    TransactionIterator,
    WriteBatch,
    __version__,
    destroy_db,
    list_column_families,
    repair_db,
)

# plyvel's name for its IO error class; not in __all__, where it would shadow the built-in.
IOError = StrataIOError

__all__ = [
    "DB",
    "ColumnFamily",
    "Iterator",
    "RawIterator",
    "PrefixedDB",
    "Snapshot",
    "WriteBatch",
    "Transaction",
    "TransactionIterator",
    "SstFileWriter",
    "ExternalFileInfo",
    "repair_db",
    "destroy_db",
    "list_column_families",
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
    "__version__",
]
