//! Versions of the tree's file set and the MANIFEST records that evolve them. This module owns
//! the version-edit codec (`edit`); it must not do IO itself (the MANIFEST is a log written
//! through `crate::wal`). See `docs/format-manifest.md` for the bytes.

pub mod edit;

pub use edit::{BlobFileMeta, FileMeta, VersionEdit};
