//! Snapshots: `strata_create_snapshot` and `strata_release_snapshot`.
//!
//! Owns: `strata_snapshot_t`. Must not: read through a snapshot (read options carry it to the
//! reads in `db.rs` and `iter.rs`).

use std::ptr;

use strata_engine::Snapshot;

use crate::db::strata_t;
use crate::util::{destroy, guard_or, handle, into_raw};

/// A snapshot (`strata_snapshot_t`).
pub struct strata_snapshot_t {
    pub(crate) snap: Snapshot,
}

// ---------------------------------------------------------------------------------------------
// Snapshots
// ---------------------------------------------------------------------------------------------

/// A snapshot of the current state; NULL when `db` is NULL.
#[no_mangle]
pub unsafe extern "C" fn strata_create_snapshot(db: *mut strata_t) -> *const strata_snapshot_t {
    // SAFETY: `db` is NULL or a live database handle (header contract).
    let Ok(db) = (unsafe { handle(db, "db") }) else { return ptr::null() };
    guard_or(ptr::null(), || Ok(into_raw(strata_snapshot_t { snap: db.db.snapshot() }).cast_const()))
}

/// Releases a snapshot. `db` is accepted for LevelDB compatibility and not used.
#[no_mangle]
pub unsafe extern "C" fn strata_release_snapshot(_db: *mut strata_t, snapshot: *const strata_snapshot_t) {
    // SAFETY: `snapshot` is NULL or from `strata_create_snapshot`, not used again (header).
    unsafe { destroy(snapshot.cast_mut()) }
}
