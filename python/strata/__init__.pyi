"""Type stubs for the strata Python package."""

import os
from types import TracebackType
from typing import Iterable
from typing import Iterator as _Iterator
from typing import Any, Dict, Literal, Optional, Tuple, Type, TypeVar, Union, final, overload



__version__: str
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

_Bytes = Union[bytes, bytearray, memoryview]
_Path = Union[str, "os.PathLike[str]"]
_T = TypeVar("_T")

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

@final
class Iterator(_Iterator[_T]):
    """An iterator over a database or snapshot; a cursor between entries."""

    def __iter__(self) -> "Iterator[_T]": ...
    def __next__(self) -> _T: ...
    def seek(self, target: _Bytes) -> None: ...
    def seek_to_start(self) -> None: ...
    def seek_to_stop(self) -> None: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Iterator[_T]": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]] = None,
        exc: Optional[BaseException] = None,
        tb: Optional[TracebackType] = None,
    ) -> bool: ...

@final
class WriteBatch:
    """Puts, deletes and merges applied atomically."""

    def put(
        self, key: _Bytes, value: _Bytes, column_family: Optional[Union["ColumnFamily", str]] = None
    ) -> None: ...
    def delete(self, key: _Bytes, column_family: Optional[Union["ColumnFamily", str]] = None) -> None: ...
    def merge(
        self, key: _Bytes, value: _Bytes, column_family: Optional[Union["ColumnFamily", str]] = None
    ) -> None: ...
    def clear(self) -> None: ...
    def write(self) -> None: ...
    def __len__(self) -> int: ...
    def __enter__(self) -> "WriteBatch": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]] = None,
        exc: Optional[BaseException] = None,
        tb: Optional[TracebackType] = None,
    ) -> bool: ...

@final
class Snapshot:
    """A consistent point-in-time view of a database."""

    @property
    def sequence(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    @overload
    def get(self, key: _Bytes, default: None = None, fill_cache: bool = True) -> Optional[bytes]: ...
    @overload
    def get(self, key: _Bytes, default: _T, fill_cache: bool = True) -> Union[bytes, _T]: ...
    @overload
    def iterator(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        prefix: Optional[_Bytes] = None,
        reverse: bool = False,
        include_key: Literal[True] = True,
        include_value: Literal[True] = True,
        fill_cache: bool = True,
    ) -> Iterator[Tuple[bytes, bytes]]: ...
    @overload
    def iterator(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        prefix: Optional[_Bytes] = None,
        reverse: bool = False,
        *,
        include_key: bool = True,
        include_value: Literal[False],
        fill_cache: bool = True,
    ) -> Iterator[bytes]: ...
    @overload
    def iterator(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        prefix: Optional[_Bytes] = None,
        reverse: bool = False,
        *,
        include_key: Literal[False],
        include_value: bool = True,
        fill_cache: bool = True,
    ) -> Iterator[bytes]: ...
    def __iter__(self) -> Iterator[Tuple[bytes, bytes]]: ...
    def __getitem__(self, key: _Bytes, /) -> bytes: ...
    def __contains__(self, key: _Bytes, /) -> bool: ...
    def close(self) -> None: ...
    def release(self) -> None: ...
    def __enter__(self) -> "Snapshot": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]] = None,
        exc: Optional[BaseException] = None,
        tb: Optional[TracebackType] = None,
    ) -> bool: ...

@final
class ColumnFamily:
    """A handle on one column family of an open DB; closed with its DB."""

    @property
    def name(self) -> str: ...
    def put(self, key: _Bytes, value: _Bytes, sync: bool = False, disable_wal: bool = False) -> None: ...
    @overload
    def get(
        self, key: _Bytes, default: None = None, snapshot: Optional[Snapshot] = None, fill_cache: bool = True
    ) -> Optional[bytes]: ...
    @overload
    def get(
        self, key: _Bytes, default: _T, snapshot: Optional[Snapshot] = None, fill_cache: bool = True
    ) -> Union[bytes, _T]: ...
    def delete(self, key: _Bytes, sync: bool = False, disable_wal: bool = False) -> None: ...
    def merge(self, key: _Bytes, value: _Bytes, sync: bool = False, disable_wal: bool = False) -> None: ...
    def multi_get(
        self, keys: Iterable[_Bytes], snapshot: Optional[Snapshot] = None, fill_cache: bool = True
    ) -> list[Optional[bytes]]: ...
    def iterator(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        prefix: Optional[_Bytes] = None,
        reverse: bool = False,
        include_key: bool = True,
        include_value: bool = True,
        snapshot: Optional[Snapshot] = None,
        fill_cache: bool = True,
    ) -> Iterator[Any]: ...
    def __iter__(self) -> Iterator[Tuple[bytes, bytes]]: ...
    def flush(self) -> None: ...
    def compact_range(self, start: Optional[_Bytes] = None, stop: Optional[_Bytes] = None) -> None: ...
    def __getitem__(self, key: _Bytes, /) -> bytes: ...
    def __setitem__(self, key: _Bytes, value: _Bytes, /) -> None: ...
    def __delitem__(self, key: _Bytes, /) -> None: ...
    def __contains__(self, key: _Bytes, /) -> bool: ...

_Family = Optional[Union["ColumnFamily", str]]

@final
class TransactionIterator(_Iterator[_T]):
    """An iterator over what a transaction sees: its writes over the database."""

    def __iter__(self) -> "TransactionIterator[_T]": ...
    def __next__(self) -> _T: ...
    def seek(self, target: _Bytes) -> None: ...
    def seek_to_start(self) -> None: ...
    def seek_to_stop(self) -> None: ...
    def close(self) -> None: ...
    def __enter__(self) -> "TransactionIterator[_T]": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]] = None,
        exc: Optional[BaseException] = None,
        tb: Optional[TracebackType] = None,
    ) -> bool: ...

@final
class Transaction:
    """A transaction from ``DB.transaction()``; as a context manager it commits on a normal exit
    and rolls back on an exception."""

    @property
    def ended(self) -> bool: ...
    @overload
    def get(
        self, key: _Bytes, default: None = None, column_family: _Family = None, fill_cache: bool = True
    ) -> Optional[bytes]: ...
    @overload
    def get(
        self, key: _Bytes, default: _T, column_family: _Family = None, fill_cache: bool = True
    ) -> Union[bytes, _T]: ...
    @overload
    def get_for_update(
        self, key: _Bytes, default: None = None, column_family: _Family = None, fill_cache: bool = True
    ) -> Optional[bytes]: ...
    @overload
    def get_for_update(
        self, key: _Bytes, default: _T, column_family: _Family = None, fill_cache: bool = True
    ) -> Union[bytes, _T]: ...
    def multi_get(
        self, keys: Iterable[_Bytes], column_family: _Family = None, fill_cache: bool = True
    ) -> list[Optional[bytes]]: ...
    def put(self, key: _Bytes, value: _Bytes, column_family: _Family = None) -> None: ...
    def delete(self, key: _Bytes, column_family: _Family = None) -> None: ...
    def merge(self, key: _Bytes, value: _Bytes, column_family: _Family = None) -> None: ...
    def iterator(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        prefix: Optional[_Bytes] = None,
        reverse: bool = False,
        include_key: bool = True,
        include_value: bool = True,
        column_family: _Family = None,
        fill_cache: bool = True,
    ) -> TransactionIterator[Any]: ...
    def __iter__(self) -> TransactionIterator[Tuple[bytes, bytes]]: ...
    def savepoint(self) -> None: ...
    def rollback_to_savepoint(self) -> None: ...
    def commit(self) -> None: ...
    def rollback(self) -> None: ...
    def __enter__(self) -> "Transaction": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]] = None,
        exc: Optional[BaseException] = None,
        tb: Optional[TracebackType] = None,
    ) -> bool: ...

_OptionValue = Union[bool, int, float, str, None]

@final
class DB:
    """An open strata database (a directory). Keys and values are bytes."""

    def __new__(
        cls,
        path: _Path,
        create_if_missing: bool = True,
        error_if_exists: bool = False,
        write_buffer_size: Optional[int] = None,
        cache_size: Optional[int] = None,
        bloom_bits_per_key: Optional[int] = None,
        compression: Optional[Literal["none", "snappy", "lz4", "zstd"]] = None,
        min_blob_size: Optional[int] = None,
        merge_operator: Optional[Literal["uint64add", "stringappend"]] = None,
        sync_gather_micros: Optional[int] = None,
        write_spin_micros: Optional[int] = None,
        options: Optional[str] = None,
        column_families: Optional[Dict[str, Optional[Dict[str, _OptionValue]]]] = None,
        transactions: Optional[Literal["optimistic", "pessimistic"]] = None,
        lock_timeout: Optional[float] = None,
    ) -> "DB": ...
    @property
    def name(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    def put(self, key: _Bytes, value: _Bytes, sync: bool = False, disable_wal: bool = False) -> None: ...
    @overload
    def get(
        self,
        key: _Bytes,
        default: None = None,
        snapshot: Optional[Snapshot] = None,
        fill_cache: bool = True,
    ) -> Optional[bytes]: ...
    @overload
    def get(
        self,
        key: _Bytes,
        default: _T,
        snapshot: Optional[Snapshot] = None,
        fill_cache: bool = True,
    ) -> Union[bytes, _T]: ...
    def delete(self, key: _Bytes, sync: bool = False, disable_wal: bool = False) -> None: ...
    def merge(self, key: _Bytes, value: _Bytes, sync: bool = False, disable_wal: bool = False) -> None: ...
    def write_batch(self, sync: bool = False, disable_wal: bool = False) -> WriteBatch: ...
    def transaction(
        self,
        sync: bool = False,
        disable_wal: bool = False,
        set_snapshot: bool = False,
        lock_timeout: Optional[float] = None,
    ) -> Transaction: ...
    @overload
    def iterator(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        prefix: Optional[_Bytes] = None,
        reverse: bool = False,
        include_key: Literal[True] = True,
        include_value: Literal[True] = True,
        snapshot: Optional[Snapshot] = None,
        fill_cache: bool = True,
    ) -> Iterator[Tuple[bytes, bytes]]: ...
    @overload
    def iterator(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        prefix: Optional[_Bytes] = None,
        reverse: bool = False,
        *,
        include_key: bool = True,
        include_value: Literal[False],
        snapshot: Optional[Snapshot] = None,
        fill_cache: bool = True,
    ) -> Iterator[bytes]: ...
    @overload
    def iterator(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        prefix: Optional[_Bytes] = None,
        reverse: bool = False,
        *,
        include_key: Literal[False],
        include_value: bool = True,
        snapshot: Optional[Snapshot] = None,
        fill_cache: bool = True,
    ) -> Iterator[bytes]: ...
    def __iter__(self) -> Iterator[Tuple[bytes, bytes]]: ...
    def snapshot(self) -> Snapshot: ...
    def flush(self) -> None: ...
    def sync_wal(self) -> None: ...
    def resume(self) -> None: ...
    def multi_get(
        self, keys: Iterable[_Bytes], snapshot: Optional[Snapshot] = None, fill_cache: bool = True
    ) -> list[Optional[bytes]]: ...
    def checkpoint(self, path: Union[str, "os.PathLike[str]"]) -> None: ...
    def compact_range(self, start: Optional[_Bytes] = None, stop: Optional[_Bytes] = None) -> None: ...
    def wait_for_compactions(self, timeout: Optional[float] = None) -> bool: ...
    def property(self, name: str) -> Optional[str]: ...
    def column_family(self, name: str) -> ColumnFamily: ...
    def create_column_family(self, name: str, **options: _OptionValue) -> ColumnFamily: ...
    def drop_column_family(self, column_family: Union[ColumnFamily, str]) -> None: ...
    def column_families(self) -> list[str]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "DB": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]] = None,
        exc: Optional[BaseException] = None,
        tb: Optional[TracebackType] = None,
    ) -> bool: ...
    def __getitem__(self, key: _Bytes, /) -> bytes: ...
    def __setitem__(self, key: _Bytes, value: _Bytes, /) -> None: ...
    def __delitem__(self, key: _Bytes, /) -> None: ...
    def __contains__(self, key: _Bytes, /) -> bool: ...

def repair_db(
    path: _Path,
    write_buffer_size: Optional[int] = None,
    cache_size: Optional[int] = None,
    bloom_bits_per_key: Optional[int] = None,
    compression: Optional[Literal["none", "snappy", "lz4", "zstd"]] = None,
    min_blob_size: Optional[int] = None,
    merge_operator: Optional[Literal["uint64add", "stringappend"]] = None,
    sync_gather_micros: Optional[int] = None,
    write_spin_micros: Optional[int] = None,
    options: Optional[str] = None,
) -> Dict[str, Any]:
    """Rebuild the database at ``path`` from its data files (``strata repair``); returns the report.

    Files taken out of the database are moved to ``path/lost/``. Raises ``LockedError`` while the
    database is open and ``NotADatabaseError`` for a directory without one.
    """

def list_column_families(path: _Path) -> list[str]:
    """The names of the column families of the database at ``path``, ``"default"`` first, read
    without opening it. Raises ``NotADatabaseError`` when there is no database there."""
