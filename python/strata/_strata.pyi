"""Type stubs for strata._strata, the extension module (re-exported by the package)."""

import os
from types import TracebackType
from typing import Iterable
from typing import Iterator as _Iterator
from typing import Any, Callable, Dict, List, Literal, Optional, Protocol, Tuple, Type, TypeVar, Union, final, overload


_Bytes = Union[bytes, bytearray, memoryview]
_Path = Union[str, "os.PathLike[str]"]
_PathOrBytes = Union[str, bytes, "os.PathLike[str]"]
_T = TypeVar("_T")

class _MergeObject(Protocol):
    def merge(self, key: bytes, existing_value: Optional[bytes], operands: List[bytes], /) -> bytes: ...

# A built-in operator's name, a function merge(key, existing_value, operands) -> bytes, or an object
# with such a merge method (and optionally a ``name`` attribute).
_MergeOperator = Union[
    Literal["uint64add", "stringappend"],
    str,
    Callable[[bytes, Optional[bytes], List[bytes]], bytes],
    _MergeObject,
]
_Compression = Union[Literal["none", "snappy", "lz4", "zstd"], str, bytes, None]

@final
class Iterator(_Iterator[_T]):
    """An iterator over a database or snapshot; a cursor between entries."""

    def __iter__(self) -> "Iterator[_T]": ...
    def __next__(self) -> _T: ...
    def prev(self) -> _T: ...
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
class RawIterator:
    """The engine cursor (plyvel's RawIterator); starts invalid: position it with a seek."""

    def valid(self) -> bool: ...
    def seek_to_first(self) -> None: ...
    def seek_to_last(self) -> None: ...
    def seek(self, target: _Bytes) -> None: ...
    def seek_for_prev(self, target: _Bytes) -> None: ...
    def next(self) -> None: ...
    def prev(self) -> None: ...
    def key(self) -> bytes: ...
    def value(self) -> bytes: ...
    def item(self) -> Tuple[bytes, bytes]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "RawIterator": ...
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
    def delete_range(
        self, start: _Bytes, stop: _Bytes, column_family: Optional[Union["ColumnFamily", str]] = None
    ) -> None: ...
    def merge(
        self, key: _Bytes, value: _Bytes, column_family: Optional[Union["ColumnFamily", str]] = None
    ) -> None: ...
    def clear(self) -> None: ...
    def append(self, source: "WriteBatch") -> None: ...
    def approximate_size(self) -> int: ...
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
    """A consistent point-in-time view of a database (or of a PrefixedDB's keys)."""

    @property
    def sequence(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    @overload
    def get(
        self, key: _Bytes, default: None = None, fill_cache: bool = True, *, verify_checksums: bool = False
    ) -> Optional[bytes]: ...
    @overload
    def get(
        self, key: _Bytes, default: _T, fill_cache: bool = True, *, verify_checksums: bool = False
    ) -> Union[bytes, _T]: ...
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
        *,
        include_start: bool = True,
        include_stop: bool = False,
        verify_checksums: bool = False,
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
        include_start: bool = True,
        include_stop: bool = False,
        verify_checksums: bool = False,
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
        include_start: bool = True,
        include_stop: bool = False,
        verify_checksums: bool = False,
    ) -> Iterator[bytes]: ...
    def raw_iterator(self, *, verify_checksums: bool = False, fill_cache: bool = True) -> RawIterator: ...
    def keys(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        prefix: Optional[_Bytes] = None,
        reverse: bool = False,
        *,
        include_start: bool = True,
        include_stop: bool = False,
        fill_cache: bool = True,
        verify_checksums: bool = False,
    ) -> Iterator[bytes]: ...
    def values(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        prefix: Optional[_Bytes] = None,
        reverse: bool = False,
        *,
        include_start: bool = True,
        include_stop: bool = False,
        fill_cache: bool = True,
        verify_checksums: bool = False,
    ) -> Iterator[bytes]: ...
    def items(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        prefix: Optional[_Bytes] = None,
        reverse: bool = False,
        *,
        include_start: bool = True,
        include_stop: bool = False,
        fill_cache: bool = True,
        verify_checksums: bool = False,
    ) -> Iterator[Tuple[bytes, bytes]]: ...
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
    def delete_range(self, start: _Bytes, stop: _Bytes, sync: bool = False, disable_wal: bool = False) -> None: ...
    def merge(self, key: _Bytes, value: _Bytes, sync: bool = False, disable_wal: bool = False) -> None: ...
    def multi_get(
        self, keys: Iterable[_Bytes], snapshot: Optional[Snapshot] = None, fill_cache: bool = True
    ) -> list[Optional[bytes]]: ...
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
        *,
        include_start: bool = True,
        include_stop: bool = False,
        verify_checksums: bool = False,
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
        include_start: bool = True,
        include_stop: bool = False,
        verify_checksums: bool = False,
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
        include_start: bool = True,
        include_stop: bool = False,
        verify_checksums: bool = False,
    ) -> Iterator[bytes]: ...
    def raw_iterator(
        self, *, verify_checksums: bool = False, fill_cache: bool = True, snapshot: Optional[Snapshot] = None
    ) -> RawIterator: ...
    def keys(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        prefix: Optional[_Bytes] = None,
        reverse: bool = False,
        *,
        include_start: bool = True,
        include_stop: bool = False,
        snapshot: Optional[Snapshot] = None,
        fill_cache: bool = True,
        verify_checksums: bool = False,
    ) -> Iterator[bytes]: ...
    def values(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        prefix: Optional[_Bytes] = None,
        reverse: bool = False,
        *,
        include_start: bool = True,
        include_stop: bool = False,
        snapshot: Optional[Snapshot] = None,
        fill_cache: bool = True,
        verify_checksums: bool = False,
    ) -> Iterator[bytes]: ...
    def items(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        prefix: Optional[_Bytes] = None,
        reverse: bool = False,
        *,
        include_start: bool = True,
        include_stop: bool = False,
        snapshot: Optional[Snapshot] = None,
        fill_cache: bool = True,
        verify_checksums: bool = False,
    ) -> Iterator[Tuple[bytes, bytes]]: ...
    def __iter__(self) -> Iterator[Tuple[bytes, bytes]]: ...
    def approximate_sizes(self, *ranges: Tuple[_Bytes, _Bytes]) -> list[int]: ...
    def ingest_external_file(self, paths: Union[_PathOrBytes, Iterable[_PathOrBytes]]) -> None: ...
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
class PrefixedDB:
    """The keys of a DB that start with a prefix, without it (plyvel's PrefixedDB)."""

    @property
    def db(self) -> "DB": ...
    @property
    def prefix(self) -> bytes: ...
    def put(self, key: _Bytes, value: _Bytes, sync: bool = False, disable_wal: bool = False) -> None: ...
    @overload
    def get(
        self,
        key: _Bytes,
        default: None = None,
        snapshot: Optional[Snapshot] = None,
        fill_cache: bool = True,
        *,
        verify_checksums: bool = False,
    ) -> Optional[bytes]: ...
    @overload
    def get(
        self,
        key: _Bytes,
        default: _T,
        snapshot: Optional[Snapshot] = None,
        fill_cache: bool = True,
        *,
        verify_checksums: bool = False,
    ) -> Union[bytes, _T]: ...
    def delete(self, key: _Bytes, sync: bool = False, disable_wal: bool = False) -> None: ...
    def delete_range(self, start: _Bytes, stop: _Bytes, sync: bool = False, disable_wal: bool = False) -> None: ...
    def merge(self, key: _Bytes, value: _Bytes, sync: bool = False, disable_wal: bool = False) -> None: ...
    def write_batch(self, sync: bool = False, disable_wal: bool = False, *, transaction: bool = False) -> WriteBatch: ...
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
        *,
        include_start: bool = True,
        include_stop: bool = False,
        verify_checksums: bool = False,
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
        include_start: bool = True,
        include_stop: bool = False,
        verify_checksums: bool = False,
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
        include_start: bool = True,
        include_stop: bool = False,
        verify_checksums: bool = False,
    ) -> Iterator[bytes]: ...
    def raw_iterator(
        self, *, verify_checksums: bool = False, fill_cache: bool = True, snapshot: Optional[Snapshot] = None
    ) -> RawIterator: ...
    def keys(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        prefix: Optional[_Bytes] = None,
        reverse: bool = False,
        *,
        include_start: bool = True,
        include_stop: bool = False,
        snapshot: Optional[Snapshot] = None,
        fill_cache: bool = True,
        verify_checksums: bool = False,
    ) -> Iterator[bytes]: ...
    def values(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        prefix: Optional[_Bytes] = None,
        reverse: bool = False,
        *,
        include_start: bool = True,
        include_stop: bool = False,
        snapshot: Optional[Snapshot] = None,
        fill_cache: bool = True,
        verify_checksums: bool = False,
    ) -> Iterator[bytes]: ...
    def items(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        prefix: Optional[_Bytes] = None,
        reverse: bool = False,
        *,
        include_start: bool = True,
        include_stop: bool = False,
        snapshot: Optional[Snapshot] = None,
        fill_cache: bool = True,
        verify_checksums: bool = False,
    ) -> Iterator[Tuple[bytes, bytes]]: ...
    def __iter__(self) -> Iterator[Tuple[bytes, bytes]]: ...
    def snapshot(self) -> Snapshot: ...
    def prefixed_db(self, prefix: _Bytes) -> "PrefixedDB": ...
    def __getitem__(self, key: _Bytes, /) -> bytes: ...
    def __setitem__(self, key: _Bytes, value: _Bytes, /) -> None: ...
    def __delitem__(self, key: _Bytes, /) -> None: ...
    def __contains__(self, key: _Bytes, /) -> bool: ...

@final
class ExternalFileInfo:
    """What a file finished by ``SstFileWriter`` holds."""

    @property
    def path(self) -> str: ...
    @property
    def smallest_key(self) -> bytes: ...
    @property
    def largest_key(self) -> bytes: ...
    @property
    def num_entries(self) -> int: ...
    @property
    def file_size(self) -> int: ...

@final
class SstFileWriter:
    """Writes a table file of keys in strictly increasing order, for ``DB.ingest_external_file``.
    As a context manager it finishes the file on a normal exit and removes it on an exception."""

    def __init__(self, path: _PathOrBytes, **options: _OptionValue) -> None: ...
    @property
    def path(self) -> str: ...
    @property
    def num_entries(self) -> int: ...
    @property
    def info(self) -> Optional[ExternalFileInfo]: ...
    def put(self, key: _Bytes, value: _Bytes) -> None: ...
    def delete(self, key: _Bytes) -> None: ...
    def merge(self, key: _Bytes, value: _Bytes) -> None: ...
    def finish(self) -> ExternalFileInfo: ...
    def __enter__(self) -> "SstFileWriter": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]] = None,
        exc: Optional[BaseException] = None,
        tb: Optional[TracebackType] = None,
    ) -> bool: ...

@final
class DB:
    """An open strata database (a directory). Keys and values are bytes."""

    def __new__(
        cls,
        name: Optional[_PathOrBytes] = None,
        create_if_missing: bool = False,
        error_if_exists: bool = False,
        *,
        paranoid_checks: Optional[bool] = None,
        write_buffer_size: Optional[int] = None,
        max_open_files: Optional[int] = None,
        lru_cache_size: Optional[int] = None,
        block_size: Optional[int] = None,
        block_restart_interval: Optional[int] = None,
        max_file_size: Optional[int] = None,
        compression: _Compression = ...,
        bloom_filter_bits: Optional[int] = None,
        comparator: None = None,
        comparator_name: None = None,
        cache_size: Optional[int] = None,
        bloom_bits_per_key: Optional[int] = None,
        min_blob_size: Optional[int] = None,
        merge_operator: Optional[_MergeOperator] = None,
        sync_gather_micros: Optional[int] = None,
        write_spin_micros: Optional[int] = None,
        prefix_extractor: Optional[str] = None,
        options: Optional[str] = None,
        column_families: Optional[Dict[str, Optional[Dict[str, Union[_OptionValue, _MergeOperator]]]]] = None,
        transactions: Optional[Literal["optimistic", "pessimistic"]] = None,
        lock_timeout: Optional[float] = None,
        read_only: bool = False,
        path: Optional[_PathOrBytes] = None,
    ) -> "DB": ...
    @property
    def name(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    @property
    def read_only(self) -> bool: ...
    def put(self, key: _Bytes, value: _Bytes, sync: bool = False, disable_wal: bool = False) -> None: ...
    @overload
    def get(
        self,
        key: _Bytes,
        default: None = None,
        snapshot: Optional[Snapshot] = None,
        fill_cache: bool = True,
        *,
        verify_checksums: bool = False,
    ) -> Optional[bytes]: ...
    @overload
    def get(
        self,
        key: _Bytes,
        default: _T,
        snapshot: Optional[Snapshot] = None,
        fill_cache: bool = True,
        *,
        verify_checksums: bool = False,
    ) -> Union[bytes, _T]: ...
    def delete(self, key: _Bytes, sync: bool = False, disable_wal: bool = False) -> None: ...
    def delete_range(self, start: _Bytes, stop: _Bytes, sync: bool = False, disable_wal: bool = False) -> None: ...
    def merge(self, key: _Bytes, value: _Bytes, sync: bool = False, disable_wal: bool = False) -> None: ...
    def write_batch(self, sync: bool = False, disable_wal: bool = False, *, transaction: bool = False) -> WriteBatch: ...
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
        *,
        include_start: bool = True,
        include_stop: bool = False,
        verify_checksums: bool = False,
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
        include_start: bool = True,
        include_stop: bool = False,
        verify_checksums: bool = False,
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
        include_start: bool = True,
        include_stop: bool = False,
        verify_checksums: bool = False,
    ) -> Iterator[bytes]: ...
    def raw_iterator(
        self, *, verify_checksums: bool = False, fill_cache: bool = True, snapshot: Optional[Snapshot] = None
    ) -> RawIterator: ...
    def keys(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        prefix: Optional[_Bytes] = None,
        reverse: bool = False,
        *,
        include_start: bool = True,
        include_stop: bool = False,
        snapshot: Optional[Snapshot] = None,
        fill_cache: bool = True,
        verify_checksums: bool = False,
    ) -> Iterator[bytes]: ...
    def values(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        prefix: Optional[_Bytes] = None,
        reverse: bool = False,
        *,
        include_start: bool = True,
        include_stop: bool = False,
        snapshot: Optional[Snapshot] = None,
        fill_cache: bool = True,
        verify_checksums: bool = False,
    ) -> Iterator[bytes]: ...
    def items(
        self,
        start: Optional[_Bytes] = None,
        stop: Optional[_Bytes] = None,
        prefix: Optional[_Bytes] = None,
        reverse: bool = False,
        *,
        include_start: bool = True,
        include_stop: bool = False,
        snapshot: Optional[Snapshot] = None,
        fill_cache: bool = True,
        verify_checksums: bool = False,
    ) -> Iterator[Tuple[bytes, bytes]]: ...
    def __iter__(self) -> Iterator[Tuple[bytes, bytes]]: ...
    def snapshot(self) -> Snapshot: ...
    def prefixed_db(self, prefix: _Bytes) -> "PrefixedDB": ...
    def __getitem__(self, key: _Bytes, /) -> bytes: ...
    def __setitem__(self, key: _Bytes, value: _Bytes, /) -> None: ...
    def __delitem__(self, key: _Bytes, /) -> None: ...
    def __contains__(self, key: _Bytes, /) -> bool: ...
    def transaction(
        self,
        sync: bool = False,
        disable_wal: bool = False,
        set_snapshot: bool = False,
        lock_timeout: Optional[float] = None,
    ) -> Transaction: ...
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
    def get_property(self, name: Union[bytes, str]) -> Optional[bytes]: ...
    def approximate_size(self, start: _Bytes, stop: _Bytes) -> int: ...
    def approximate_sizes(self, *ranges: Tuple[_Bytes, _Bytes]) -> list[int]: ...
    def ingest_external_file(
        self, paths: Union[_PathOrBytes, Iterable[_PathOrBytes]], column_family: _Family = None
    ) -> None: ...
    def column_family(self, name: str) -> ColumnFamily: ...
    def create_column_family(self, name: str, **options: Union[_OptionValue, _MergeOperator]) -> ColumnFamily: ...
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

def repair_db(
    name: Optional[_PathOrBytes] = None,
    *,
    paranoid_checks: Optional[bool] = None,
    write_buffer_size: Optional[int] = None,
    max_open_files: Optional[int] = None,
    lru_cache_size: Optional[int] = None,
    block_size: Optional[int] = None,
    block_restart_interval: Optional[int] = None,
    max_file_size: Optional[int] = None,
    compression: _Compression = ...,
    bloom_filter_bits: Optional[int] = None,
    comparator: None = None,
    comparator_name: None = None,
    cache_size: Optional[int] = None,
    bloom_bits_per_key: Optional[int] = None,
    min_blob_size: Optional[int] = None,
    merge_operator: Optional[_MergeOperator] = None,
    sync_gather_micros: Optional[int] = None,
    write_spin_micros: Optional[int] = None,
    prefix_extractor: Optional[str] = None,
    options: Optional[str] = None,
    path: Optional[_PathOrBytes] = None,
) -> Dict[str, Any]:
    """Rebuild the database at ``name`` from its data files (``strata repair``); returns the report.

    Files taken out of the database are moved to ``name/lost/``. Raises ``LockedError`` while the
    database is open and ``NotADatabaseError`` for a directory without one.
    """

def destroy_db(name: Optional[_PathOrBytes] = None, *, path: Optional[_PathOrBytes] = None) -> None:
    """Delete the closed database at ``name``: the files strata wrote, then the directory if empty.
    A missing directory is not an error; ``LockedError`` while it is open, ``NotADatabaseError`` for
    a directory with no file strata wrote."""

def list_column_families(path: _Path) -> list[str]:
    """The names of the column families of the database at ``path``, ``"default"`` first, read
    without opening it. Raises ``NotADatabaseError`` when there is no database there."""
