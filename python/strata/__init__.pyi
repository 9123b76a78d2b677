"""Type stubs for the strata Python package."""

import os
from types import TracebackType
from typing import Iterable
from typing import Iterator as _Iterator
from typing import Any, Callable, Dict, List, Literal, Optional, Protocol, Tuple, Type, TypeVar, Union, final, overload


__version__: str
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


class Error(Exception): ...
class CorruptionError(Error): ...
class InvalidArgumentError(Error, ValueError): ...
class LockedError(Error): ...
class NotADatabaseError(Error): ...
class AlreadyExistsError(Error): ...
class UnsupportedVersionError(Error): ...
class BackgroundError(Error):
    cause: Optional[Error]
    retryable: bool
    def __init__(self, message: str, cause: Optional[Error] = None, retryable: bool = False) -> None: ...

class ClosedError(Error, RuntimeError): ...
class MergeError(Error): ...
class StrataIOError(Error, OSError): ...
class TransactionConflictError(Error): ...
class LockTimeoutError(Error): ...
class DeadlockError(Error): ...
class ReadOnlyError(Error): ...
class IteratorInvalidError(Error): ...

IOError = StrataIOError


# The classes and functions of the extension module, re-exported as the package has them.
from ._strata import (
    DB as DB,
    ColumnFamily as ColumnFamily,
    Iterator as Iterator,
    RawIterator as RawIterator,
    PrefixedDB as PrefixedDB,
    Snapshot as Snapshot,
    WriteBatch as WriteBatch,
    Transaction as Transaction,
    TransactionIterator as TransactionIterator,
    SstFileWriter as SstFileWriter,
    ExternalFileInfo as ExternalFileInfo,
    repair_db as repair_db,
    destroy_db as destroy_db,
    list_column_families as list_column_families,
)
