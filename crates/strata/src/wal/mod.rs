//! The log format shared by the write-ahead log and the MANIFEST: a sequence of 32 KiB blocks
//! holding checksummed physical records that together carry arbitrary-length logical records.
//! See `docs/format.md` for the bytes.
//!
//! This module owns framing only: it must not know what the payloads mean (write batches or
//! version edits), and it never decides on its own to truncate or rewrite a log file.

pub mod format;
pub mod reader;
pub mod writer;

pub use reader::LogReader;
pub use writer::LogWriter;

#[cfg(test)]
mod tests;
