//! Reads logical records back from a log file written by [`super::writer::LogWriter`], telling a
//! torn tail (a crash during the last append: dropped silently and counted) from corruption in
//! the middle of the log (reported, or skipped and counted when the caller opted in).
//!
//! The rule: after any bad spot (bad checksum, bad length, bad type, zero fill, or a broken
//! fragment sequence) the reader resyncs and keeps walking. If it reaches the end of the file
//! without finding a valid FULL or FIRST fragment, everything from the bad spot on was a torn
//! tail. If it finds one, the bad spot was mid-log corruption. Only FULL/FIRST count as evidence
//! because the torn last append may have left later MIDDLE/LAST fragments of the same record on
//! disk (pages persisted out of order); those never make a torn tail look like corruption.
//!
//! Zero fill (a header of seven zero bytes with nothing but zeros after it in its block) is a bad
//! spot like any other, so zeros followed by a valid record are still corruption. At the end of
//! the file it is the space a preallocating writer zeroed ahead of its records: counted in
//! [`LogReader::zero_tail_bytes`], not as a torn tail.
//!
//! This module must never panic on any bytes, and never modifies the file.

use super::format::{record_checksum, RecordType, BLOCK_SIZE, HEADER_SIZE};
use crate::error::{Error, Result};
use crate::fs::SequentialFile;
use crate::util::coding;

/// Reads logical records front to back.
pub struct LogReader {
    file: Box<dyn SequentialFile>,
    skip_corruption: bool,
    /// The current block; shorter than `BLOCK_SIZE` only for the last block of the file.
    block: Vec<u8>,
    pos: usize,
    block_start: u64,
    /// The current block is the last one.
    eof: bool,
    /// The logical record being assembled: (offset of its FIRST fragment, physical bytes so far).
    partial: Option<(u64, u64)>,
    /// The first bad spot not yet resolved as tail or corruption.
    problem: Option<Problem>,
    /// Set once the end of the file was reached; later calls return `Ok(None)`.
    done: bool,
    /// A reported mid-log corruption; returned again on later calls.
    error: Option<Error>,
    tail_dropped: u64,
    zero_tail: u64,
    skipped: u64,
    last_record_offset: u64,
}

struct Problem {
    offset: u64,
    reason: &'static str,
    /// Physical bytes discarded since `offset`.
    bytes: u64,
    /// The part of `bytes` that was zero fill.
    zero_bytes: u64,
}

enum Physical {
    Fragment {
        kind: RecordType,
        offset: u64,
        start: usize,
        end: usize,
    },
    Bad {
        offset: u64,
        reason: &'static str,
        bytes: u64,
    },
    /// The rest of the block from `offset` on is zeros.
    ZeroFill {
        offset: u64,
        bytes: u64,
    },
    /// End of file; `dropped` bytes at the end did not form a complete physical record.
    End {
        dropped: u64,
    },
}

impl LogReader {
    /// Reads `file` from its start. With `skip_corruption`, mid-log corruption is skipped and
    /// counted in [`LogReader::skipped_bytes`] instead of being returned as an error.
    pub fn new(file: Box<dyn SequentialFile>, skip_corruption: bool) -> Self {
        Self {
            file,
            skip_corruption,
            block: Vec::with_capacity(BLOCK_SIZE),
            pos: 0,
            block_start: 0,
            eof: false,
            partial: None,
            problem: None,
            done: false,
            error: None,
            tail_dropped: 0,
            zero_tail: 0,
            skipped: 0,
            last_record_offset: 0,
        }
    }

    /// The next logical record, or `None` at the end of the log (clean or torn).
    pub fn read_record(&mut self) -> Result<Option<Vec<u8>>> {
        let mut out = Vec::new();
        Ok(self.read_record_into(&mut out)?.then_some(out))
    }

    /// Like [`LogReader::read_record`] but fills `out` (cleared first) so a replay loop can reuse
    /// one buffer. Returns false at the end of the log. `out` is unspecified after an error.
    pub fn read_record_into(&mut self, out: &mut Vec<u8>) -> Result<bool> {
        if let Some(e) = &self.error {
            return Err(e.duplicate());
        }
        out.clear();
        while !self.done {
            match self.next_physical()? {
                Physical::End { dropped } => self.finish(dropped, out),
                Physical::Bad { offset, reason, bytes } => self.note_problem(offset, reason, bytes, out),
                Physical::ZeroFill { offset, bytes } => {
                    self.note_problem(offset, "zero fill", bytes, out);
                    if let Some(p) = self.problem.as_mut() {
                        p.zero_bytes += bytes;
                    }
                }
                Physical::Fragment { kind, offset, start, end } => {
                    if self.on_fragment(kind, offset, start, end, out)? {
                        return Ok(true);
                    }
                }
            }
        }
        Ok(false)
    }

    /// Bytes discarded at the end of the log as a torn tail (zero fill not included).
    pub fn tail_dropped_bytes(&self) -> u64 {
        self.tail_dropped
    }

    /// Zero-filled bytes at the end of the log: space a preallocating writer had not used yet.
    pub fn zero_tail_bytes(&self) -> u64 {
        self.zero_tail
    }

    /// Bytes of mid-log corruption skipped (only with `skip_corruption`).
    pub fn skipped_bytes(&self) -> u64 {
        self.skipped
    }

    /// File offset of the first fragment of the record returned last.
    pub fn last_record_offset(&self) -> u64 {
        self.last_record_offset
    }

    /// Applies one valid fragment to the record being assembled; true when `out` is complete.
    fn on_fragment(
        &mut self,
        kind: RecordType,
        offset: u64,
        start: usize,
        end: usize,
        out: &mut Vec<u8>,
    ) -> Result<bool> {
        let physical = (HEADER_SIZE + (end - start)) as u64;
        let continues = matches!(kind, RecordType::Middle | RecordType::Last);
        if continues && self.partial.is_none() {
            self.note_problem(offset, "fragment without a preceding FIRST", physical, out);
            return Ok(false);
        }
        if kind.starts_record() {
            if let Some((first, _)) = self.partial {
                self.note_problem(first, "record is missing its LAST fragment", 0, out);
            }
            self.resolve_problem(offset)?;
            self.partial = Some((offset, 0));
        }
        let payload = self.block.get(start..end).ok_or_else(|| Error::corruption("log reader bug"))?;
        out.extend_from_slice(payload);
        let Some((first, bytes)) = self.partial.as_mut() else { return Ok(false) };
        *bytes += physical;
        if matches!(kind, RecordType::Full | RecordType::Last) {
            self.last_record_offset = *first;
            self.partial = None;
            return Ok(true);
        }
        Ok(false)
    }

    /// Records a bad spot; a partially assembled record is abandoned with it.
    fn note_problem(&mut self, offset: u64, reason: &'static str, bytes: u64, out: &mut Vec<u8>) {
        let (offset, bytes) = match self.partial.take() {
            Some((first, partial_bytes)) => (first, bytes + partial_bytes),
            None => (offset, bytes),
        };
        out.clear();
        match &mut self.problem {
            Some(p) => p.bytes += bytes,
            None => self.problem = Some(Problem { offset, reason, bytes, zero_bytes: 0 }),
        }
    }

    /// A valid record starts at `found`: any pending bad spot was mid-log corruption.
    fn resolve_problem(&mut self, found: u64) -> Result<()> {
        let Some(p) = self.problem.take() else { return Ok(()) };
        if self.skip_corruption {
            self.skipped += p.bytes;
            return Ok(());
        }
        let err = Error::corruption(format!(
            "log corrupted at offset {}: {} ({} bytes unreadable before the valid record at offset {})",
            p.offset, p.reason, p.bytes, found
        ));
        self.error = Some(err.duplicate());
        Err(err)
    }

    /// End of file: whatever is pending was a torn tail.
    fn finish(&mut self, dropped: u64, out: &mut Vec<u8>) {
        let partial = self.partial.take().map_or(0, |(_, bytes)| bytes);
        let (pending, zeros) = self.problem.take().map_or((0, 0), |p| (p.bytes - p.zero_bytes, p.zero_bytes));
        self.tail_dropped += dropped + partial + pending;
        self.zero_tail += zeros;
        self.done = true;
        out.clear();
    }

    /// The next physical record, bad spot, or end of file.
    fn next_physical(&mut self) -> Result<Physical> {
        loop {
            let avail = self.block.len().saturating_sub(self.pos);
            if avail >= HEADER_SIZE {
                return Ok(self.parse_physical(avail));
            }
            if self.eof {
                self.pos = self.block.len();
                return Ok(Physical::End { dropped: avail as u64 });
            }
            // A full block's last few bytes are zero padding; the next block starts fresh.
            self.load_block()?;
        }
    }

    /// Parses the record at `self.pos`, which has at least a header's worth of bytes.
    fn parse_physical(&mut self, avail: usize) -> Physical {
        let offset = self.block_start + self.pos as u64;
        let rest = self.block.get(self.pos..).unwrap_or_default();
        let (Some(crc), Some(&[l0, l1, kind_byte])) = (coding::get_u32(rest), rest.get(4..HEADER_SIZE))
        else {
            return self.bad(offset, "short header", self.block.len());
        };
        let end = self.pos + HEADER_SIZE + usize::from(u16::from_le_bytes([l0, l1]));
        if end > self.block.len() {
            if self.eof {
                // Truncated at the end of the file: the crash interrupted this append.
                self.pos = self.block.len();
                return Physical::End { dropped: avail as u64 };
            }
            return self.bad(offset, "record length overruns its block", self.block.len());
        }
        let Some(kind) = RecordType::from_u8(kind_byte) else {
            if rest.iter().all(|&b| b == 0) {
                let bytes = rest.len() as u64;
                self.pos = self.block.len();
                return Physical::ZeroFill { offset, bytes };
            }
            // Nothing else in this block can be trusted.
            return self.bad(offset, "bad record type", self.block.len());
        };
        let start = self.pos + HEADER_SIZE;
        let payload = self.block.get(start..end).unwrap_or_default();
        if record_checksum(kind_byte, payload) != crc {
            // The header looks sane, so the next record most likely starts right after this one.
            return self.bad(offset, "checksum mismatch", end);
        }
        self.pos = end;
        Physical::Fragment { kind, offset, start, end }
    }

    fn bad(&mut self, offset: u64, reason: &'static str, resume_at: usize) -> Physical {
        let bytes = resume_at.saturating_sub(self.pos) as u64;
        self.pos = resume_at;
        Physical::Bad { offset, reason, bytes }
    }

    /// Reads the next block; a short block (or none) means the end of the file.
    fn load_block(&mut self) -> Result<()> {
        self.block_start += self.block.len() as u64;
        self.block.clear();
        self.block.resize(BLOCK_SIZE, 0);
        let mut filled = 0;
        while filled < BLOCK_SIZE {
            let n = self.file.read(self.block.get_mut(filled..).unwrap_or_default())?;
            if n == 0 {
                break;
            }
            filled = (filled + n).min(BLOCK_SIZE);
        }
        self.block.truncate(filled);
        self.eof = filled < BLOCK_SIZE;
        self.pos = 0;
        Ok(())
    }
}
