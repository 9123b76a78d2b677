//! Appends logical records to a log file in the block format of [`super::format`].
//!
//! Durability contract: when [`LogWriter::add_record`] returns `Ok`, every byte of the record has
//! been handed to the kernel in ONE `append`, so a process crash loses nothing acknowledged and a
//! power loss can at worst tear the last record (which the reader drops as a torn tail). This
//! module must not buffer across records, must not sync unless asked, and must not reopen a log.
//! With [`LogWriter::preallocating`] the file may also hold zeros past the last record; those
//! are not part of any record and need no sync of their own (see `docs/durability.md`).

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
    /// Zero-fill this many bytes ahead of the appends once the log has been synced (0: never).
    preallocate_chunk: u64,
    /// The file is zero-filled up to here.
    preallocated_to: u64,
    /// `sync` was called: the log's writer pays for fdatasync, so preallocation pays off.
    synced: bool,
}

impl LogWriter {
    /// Wraps a newly created (normally empty) file.
    pub fn new(file: Box<dyn WritableFile>) -> Self {
        let block_offset = (file.len() % BLOCK_SIZE as u64) as usize;
        Self {
            file,
            block_offset,
            buf: Vec::new(),
            failed: false,
            preallocate_chunk: 0,
            preallocated_to: 0,
            synced: false,
        }
    }

    /// From the first [`LogWriter::sync`] on, keeps the file zero-filled `chunk` bytes ahead of
    /// the records (see [`WritableFile::preallocate`]), so a synced append overwrites allocated
    /// blocks instead of growing the file. The reader treats the zero-filled rest as the end of
    /// the log. Logs that are never synced are never preallocated.
    pub fn preallocating(mut self, chunk: u64) -> Self {
        self.preallocate_chunk = chunk;
        self
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
        self.preallocate_for(self.buf.len() as u64);
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

    /// Extends the zero-filled space when the next `len` bytes would run past it. A failure only
    /// turns preallocation off: the append that follows reports any real problem with the file.
    fn preallocate_for(&mut self, len: u64) {
        if self.preallocate_chunk == 0 || !self.synced {
            return;
        }
        let end = self.file.len() + len;
        if end <= self.preallocated_to {
            return;
        }
        let upto = end + self.preallocate_chunk;
        match self.file.preallocate(upto) {
            Ok(()) => self.preallocated_to = upto,
            Err(e) => {
                tracing::warn!(error = %e, "WAL preallocation failed; appending without it");
                self.preallocate_chunk = 0;
            }
        }
    }

    /// Makes every record added so far durable (fdatasync).
    pub fn sync(&mut self) -> Result<()> {
        self.file.sync_data()?;
        self.synced = true;
        Ok(())
    }

    /// True once [`LogWriter::sync`] has succeeded: everything appended before that is durable.
    pub fn has_synced(&self) -> bool {
        self.synced
    }

    /// Bytes in the file so far.
    pub fn file_size(&self) -> u64 {
        self.file.len()
    }
}
