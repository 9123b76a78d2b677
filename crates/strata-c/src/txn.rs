//! Transactions, as RocksDB's c.h has them (docs/transactions.md): optimistic ones begun on a
//! `strata_t` (`strata_optimistic_transaction_begin`), pessimistic ones on a
//! `strata_transactiondb_t` (`strata_transaction_begin`), their options, and the reads, writes,
//! savepoints, commit and rollback of `strata_transaction_t`.
//!
//! Owns: `strata_transactiondb_t` (which owns its database: `strata_transactiondb_get_base_db`
//! lends it out), `strata_transactiondb_options_t`, `strata_transaction_options_t` and
//! `strata_transaction_t`. Must not: decide conflicts or locks (the engine's `Transaction` does);
//! errors keep the engine's message, whose prefix names the kind (`transaction conflict: `,
//! `lock wait timed out: `, `deadlock: `).

use std::ffi::c_char;
use std::ptr;
use std::time::Duration;

use strata_engine::txn::{Transaction, TransactionDb, TransactionDbOptions, TransactionOptions};
use strata_engine::{ColumnFamily, Db};

use crate::db::{strata_t, value_out};
use crate::family::strata_column_family_handle_t;
use crate::options::{strata_options_t, strata_readoptions_t, strata_writeoptions_t};
use crate::util::{
    bytes, c_str, destroy, err_str, finish, guard, guard_or, handle, handle_mut, into_raw, path_from, CResult,
};

/// A database whose transactions lock what they touch (`strata_transactiondb_t`). It owns its
/// database; `base` is boxed so the `strata_t*` lent out keeps its address.
pub struct strata_transactiondb_t {
    tdb: TransactionDb,
    base: Box<strata_t>,
}

/// Settings of a `strata_transactiondb_t` (`strata_transactiondb_options_t`).
pub struct strata_transactiondb_options_t {
    opts: TransactionDbOptions,
}

/// Settings of one pessimistic transaction (`strata_transaction_options_t`).
pub struct strata_transaction_options_t {
    opts: TransactionOptions,
}

/// A transaction (`strata_transaction_t`); `txn` is `None` once committed or rolled back.
pub struct strata_transaction_t {
    txn: Option<Transaction>,
    /// The database whose column family handles it accepts, compared by address only.
    db: *const strata_t,
}

impl strata_transaction_t {
    fn live(&mut self) -> CResult<&mut Transaction> {
        self.txn.as_mut().ok_or_else(|| "invalid argument: the transaction has already ended".to_string())
    }
}

/// A timeout in milliseconds as the options take it: negative means `None`.
fn millis(ms: i64) -> Option<Duration> {
    u64::try_from(ms).ok().map(Duration::from_millis)
}

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn strata_transactiondb_options_create() -> *mut strata_transactiondb_options_t {
    guard_or(ptr::null_mut(), || {
        Ok(into_raw(strata_transactiondb_options_t { opts: TransactionDbOptions::default() }))
    })
}

#[no_mangle]
pub unsafe extern "C" fn strata_transactiondb_options_destroy(options: *mut strata_transactiondb_options_t) {
    // SAFETY: `options` is NULL or from `strata_transactiondb_options_create`, not used again.
    unsafe { destroy(options) }
}

/// How long a transaction waits for a lock, in milliseconds (default 1000); negative: no limit.
#[no_mangle]
pub unsafe extern "C" fn strata_transactiondb_options_set_lock_timeout(
    options: *mut strata_transactiondb_options_t,
    lock_timeout: i64,
) {
    // SAFETY: `options` is NULL or a live handle (header contract).
    if let Ok(o) = unsafe { handle_mut(options, "transaction db options") } {
        o.opts.lock_timeout = millis(lock_timeout);
    }
}

#[no_mangle]
pub extern "C" fn strata_transaction_options_create() -> *mut strata_transaction_options_t {
    guard_or(ptr::null_mut(), || {
        Ok(into_raw(strata_transaction_options_t { opts: TransactionOptions::default() }))
    })
}

#[no_mangle]
pub unsafe extern "C" fn strata_transaction_options_destroy(options: *mut strata_transaction_options_t) {
    // SAFETY: `options` is NULL or from `strata_transaction_options_create`, not used again.
    unsafe { destroy(options) }
}

/// Take a snapshot at begin (default 0): reads see it, and locking a key written since fails.
#[no_mangle]
pub unsafe extern "C" fn strata_transaction_options_set_set_snapshot(
    options: *mut strata_transaction_options_t,
    v: u8,
) {
    // SAFETY: `options` is NULL or a live handle (header contract).
    if let Ok(o) = unsafe { handle_mut(options, "transaction options") } {
        o.opts.set_snapshot = v != 0;
    }
}

/// This transaction's lock timeout in milliseconds; negative (the default): the database's.
#[no_mangle]
pub unsafe extern "C" fn strata_transaction_options_set_lock_timeout(
    options: *mut strata_transaction_options_t,
    lock_timeout: i64,
) {
    // SAFETY: `options` is NULL or a live handle (header contract).
    if let Ok(o) = unsafe { handle_mut(options, "transaction options") } {
        o.opts.lock_timeout = millis(lock_timeout);
    }
}

// ---------------------------------------------------------------------------------------------
// The transaction database
// ---------------------------------------------------------------------------------------------

/// Opens the database at `name` for pessimistic transactions. NULL on error.
#[no_mangle]
pub unsafe extern "C" fn strata_transactiondb_open(
    options: *const strata_options_t,
    txn_db_options: *const strata_transactiondb_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) -> *mut strata_transactiondb_t {
    let r = guard(|| {
        // SAFETY: `options` and `txn_db_options` are NULL or live handles (header contract).
        let (o, t) =
            unsafe { (handle(options, "options")?, handle(txn_db_options, "transaction db options")?) };
        // SAFETY: `name` is NULL or a NUL-terminated string (header contract).
        let path = path_from(unsafe { c_str(name, "name") }?)?;
        o.deferred_error()?;
        let db = Db::open(path, o.opts.clone()).map_err(err_str)?;
        let tdb = TransactionDb::new(db.clone(), t.opts.clone());
        Ok(into_raw(strata_transactiondb_t { tdb, base: Box::new(strata_t { db }) }))
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ptr::null_mut()) }
}

/// The database of `txn_db`, for every non-transactional call; owned by `txn_db` (do not close
/// it). NULL if `txn_db` is NULL.
#[no_mangle]
pub unsafe extern "C" fn strata_transactiondb_get_base_db(
    txn_db: *mut strata_transactiondb_t,
) -> *mut strata_t {
    // SAFETY: `txn_db` is NULL or a live handle (header contract).
    match unsafe { handle(txn_db, "transaction db") } {
        Ok(t) => ptr::from_ref::<strata_t>(&t.base).cast_mut(),
        Err(_) => ptr::null_mut(),
    }
}

/// Closes the database as `strata_close` does. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn strata_transactiondb_close(txn_db: *mut strata_transactiondb_t) {
    if txn_db.is_null() {
        return;
    }
    // SAFETY: `txn_db` came from `strata_transactiondb_open` and is not used again (header).
    let boxed = unsafe { Box::from_raw(txn_db) };
    let _ = guard(move || {
        let strata_transactiondb_t { tdb, base } = *boxed;
        drop(tdb);
        base.db.close().map_err(err_str)
    });
}

// ---------------------------------------------------------------------------------------------
// Begin, commit, rollback
// ---------------------------------------------------------------------------------------------

/// Starts an optimistic transaction on `db` (`Db::begin_transaction`). NULL if an argument is
/// NULL.
#[no_mangle]
pub unsafe extern "C" fn strata_optimistic_transaction_begin(
    db: *mut strata_t,
    write_options: *const strata_writeoptions_t,
) -> *mut strata_transaction_t {
    guard_or(ptr::null_mut(), || {
        // SAFETY: `db` and `write_options` are NULL or live handles (header contract).
        let (db, wo) = unsafe { (handle(db, "db")?, handle(write_options, "write options")?) };
        let txn = db.db.begin_transaction(&wo.opts);
        Ok(into_raw(strata_transaction_t { txn: Some(txn), db }))
    })
}

/// Starts a pessimistic transaction on `txn_db`. NULL if an argument is NULL.
#[no_mangle]
pub unsafe extern "C" fn strata_transaction_begin(
    txn_db: *mut strata_transactiondb_t,
    write_options: *const strata_writeoptions_t,
    txn_options: *const strata_transaction_options_t,
) -> *mut strata_transaction_t {
    guard_or(ptr::null_mut(), || {
        // SAFETY: the three are NULL or live handles (header contract).
        let (t, wo, to) = unsafe {
            (
                handle(txn_db, "transaction db")?,
                handle(write_options, "write options")?,
                handle(txn_options, "transaction options")?,
            )
        };
        let txn = t.tdb.begin(&wo.opts, &to.opts);
        Ok(into_raw(strata_transaction_t { txn: Some(txn), db: &*t.base }))
    })
}

/// Runs `f` on the live transaction behind `txn`, reporting errors through `errptr`.
///
/// # Safety
/// `txn` is NULL or a live transaction handle not used elsewhere during the call; `errptr` as
/// for every call.
unsafe fn with_txn<T>(
    txn: *mut strata_transaction_t,
    errptr: *mut *mut c_char,
    fallback: T,
    f: impl FnOnce(&mut strata_transaction_t) -> CResult<T>,
) -> T {
    // SAFETY: forwarded from this function's contract.
    let r = guard(|| f(unsafe { handle_mut(txn, "transaction") }?));
    // SAFETY: forwarded from this function's contract.
    unsafe { finish(errptr, r, fallback) }
}

/// Commits; on any error nothing was written. The handle stays to be destroyed.
#[no_mangle]
pub unsafe extern "C" fn strata_transaction_commit(txn: *mut strata_transaction_t, errptr: *mut *mut c_char) {
    // SAFETY: `txn` and `errptr` as the header documents.
    unsafe {
        with_txn(txn, errptr, (), |t| {
            t.live()?;
            t.txn.take().map_or(Ok(()), |txn| txn.commit().map_err(err_str))
        })
    }
}

/// Discards the transaction's writes and releases its locks. The handle stays to be destroyed.
#[no_mangle]
pub unsafe extern "C" fn strata_transaction_rollback(
    txn: *mut strata_transaction_t,
    errptr: *mut *mut c_char,
) {
    // SAFETY: `txn` and `errptr` as the header documents.
    unsafe {
        with_txn(txn, errptr, (), |t| {
            t.live()?;
            t.txn.take().map_or(Ok(()), |txn| {
                txn.rollback();
                Ok(())
            })
        })
    }
}

/// Frees the handle, rolling back a transaction that has not ended. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn strata_transaction_destroy(txn: *mut strata_transaction_t) {
    // SAFETY: `txn` is NULL or from a begin call, not used again (header contract).
    unsafe { destroy(txn) }
}

// ---------------------------------------------------------------------------------------------
// Savepoints
// ---------------------------------------------------------------------------------------------

/// Remembers the transaction's writes so far. Does nothing on a NULL or ended transaction.
#[no_mangle]
pub unsafe extern "C" fn strata_transaction_set_savepoint(txn: *mut strata_transaction_t) {
    // SAFETY: `txn` is NULL or a live handle (header contract); errors are dropped (no errptr).
    unsafe {
        with_txn(txn, ptr::null_mut(), (), |t| {
            t.live()?.set_save_point();
            Ok(())
        })
    }
}

/// Undoes the writes since the last savepoint and removes it; an error when there is none.
#[no_mangle]
pub unsafe extern "C" fn strata_transaction_rollback_to_savepoint(
    txn: *mut strata_transaction_t,
    errptr: *mut *mut c_char,
) {
    // SAFETY: `txn` and `errptr` as the header documents.
    unsafe { with_txn(txn, errptr, (), |t| t.live()?.rollback_to_save_point().map_err(err_str)) }
}

// ---------------------------------------------------------------------------------------------
// Reads
// ---------------------------------------------------------------------------------------------

/// The family of `cf`, checked to belong to the transaction's database (by address only).
///
/// # Safety
/// `cf` is NULL or a live family handle.
unsafe fn txn_family<'a>(
    t: &strata_transaction_t,
    cf: *const strata_column_family_handle_t,
) -> CResult<&'a ColumnFamily> {
    // SAFETY: forwarded from this function's contract.
    let h = unsafe { handle(cf, "column family") }?;
    if !ptr::eq(h.db, t.db) {
        return Err("invalid argument: the column family handle belongs to another database".into());
    }
    Ok(&h.cf)
}

/// A read of `key` (in `cf`, when not NULL) returned as `strata_get` returns it.
///
/// # Safety
/// Every pointer as the header documents for `strata_transaction_get_cf`; `cf` may be NULL.
#[allow(clippy::too_many_arguments)]
unsafe fn read(
    txn: *mut strata_transaction_t,
    options: *const strata_readoptions_t,
    cf: *const strata_column_family_handle_t,
    key: *const c_char,
    keylen: usize,
    vallen: *mut usize,
    for_update: bool,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    let read = || {
        // SAFETY: `txn` and `options` are NULL or live handles (header contract).
        let (t, o) = unsafe { (handle_mut(txn, "transaction")?, handle(options, "read options")?) };
        // SAFETY: `key` is NULL or points to `keylen` bytes (header contract).
        let k = unsafe { bytes(key, keylen, "key") }?;
        // SAFETY: `cf` is NULL or a live family handle (header contract).
        let family = if cf.is_null() { None } else { Some(unsafe { txn_family(t, cf) }?) };
        let txn = t.live()?;
        let r = match (family, for_update) {
            (None, false) => txn.get_opt(&o.opts, k),
            (None, true) => txn.get_for_update_opt(&o.opts, k),
            (Some(cf), false) => txn.get_cf_opt(cf, &o.opts, k),
            (Some(cf), true) => txn.get_for_update_cf_opt(cf, &o.opts, k),
        };
        r.map_err(err_str)
    };
    // SAFETY: `vallen` is NULL or writable; `errptr` as for every call (header contract).
    unsafe { value_out(vallen, errptr, read) }
}

/// The value of `key` with the transaction's writes applied, as `strata_get` returns it.
#[no_mangle]
pub unsafe extern "C" fn strata_transaction_get(
    txn: *mut strata_transaction_t,
    options: *const strata_readoptions_t,
    key: *const c_char,
    klen: usize,
    vlen: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    // SAFETY: the pointers as the header documents.
    unsafe { read(txn, options, ptr::null(), key, klen, vlen, false, errptr) }
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn strata_transaction_get_cf(
    txn: *mut strata_transaction_t,
    options: *const strata_readoptions_t,
    column_family: *mut strata_column_family_handle_t,
    key: *const c_char,
    klen: usize,
    vlen: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    if column_family.is_null() {
        // SAFETY: `errptr` as for every call (header contract).
        return unsafe { value_out(vlen, errptr, || Err("invalid argument: column family is NULL".into())) };
    }
    // SAFETY: the pointers as the header documents.
    unsafe { read(txn, options, column_family, key, klen, vlen, false, errptr) }
}

/// `strata_transaction_get`, claiming the key: locked (pessimistic) or checked at commit
/// (optimistic). `exclusive` is accepted for RocksDB compatibility; strata's locks are exclusive.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn strata_transaction_get_for_update(
    txn: *mut strata_transaction_t,
    options: *const strata_readoptions_t,
    key: *const c_char,
    klen: usize,
    vlen: *mut usize,
    _exclusive: u8,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    // SAFETY: the pointers as the header documents.
    unsafe { read(txn, options, ptr::null(), key, klen, vlen, true, errptr) }
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn strata_transaction_get_for_update_cf(
    txn: *mut strata_transaction_t,
    options: *const strata_readoptions_t,
    column_family: *mut strata_column_family_handle_t,
    key: *const c_char,
    klen: usize,
    vlen: *mut usize,
    _exclusive: u8,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    if column_family.is_null() {
        // SAFETY: `errptr` as for every call (header contract).
        return unsafe { value_out(vlen, errptr, || Err("invalid argument: column family is NULL".into())) };
    }
    // SAFETY: the pointers as the header documents.
    unsafe { read(txn, options, column_family, key, klen, vlen, true, errptr) }
}

// ---------------------------------------------------------------------------------------------
// Writes
// ---------------------------------------------------------------------------------------------

/// One buffered write.
#[derive(Clone, Copy)]
enum Op {
    Put,
    Delete,
    Merge,
}

/// Buffers `op` of `key` (and `val`, for put and merge) in `cf`, or the default family when
/// `cf` is NULL.
///
/// # Safety
/// Every pointer as the header documents for `strata_transaction_put_cf`; `cf` may be NULL.
#[allow(clippy::too_many_arguments)]
unsafe fn write(
    txn: *mut strata_transaction_t,
    cf: *const strata_column_family_handle_t,
    op: Op,
    key: *const c_char,
    klen: usize,
    val: *const c_char,
    vlen: usize,
    errptr: *mut *mut c_char,
) {
    let buffer = |t: &mut strata_transaction_t| {
        // SAFETY: `key`/`val` are NULL or point to `klen`/`vlen` bytes (header contract).
        let (k, v) = unsafe { (bytes(key, klen, "key")?, bytes(val, vlen, "value")?) };
        // SAFETY: `cf` is NULL or a live family handle (header contract).
        let family = if cf.is_null() { None } else { Some(unsafe { txn_family(t, cf) }?) };
        let txn = t.live()?;
        let r = match (family, op) {
            (None, Op::Put) => txn.put(k, v),
            (None, Op::Delete) => txn.delete(k),
            (None, Op::Merge) => txn.merge(k, v),
            (Some(cf), Op::Put) => txn.put_cf(cf, k, v),
            (Some(cf), Op::Delete) => txn.delete_cf(cf, k),
            (Some(cf), Op::Merge) => txn.merge_cf(cf, k, v),
        };
        r.map_err(err_str)
    };
    // SAFETY: `txn` and `errptr` as the header documents.
    unsafe { with_txn(txn, errptr, (), buffer) }
}

/// Reports a NULL family handle of a `_cf` call.
///
/// # Safety
/// `errptr` as for every call.
unsafe fn null_family(errptr: *mut *mut c_char) {
    // SAFETY: forwarded from this function's contract.
    unsafe { finish(errptr, Err("invalid argument: column family is NULL".into()), ()) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_transaction_put(
    txn: *mut strata_transaction_t,
    key: *const c_char,
    klen: usize,
    val: *const c_char,
    vlen: usize,
    errptr: *mut *mut c_char,
) {
    // SAFETY: the pointers as the header documents.
    unsafe { write(txn, ptr::null(), Op::Put, key, klen, val, vlen, errptr) }
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn strata_transaction_put_cf(
    txn: *mut strata_transaction_t,
    column_family: *mut strata_column_family_handle_t,
    key: *const c_char,
    klen: usize,
    val: *const c_char,
    vlen: usize,
    errptr: *mut *mut c_char,
) {
    // SAFETY: the pointers as the header documents.
    unsafe {
        if column_family.is_null() {
            return null_family(errptr);
        }
        write(txn, column_family, Op::Put, key, klen, val, vlen, errptr)
    }
}

#[no_mangle]
pub unsafe extern "C" fn strata_transaction_delete(
    txn: *mut strata_transaction_t,
    key: *const c_char,
    klen: usize,
    errptr: *mut *mut c_char,
) {
    // SAFETY: the pointers as the header documents.
    unsafe { write(txn, ptr::null(), Op::Delete, key, klen, ptr::null(), 0, errptr) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_transaction_delete_cf(
    txn: *mut strata_transaction_t,
    column_family: *mut strata_column_family_handle_t,
    key: *const c_char,
    klen: usize,
    errptr: *mut *mut c_char,
) {
    // SAFETY: the pointers as the header documents.
    unsafe {
        if column_family.is_null() {
            return null_family(errptr);
        }
        write(txn, column_family, Op::Delete, key, klen, ptr::null(), 0, errptr)
    }
}

#[no_mangle]
pub unsafe extern "C" fn strata_transaction_merge(
    txn: *mut strata_transaction_t,
    key: *const c_char,
    klen: usize,
    val: *const c_char,
    vlen: usize,
    errptr: *mut *mut c_char,
) {
    // SAFETY: the pointers as the header documents.
    unsafe { write(txn, ptr::null(), Op::Merge, key, klen, val, vlen, errptr) }
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn strata_transaction_merge_cf(
    txn: *mut strata_transaction_t,
    column_family: *mut strata_column_family_handle_t,
    key: *const c_char,
    klen: usize,
    val: *const c_char,
    vlen: usize,
    errptr: *mut *mut c_char,
) {
    // SAFETY: the pointers as the header documents.
    unsafe {
        if column_family.is_null() {
            return null_family(errptr);
        }
        write(txn, column_family, Op::Merge, key, klen, val, vlen, errptr)
    }
}
