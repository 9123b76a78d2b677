"""plyvel's documented API (https://plyvel.readthedocs.io, api.rst and the user guide) run against
strata, plus what strata adds on top of it: read-only opens, keys()/values()/items(), and merge
operators written in Python. The user guide's examples appear as they are written there, with
``plyvel`` replaced by ``strata``."""

import glob
import os
import struct
import threading

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


@pytest.fixture
def guide_db(db):
    """The user guide's iterator data: key-1 .. key-5, put out of order."""
    db.put(b"key-1", b"value-1")
    db.put(b"key-5", b"value-5")
    db.put(b"key-3", b"value-3")
    db.put(b"key-2", b"value-2")
    db.put(b"key-4", b"value-4")
    return db


def options_file(path):
    """The options of the newest OPTIONS file, as {section: {name: value}}."""
    text = open(sorted(glob.glob(os.path.join(path, "OPTIONS-*")))[-1]).read()
    sections, current = {}, None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            current = sections.setdefault(line, {})
        elif "=" in line and current is not None:
            name, value = line.split("=", 1)
            current[name] = value
    return sections


def default_cf(path):
    return options_file(path)['[CFOptions "default"]']


def db_options(path):
    return options_file(path)["[DBOptions]"]


# --- opening: plyvel's constructor ---------------------------------------------------------------


def test_create_if_missing_defaults_to_false_as_in_plyvel(path):
    with pytest.raises(strata.NotADatabaseError):
        strata.DB(path)
    assert not os.path.exists(path)
    strata.DB(path, create_if_missing=True).close()
    with strata.DB(path) as db:  # exists now
        assert not db.closed
    with pytest.raises(strata.AlreadyExistsError):
        strata.DB(path, error_if_exists=True)


def test_plyvel_keywords_map_to_strata_options(path):
    db = strata.DB(
        path,
        create_if_missing=True,
        error_if_exists=False,
        paranoid_checks=True,
        write_buffer_size=1 << 20,
        max_open_files=500,
        lru_cache_size=3 << 20,
        block_size=8192,
        block_restart_interval=4,
        max_file_size=4 << 20,
        compression="snappy",
        bloom_filter_bits=7,
        comparator=None,
        comparator_name=None,
    )
    db.close()
    cf, dbo = default_cf(path), db_options(path)
    assert dbo["max_open_files"] == "500"
    assert dbo["cache_size"] == str(3 << 20)
    assert cf["write_buffer_size"] == str(1 << 20)
    assert cf["block_size"] == "8192"
    assert cf["block_restart_interval"] == "4"
    assert cf["target_file_size"] == str(4 << 20)
    assert cf["bloom_bits_per_key"] == "7"
    assert cf["compression_per_level"] == "snappy"
    assert cf["blob_compression"] == "snappy"


def test_compression_none_given_and_not_given(tmp_path):
    p = str(tmp_path / "off")
    strata.DB(p, create_if_missing=True, compression=None).close()
    assert default_cf(p)["compression_per_level"] == "none"  # plyvel: None is no compression
    p = str(tmp_path / "bytes")
    strata.DB(p, create_if_missing=True, compression=b"snappy").close()
    assert default_cf(p)["compression_per_level"] == "snappy"
    p = str(tmp_path / "default")
    strata.DB(p, create_if_missing=True).close()
    # Not given (or ..., as the signature shows it): the engine's default, snappy below level 1.
    assert default_cf(p)["compression_per_level"] == "none:none:snappy"
    p = str(tmp_path / "ellipsis")
    strata.DB(p, create_if_missing=True, compression=...).close()
    assert default_cf(p)["compression_per_level"] == "none:none:snappy"
    with pytest.raises(TypeError, match="compression"):
        strata.DB(str(tmp_path / "bad"), create_if_missing=True, compression=5)


def test_bloom_filter_bits_zero_turns_the_filter_off(tmp_path):
    p = str(tmp_path / "nobloom")
    strata.DB(p, create_if_missing=True, bloom_filter_bits=0).close()
    assert default_cf(p)["bloom_bits_per_key"] == "0"
    p = str(tmp_path / "default")
    strata.DB(p, create_if_missing=True).close()
    assert default_cf(p)["bloom_bits_per_key"] == "10"  # not given: strata's default


def test_strata_and_plyvel_names_for_one_option(path):
    with strata.DB(path, create_if_missing=True, cache_size=1 << 20, lru_cache_size=1 << 20):
        pass  # the same value twice is fine
    with pytest.raises(strata.InvalidArgumentError, match="cache_size and lru_cache_size"):
        strata.DB(path, cache_size=1 << 20, lru_cache_size=2 << 20)
    with pytest.raises(strata.InvalidArgumentError, match="bloom_filter_bits"):
        strata.DB(path, bloom_bits_per_key=10, bloom_filter_bits=5)


def test_custom_comparator_is_refused(path):
    def comparator(a, b):
        return (a.lower() > b.lower()) - (a.lower() < b.lower())

    with pytest.raises(NotImplementedError, match="comparator"):
        strata.DB(path, create_if_missing=True, comparator=comparator, comparator_name=b"CaseInsensitiveComparator")
    with pytest.raises(strata.InvalidArgumentError, match="comparator_name"):
        strata.DB(path, create_if_missing=True, comparator_name=b"CaseInsensitiveComparator")
    with pytest.raises(NotImplementedError):
        strata.repair_db(path, comparator=comparator)
    assert not os.path.exists(path)  # refused before anything was created


def test_name_and_path_keywords(tmp_path):
    p = str(tmp_path / "db")
    with strata.DB(name=p, create_if_missing=True) as db:
        assert db.name == p  # plyvel's read-only attribute
    with strata.DB(path=p) as db:  # strata's earlier name for it
        assert db.name == p
    with strata.DB(os.fsencode(p)) as db:  # plyvel takes bytes names too
        assert db.name == p
    with strata.DB(tmp_path / "db") as db:  # and strata os.PathLike ones
        assert db.name == p
    with pytest.raises(TypeError, match="not both"):
        strata.DB(p, path=p)
    with pytest.raises(TypeError, match="missing"):
        strata.DB()


def test_close_and_closed(path):
    # The user guide: closed, close(), closed.
    db = strata.DB(path, create_if_missing=True)
    assert db.closed is False
    db.close()
    assert db.closed is True
    with pytest.raises(RuntimeError):  # plyvel raises RuntimeError; ClosedError is one
        db.get(b"key")
    with strata.DB(path) as db:
        db.put(b"k", b"v")
    assert db.closed


# --- basic operations -----------------------------------------------------------------------------


def test_user_guide_basic_operations(db):
    db.put(b"key", b"value")
    db.put(b"another-key", b"another-value")
    assert db.get(b"key") == b"value"
    assert db.get(b"yet-another-key") is None
    assert db.get(b"yet-another-key", b"default-value") == b"default-value"
    db.delete(b"key")
    db.delete(b"another-key")
    assert list(db) == []


def test_plyvel_keyword_arguments_of_get_put_delete(db):
    db.put(b"k", b"v", sync=True)
    assert db.get(b"k", verify_checksums=True, fill_cache=False) == b"v"
    assert db.get(b"missing", default=b"d", verify_checksums=True) == b"d"
    db.delete(b"k", sync=True)
    assert db.get(b"k", fill_cache=True) is None


# --- write batches --------------------------------------------------------------------------------


def test_user_guide_write_batch(db):
    wb = db.write_batch()
    for i in range(1000):
        wb.put(str(i).encode(), str(i).encode() * 100)
    assert db.get(b"999") is None  # nothing is written before write()
    wb.write()
    assert db.get(b"999") == b"999" * 100

    with db.write_batch() as wb:
        for i in range(1000):
            wb.put(str(i).encode(), str(i).encode() * 10)
    assert db.get(b"5") == b"5" * 10


def test_write_batch_is_written_when_the_block_raises(db):
    # The user guide: key-1 is written, key-2 never reached; the exception propagates.
    with pytest.raises(ValueError, match="Something went wrong"):
        with db.write_batch() as wb:
            wb.put(b"key-1", b"value-1")
            raise ValueError("Something went wrong!")
            wb.put(b"key-2", b"value-2")
    assert db.get(b"key-1") == b"value-1"
    assert db.get(b"key-2") is None


def test_transaction_write_batch_is_discarded_when_the_block_raises(db):
    with pytest.raises(ValueError, match="Something went wrong"):
        with db.write_batch(transaction=True) as wb:
            wb.put(b"key-3", b"value-3")
            raise ValueError("Something went wrong!")
            wb.put(b"key-4", b"value-4")
    assert db.get(b"key-3") is None
    assert db.get(b"key-4") is None
    with db.write_batch(transaction=True, sync=True) as wb:  # a clean exit writes
        wb.put(b"key-3", b"value-3")
    assert db.get(b"key-3") == b"value-3"


def test_write_batch_clear_append_approximate_size(db):
    db.put(b"gone", b"x")
    a = db.write_batch()
    empty = a.approximate_size()
    a.put(b"a", b"1")
    a.delete(b"gone")
    assert a.approximate_size() > empty
    b = db.write_batch()
    b.put(b"b", b"2")
    b.append(a)
    assert len(b) == 3 and len(a) == 2  # the source is left as it is
    b.append(b)  # appending a batch to itself doubles it
    assert len(b) == 6
    b.write()
    assert (db.get(b"a"), db.get(b"b"), db.get(b"gone")) == (b"1", b"2", None)
    a.clear()
    assert len(a) == 0 and a.approximate_size() == empty
    a.write()  # an empty batch writes nothing
    with pytest.raises(TypeError):
        b.append(b"not a batch")


def test_write_batch_append_refuses_families_of_another_database(db, tmp_path):
    users = db.create_column_family("users")
    mine = db.write_batch()
    mine.put(b"u", b"1", column_family=users)
    with strata.DB(str(tmp_path / "other"), create_if_missing=True) as other:
        theirs = other.write_batch()
        theirs.put(b"plain", b"ok")
        mine.append(theirs)  # default-family operations may come from anywhere
        with pytest.raises(strata.InvalidArgumentError, match="another database"):
            theirs.append(mine)
    mine.write()
    assert users.get(b"u") == b"1" and db.get(b"plain") == b"ok"


def test_write_batch_on_a_closed_database(path):
    db = strata.DB(path, create_if_missing=True)
    wb = db.write_batch()
    wb.put(b"k", b"v")
    db.close()
    with pytest.raises(strata.ClosedError):
        wb.write()
    with pytest.raises(strata.ClosedError):
        with wb:
            pass


# --- snapshots ------------------------------------------------------------------------------------


def test_user_guide_snapshots(db):
    db.put(b"key", b"first-value")
    sn = db.snapshot()
    assert sn.get(b"key") == b"first-value"
    db.put(b"key", b"second-value")
    assert sn.get(b"key") == b"first-value"
    assert db.get(b"key") == b"second-value"
    sn.close()
    with pytest.raises(RuntimeError):
        sn.get(b"key")
    with db.snapshot() as sn:
        assert sn.get(b"key") == b"second-value"
    assert sn.closed
    sn.release()  # plyvel's alias of close(); idempotent


def test_snapshot_iterators(guide_db):
    db = guide_db
    with db.snapshot() as sn:
        db.delete(b"key-1")
        db.put(b"key-6", b"value-6")
        assert list(sn.iterator(include_value=False)) == [b"key-%d" % i for i in range(1, 6)]
        assert list(sn.iterator(start=b"key-2", stop=b"key-4", include_stop=True, reverse=True, include_value=False)) == [
            b"key-4",
            b"key-3",
            b"key-2",
        ]
        assert sn.get(b"key-1", verify_checksums=True) == b"value-1"
        it = sn.raw_iterator()
        it.seek_to_last()
        assert it.key() == b"key-5"
        assert list(sn.keys(start=b"key-4")) == [b"key-4", b"key-5"]


# --- iterators: the user guide --------------------------------------------------------------------


def test_user_guide_iterate_over_everything(guide_db):
    assert [(k, v) for k, v in guide_db] == [(b"key-%d" % i, b"value-%d" % i) for i in range(1, 6)]


def test_user_guide_key_ranges(guide_db):
    db = guide_db

    def keys(it):
        return [k for k, _ in it]

    assert keys(db.iterator(start=b"key-2", stop=b"key-4")) == [b"key-2", b"key-3"]
    assert keys(db.iterator(start=b"key-3")) == [b"key-3", b"key-4", b"key-5"]
    assert keys(db.iterator(start=b"key-2", include_start=False, stop=b"key-5", include_stop=True)) == [
        b"key-3",
        b"key-4",
        b"key-5",
    ]
    assert keys(db.iterator(prefix=b"ke")) == [b"key-%d" % i for i in range(1, 6)]
    assert keys(db.iterator(prefix=b"key-4")) == [b"key-4"]


def test_include_start_and_stop_at_the_edges(guide_db):
    db = guide_db
    it = db.iterator(start=b"key-1", include_start=False, stop=b"key-3", include_stop=True, include_value=False)
    assert list(it) == [b"key-2", b"key-3"]
    it = db.iterator(
        start=b"key-1", include_start=False, stop=b"key-3", include_stop=True, include_value=False, reverse=True
    )
    assert list(it) == [b"key-3", b"key-2"]
    # Bounds that are not keys: include_* changes nothing.
    assert list(db.iterator(start=b"key-2a", include_start=False, stop=b"key-4a", include_stop=True, include_value=False)) == [
        b"key-3",
        b"key-4",
    ]
    # A key that extends the stop key is after it, even with include_stop.
    db.put(b"key-3\x00", b"x")
    assert list(db.iterator(start=b"key-3", stop=b"key-3", include_stop=True, include_value=False)) == [b"key-3"]


def test_user_guide_limiting_returned_data(guide_db):
    db = guide_db
    assert list(db.iterator(start=b"key-2", stop=b"key-4", include_value=False)) == [b"key-2", b"key-3"]
    assert list(db.iterator(start=b"key-2", stop=b"key-4", include_key=False)) == [b"value-2", b"value-3"]


def test_user_guide_reverse(guide_db):
    assert list(guide_db.iterator(start=b"key-2", stop=b"key-4", include_value=False, reverse=True)) == [
        b"key-3",
        b"key-2",
    ]


def test_user_guide_closing_iterators(guide_db):
    it = guide_db.iterator()
    it.close()
    with guide_db.iterator() as it:
        for k, v in it:
            pass
    with pytest.raises(RuntimeError):
        it.seek_to_start()


def test_user_guide_non_linear_iteration(guide_db):
    it = guide_db.iterator(include_value=False)
    assert next(it) == b"key-1"
    assert next(it) == b"key-2"
    assert next(it) == b"key-3"
    assert it.prev() == b"key-3"
    assert next(it) == b"key-3"
    assert next(it) == b"key-4"
    assert next(it) == b"key-5"
    with pytest.raises(StopIteration):
        next(it)
    assert it.prev() == b"key-5"

    it = guide_db.iterator(include_value=False)
    it.seek(b"key-3")
    assert next(it) == b"key-3"
    it.seek_to_start()
    assert next(it) == b"key-1"


def test_prev_and_next_on_a_reverse_iterator(guide_db):
    it = guide_db.iterator(include_value=False, reverse=True)
    assert next(it) == b"key-5"
    assert next(it) == b"key-4"
    assert it.prev() == b"key-4"  # back, in the reverse iterator's direction
    assert it.prev() == b"key-5"
    with pytest.raises(StopIteration):
        it.prev()
    assert next(it) == b"key-5"
    # As in plyvel's code, start and stop are key positions whatever the direction: a reverse
    # iterator at the start is exhausted, and at the stop yields the last key next.
    it.seek_to_start()
    with pytest.raises(StopIteration):
        next(it)
    assert it.prev() == b"key-1"
    it.seek_to_stop()
    assert next(it) == b"key-5"


def test_seek_within_bounds(guide_db):
    it = guide_db.iterator(start=b"key-2", stop=b"key-4", include_value=False)
    it.seek(b"key-0")  # before start: at start
    assert list(it) == [b"key-2", b"key-3"]
    it.seek(b"key-9")  # past stop: exhausted, prev() works
    with pytest.raises(StopIteration):
        next(it)
    assert it.prev() == b"key-3"
    rit = guide_db.iterator(include_value=False, reverse=True)
    rit.seek(b"key-3")
    assert list(rit) == [b"key-2", b"key-1"]
    with pytest.raises(TypeError):
        it.seek("key-1")


def test_seek_to_stop_then_prev(guide_db):
    it = guide_db.iterator(stop=b"key-3", include_value=False)
    it.seek_to_stop()
    with pytest.raises(StopIteration):
        next(it)
    assert it.prev() == b"key-2"
    assert it.prev() == b"key-1"
    with pytest.raises(StopIteration):
        it.prev()


def test_iterator_verify_checksums_and_fill_cache_are_accepted(guide_db):
    assert len(list(guide_db.iterator(verify_checksums=True, fill_cache=False))) == 5


def test_iterators_closed_with_the_database(path):
    db = strata.DB(path, create_if_missing=True)
    db.put(b"a", b"1")
    it, raw = db.iterator(), db.raw_iterator()
    db.close()
    with pytest.raises(strata.ClosedError):
        next(it)
    with pytest.raises(strata.ClosedError):
        raw.seek_to_first()


# --- raw iterators --------------------------------------------------------------------------------


def test_raw_iterator(guide_db):
    it = guide_db.raw_iterator()
    assert not it.valid()  # not positioned yet
    for call in (it.next, it.prev, it.key, it.value, it.item):
        with pytest.raises(strata.IteratorInvalidError):
            call()
    it.seek_to_first()
    assert it.valid() and it.key() == b"key-1" and it.value() == b"value-1"
    it.next()
    assert it.item() == (b"key-2", b"value-2")
    it.seek_to_last()
    assert it.key() == b"key-5"
    it.next()
    assert not it.valid()
    with pytest.raises(strata.IteratorInvalidError):
        it.next()
    it.seek(b"key-3a")
    assert it.key() == b"key-4"
    it.prev()
    assert it.key() == b"key-3"
    it.seek_for_prev(b"key-3a")
    assert it.key() == b"key-3"
    it.seek_for_prev(b"key-0")
    assert not it.valid()
    it.seek(b"zzz")
    assert not it.valid()
    it.close()
    with pytest.raises(RuntimeError):
        it.valid()
    with guide_db.raw_iterator(verify_checksums=True, fill_cache=False) as it:
        it.seek_to_first()
        keys = []
        while it.valid():
            keys.append(it.key())
            it.next()
        assert keys == [b"key-%d" % i for i in range(1, 6)]
    with pytest.raises(strata.ClosedError):
        it.key()


def test_raw_iterator_sees_its_creation_time(db):
    db.put(b"a", b"1")
    it = db.raw_iterator()
    db.put(b"b", b"2")
    it.seek_to_first()
    it.next()
    assert not it.valid()


def test_iterator_invalid_error_is_a_strata_error():
    assert issubclass(strata.IteratorInvalidError, strata.Error)
    assert strata.IOError is strata.StrataIOError
    assert issubclass(strata.IOError, OSError)


# --- properties, sizes, compaction ----------------------------------------------------------------


def test_get_property(db):
    db.put(b"k", b"v")
    db.flush()
    stats = db.get_property(b"leveldb.stats")
    assert isinstance(stats, bytes) and stats == db.property("strata.stats").encode()
    assert db.get_property(b"leveldb.num-files-at-level0") == b"1"
    assert db.get_property("strata.num-files-at-level0") == b"1"
    assert db.get_property(b"leveldb.sstables") is None  # no strata equivalent
    assert db.get_property(b"no.such.property") is None


def test_approximate_sizes(db):
    for i in range(2000):
        db.put(b"k%05d" % i, b"x" * 100)
    assert db.approximate_size(b"k00000", b"k02000") == 0  # unflushed data is not counted
    db.flush()
    whole = db.approximate_size(b"k00000", b"k02000")
    assert whole > 100_000
    first, nothing = db.approximate_sizes((b"k00000", b"k01000"), [b"x", b"z"])
    assert 0 < first < whole and nothing == 0
    assert db.approximate_sizes() == []
    with pytest.raises(TypeError):
        db.approximate_sizes((b"a",))
    with pytest.raises(TypeError):
        db.approximate_sizes(("a", "b"))


def test_compact_range_keywords(db):
    for i in range(100):
        db.put(b"k%03d" % i, b"v")
    db.flush()
    db.compact_range(start=b"k010", stop=b"k050")
    db.compact_range()
    assert db.get_property(b"leveldb.num-files-at-level0") == b"0"
    assert len(list(db)) == 100


# --- prefixed databases ---------------------------------------------------------------------------


def test_user_guide_prefixed_db(db):
    my_sub_db = db.prefixed_db(b"example-")
    assert my_sub_db.get(b"some-key") is None
    my_sub_db.put(b"some-key", b"value")
    assert db.get(b"example-some-key") == b"value"
    assert my_sub_db.get(b"some-key") == b"value"
    assert my_sub_db.db is db
    assert my_sub_db.prefix == b"example-"
    my_sub_sub_db = my_sub_db.prefixed_db(b"other-prefix")
    assert my_sub_sub_db.prefix == b"example-other-prefix"
    my_sub_sub_db.put(b"k", b"nested")
    assert db.get(b"example-other-prefixk") == b"nested"
    my_sub_db.delete(b"some-key")
    assert db.get(b"example-some-key") is None


def test_prefixed_db_iterators_strip_the_prefix(db):
    for k in [b"a", b"p-1", b"p-2", b"p-3", b"p\xff", b"q"]:
        db.put(k, k.upper())
    p = db.prefixed_db(b"p-")
    assert list(p) == [(b"1", b"P-1"), (b"2", b"P-2"), (b"3", b"P-3")]
    assert list(p.iterator(start=b"2", include_value=False)) == [b"2", b"3"]
    assert list(p.iterator(stop=b"2", include_stop=True, reverse=True, include_value=False)) == [b"2", b"1"]
    assert list(p.iterator(prefix=b"3", include_value=False)) == [b"3"]
    it = p.iterator(include_value=False)
    it.seek(b"2")
    assert next(it) == b"2"
    assert it.prev() == b"2"
    assert it.prev() == b"1"
    raw = p.raw_iterator()
    raw.seek_to_last()
    assert raw.item() == (b"3", b"P-3")
    raw.seek(b"0")
    assert raw.key() == b"1"
    raw.prev()
    assert not raw.valid()  # b"a" is outside the prefix
    assert list(db.prefixed_db(b"p").keys()) == [b"-1", b"-2", b"-3", b"\xff"]
    assert list(db.prefixed_db(b"\xff").keys()) == []


def test_prefixed_db_write_batch_and_snapshot(db):
    p = db.prefixed_db(b"users/")
    with p.write_batch() as wb:
        wb.put(b"ada", b"1")
        wb.put(b"grace", b"2")
    with pytest.raises(RuntimeError):
        with p.write_batch(transaction=True) as wb:
            wb.delete(b"ada")
            raise RuntimeError("abort")
    assert db.get(b"users/ada") == b"1" and db.get(b"users/grace") == b"2"
    with p.snapshot() as sn:
        p.delete(b"ada")
        assert sn.get(b"ada") == b"1"
        assert b"ada" in sn and sn[b"grace"] == b"2"
        assert list(sn.iterator(include_value=False)) == [b"ada", b"grace"]
        assert list(sn) == [(b"ada", b"1"), (b"grace", b"2")]
    assert p.get(b"ada") is None
    assert list(p.keys()) == [b"grace"]


def test_prefixed_db_mapping_and_merge(path):
    with strata.DB(path, create_if_missing=True, merge_operator="stringappend") as db:
        p = db.prefixed_db(b"log:")
        p[b"a"] = b"x"
        p.merge(b"a", b"y")
        assert p[b"a"] == b"x,y" and b"a" in p and db[b"log:a"] == b"x,y"
        del p[b"a"]
        with pytest.raises(KeyError):
            p[b"a"]
        with pytest.raises(KeyError):
            del p[b"a"]
        assert "PrefixedDB" in repr(p)


# --- maintenance: destroy_db, repair_db -----------------------------------------------------------


def test_destroy_db(path):
    db = strata.DB(path, create_if_missing=True)
    db.put(b"k", b"v")
    with pytest.raises(strata.LockedError):
        strata.destroy_db(path)
    db.close()
    strata.destroy_db(path)
    assert not os.path.exists(path)
    strata.destroy_db(path)  # nothing to destroy is not an error
    os.makedirs(path)
    open(os.path.join(path, "mine.txt"), "w").close()
    with pytest.raises(strata.NotADatabaseError):
        strata.destroy_db(name=path)  # never removes files strata did not write
    assert os.path.exists(os.path.join(path, "mine.txt"))


def test_repair_db_takes_plyvel_arguments(path):
    with strata.DB(path, create_if_missing=True) as db:
        db.put(b"k", b"v")
        db.flush()
        db.put(b"in-the-wal", b"w")
    os.remove(os.path.join(path, "CURRENT"))
    with pytest.raises(strata.Error):
        strata.DB(path)
    report = strata.repair_db(path, paranoid_checks=False, lru_cache_size=1 << 20, block_size=4096, compression="snappy")
    assert report["wal_records_salvaged"] == 1
    with strata.DB(path) as db:
        assert db.get(b"k") == b"v" and db.get(b"in-the-wal") == b"w"


# --- read-only open (strata) ----------------------------------------------------------------------


def test_read_only_open(path):
    with pytest.raises(strata.NotADatabaseError):
        strata.DB(path, create_if_missing=True, read_only=True)  # never creates one
    writer = strata.DB(path, create_if_missing=True)
    writer.put(b"k", b"v")
    with strata.DB(path, read_only=True) as ro:  # no lock: opens beside the writer
        assert ro.read_only and not writer.read_only
        assert ro.get(b"k") == b"v"
        assert list(ro) == [(b"k", b"v")]
        for write in (
            lambda: ro.put(b"k", b"w"),
            lambda: ro.delete(b"k"),
            lambda: ro.flush(),
            lambda: ro.compact_range(),
        ):
            with pytest.raises(strata.ReadOnlyError):
                write()
        wb = ro.write_batch()
        wb.put(b"x", b"y")
        with pytest.raises(strata.ReadOnlyError):
            wb.write()
        writer.put(b"later", b"1")
        assert ro.get(b"later") is None  # the view is the state at open
    writer.close()
    with pytest.raises(strata.InvalidArgumentError, match="read_only"):
        strata.DB(path, read_only=True, column_families={"x": {}})


# --- keys(), values(), items() (strata) -----------------------------------------------------------


def test_keys_values_items(guide_db):
    db = guide_db
    assert list(db.keys()) == [b"key-%d" % i for i in range(1, 6)]
    assert list(db.values(start=b"key-4")) == [b"value-4", b"value-5"]
    assert list(db.items(prefix=b"key-2")) == [(b"key-2", b"value-2")]
    assert list(db.keys(b"key-2", b"key-4", reverse=True)) == [b"key-3", b"key-2"]  # positional start, stop
    assert list(db.keys(start=b"key-2", include_start=False, stop=b"key-3", include_stop=True)) == [b"key-3"]
    with pytest.raises(TypeError, match="include_value"):
        db.keys(include_value=True)
    cf = db.create_column_family("other")
    cf.put(b"c", b"3")
    assert list(cf.keys()) == [b"c"] and list(cf.items()) == [(b"c", b"3")] and list(cf.values()) == [b"3"]


# --- merge operators written in Python (strata) ---------------------------------------------------


def add(key, existing, operands):
    total = 0 if existing is None else struct.unpack("<q", existing)[0]
    for op in operands:
        total += struct.unpack("<q", op)[0]
    return struct.pack("<q", total)


def test_python_merge_function(path):
    seen = []

    def record(key, existing, operands):
        seen.append((key, existing, list(operands)))
        return add(key, existing, operands)

    with strata.DB(path, create_if_missing=True, merge_operator=record) as db:
        for n in (1, 2, 3):
            db.merge(b"n", struct.pack("<q", n))
        assert struct.unpack("<q", db.get(b"n"))[0] == 6
        assert seen[-1][0] == b"n" and seen[-1][1] is None  # no base value yet
        assert [struct.unpack("<q", o)[0] for o in seen[-1][2]] == [1, 2, 3]  # oldest first
        db.put(b"m", struct.pack("<q", 10))
        db.merge(b"m", struct.pack("<q", -4))
        assert struct.unpack("<q", db[b"m"])[0] == 6
        assert [k for k, _ in db.iterator()] == [b"m", b"n"]
        with db.write_batch() as wb:
            wb.merge(b"n", struct.pack("<q", 4))
        db.flush()
        db.compact_range()  # compaction folds the operands with the Python function too
        assert struct.unpack("<q", db.get(b"n"))[0] == 10
    assert options_file(path)['[CFOptions "default"]']["merge_operator"] == "record"


def test_python_merge_object_with_a_name(path):
    class Union:
        name = "set-union"

        def merge(self, key, existing, operands):
            items = set(existing.split(b",")) if existing else set()
            for op in operands:
                items.update(op.split(b","))
            return b",".join(sorted(items))

    with strata.DB(path, create_if_missing=True, merge_operator=Union()) as db:
        db.merge(b"tags", b"b,a")
        db.merge(b"tags", b"c,a")
        assert db.get(b"tags") == b"a,b,c"
    assert default_cf(path)["merge_operator"] == "set-union"
    # Reopened with the same operator, the stored operands still merge.
    with strata.DB(path, merge_operator=Union(), options="merge_operator=set-union") as db:
        db.merge(b"tags", b"d")
        assert db.get(b"tags") == b"a,b,c,d"


def test_python_merge_exception_is_a_merge_error(path):
    def fussy(key, existing, operands):
        if key == b"bad":
            raise ValueError("cannot merge %r" % key)
        if key == b"none":
            return None
        return b"".join(operands)

    with strata.DB(path, create_if_missing=True, merge_operator=fussy) as db:
        db.merge(b"bad", b"x")
        db.merge(b"none", b"x")
        db.merge(b"ok", b"x")
        with pytest.raises(strata.MergeError, match="ValueError: cannot merge") as info:
            db.get(b"bad")
        assert isinstance(info.value.__cause__, ValueError)
        with pytest.raises(strata.MergeError, match="TypeError") as info:
            db.get(b"none")
        assert isinstance(info.value.__cause__, TypeError)
        with pytest.raises(strata.MergeError):
            list(db.iterator())
        assert db.get(b"ok") == b"x"
        db.flush()
        db.compact_range()  # the failing keys keep their operands; the database is fine
        assert db.get(b"ok") == b"x"
        with pytest.raises(strata.MergeError, match="cannot merge"):
            db.get(b"bad")


def test_python_merge_from_threads(path):
    with strata.DB(path, create_if_missing=True, merge_operator=add, write_buffer_size=64 << 10) as db:

        def work(t):
            for _ in range(200):
                db.merge(b"c%d" % (t % 2), struct.pack("<q", 1))
                db.get(b"c%d" % (t % 2))

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        db.flush()
        db.compact_range()
        assert [struct.unpack("<q", v)[0] for v in db.values()] == [400, 400]


def test_python_merge_in_column_families(path):
    with strata.DB(path, create_if_missing=True, column_families={"counters": {"merge_operator": add}}) as db:
        counters = db.column_family("counters")
        counters.merge(b"hits", struct.pack("<q", 5))
        counters.merge(b"hits", struct.pack("<q", 6))
        assert struct.unpack("<q", counters.get(b"hits"))[0] == 11
        with pytest.raises(strata.InvalidArgumentError, match="merge operator"):
            db.merge(b"hits", b"x")  # the default family has none


def test_merge_operator_argument_errors(path):
    with pytest.raises(TypeError, match="merge_operator"):
        strata.DB(path, create_if_missing=True, merge_operator=42)
    with pytest.raises(strata.InvalidArgumentError):
        strata.DB(path, create_if_missing=True, merge_operator="max")  # not a built-in name
