"""Tests of the strata Python bindings. Run with `pytest python/tests` after `maturin develop`."""

import errno
import gc
import os
import re
import struct
import sys
import threading
import time

import pytest

import strata


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "db")


@pytest.fixture
def db(path):
    d = strata.DB(path, create_if_missing=True)
    yield d
    d.close()


def fill(db, n, width=4):
    for i in range(n):
        db.put(b"k%0*d" % (width, i), b"v%d" % i)


# --- basics -------------------------------------------------------------------------------------


def test_put_get_delete_round_trip(db):
    assert db.get(b"a") is None
    assert db.get(b"a", b"dflt") == b"dflt"
    db.put(b"a", b"1")
    assert db.get(b"a") == b"1"
    db.put(b"a", b"2", sync=True)
    assert db.get(b"a") == b"2"
    db.delete(b"a")
    assert db.get(b"a") is None
    db.delete(b"never-there")  # deleting an absent key is fine


def test_binary_and_large_values(db):
    key = bytes(range(256))
    value = os.urandom(100_000)  # above min_blob_size: stored in a blob file
    db.put(key, value)
    assert db.get(key) == value
    db.put(b"empty", b"")
    assert db.get(b"empty") == b""
    db.flush()
    assert db.get(key) == value
    assert db.get(b"empty") == b""


def test_bytes_like_arguments(db):
    db.put(bytearray(b"ba"), memoryview(b"mv"))
    assert db.get(b"ba") == b"mv"
    assert db.get(memoryview(b"ba")) == b"mv"
    assert db.get(bytearray(b"ba")) == b"mv"


def test_persists_across_reopen(path):
    with strata.DB(path, create_if_missing=True) as db:
        fill(db, 100)
        db.put(b"unlogged", b"x", disable_wal=True)
    with strata.DB(path, create_if_missing=False) as db:
        assert db.get(b"k0042") == b"v42"
        assert db.get(b"unlogged") == b"x"
        assert len(list(db.iterator())) == 101


def test_options(path):
    with strata.DB(
        path,
        create_if_missing=True,
        write_buffer_size=1 << 20,
        cache_size=1 << 20,
        bloom_bits_per_key=12,
        compression="lz4",
        min_blob_size=64,
        sync_gather_micros=50,
        write_spin_micros=0,
    ) as db:
        db.put(b"k", b"x" * 1000)
        db.flush()
        assert db.get(b"k") == b"x" * 1000
    with pytest.raises(strata.InvalidArgumentError, match="write_spin_micros"):
        strata.DB(path, create_if_missing=True, write_spin_micros=10_001)


def test_options_string_sets_any_option_and_wins_over_keywords(path):
    text = "level0_compaction_trigger=7; compression_per_level=none:zstd; write_buffer_size=2M"
    with strata.DB(path, create_if_missing=True, write_buffer_size=1 << 20, options=text):
        pass
    saved = [f for f in os.listdir(path) if f.startswith("OPTIONS-")]
    assert len(saved) == 1
    with open(os.path.join(path, saved[0])) as f:
        written = f.read()
    for line in ("level0_compaction_trigger=7", "compression_per_level=none:zstd", "write_buffer_size=2097152"):
        assert line in written, written
    with pytest.raises(strata.InvalidArgumentError, match="did you mean 'block_size'"):
        strata.DB(path, create_if_missing=True, options="block_sise=4K")
    with pytest.raises(strata.InvalidArgumentError, match="set twice"):
        strata.DB(path, create_if_missing=True, options="cache_size=1M;cache_size=2M")


def test_options_take_rocksdb_names_and_bad_keyword_values_name_the_option(path):
    text = "level0_file_num_compaction_trigger=5; target_file_size_base=1M; compression_type=zstd"
    with strata.DB(path, create_if_missing=True, options=text):
        pass
    saved = [f for f in os.listdir(path) if f.startswith("OPTIONS-")]
    with open(os.path.join(path, saved[0])) as f:
        written = f.read()
    for line in ("level0_compaction_trigger=5", "target_file_size=1048576", "compression_per_level=zstd"):
        assert line in written, written
    with pytest.raises(strata.InvalidArgumentError, match="'level0_compaction_trigger' is set twice"):
        strata.DB(path, create_if_missing=True, options="level0_file_num_compaction_trigger=5; level0_compaction_trigger=6")
    with pytest.raises(strata.InvalidArgumentError, match='compression: invalid value "brotli"'):
        strata.DB(path, create_if_missing=True, compression="brotli")


def test_context_manager_closes(path):
    with strata.DB(path, create_if_missing=True) as db:
        db.put(b"a", b"1")
        assert not db.closed
    assert db.closed
    # The lock is released: the directory can be opened again.
    with strata.DB(path, create_if_missing=True) as db2:
        assert db2[b"a"] == b"1"


def test_property_flush_compact(db):
    fill(db, 1000)
    db.flush()
    stats = db.property("strata.stats")
    assert isinstance(stats, str) and stats
    assert db.property("no.such.property") is None
    db.compact_range()
    db.compact_range(b"k0100", b"k0200")
    db.compact_range(start=b"k0500")
    assert db.get(b"k0999") == b"v999"
    assert int(db.property("strata.total-sst-files-size")) > 0


def test_wait_for_compactions(db):
    for round in range(4):  # the fourth flush reaches the level-0 compaction trigger
        db.put(b"k%d" % round, b"v")
        db.flush()
    assert db.wait_for_compactions() is True
    assert db.property("strata.num-files-at-level0") == "0"
    assert db.wait_for_compactions(0) is True
    assert db.wait_for_compactions(float("inf")) is True
    with pytest.raises(ValueError):
        db.wait_for_compactions(-1)


def test_sync_wal_syncs_without_flushing(db):
    def wal_syncs():
        stats = db.property("strata.stats")
        return int(re.search(r"wal: [0-9.]+ MB in (\d+) syncs", stats).group(1))

    db.put(b"a", b"1")
    before = wal_syncs()
    db.sync_wal()
    assert wal_syncs() == before + 1
    assert db.property("strata.num-files-at-level0") == "0"
    assert db[b"a"] == b"1"


def test_multi_get_reads_every_key_in_order(db):
    fill(db, 100)
    snap = db.snapshot()
    db.put(b"k0001", b"later")
    assert db.multi_get([b"k0000", b"missing", bytearray(b"k0099"), b"k0001"]) == [b"v0", None, b"v99", b"later"]
    assert db.multi_get(iter([b"k0001"]), snapshot=snap) == [b"v1"]
    assert db.multi_get([]) == []
    with pytest.raises(TypeError):
        db.multi_get([b"k0000", "text"])


def test_checkpoint_opens_to_the_writes_before_it(db, tmp_path):
    fill(db, 500)
    db.put(b"unlogged", b"1", disable_wal=True)
    copy_path = tmp_path / "copy"
    db.checkpoint(copy_path)
    db.put(b"k0000", b"after")
    with pytest.raises(strata.InvalidArgumentError):
        db.checkpoint(str(copy_path))
    copy = strata.DB(str(copy_path), create_if_missing=True)
    assert copy.get(b"k0000") == b"v0"
    assert copy.get(b"k0499") == b"v499"
    assert copy.get(b"unlogged") == b"1"
    copy.close()


# --- mapping protocol ---------------------------------------------------------------------------


def test_mapping_protocol(db):
    db[b"a"] = b"1"
    assert db[b"a"] == b"1"
    assert b"a" in db
    assert b"b" not in db
    with pytest.raises(KeyError) as ei:
        db[b"b"]
    assert ei.value.args[0] == b"b"
    del db[b"a"]
    assert b"a" not in db
    with pytest.raises(KeyError):
        del db[b"a"]
    db[b"x"] = b"1"
    db[b"y"] = b"2"
    assert list(db) == [(b"x", b"1"), (b"y", b"2")]


# --- iterators ----------------------------------------------------------------------------------


def keys(it):
    return [k for k, _ in it]


def test_iterator_forward_and_reverse(db):
    fill(db, 10, width=1)  # k0 .. k9
    assert keys(db.iterator()) == [b"k%d" % i for i in range(10)]
    assert keys(db.iterator(reverse=True)) == [b"k%d" % i for i in reversed(range(10))]
    assert list(db.iterator(include_value=False)) == [b"k%d" % i for i in range(10)]
    assert list(db.iterator(include_key=False)) == [b"v%d" % i for i in range(10)]
    assert list(db.iterator(reverse=True, include_value=False))[:2] == [b"k9", b"k8"]
    with pytest.raises(strata.InvalidArgumentError):
        db.iterator(include_key=False, include_value=False)


def test_iterator_start_stop(db):
    fill(db, 10, width=1)
    # start inclusive, stop exclusive, as in plyvel
    assert keys(db.iterator(start=b"k3", stop=b"k6")) == [b"k3", b"k4", b"k5"]
    assert keys(db.iterator(start=b"k3", stop=b"k6", reverse=True)) == [b"k5", b"k4", b"k3"]
    assert keys(db.iterator(start=b"k7")) == [b"k7", b"k8", b"k9"]
    assert keys(db.iterator(stop=b"k2")) == [b"k0", b"k1"]
    assert keys(db.iterator(stop=b"k2", reverse=True)) == [b"k1", b"k0"]
    assert keys(db.iterator(start=b"k35")) == [b"k4", b"k5", b"k6", b"k7", b"k8", b"k9"]
    assert keys(db.iterator(start=b"x")) == []
    assert keys(db.iterator(start=b"k5", stop=b"k5")) == []


def test_iterator_prefix(db):
    for k in [b"a", b"ab", b"abc", b"abd", b"ac", b"b", b"a\xff", b"a\xff\x01"]:
        db.put(k, k.upper())
    assert keys(db.iterator(prefix=b"ab")) == [b"ab", b"abc", b"abd"]
    assert keys(db.iterator(prefix=b"ab", reverse=True)) == [b"abd", b"abc", b"ab"]
    assert keys(db.iterator(prefix=b"a\xff")) == [b"a\xff", b"a\xff\x01"]
    assert list(db.iterator(prefix=b"abc", include_key=False)) == [b"ABC"]
    assert keys(db.iterator(prefix=b"zz")) == []
    assert keys(db.iterator(prefix=b"a", start=b"abd", stop=b"b")) == [b"abd", b"ac", b"a\xff", b"a\xff\x01"]


def test_iterator_across_memtable_and_files(db):
    fill(db, 500)
    db.flush()
    for i in range(0, 500, 2):
        db.delete(b"k%04d" % i)
    db.put(b"k0001", b"new")
    got = list(db.iterator(start=b"k0000", stop=b"k0010"))
    assert got == [(b"k0001", b"new"), (b"k0003", b"v3"), (b"k0005", b"v5"), (b"k0007", b"v7"), (b"k0009", b"v9")]
    assert len(list(db.iterator(reverse=True))) == 250


def test_iterator_seek(db):
    fill(db, 10, width=1)
    it = db.iterator()
    it.seek(b"k5")
    assert next(it) == (b"k5", b"v5")
    assert next(it) == (b"k6", b"v6")
    it.seek(b"k25")
    assert next(it)[0] == b"k3"
    it.seek_to_start()
    assert next(it)[0] == b"k0"
    it.seek_to_stop()
    assert list(it) == []

    rit = db.iterator(reverse=True, include_value=False)
    rit.seek(b"k5")
    assert list(rit) == [b"k4", b"k3", b"k2", b"k1", b"k0"]
    rit.seek_to_stop()
    assert next(rit) == b"k9"
    rit.seek_to_start()
    assert list(rit) == []

    bounded = db.iterator(start=b"k2", stop=b"k5", include_value=False)
    bounded.seek(b"k0")
    assert list(bounded) == [b"k2", b"k3", b"k4"]


def test_iterator_is_a_consistent_view(db):
    fill(db, 5, width=1)
    it = db.iterator(include_value=False)
    assert next(it) == b"k0"
    db.put(b"k1a", b"new")
    db.delete(b"k4")
    assert list(it) == [b"k1", b"k2", b"k3", b"k4"]


def test_iterator_close(db):
    fill(db, 3, width=1)
    with db.iterator() as it:
        assert next(it)[0] == b"k0"
    with pytest.raises(strata.ClosedError):
        next(it)
    it.close()  # idempotent


# --- write batches ------------------------------------------------------------------------------


def test_write_batch_context_manager(db):
    db.put(b"gone", b"x")
    with db.write_batch() as wb:
        wb.put(b"a", b"1")
        wb.put(b"b", b"2")
        wb.delete(b"gone")
        assert len(wb) == 3
        # Nothing is visible before the block ends.
        assert db.get(b"a") is None
    assert db.get(b"a") == b"1"
    assert db.get(b"b") == b"2"
    assert db.get(b"gone") is None


def test_write_batch_rolled_back_on_exception(db):
    db.put(b"keep", b"old")
    with pytest.raises(RuntimeError, match="boom"):
        with db.write_batch(sync=True, transaction=True) as wb:
            wb.put(b"a", b"1")
            wb.put(b"keep", b"new")
            raise RuntimeError("boom")
    assert db.get(b"a") is None
    assert db.get(b"keep") == b"old"


def test_write_batch_explicit_write_and_clear(db):
    wb = db.write_batch()
    wb.put(b"a", b"1")
    wb.write()
    assert db.get(b"a") == b"1"
    assert len(wb) == 0  # written batches are emptied
    wb.put(b"b", b"2")
    wb.clear()
    wb.write()
    assert db.get(b"b") is None


def test_write_batch_errors(db):
    wb = db.write_batch()
    with pytest.raises(TypeError, match="must be bytes, not str"):
        wb.put("a", b"1")
    wb.put(b"k" * 70_000, b"1")
    with pytest.raises(strata.InvalidArgumentError, match="limit"):
        wb.write()
    with pytest.raises(strata.InvalidArgumentError, match="merge operator"):
        wb.merge(b"k", b"v")


# --- snapshots ----------------------------------------------------------------------------------


def test_snapshot(db):
    db.put(b"a", b"1")
    db.put(b"b", b"1")
    with db.snapshot() as snap:
        db.put(b"a", b"2")
        db.delete(b"b")
        db.put(b"c", b"2")
        assert snap.get(b"a") == b"1"
        assert snap.get(b"b") == b"1"
        assert snap.get(b"c") is None
        assert snap.get(b"c", b"dflt") == b"dflt"
        assert snap[b"a"] == b"1"
        assert b"c" not in snap
        assert db.get(b"a", snapshot=snap) == b"1"
        assert list(snap.iterator()) == [(b"a", b"1"), (b"b", b"1")]
        assert list(db.iterator(snapshot=snap, reverse=True, include_value=False)) == [b"b", b"a"]
        it = snap.iterator(include_value=False)
        db.flush()
        db.compact_range()
        assert snap.get(b"b") == b"1"  # compaction kept the version the snapshot sees
    assert snap.closed
    with pytest.raises(strata.ClosedError, match="snapshot is closed"):
        snap.get(b"a")
    # Iterators created from a snapshot outlive it.
    assert list(it) == [b"a", b"b"]
    assert db.get(b"a") == b"2"


def test_snapshot_of_another_db_rejected(db, tmp_path):
    with strata.DB(str(tmp_path / "other"), create_if_missing=True) as other:
        with other.snapshot() as snap:
            with pytest.raises(strata.InvalidArgumentError, match="another database"):
                db.get(b"a", snapshot=snap)


# --- merge --------------------------------------------------------------------------------------


def test_merge_uint64add(path):
    with strata.DB(path, create_if_missing=True, merge_operator="uint64add") as db:
        for _ in range(10):
            db.merge(b"counter", struct.pack("<Q", 3))
        assert struct.unpack("<Q", db.get(b"counter"))[0] == 30
        with db.write_batch() as wb:
            wb.merge(b"counter", struct.pack("<Q", 12))
        db.flush()
        assert struct.unpack("<Q", db[b"counter"])[0] == 42
    with strata.DB(path, create_if_missing=True, merge_operator="uint64add") as db:
        assert struct.unpack("<Q", db[b"counter"])[0] == 42


def test_merge_stringappend(path):
    with strata.DB(path, create_if_missing=True, merge_operator="stringappend") as db:
        db.put(b"list", b"a")
        db.merge(b"list", b"b")
        db.merge(b"list", b"c")
        assert db.get(b"list") == b"a,b,c"
        assert list(db.iterator()) == [(b"list", b"a,b,c")]


def test_merge_without_operator(db):
    with pytest.raises(strata.InvalidArgumentError, match="merge_operator"):
        db.merge(b"k", b"v")


def test_unknown_merge_operator_and_compression(path):
    with pytest.raises(strata.InvalidArgumentError, match="unknown operator"):
        strata.DB(path, create_if_missing=True, merge_operator="max")
    with pytest.raises(strata.InvalidArgumentError, match="compression"):
        strata.DB(path, create_if_missing=True, compression="brotli")
    with pytest.raises(ValueError, match="write_buffer_size"):  # InvalidArgumentError is a ValueError
        strata.DB(path, create_if_missing=True, write_buffer_size=1)


# --- errors -------------------------------------------------------------------------------------


def test_exception_hierarchy():
    for cls in [
        strata.CorruptionError,
        strata.InvalidArgumentError,
        strata.LockedError,
        strata.NotADatabaseError,
        strata.AlreadyExistsError,
        strata.UnsupportedVersionError,
        strata.BackgroundError,
        strata.ClosedError,
        strata.MergeError,
        strata.StrataIOError,
    ]:
        assert issubclass(cls, strata.Error)
    assert issubclass(strata.Error, Exception)
    assert issubclass(strata.InvalidArgumentError, ValueError)
    assert issubclass(strata.StrataIOError, OSError)


def test_empty_key_is_a_key(db):
    # As in LevelDB and RocksDB: the smallest key there is.
    db.put(b"", b"v")
    db.put(b"a", b"1")
    assert db.get(b"") == b"v"
    assert [k for k, _ in db] == [b"", b"a"]
    db.delete(b"")
    assert db.get(b"") is None


def test_key_too_long(db):
    with pytest.raises(strata.InvalidArgumentError, match="limit"):
        db.put(b"k" * (64 * 1024 + 1), b"v")


def test_str_key_is_type_error(db):
    with pytest.raises(TypeError, match="key must be bytes, not str"):
        db.put("key", b"v")
    with pytest.raises(TypeError, match="value must be bytes, not str"):
        db.put(b"key", "v")
    with pytest.raises(TypeError, match="key must be bytes"):
        db.get("key")
    with pytest.raises(TypeError):
        db["key"]
    with pytest.raises(TypeError):
        "key" in db
    with pytest.raises(TypeError, match="start must be bytes"):
        db.iterator(start="a")
    with pytest.raises(TypeError, match="not int"):
        db.put(5, b"v")


def test_missing_db_without_create(tmp_path):
    missing = str(tmp_path / "missing")
    with pytest.raises(strata.NotADatabaseError, match="not a strata database") as ei:
        strata.DB(missing, create_if_missing=False)
    assert "missing" in str(ei.value)
    assert not os.path.exists(missing)


def test_error_if_exists(path):
    strata.DB(path, create_if_missing=True).close()
    with pytest.raises(strata.AlreadyExistsError, match="already exists"):
        strata.DB(path, create_if_missing=True, error_if_exists=True)


def test_second_open_is_locked(path):
    with strata.DB(path, create_if_missing=True):
        with pytest.raises(strata.LockedError, match="locked"):
            strata.DB(path, create_if_missing=True)


def test_path_is_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_bytes(b"not a db")
    with pytest.raises(strata.Error):
        strata.DB(str(f), create_if_missing=True)


def test_io_error_is_oserror(tmp_path):
    f = tmp_path / "file"
    f.write_bytes(b"x")
    with pytest.raises(strata.StrataIOError, match="Not a directory") as ei:
        strata.DB(str(f / "db"), create_if_missing=True)  # a regular file where a parent directory should be
    assert isinstance(ei.value, OSError)
    assert ei.value.errno == errno.ENOTDIR


def test_corruption_error(path):
    with strata.DB(path, create_if_missing=True) as db:
        fill(db, 200)
        db.flush()
    ssts = [f for f in os.listdir(path) if f.endswith(".sst")]
    assert ssts
    for name in ssts:
        p = os.path.join(path, name)
        data = bytearray(open(p, "rb").read())
        for i in range(0, len(data) // 2, 7):
            data[i] ^= 0x5A
        open(p, "wb").write(bytes(data))
    with pytest.raises(strata.CorruptionError):
        with strata.DB(path, create_if_missing=True) as db:
            db.get(b"k0001")
            list(db.iterator())


def test_resume_without_a_background_error_does_nothing(db):
    db.put(b"a", b"1")
    assert db.resume() is None
    db.put(b"b", b"2")
    assert db[b"b"] == b"2"


def test_background_error_carries_its_cause_and_corruption_is_not_resumed(path):
    db = strata.DB(path, create_if_missing=True)
    for _ in range(2):
        fill(db, 200)
        db.flush()
    db.close()
    ssts = sorted(f for f in os.listdir(path) if f.endswith(".sst"))
    assert len(ssts) == 2
    p = os.path.join(path, ssts[0])
    data = bytearray(open(p, "rb").read())
    data[0] ^= 0xFF  # the first data block
    open(p, "wb").write(bytes(data))

    db = strata.DB(path, create_if_missing=True)
    with pytest.raises(strata.CorruptionError):
        db.compact_range()
    with pytest.raises(strata.BackgroundError) as ei:
        db.put(b"x", b"y")
    err = ei.value
    assert str(err).startswith("database is read-only after a background error: manual compaction: corruption")
    assert isinstance(err.cause, strata.CorruptionError)
    assert err.__cause__ is err.cause
    assert err.retryable is False
    with pytest.raises(strata.BackgroundError) as again:
        db.resume()
    assert isinstance(again.value.cause, strata.CorruptionError)
    with pytest.raises(strata.BackgroundError):
        db.put(b"x", b"y")
    assert db[b"k0001"] == b"v1"  # reads of undamaged tables keep working
    with pytest.raises(strata.BackgroundError):
        db.close()


def test_background_error_can_be_built_without_a_cause():
    e = strata.BackgroundError("database is read-only after a background error: flush panicked: boom")
    assert e.cause is None and e.retryable is False
    assert str(e).endswith("boom")


def test_calls_after_close_raise(path):
    db = strata.DB(path, create_if_missing=True)
    db.put(b"a", b"1")
    it = db.iterator()
    snap = db.snapshot()
    wb = db.write_batch()
    wb.put(b"b", b"2")
    db.close()
    db.close()  # idempotent
    calls = [
        lambda: db.get(b"a"),
        lambda: db.put(b"a", b"2"),
        lambda: db.delete(b"a"),
        lambda: db[b"a"],
        lambda: b"a" in db,
        lambda: db.iterator(),
        lambda: db.snapshot(),
        lambda: db.write_batch(),
        lambda: db.flush(),
        lambda: db.sync_wal(),
        lambda: db.resume(),
        lambda: db.compact_range(),
        lambda: db.property("strata.stats"),
        lambda: next(it),
        lambda: snap.get(b"a"),
        lambda: wb.write(),
    ]
    for call in calls:
        with pytest.raises(strata.ClosedError, match="closed"):
            call()
    # The lock was released even though an iterator and a snapshot were still referenced.
    with strata.DB(path, create_if_missing=True) as again:
        assert again[b"a"] == b"1"
        assert b"b" not in again


def test_dropped_db_releases_lock(path):
    db = strata.DB(path, create_if_missing=True)
    db.put(b"a", b"1", disable_wal=True)  # flushed when the engine shuts down
    it = db.iterator()
    del db
    gc.collect()
    with strata.DB(path, create_if_missing=True) as again:
        assert again[b"a"] == b"1"
    with pytest.raises(strata.ClosedError):
        next(it)


# --- threads ------------------------------------------------------------------------------------


def test_many_threads_reading(db):
    n = 2000
    fill(db, n)
    db.flush()
    for i in range(0, n, 3):
        db.put(b"k%04d" % i, b"w%d" % i)  # some in the memtable, some only in files
    errors = []

    def reader(seed):
        try:
            for j in range(n):
                i = (j * 7 + seed * 131) % n
                want = (b"w%d" if i % 3 == 0 else b"v%d") % i
                got = db.get(b"k%04d" % i)
                if got != want:
                    errors.append((i, got, want))
                    return
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=reader, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []


def test_threads_iterating_and_writing(db):
    fill(db, 1000)
    errors = []

    def scan():
        try:
            for _ in range(5):
                assert len(list(db.iterator(prefix=b"k0"))) == 1000
        except Exception as e:  # pragma: no cover
            errors.append(e)

    def write():
        try:
            for i in range(2000):
                db.put(b"other%d" % i, b"x")
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=scan) for _ in range(4)] + [threading.Thread(target=write)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    assert db.get(b"other1999") == b"x"


def test_gil_released_during_long_calls(path):
    """While another thread runs a long engine call, the main thread keeps running Python."""
    with strata.DB(path, create_if_missing=True, write_buffer_size=64 << 20) as db:
        value = os.urandom(50) * 2
        with db.write_batch() as wb:
            for i in range(30_000):
                wb.put(b"key%08d" % i, value)
        db.flush()
        with db.write_batch() as wb:
            for i in range(0, 30_000, 2):
                wb.put(b"key%08d" % i, value[::-1])

        span = {}

        def long_call():
            span["start"] = time.perf_counter()
            db.compact_range()  # flushes the memtable, then rewrites every file
            span["end"] = time.perf_counter()

        old = sys.getswitchinterval()
        sys.setswitchinterval(0.001)
        try:
            t = threading.Thread(target=long_call)
            samples = []
            t.start()
            while t.is_alive():
                samples.append(time.perf_counter())
            t.join()
        finally:
            sys.setswitchinterval(old)

        duration = span["end"] - span["start"]
        print(f"compact_range took {duration:.3f}s; main thread took {len(samples)} samples")
        inside = [s for s in samples if span["start"] <= s <= span["end"]]
        # The longest stretch of the call during which the main thread did not run, counting
        # from the call's start and up to its end.
        points = [span["start"]] + inside + [span["end"]]
        gaps = [b - a for a, b in zip(points, points[1:])]
        # Had the call held the GIL, the main thread would have stalled for its whole duration.
        assert duration > 0.05, "compaction too fast to tell; grow the data set"
        assert len(inside) > 100
        assert max(gaps) < duration / 2, (max(gaps), duration)
        assert db.get(b"key00000002") == value[::-1]
        assert db.get(b"key00000003") == value


# --- repair -------------------------------------------------------------------------------------


def test_repair_db_rebuilds_a_database_without_current(path):
    with strata.DB(path, create_if_missing=True, write_buffer_size=64 << 10, min_blob_size=64) as db:
        for i in range(500):
            db.put(b"k%04d" % i, b"v%d" % i * (20 if i % 2 else 1))
        db.flush()
        db.put(b"in-the-wal", b"w")
    os.remove(os.path.join(path, "CURRENT"))
    with pytest.raises(strata.Error):
        strata.DB(path, create_if_missing=False)

    report = strata.repair_db(path, min_blob_size=64)
    assert report["clean"] is True
    assert report["wal_records_salvaged"] == 1
    assert report["tables_kept"] and report["blob_files_kept"]
    moved = [m["moved_to"] for m in report["other_moved"]]
    assert any(m.startswith("lost/MANIFEST-") for m in moved)
    assert all(os.path.exists(os.path.join(path, m)) for m in moved)
    with strata.DB(path, create_if_missing=True) as db:
        assert db.get(b"k0007") == b"v7" * 20
        assert db.get(b"in-the-wal") == b"w"
        assert len(list(db)) == 501


def test_repair_db_refuses_an_open_or_missing_database(tmp_path, db, path):
    with pytest.raises(strata.LockedError):
        strata.repair_db(path)
    with pytest.raises(strata.NotADatabaseError):
        strata.repair_db(str(tmp_path / "missing"))
    with pytest.raises(strata.InvalidArgumentError):
        strata.repair_db(path, compression="bogus")
