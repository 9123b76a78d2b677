"""Range deletions (DB, ColumnFamily, PrefixedDB, WriteBatch), bulk loading (SstFileWriter and
ingest_external_file) and the prefix_extractor option."""

import glob
import os
import struct

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


def fill(target, keys, value=b"v"):
    for k in keys:
        target.put(k, value)


def keys_of(target, **kw):
    return list(target.iterator(include_value=False, **kw))


def cf_options(path, family="default"):
    """The options of `family` in the newest OPTIONS file, as {name: value}."""
    text = open(sorted(glob.glob(os.path.join(path, "OPTIONS-*")))[-1]).read()
    section, out = '[CFOptions "%s"]' % family, {}
    current = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            current = line
        elif current == section and "=" in line:
            name, value = line.split("=", 1)
            out[name.strip()] = value.strip()
    return out


# ---- delete_range ------------------------------------------------------------------------------


def test_delete_range_hides_keys_from_gets_and_iterators_both_ways(db):
    fill(db, [b"a", b"b", b"b1", b"c", b"d"])
    db.delete_range(b"b", b"d")
    assert db.get(b"a") == b"v" and db.get(b"d") == b"v"  # the end is exclusive
    assert db.get(b"b") is None and db.get(b"b1") is None and db.get(b"c") is None
    assert keys_of(db) == [b"a", b"d"]
    assert keys_of(db, reverse=True) == [b"d", b"a"]
    assert db.multi_get([b"a", b"b", b"c"]) == [b"v", None, None]
    assert b"c" not in db
    with pytest.raises(KeyError):
        db[b"b1"]
    raw = db.raw_iterator()
    raw.seek(b"b")
    assert raw.key() == b"d"


def test_delete_range_keeps_later_writes_and_survives_flush_and_reopen(path):
    with strata.DB(path, create_if_missing=True) as db:
        fill(db, [b"k%02d" % i for i in range(20)])
        db.flush()  # the covered keys are in a table, the tombstone in the memtable
        db.delete_range(b"k05", b"k15", sync=True)
        db.put(b"k07", b"new")
        assert keys_of(db) == [b"k%02d" % i for i in list(range(5)) + [7] + list(range(15, 20))]
        db.flush()
        db.compact_range()
        assert db.get(b"k10") is None and db.get(b"k07") == b"new"
    with strata.DB(path) as db:
        assert db.get(b"k05") is None and db.get(b"k15") == b"v" and db.get(b"k07") == b"new"


def test_delete_range_is_invisible_to_earlier_snapshots(db):
    fill(db, [b"a", b"b", b"c"])
    with db.snapshot() as snap:
        db.delete_range(b"a", b"c")
        assert snap.get(b"a") == b"v" and snap.get(b"b") == b"v"
        assert list(snap.iterator(include_value=False)) == [b"a", b"b", b"c"]
        assert keys_of(db) == [b"c"]
        with db.snapshot() as later:
            assert later.get(b"a") is None


def test_empty_or_reversed_range_deletes_nothing(db):
    fill(db, [b"a", b"b", b"c"])
    db.delete_range(b"b", b"b")
    db.delete_range(b"c", b"a")
    assert keys_of(db) == [b"a", b"b", b"c"]
    db.delete_range(b"", b"b")  # the empty key is the smallest key
    assert keys_of(db) == [b"b", b"c"]


def test_delete_range_argument_errors(db):
    with pytest.raises(TypeError, match="start must be bytes"):
        db.delete_range("a", b"b")
    with pytest.raises(TypeError, match="stop must be bytes"):
        db.delete_range(b"a", 3)
    with pytest.raises(strata.InvalidArgumentError):
        db.delete_range(b"a", b"b" * (64 * 1024 + 1))
    db.close()
    with pytest.raises(strata.ClosedError):
        db.delete_range(b"a", b"b")


def test_delete_range_on_a_read_only_db_raises(path, db):
    fill(db, [b"a"])
    db.flush()
    with strata.DB(path, read_only=True) as reader:
        with pytest.raises(strata.ReadOnlyError):
            reader.delete_range(b"a", b"b")


def test_write_batch_delete_range_in_order_with_other_writes(db):
    fill(db, [b"a", b"b", b"c", b"d"])
    with db.write_batch() as wb:
        wb.put(b"b2", b"x")
        wb.delete_range(b"b", b"d")  # covers b2, put before it in the batch
        wb.put(b"c", b"after")  # written after the range: kept
        assert len(wb) == 3
    assert keys_of(db) == [b"a", b"c", b"d"]
    assert db.get(b"c") == b"after"


def test_write_batch_delete_range_transaction_discard_and_append(db):
    fill(db, [b"a", b"b"])
    with pytest.raises(RuntimeError):
        with db.write_batch(transaction=True) as wb:
            wb.delete_range(b"a", b"z")
            raise RuntimeError("discard")
    assert keys_of(db) == [b"a", b"b"]
    source = db.write_batch()
    source.delete_range(b"a", b"b")
    target = db.write_batch()
    target.append(source)
    target.write()
    assert keys_of(db) == [b"b"]
    with pytest.raises(TypeError, match="stop must be bytes"):
        db.write_batch().delete_range(b"a", "b")


def test_column_family_delete_range_leaves_other_families(path):
    with strata.DB(path, create_if_missing=True) as db:
        users = db.create_column_family("users")
        fill(db, [b"u1", b"u2"])
        fill(users, [b"u1", b"u2", b"u3"])
        users.delete_range(b"u1", b"u3")
        assert keys_of(users) == [b"u3"]
        assert keys_of(db) == [b"u1", b"u2"]
        with db.write_batch() as wb:
            wb.delete_range(b"u3", b"u4", column_family="users")
            wb.delete_range(b"u2", b"u3", column_family=users)
            wb.delete_range(b"u1", b"u2")
        assert keys_of(users) == []
        assert keys_of(db) == [b"u2"]
        with pytest.raises(strata.InvalidArgumentError):
            db.write_batch().delete_range(b"a", b"b", column_family="nope")
        db.drop_column_family(users)
        with pytest.raises(strata.InvalidArgumentError):
            users.delete_range(b"a", b"b")


def test_prefixed_db_delete_range_applies_the_prefix_to_both_ends(db):
    fill(db, [b"a", b"p:a", b"p:b", b"p:c", b"p;", b"q"])
    view = db.prefixed_db(b"p:")
    view.delete_range(b"a", b"c")
    assert keys_of(view) == [b"c"]
    assert keys_of(db) == [b"a", b"p:c", b"p;", b"q"]
    with view.write_batch() as wb:
        wb.delete_range(b"", b"\xff")
    assert keys_of(view) == []
    assert keys_of(db) == [b"a", b"p;", b"q"]
    nested = db.prefixed_db(b"q").prefixed_db(b"")
    nested.delete_range(b"", b"\x00")  # just the key b"q"
    assert keys_of(db) == [b"a", b"p;"]


# ---- SstFileWriter and ingestion ---------------------------------------------------------------


def test_writer_and_ingest_round_trip(tmp_path, db):
    f = tmp_path / "bulk.sst"
    with strata.SstFileWriter(f) as w:
        assert w.path == str(f) and w.info is None
        for i in range(1000):
            w.put(b"user:%06d" % i, b"row %d" % i)
        assert w.num_entries == 1000
    info = w.info
    assert isinstance(info, strata.ExternalFileInfo)
    assert info.path == str(f)
    assert info.smallest_key == b"user:000000" and info.largest_key == b"user:000999"
    assert info.num_entries == 1000
    assert info.file_size == os.path.getsize(f) > 0
    assert "1000 entries" in repr(info)
    db.put(b"user:000007", b"old")
    with db.snapshot() as snap:
        db.ingest_external_file([str(f)])
        assert snap.get(b"user:000007") == b"old"  # earlier snapshots do not see the file
        assert snap.get(b"user:000008") is None
    assert db.get(b"user:000007") == b"row 7"  # the file's entries are newer
    assert len(keys_of(db, prefix=b"user:")) == 1000
    os.remove(f)  # the database keeps its own copy
    assert db.get(b"user:000999") == b"row 999"


def test_finish_returns_the_info_and_deletes_and_merges_apply(tmp_path, path):
    f = str(tmp_path / "ops.sst")
    w = strata.SstFileWriter(f)
    w.put(b"a", b"1")
    w.delete(b"b")
    w.merge(b"c", struct.pack("<Q", 5))
    info = w.finish()
    assert (info.smallest_key, info.largest_key, info.num_entries) == (b"a", b"c", 3)
    assert w.info is not None and w.info.num_entries == 3
    with pytest.raises(strata.InvalidArgumentError, match="finished"):
        w.put(b"d", b"4")
    with pytest.raises(strata.InvalidArgumentError, match="finished"):
        w.finish()
    with strata.DB(path, create_if_missing=True, merge_operator="uint64add") as db:
        db.put(b"b", b"old")
        db.merge(b"c", struct.pack("<Q", 10))
        db.ingest_external_file(f)  # one path alone works too
        assert db.get(b"a") == b"1"
        assert db.get(b"b") is None
        assert struct.unpack("<Q", db.get(b"c"))[0] == 15


def test_out_of_order_put_raises_and_the_writer_stays_usable(tmp_path, db):
    f = tmp_path / "order.sst"
    with strata.SstFileWriter(str(f)) as w:
        w.put(b"b", b"1")
        with pytest.raises(strata.InvalidArgumentError, match="strictly increasing"):
            w.put(b"a", b"0")
        with pytest.raises(strata.InvalidArgumentError, match="strictly increasing"):
            w.put(b"b", b"again")
        with pytest.raises(TypeError):
            w.put("c", b"2")
        w.put(b"c", b"2")
    assert w.info.num_entries == 2
    db.ingest_external_file([f])
    assert keys_of(db) == [b"b", b"c"]


def test_exception_in_with_block_removes_the_unfinished_file(tmp_path):
    f = tmp_path / "broken.sst"
    with pytest.raises(KeyError):
        with strata.SstFileWriter(f) as w:
            w.put(b"a", b"1")
            assert f.exists()
            raise KeyError("stop")
    assert not f.exists()
    assert w.info is None and "abandoned" in repr(w)
    with pytest.raises(strata.InvalidArgumentError, match="abandoned"):
        w.put(b"b", b"2")


def test_empty_file_cannot_be_finished_and_is_removed(tmp_path):
    f = tmp_path / "empty.sst"
    with pytest.raises(strata.InvalidArgumentError, match="no entries"):
        with strata.SstFileWriter(f):
            pass
    assert not f.exists()


def test_dropping_an_unfinished_writer_removes_its_file(tmp_path):
    f = tmp_path / "dropped.sst"
    w = strata.SstFileWriter(f)
    w.put(b"a", b"1")
    del w
    assert not f.exists()


def test_overlapping_files_are_refused_together(tmp_path, db):
    first, second, third = (str(tmp_path / n) for n in ("1.sst", "2.sst", "3.sst"))
    for name, keys in ((first, [b"a", b"m"]), (second, [b"k", b"z"]), (third, [b"n", b"p"])):
        with strata.SstFileWriter(name) as w:
            fill(w, keys)
    with pytest.raises(strata.InvalidArgumentError, match="overlap"):
        db.ingest_external_file([first, second])
    assert keys_of(db) == []  # nothing was ingested
    db.ingest_external_file([first, third])
    assert keys_of(db) == [b"a", b"m", b"n", b"p"]


def test_ingest_errors(tmp_path, path, db):
    junk = tmp_path / "junk.sst"
    junk.write_bytes(b"not a table, but long enough to hold a footer: " + b"0123456789" * 8)
    with pytest.raises(strata.Error):
        db.ingest_external_file([junk])
    with pytest.raises(strata.StrataIOError):
        db.ingest_external_file([tmp_path / "missing.sst"])
    with pytest.raises(strata.InvalidArgumentError, match="no files"):
        db.ingest_external_file([])
    with pytest.raises(TypeError):
        db.ingest_external_file([3])
    good = tmp_path / "good.sst"
    with strata.SstFileWriter(good) as w:
        w.put(b"a", b"1")
    with pytest.raises(strata.InvalidArgumentError):
        db.ingest_external_file(good, column_family="nope")
    db.flush()
    with strata.DB(path, read_only=True) as reader:
        with pytest.raises(strata.ReadOnlyError):
            reader.ingest_external_file(good)


def test_ingest_into_a_column_family(tmp_path, path):
    f = tmp_path / "cf.sst"
    with strata.SstFileWriter(f, write_buffer_size=1 << 20) as w:
        fill(w, [b"q1", b"q2"])
    with strata.DB(path, create_if_missing=True) as db:
        bulk = db.create_column_family("bulk")
        db.ingest_external_file([f], column_family="bulk")
        assert keys_of(bulk) == [b"q1", b"q2"]
        assert keys_of(db) == []
        other = db.create_column_family("other")
        other.ingest_external_file([f])
        assert other.get(b"q2") == b"v"
    with strata.DB(path, column_families={"bulk": None, "other": None}) as db:
        assert keys_of(db.column_family("bulk")) == [b"q1", b"q2"]


def test_writer_options_are_checked(tmp_path):
    with pytest.raises(strata.InvalidArgumentError, match="no_such_option"):
        strata.SstFileWriter(tmp_path / "x.sst", no_such_option=1)
    with pytest.raises(strata.InvalidArgumentError, match="block_size"):
        strata.SstFileWriter(tmp_path / "x.sst", block_size=1)
    with pytest.raises(strata.StrataIOError):
        strata.SstFileWriter(tmp_path / "no-such-dir" / "x.sst")


# ---- prefix_extractor --------------------------------------------------------------------------


PREFIXES = [b"aaaa", b"aaab", b"bbbb", b"cccc", b"zz"]


def load_tables(db, rounds=4):
    """Keys under each prefix in several flushed tables (and some in the memtable), with range
    deletions and deletes mixed in; returns the model {key: value}."""
    model = {}
    for r in range(rounds):
        for p in PREFIXES[r % 3 :: 2]:
            for i in range(10):
                k = p + b":%02d:%d" % (i, r)
                db.put(k, b"%d" % r)
                model[k] = b"%d" % r
        db.delete(PREFIXES[0] + b":03:%d" % r)
        model.pop(PREFIXES[0] + b":03:%d" % r, None)
        if r < rounds - 1:
            db.flush()
    db.delete_range(b"bbbb:05", b"bbbb:07")
    for k in [k for k in model if b"bbbb:05" <= k < b"bbbb:07"]:
        del model[k]
    return model


@pytest.mark.parametrize("extractor", ["fixed:4", "capped:4", "rocksdb.FixedPrefix.4"])
def test_prefix_scans_are_correct_with_a_prefix_extractor(path, extractor):
    with strata.DB(path, create_if_missing=True, prefix_extractor=extractor, bloom_bits_per_key=10) as db:
        model = load_tables(db)
        for wanted in PREFIXES + [b"aaa", b"aaaa:0", b"bbbb:05", b"dddd", b"z", b""]:
            expect = sorted(k for k in model if k.startswith(wanted))
            assert keys_of(db, prefix=wanted) == expect, wanted
            assert keys_of(db, prefix=wanted, reverse=True) == expect[::-1], wanted
            assert list(db.iterator(prefix=wanted, include_key=False)) == [model[k] for k in expect]
        view = db.prefixed_db(b"cccc")
        assert keys_of(view) == [k[4:] for k in sorted(model) if k.startswith(b"cccc")]
    recorded = cf_options(path)["prefix_extractor"]
    assert recorded == ("fixed:4" if extractor != "capped:4" else "capped:4")
    with strata.DB(path, prefix_extractor=extractor) as db:  # reopened: tables keep their filters
        assert keys_of(db, prefix=b"aaab") == sorted(k for k in model if k.startswith(b"aaab"))


def test_prefix_extractor_on_column_families_and_bad_values(path):
    with strata.DB(path, create_if_missing=True, column_families={"a": {"prefix_extractor": "fixed:2"}}) as db:
        b = db.create_column_family("b", prefix_extractor="capped:3")
        for cf in (db.column_family("a"), b):
            model = load_tables(cf, rounds=3)
            for wanted in [b"aa", b"aaab", b"cccc:01", b"zz", b"q"]:
                assert keys_of(cf, prefix=wanted) == sorted(k for k in model if k.startswith(wanted))
    assert cf_options(path, "a")["prefix_extractor"] == "fixed:2"
    assert cf_options(path, "b")["prefix_extractor"] == "capped:3"
    assert cf_options(path)["prefix_extractor"] == "nullptr"
    for bad in ["hash:4", "fixed:x", "fixed:0"]:
        with pytest.raises(strata.InvalidArgumentError, match="prefix_extractor"):
            strata.DB(path, prefix_extractor=bad)
    plain = path + "-plain"  # repair_db takes the keyword too (a database without families)
    with strata.DB(plain, create_if_missing=True, prefix_extractor="fixed:4") as db:
        db.put(b"aaaa1", b"v")
    with pytest.raises(strata.InvalidArgumentError, match="prefix_extractor"):
        strata.repair_db(plain, prefix_extractor="hash:4")
    assert strata.repair_db(plain, prefix_extractor="fixed:4")["clean"]
    with strata.DB(plain, prefix_extractor="fixed:4") as db:
        assert keys_of(db, prefix=b"aaaa") == [b"aaaa1"]


def test_sst_file_writer_with_the_databases_prefix_extractor(tmp_path, path):
    f = tmp_path / "p.sst"
    with strata.SstFileWriter(f, prefix_extractor="fixed:4") as w:
        for p in (b"aaaa", b"bbbb"):
            for i in range(5):
                w.put(p + b"%d" % i, b"v")
    with strata.DB(path, create_if_missing=True, prefix_extractor="fixed:4") as db:
        db.put(b"bbbb9", b"mem")
        db.ingest_external_file(f)
        assert keys_of(db, prefix=b"bbbb") == [b"bbbb%d" % i for i in range(5)] + [b"bbbb9"]
        assert keys_of(db, prefix=b"aaaa", reverse=True) == [b"aaaa%d" % i for i in range(4, -1, -1)]
        assert keys_of(db, prefix=b"cccc") == []
