//! Appends logical records to a log file in the block format of [`super::format`].
//!
//! Durability contract: when [`LogWriter::add_record`] returns `Ok`, every byte of the record has
//! been handed to the kernel in ONE `append`, so a process crash loses nothing acknowledged and a
//! power loss can at worst tear the last record (which the reader drops as a torn tail). This
//! module must not buffer across records, must not sync unless asked, and must not reopen a log.

use super::format::{record_checksum, RecordType, BLOCK_SIZE, HEADER_SIZE, MAX_FRAGMENT};
use crate::error::{Error, Result};
use crate::fs::WritableFile;

/// Writes logical records into a freshly created log file.
pub struct LogWriter {
    file: Box<dyn WritableFile>,
    /// Bytes already used in the current block.
    block_offset: usize,
    /// Reused for every record so steady-state appends do not allocate.
    buf: Vec<u8>,
    /// Set after a failed append: the file may now end in a partial record, and appending more
    /// after it would turn that harmless torn tail into mid-log corruption on recovery.
    failed: bool,
}

impl LogWriter {
    /// Wraps a newly created (normally empty) file.
    pub fn new(file: Box<dyn WritableFile>) -> Self {
        let block_offset = (file.len() % BLOCK_SIZE as u64) as usize;
        Self { file, block_offset, buf: Vec::new(), failed: false }
    }

    /// Appends one logical record (any length, including zero) with a single `append` call.
    pub fn add_record(&mut self, payload: &[u8]) -> Result<()> {
        if self.failed {
            return Err(Error::Io {
                path: None,
                source: std::io::Error::other("log writer is unusable after an earlier failed append"),
            });
        }
        let end_offset = self.frame(payload);
        match self.file.append(&self.buf) {
            Ok(()) => {
                self.block_offset = end_offset;
                Ok(())
            }
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }

    /// Builds every fragment of `payload` into `self.buf`; returns the block offset after them.
    fn frame(&mut self, payload: &[u8]) -> usize {
        self.buf.clear();
        let mut block_offset = self.block_offset;
        let mut rest = payload;
        let mut is_first = true;
        loop {
            let leftover = BLOCK_SIZE - block_offset;
            if leftover < HEADER_SIZE {
                // Too small for a header: zero-fill so the reader skips it as padding.
                self.buf.extend_from_slice(&[0u8; HEADER_SIZE][..leftover]);
                block_offset = 0;
            }
            let room = (BLOCK_SIZE - block_offset - HEADER_SIZE).min(MAX_FRAGMENT);
            let (fragment, tail) = rest.split_at(rest.len().min(room));
            let kind = RecordType::for_fragment(is_first, tail.is_empty());
            self.push_fragment(kind, fragment);
            block_offset += HEADER_SIZE + fragment.len();
            if tail.is_empty() {
                return block_offset;
            }
            rest = tail;
            is_first = false;
        }
    }

    fn push_fragment(&mut self, kind: RecordType, fragment: &[u8]) {
        let crc = record_checksum(kind as u8, fragment);
        self.buf.extend_from_slice(&crc.to_le_bytes());
        // A fragment is at most MAX_FRAGMENT (< 64 KiB) bytes, so the cast is lossless.
        self.buf.extend_from_slice(&(fragment.len() as u16).to_le_bytes());
        self.buf.push(kind as u8);
        self.buf.extend_from_slice(fragment);
    }

    /// Makes every record added so far durable (fdatasync).
    pub fn sync(&mut self) -> Result<()> {
        self.file.sync_data()
    }

    /// Bytes in the file so far.
    pub fn file_size(&self) -> u64 {
        self.file.len()
    }
}
