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
"""

from ._errors import (
    AlreadyExistsError,
    BackgroundError,
    ClosedError,
    CorruptionError,
    Error,
    InvalidArgumentError,
    LockedError,
    MergeError,
    NotADatabaseError,
    StrataIOError,
    UnsupportedVersionError,
)
from ._strata import (
    DB,
    ColumnFamily,
    Iterator,
    Snapshot,
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
    "__version__",
]
