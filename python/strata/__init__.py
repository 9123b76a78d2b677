"""strata: an embedded, durable, ordered key-value store (LSM tree with key-value separation).

Keys and values are ``bytes``. Quick start::

    import strata

    with strata.DB("/tmp/example") as db:
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
    LockedError,
    LockTimeoutError,
    MergeError,
    NotADatabaseError,
    StrataIOError,
    TransactionConflictError,
    UnsupportedVersionError,
)
from ._strata import (
    DB,
    ColumnFamily,
    Iterator,
    Snapshot,
    Transaction,
    TransactionIterator,
    WriteBatch,
    __version__,
    list_column_families,
    repair_db,
)

__all__ = [
    "DB",
    "ColumnFamily",
    "Iterator",
    "Snapshot",
    "WriteBatch",
    "Transaction",
    "TransactionIterator",
    "repair_db",
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
    "__version__",
]
