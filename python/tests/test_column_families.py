"""Tests of column families in the strata Python bindings: handles, creating, dropping and listing
families, opening with families, batches across families, and errors."""

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


def family_section(path, name):
    """The lines of the `[CFOptions "name"]` section of the newest OPTIONS file in `path`."""
    newest = max(glob.glob(os.path.join(path, "OPTIONS-*")))
    with open(newest) as f:
        text = f.read()
    header = '[CFOptions "%s"]' % name
    assert header in text, text
    section = text.split(header, 1)[1].split("\n[", 1)[0]
    return [line.strip() for line in section.splitlines() if line.strip()]


def u64(n):
    return struct.pack("<Q", n)


def test_create_list_and_drop(db, path):
    assert db.column_families() == ["default"]
    users = db.create_column_family("users")
    assert isinstance(users, strata.ColumnFamily)
    assert users.name == "users"
    assert "users" in repr(users)
    db.create_column_family("logs")
    assert db.column_families() == ["default", "users", "logs"]
    db.drop_column_family("logs")  # by name
    db.drop_column_family(users)  # by handle
    assert db.column_families() == ["default"]
    with pytest.raises(strata.InvalidArgumentError, match="was dropped"):
        users.put(b"k", b"v")
    with pytest.raises(strata.InvalidArgumentError, match="was dropped"):
        users.get(b"k")
    with pytest.raises(strata.InvalidArgumentError, match="default"):
        db.drop_column_family("default")
    with pytest.raises(strata.InvalidArgumentError, match="does not exist"):
        db.drop_column_family("logs")
    with pytest.raises(TypeError, match="ColumnFamily"):
        db.drop_column_family(42)


def test_handle_reads_and_writes_only_its_family(db):
    cf = db.create_column_family("users")
    assert db.column_family("users").name == "users"
    cf.put(b"a", b"1")
    cf[b"b"] = bytearray(b"2")
    db.put(b"a", b"default")
    assert cf.get(b"a") == b"1"
    assert cf.get(b"zz", b"dflt") == b"dflt"
    assert db.get(b"a") == b"default"
    assert db.get(b"b") is None
    assert b"b" in cf and b"zz" not in cf
    assert cf[b"b"] == b"2"
    assert cf.multi_get([b"a", b"zz", b"b"]) == [b"1", None, b"2"]
    cf.delete(b"a")
    assert cf.get(b"a") is None
    with pytest.raises(KeyError):
        cf[b"a"]
    with pytest.raises(KeyError):
        del cf[b"a"]
    del cf[b"b"]
    assert list(cf) == []
    with pytest.raises(TypeError, match="str"):
        cf.put("text", b"v")
    with pytest.raises(strata.InvalidArgumentError, match="does not exist"):
        db.column_family("nope")


def test_iterators_take_the_db_arguments(db):
    cf = db.create_column_family("ordered")
    for i in range(20):
        cf.put(b"k%02d" % i, b"v%d" % i)
    db.put(b"k00", b"from default")
    assert list(cf)[0] == (b"k00", b"v0")
    assert [k for k in cf.iterator(start=b"k05", stop=b"k08", include_value=False)] == [
        b"k05",
        b"k06",
        b"k07",
    ]
    assert list(cf.iterator(prefix=b"k1", reverse=True, include_key=False))[:2] == [b"v19", b"v18"]
    with cf.iterator() as it:
        it.seek(b"k10")
        assert next(it) == (b"k10", b"v10")
    with db.snapshot() as snap:
        cf.put(b"k00", b"changed")
        assert cf.get(b"k00", snapshot=snap) == b"v0"
        assert cf.multi_get([b"k00"], snapshot=snap) == [b"v0"]
        assert next(cf.iterator(snapshot=snap)) == (b"k00", b"v0")
    assert cf.get(b"k00") == b"changed"


def test_flush_and_compact_range(db):
    cf = db.create_column_family("bulk")
    for round in range(3):
        for i in range(100):
            cf.put(b"k%03d" % i, b"r%d" % round)
        cf.flush()
    cf.compact_range()
    cf.compact_range(start=b"k010", stop=b"k020")
    assert cf.get(b"k050") == b"r2"
    assert len(list(cf)) == 100
    assert list(db) == []


def test_write_batch_across_families(db):
    users = db.create_column_family("users")
    by_email = db.create_column_family("by_email")
    db.put(b"gone", b"x")
    with db.write_batch() as wb:
        wb.put(b"u1", b"ada", column_family=users)
        wb.put(b"ada@example.com", b"u1", column_family="by_email")
        wb.delete(b"gone")
        wb.put(b"plain", b"default")
        assert len(wb) == 4
    assert users.get(b"u1") == b"ada"
    assert by_email.get(b"ada@example.com") == b"u1"
    assert db.get(b"gone") is None and db.get(b"plain") == b"default"
    assert db.get(b"u1") is None

    # Rolled back together on an exception (with transaction=True; plyvel's default writes).
    with pytest.raises(RuntimeError):
        with db.write_batch(transaction=True) as wb:
            wb.delete(b"u1", column_family=users)
            wb.put(b"x", b"y", column_family=by_email)
            raise RuntimeError("abort")
    assert users.get(b"u1") == b"ada" and by_email.get(b"x") is None

    with pytest.raises(strata.InvalidArgumentError, match="does not exist"):
        db.write_batch().put(b"k", b"v", column_family="nope")


def test_batch_into_a_dropped_family_fails_whole(db):
    cf = db.create_column_family("tmp")
    wb = db.write_batch()
    wb.put(b"a", b"1")
    wb.put(b"b", b"2", column_family=cf)
    db.drop_column_family(cf)
    with pytest.raises(strata.InvalidArgumentError, match="dropped"):
        wb.write()
    assert db.get(b"a") is None


def test_handles_of_another_database_are_refused(db, tmp_path):
    with strata.DB(str(tmp_path / "other"), create_if_missing=True) as other:
        theirs = other.create_column_family("theirs")
        db.create_column_family("theirs")
        with pytest.raises(strata.InvalidArgumentError, match="another database"):
            db.write_batch().put(b"k", b"v", column_family=theirs)
        with pytest.raises(strata.InvalidArgumentError, match="another database"):
            db.drop_column_family(theirs)


def test_family_options_and_merge(db, path):
    counters = db.create_column_family(
        "counters", merge_operator="uint64add", write_buffer_size=4 << 20, bloom_bits_per_key=16
    )
    section = family_section(path, "counters")
    assert "write_buffer_size=4194304" in section
    assert "bloom_bits_per_key=16" in section
    assert "merge_operator=uint64add" in section
    counters.merge(b"hits", u64(2))
    with db.write_batch() as wb:
        wb.merge(b"hits", u64(3), column_family=counters)
    assert struct.unpack("<Q", counters[b"hits"])[0] == 5
    # The default family has no merge operator: refused, as before.
    with pytest.raises(strata.InvalidArgumentError, match="merge"):
        db.merge(b"hits", u64(1))
    plain = db.create_column_family("plain", options="block_size=8K", compression_per_level="lz4")
    assert "block_size=8192" in family_section(path, "plain")
    with pytest.raises(strata.InvalidArgumentError, match="merge operator"):
        plain.merge(b"k", u64(1))


def test_bad_family_options_raise_invalid_argument(db):
    with pytest.raises(strata.InvalidArgumentError, match="write_bufer_size"):
        db.create_column_family("a", write_bufer_size=1 << 20)
    with pytest.raises(strata.InvalidArgumentError, match="block_size"):
        db.create_column_family("a", block_size="big")
    with pytest.raises(strata.InvalidArgumentError, match="write_buffer_size"):
        db.create_column_family("a", write_buffer_size=1)  # rejected by validate
    with pytest.raises(TypeError, match="option values"):
        db.create_column_family("a", block_size=[1])
    with pytest.raises(strata.InvalidArgumentError, match="already exists"):
        db.create_column_family("default")
    with pytest.raises(strata.InvalidArgumentError, match="name"):
        db.create_column_family("")
    assert db.column_families() == ["default"]


def test_open_with_families_and_list_them(path):
    with strata.DB(
        path,
        create_if_missing=True,
        write_buffer_size=8 << 20,
        column_families={"counters": {"merge_operator": "uint64add"}, "logs": None},
    ) as db:
        assert db.column_families() == ["default", "counters", "logs"]
        db.column_family("counters").merge(b"n", u64(7))
        db.column_family("logs").put(b"line", b"hello")
        # Families start from the database's options.
        assert "write_buffer_size=8388608" in family_section(path, "logs")
    assert strata.list_column_families(path) == ["default", "counters", "logs"]
    with strata.DB(path, create_if_missing=True, column_families={"counters": {"merge_operator": "uint64add"}}) as db:
        assert db.column_family("counters")[b"n"] == u64(7)
        assert db.column_family("logs")[b"line"] == b"hello"  # not named: opens anyway
    with pytest.raises(strata.InvalidArgumentError, match="does not exist"):
        strata.DB(path, create_if_missing=False, column_families={"missing": {}})
    with pytest.raises(TypeError, match="column_families"):
        strata.DB(path, create_if_missing=True, column_families={"logs": "lz4"})


def test_list_column_families_errors(tmp_path):
    with pytest.raises(strata.NotADatabaseError):
        strata.list_column_families(str(tmp_path / "nothing"))


def test_closing_the_db_closes_its_handles(path):
    db = strata.DB(path, create_if_missing=True)
    cf = db.create_column_family("users")
    cf.put(b"k", b"v")
    it = cf.iterator()
    db.close()
    for call in [lambda: cf.get(b"k"), lambda: cf.put(b"k", b"v"), cf.flush, lambda: next(it)]:
        with pytest.raises(strata.ClosedError):
            call()
    with pytest.raises(strata.ClosedError):
        db.column_family("users")
    with pytest.raises(strata.ClosedError):
        db.create_column_family("x")
    with strata.DB(path, create_if_missing=True) as db:
        assert db.column_family("users").get(b"k") == b"v"
