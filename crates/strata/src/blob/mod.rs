//! Blob files: append-only files holding large values separated from the LSM tree (key-value
//! separation). The tree stores a [`BlobPointer`] in place of each such value. See
//! `docs/format.md` for the bytes.
//!
//! This module owns the blob file format, its writer and its reader. It must not decide which
//! values go to blob files, track garbage, or delete files: that is the engine's and the version
//! set's job.

pub mod format;
pub mod readahead;
pub mod reader;
pub mod writer;

pub use format::BlobPointer;
pub use reader::{BlobReader, BlobWalk, BlobWalks};
pub use writer::BlobWriter;

#[cfg(test)]
mod tests;
