//! Versions of the tree's file set and the MANIFEST records that evolve them: the edit codec
//! (`edit`), the immutable `Version` (`version`) and the `VersionSet` that logs edits to the
//! MANIFEST (`set`). Only `set` does IO, and only through the filesystem seam and `crate::wal`.
//! See `docs/format.md` for the bytes.

pub mod edit;
pub mod set;
#[allow(clippy::module_inception)]
pub mod version;

pub use edit::{FileMeta, VersionEdit};
