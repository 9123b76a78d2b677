//! The C API of strata: `libstrata.so` / `libstrata.a` with the hand-kept header
//! `include/strata.h`. It follows LevelDB's `c.h` conventions under a `strata_` prefix: opaque
//! handles, `(const char* ptr, size_t len)` pairs, a trailing `char** errptr` on every fallible
//! call, `uint8_t` booleans and malloc'd results freed by the caller with `strata_free`.
//!
//! Rules every exported function keeps:
//! - no panic unwinds into C: bodies run under `util::guard` (`catch_unwind`), and a panic becomes
//!   an error message (or is swallowed where the call has no `errptr`);
//! - a NULL handle never crashes: it is an error where there is an `errptr`, otherwise a no-op;
//! - `*errptr` is left untouched on success and, on error, set to a malloc'd NUL-terminated
//!   message after freeing any message it already held (as LevelDB does).
//!
//! The contracts on pointer arguments are documented in `include/strata.h`, not repeated here.
//!
//! One module per area, each exporting its `strata_*` functions: [`options`] (open, read and
//! write options), [`db`] (open, reads, writes, maintenance), [`family`] (column families and
//! the `_cf` calls), [`batch`], [`snapshot`], [`iter`], [`txn`] (transactions), [`ingest`]
//! (external table files: `strata_sstfilewriter_*` and ingestion);
//! [`util`] holds what they share. This file only declares them and re-exports the handle types.

#![warn(clippy::undocumented_unsafe_blocks)]
#![allow(non_camel_case_types)]
// The `# Safety` contract of every exported function is the header's documentation.
#![allow(clippy::missing_safety_doc)]

pub mod batch;
pub mod db;
pub mod family;
pub mod ingest;
pub mod iter;
pub mod options;
pub mod snapshot;
pub mod txn;
pub mod util;

pub use batch::strata_writebatch_t;
pub use db::strata_t;
pub use family::strata_column_family_handle_t;
pub use ingest::{strata_ingestexternalfileoptions_t, strata_sstfilewriter_t};
pub use iter::strata_iterator_t;
pub use options::{strata_options_t, strata_readoptions_t, strata_writeoptions_t};
pub use snapshot::strata_snapshot_t;
pub use txn::{
    strata_transaction_options_t, strata_transaction_t, strata_transactiondb_options_t,
    strata_transactiondb_t,
};
