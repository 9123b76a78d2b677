"""Tests of transactions in the strata Python bindings: the context manager, reads of the
transaction's own writes, savepoints, iterators, column families, conflicts, a threaded counter,
and pessimistic lock timeouts and deadlocks."""

import threading
import time

import pytest

import strata


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "db")


@pytest.fixture
def db(path):
    d = strata.DB(path, create_if_missing=True, merge_operator="stringappend")
    yield d
    d.close()


@pytest.fixture
def pdb(path):
    d = strata.DB(path, create_if_missing=True, transactions="pessimistic", lock_timeout=0.05)
    yield d
    d.close()


def test_context_manager_commits(db):
    db.put(b"gone", b"x")
    with db.transaction() as txn:
        txn.put(b"a", b"1")
        txn.delete(b"gone")
        txn.merge(b"a", b"2")
        assert txn.get(b"a") == b"1,2"  # its own writes
        assert txn.get(b"gone") is None
        assert txn.get(b"missing", b"default") == b"default"
        assert txn.multi_get([b"a", b"gone", b"missing"]) == [b"1,2", None, None]
        assert db.get(b"a") is None  # not yet for the others
        assert db.get(b"gone") == b"x"
    assert txn.ended
    assert db.get(b"a") == b"1,2"
    assert db.get(b"gone") is None
    with pytest.raises(strata.ClosedError):
        txn.put(b"a", b"late")
    with pytest.raises(strata.ClosedError):
        txn.commit()
    txn.rollback()  # a no-op once ended


def test_context_manager_rolls_back_on_exception(db):
    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with db.transaction() as txn:
            txn.put(b"a", b"1")
            raise Boom()
    assert txn.ended
    assert db.get(b"a") is None


def test_explicit_commit_and_rollback_inside_the_block(db):
    with db.transaction() as txn:
        txn.put(b"a", b"1")
        txn.rollback()
    assert db.get(b"a") is None
    with db.transaction() as txn:
        txn.put(b"b", b"2")
        txn.commit()
    assert db.get(b"b") == b"2"
    with pytest.raises(strata.ClosedError):
        with txn:
            pass


def test_savepoints(db):
    txn = db.transaction()
    txn.put(b"kept", b"1")
    txn.savepoint()
    txn.put(b"undone", b"2")
    txn.delete(b"kept")
    txn.rollback_to_savepoint()
    assert txn.get(b"kept") == b"1"
    assert txn.get(b"undone") is None
    with pytest.raises(strata.InvalidArgumentError):
        txn.rollback_to_savepoint()
    txn.commit()
    assert db.get(b"kept") == b"1"
    assert db.get(b"undone") is None


def test_iterator_merges_own_writes(db):
    for k in (b"a", b"c", b"e", b"x"):
        db.put(k, b"db")
    with db.transaction() as txn:
        txn.put(b"b", b"txn")
        txn.delete(b"c")
        txn.put(b"e", b"txn")
        assert list(txn.iterator(stop=b"x")) == [(b"a", b"db"), (b"b", b"txn"), (b"e", b"txn")]
        assert list(txn.iterator(reverse=True, include_value=False)) == [b"x", b"e", b"b", b"a"]
        it = txn.iterator(include_value=False)
        it.seek(b"b")
        assert next(it) == b"b"
        rit = txn.iterator(reverse=True, include_value=False)
        rit.seek(b"e")
        assert list(rit) == [b"b", b"a"]
        assert [k for k, _ in txn] == [b"a", b"b", b"e", b"x"]


def test_iterator_crosses_refills(db):
    """More entries than one refill reads, alternating between the database and the batch."""
    n = 1000
    for i in range(0, n, 2):
        db.put(b"k%05d" % i, b"db")
    with db.transaction() as txn:
        for i in range(1, n, 2):
            txn.put(b"k%05d" % i, b"txn")
        keys = list(txn.iterator(include_value=False))
        assert keys == [b"k%05d" % i for i in range(n)]
        rkeys = list(txn.iterator(reverse=True, include_value=False))
        assert rkeys == keys[::-1]
        values = list(txn.iterator(prefix=b"k0001", include_key=False))
        assert values == [b"db", b"txn"] * 5


def test_column_families(db):
    logs = db.create_column_family("logs")
    with db.transaction() as txn:
        txn.put(b"k", b"default")
        txn.put(b"k", b"logs", column_family=logs)
        assert txn.get(b"k", column_family="logs") == b"logs"
        assert txn.get_for_update(b"k", column_family=logs) == b"logs"
        assert list(txn.iterator(column_family=logs)) == [(b"k", b"logs")]
        assert txn.multi_get([b"k"], column_family=logs) == [b"logs"]
    assert db.get(b"k") == b"default"
    assert logs.get(b"k") == b"logs"
    with pytest.raises(strata.InvalidArgumentError):
        db.transaction().put(b"k", b"v", column_family="missing")


def test_conflict_raises(db):
    db.put(b"balance", b"10")
    txn = db.transaction()
    assert txn.get_for_update(b"balance") == b"10"
    txn.put(b"balance", b"7")
    db.put(b"balance", b"20")  # another writer gets in first
    with pytest.raises(strata.TransactionConflictError) as info:
        txn.commit()
    assert isinstance(info.value, strata.Error)
    assert "conflict" in str(info.value)
    assert db.get(b"balance") == b"20"
    with pytest.raises(strata.TransactionConflictError):
        with db.transaction() as txn:
            txn.put(b"balance", b"1")
            db.put(b"balance", b"30")
    assert db.get(b"balance") == b"30"


def test_lock_timeout_needs_pessimistic(db, tmp_path):
    with pytest.raises(strata.InvalidArgumentError):
        db.transaction(lock_timeout=1)
    with pytest.raises(strata.InvalidArgumentError):
        strata.DB(str(tmp_path / "other"), create_if_missing=True, lock_timeout=1)
    with pytest.raises(strata.InvalidArgumentError):
        strata.DB(str(tmp_path / "other"), create_if_missing=True, transactions="serializable")


def increment_counters(db, threads, per_thread):
    """Each thread adds 1 to `counter` per_thread times in read-modify-write transactions,
    retrying on conflicts (and, pessimistic, on lock waits); returns the conflicts seen."""
    conflicts = []

    def work():
        seen = 0
        for _ in range(per_thread):
            while True:
                try:
                    with db.transaction() as txn:
                        n = int(txn.get_for_update(b"counter", b"0"))
                        txn.put(b"counter", b"%d" % (n + 1))
                    break
                except (strata.TransactionConflictError, strata.LockTimeoutError, strata.DeadlockError):
                    seen += 1
        conflicts.append(seen)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return sum(conflicts)


def test_threaded_counter_is_exact_optimistic(db):
    increment_counters(db, threads=8, per_thread=50)
    assert db.get(b"counter") == b"400"


def test_threaded_counter_is_exact_pessimistic(path):
    with strata.DB(path, create_if_missing=True, transactions="pessimistic") as d:
        increment_counters(d, threads=8, per_thread=50)
        assert d.get(b"counter") == b"400"


def test_pessimistic_lock_timeout(pdb):
    a = pdb.transaction()
    a.put(b"k", b"from a")  # a holds the lock on k
    b = pdb.transaction(lock_timeout=0)
    with pytest.raises(strata.LockTimeoutError):
        b.put(b"k", b"from b")
    with pytest.raises(strata.LockTimeoutError):
        pdb.transaction().get_for_update(b"k")  # the database's 50 ms
    a.commit()
    b.put(b"k", b"from b")  # released at a's commit
    b.commit()
    assert pdb.get(b"k") == b"from b"


def test_pessimistic_snapshot_conflict(pdb):
    txn = pdb.transaction(set_snapshot=True)
    pdb.put(b"k", b"after the snapshot")
    with pytest.raises(strata.TransactionConflictError):
        txn.put(b"k", b"from txn")
    txn.rollback()


def test_pessimistic_deadlock(path):
    """a holds x and waits for y; b holds y and asks for x: one of them is refused with
    DeadlockError (b, unless b's brief wait was in place when a asked), the other proceeds."""
    with strata.DB(path, create_if_missing=True, transactions="pessimistic", lock_timeout=10) as d:
        a, b = d.transaction(), d.transaction(lock_timeout=0.001)
        a.put(b"x", b"a")
        b.put(b"y", b"b")
        outcome = {}

        def a_takes_y():
            try:
                a.put(b"y", b"a")
                outcome["a"] = "locked"
            except strata.DeadlockError as e:
                outcome["a"] = e

        t = threading.Thread(target=a_takes_y)
        t.start()
        time.sleep(0.05)  # let a start waiting for y
        for _ in range(1000):
            try:
                b.put(b"x", b"b")
                pytest.fail("b got x while a holds it")
            except strata.DeadlockError:
                b.rollback()  # releases y: a gets it
                t.join()
                assert outcome["a"] == "locked"
                a.commit()
                assert d.get(b"x") == b"a" and d.get(b"y") == b"a"
                return
            except strata.LockTimeoutError:
                if "a" in outcome:  # a closed the cycle instead
                    t.join()
                    assert isinstance(outcome["a"], strata.DeadlockError)
                    a.rollback()
                    b.put(b"x", b"b")
                    b.commit()
                    assert d.get(b"x") == b"b" and d.get(b"y") == b"b"
                    return
        pytest.fail("no deadlock detected")


def test_close_ends_transactions(path):
    d = strata.DB(path, create_if_missing=True, transactions="pessimistic")
    txn = d.transaction()
    txn.put(b"k", b"v")
    it = txn.iterator()
    d.close()
    assert txn.ended
    with pytest.raises(strata.ClosedError):
        txn.get(b"k")
    with pytest.raises(strata.ClosedError):
        next(it)
    with strata.DB(path, create_if_missing=True) as again:  # the engine shut down: its lock was released
        assert again.get(b"k") is None


def test_close_while_a_transaction_waits_for_a_lock(path):
    """close() ends the holder first, so a transaction waiting (without a time limit) for its
    lock in another thread gets it, and close() does not hang."""
    d = strata.DB(path, create_if_missing=True, transactions="pessimistic", lock_timeout=float("inf"))
    holder, waiter = d.transaction(), d.transaction()
    holder.put(b"k", b"holder")
    outcome = {}

    def wait_for_k():
        try:
            waiter.put(b"k", b"waiter")
            outcome["waiter"] = "locked"
        except strata.Error as e:
            outcome["waiter"] = e

    t = threading.Thread(target=wait_for_k)
    t.start()
    time.sleep(0.05)
    d.close()
    t.join(timeout=10)
    assert not t.is_alive()
    assert outcome["waiter"] == "locked"
    assert holder.ended and waiter.ended
