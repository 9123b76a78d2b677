//! Reads logical records back from a log file written by [`super::writer::LogWriter`], and
//! reports every damaged stretch with its shape, so that the caller can tell a torn write from
//! corruption (docs/durability.md, "Torn versus corrupt").
//!
//! [`LogReader::next_event`] is the primitive: it yields records, damaged stretches
//! ([`Damage`]) and the end. After a damaged stretch it resyncs and keeps walking, so a caller
//! can look past the damage for evidence (a later intact record). A damage's [`DamageShape`]
//! says whether it could be what a power cut leaves of an unsynced append: a record cut off by
//! the physical end of the file, or a record with a 4 KiB page of zeros (a page that never
//! reached the disk reads back as zeros, or as the zeros a preallocating writer put there), or a
//! record (or header) whose bytes are zero from some point to the end of its block (an append
//! that stopped part way, into preallocated space). A page here is any 4 KiB page the record
//! touches, the one holding its header included (a header can straddle two pages). A complete record whose checksum fails for
//! any other reason is [`DamageShape::Garbled`]: no power cut produces that, only damage to stored
//! bytes.
//!
//! Zeros after the last record (a preallocating writer's space) are not damage: they end the log
//! cleanly and are counted in [`LogReader::zero_tail_bytes`]. Zeros followed by an intact
//! record are damage.
//!
//! [`LogReader::read_record`] is the strict view for logs whose records are each synced before
//! they count (the MANIFEST) and for tools: a torn-shaped damage with nothing intact after it is
//! dropped as a torn tail (counted in [`LogReader::tail_dropped_bytes`]); any other damage is
//! `Error::Corruption` naming the offset, or, with `skip_corruption`, skipped and counted.
//!
//! This module must never panic on any bytes, and never modifies the file.

use super::format::{record_checksum, RecordType, BLOCK_SIZE, HEADER_SIZE};
use crate::error::{Error, Result};
use crate::fs::SequentialFile;
use crate::util::coding;

/// The granularity at which a power cut may lose unsynced data: the page size of the page cache.
pub const PAGE_SIZE: u64 = 4096;

/// What a damaged stretch looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DamageShape {
    /// The physical end of the file cuts a record short: an append interrupted by a crash.
    Truncated,
    /// A header or a page of a record reads as zeros: a page that never reached the disk.
    ZeroedPages,
    /// A complete record with a bad checksum, a bad type or a bad length, or fragments out of
    /// sequence: damage to stored bytes, which no power cut leaves.
    Garbled,
}

/// A damaged stretch of a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// File offset where the damage starts (the first fragment of the record it broke).
    pub offset: u64,
    /// Physical bytes that could not be read as records.
    pub bytes: u64,
    /// What was wrong at `offset`.
    pub reason: &'static str,
    /// Whether a power cut could have left it.
    pub shape: DamageShape,
}

impl Damage {
    /// True when a power cut during an unsynced append could have left this damage.
    pub fn looks_torn(&self) -> bool {
        self.shape != DamageShape::Garbled
    }

    /// A one-line description for errors and reports.
    pub fn describe(&self) -> String {
        format!("offset {}: {} ({} bytes, {:?})", self.offset, self.reason, self.bytes, self.shape)
    }
}

/// One step of [`LogReader::next_event`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogEvent {
    /// A whole logical record was placed in the caller's buffer.
    Record,
    /// A damaged stretch; reading continues after it.
    Damage(Damage),
    /// The end of the log.
    End,
}

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
    /// The damaged stretch being walked over, not yet reported.
    pending: Option<Pending>,
    /// Set once the end of the file was reached; later calls return the end.
    done: bool,
    /// Strict view: a torn-shaped damage waiting to be told tail from middle.
    unresolved: Option<Damage>,
    /// Strict view: a reported corruption, returned again on later calls.
    error: Option<Error>,
    tail_dropped: u64,
    zero_tail: u64,
    skipped: u64,
    last_record_offset: u64,
    last_record_end: u64,
}

struct Pending {
    damage: Damage,
    /// The part of `damage.bytes` that was zero fill (a block's zero-filled rest).
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
        shape: DamageShape,
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
    /// Reads `file` from its start. With `skip_corruption`, the strict view skips damage and
    /// counts it in [`LogReader::skipped_bytes`] instead of returning an error.
    pub fn new(file: Box<dyn SequentialFile>, skip_corruption: bool) -> Self {
        Self {
            file,
            skip_corruption,
            block: Vec::with_capacity(BLOCK_SIZE),
            pos: 0,
            block_start: 0,
            eof: false,
            partial: None,
            pending: None,
            done: false,
            unresolved: None,
            error: None,
            tail_dropped: 0,
            zero_tail: 0,
            skipped: 0,
            last_record_offset: 0,
            last_record_end: 0,
        }
    }

    /// The next record (placed in `out`, cleared first), damaged stretch, or the end. After the
    /// end every call returns the end again. `out` is unspecified unless `Record` is returned.
    pub fn next_event(&mut self, out: &mut Vec<u8>) -> Result<LogEvent> {
        out.clear();
        while !self.done {
            let event = match self.next_physical()? {
                Physical::End { dropped } => self.at_end(dropped),
                Physical::Bad { offset, reason, bytes, shape } => {
                    self.note_damage(offset, reason, bytes, shape, out);
                    None
                }
                Physical::ZeroFill { offset, bytes } => {
                    self.note_damage(offset, "zero fill", bytes, DamageShape::ZeroedPages, out);
                    if let Some(p) = self.pending.as_mut() {
                        p.zero_bytes += bytes;
                    }
                    None
                }
                Physical::Fragment { kind, offset, start, end } => {
                    self.on_fragment(kind, offset, start, end, out)
                }
            };
            if let Some(event) = event {
                return Ok(event);
            }
        }
        Ok(LogEvent::End)
    }

    /// The strict view: the next logical record, or `None` at the end of the log (clean or
    /// torn). See the module doc for what is an error.
    pub fn read_record(&mut self) -> Result<Option<Vec<u8>>> {
        let mut out = Vec::new();
        Ok(self.read_record_into(&mut out)?.then_some(out))
    }

    /// Like [`LogReader::read_record`] but fills `out` (cleared first) so a loop can reuse one
    /// buffer. Returns false at the end of the log. `out` is unspecified after an error.
    pub fn read_record_into(&mut self, out: &mut Vec<u8>) -> Result<bool> {
        loop {
            if let Some(e) = &self.error {
                return Err(e.duplicate());
            }
            match self.next_event(out)? {
                LogEvent::Record => {
                    if let Some(d) = self.unresolved.take() {
                        let found = self.last_record_offset;
                        return Err(self.fail(format!(
                            "log corrupted at offset {}: {} ({} bytes unreadable before the valid record at offset {found})",
                            d.offset, d.reason, d.bytes
                        )));
                    }
                    return Ok(true);
                }
                LogEvent::Damage(d) if self.skip_corruption => self.skipped += d.bytes,
                LogEvent::Damage(d) if d.looks_torn() => {
                    if self.unresolved.is_none() {
                        self.unresolved = Some(d);
                    } else if let Some(u) = self.unresolved.as_mut() {
                        u.bytes += d.bytes;
                    }
                }
                LogEvent::Damage(d) => {
                    return Err(self.fail(format!(
                        "log corrupted at offset {}: {} ({} bytes; a complete record that fails its check is damage, not a torn write)",
                        d.offset, d.reason, d.bytes
                    )))
                }
                LogEvent::End => {
                    if let Some(d) = self.unresolved.take() {
                        self.tail_dropped += d.bytes;
                    }
                    return Ok(false);
                }
            }
        }
    }

    fn fail(&mut self, message: String) -> Error {
        let err = Error::corruption(message);
        self.error = Some(err.duplicate());
        err
    }

    /// Bytes the strict view discarded at the end of the log as a torn tail (zero fill after
    /// the last record not included).
    pub fn tail_dropped_bytes(&self) -> u64 {
        self.tail_dropped
    }

    /// Zero-filled bytes at the end of the log: space a preallocating writer had not used yet.
    pub fn zero_tail_bytes(&self) -> u64 {
        self.zero_tail
    }

    /// Bytes of damage the strict view skipped (only with `skip_corruption`).
    pub fn skipped_bytes(&self) -> u64 {
        self.skipped
    }

    /// File offset of the first fragment of the record returned last.
    pub fn last_record_offset(&self) -> u64 {
        self.last_record_offset
    }

    /// File offset just past the last fragment of the record returned last.
    pub fn last_record_end(&self) -> u64 {
        self.last_record_end
    }

    /// Applies one valid fragment; returns an event when a record is complete, or when a damaged
    /// stretch ends here (the fragment is then read again by the next call).
    fn on_fragment(
        &mut self,
        kind: RecordType,
        offset: u64,
        start: usize,
        end: usize,
        out: &mut Vec<u8>,
    ) -> Option<LogEvent> {
        let physical = (HEADER_SIZE + (end - start)) as u64;
        let continues = matches!(kind, RecordType::Middle | RecordType::Last);
        if continues && self.partial.is_none() {
            let shape = DamageShape::Garbled;
            self.note_damage(offset, "fragment without a preceding FIRST", physical, shape, out);
            return None;
        }
        if kind.starts_record() {
            if let Some((first, _)) = self.partial {
                self.note_damage(first, "record is missing its LAST fragment", 0, DamageShape::Garbled, out);
            }
            if let Some(p) = self.pending.take() {
                // Report the damage first; this fragment is parsed again by the next call.
                self.pos = start - HEADER_SIZE;
                return Some(LogEvent::Damage(p.damage));
            }
            self.partial = Some((offset, 0));
        }
        out.extend_from_slice(self.block.get(start..end).unwrap_or_default());
        let (first, bytes) = self.partial.as_mut()?;
        *bytes += physical;
        if matches!(kind, RecordType::Full | RecordType::Last) {
            self.last_record_offset = *first;
            self.last_record_end = offset + physical;
            self.partial = None;
            return Some(LogEvent::Record);
        }
        None
    }

    /// Records a bad spot; a partially assembled record is abandoned with it. The first bad spot
    /// of a stretch gives the stretch its offset, reason and shape.
    fn note_damage(
        &mut self,
        offset: u64,
        reason: &'static str,
        bytes: u64,
        shape: DamageShape,
        out: &mut Vec<u8>,
    ) {
        let (offset, bytes) = match self.partial.take() {
            Some((first, partial_bytes)) => (first, bytes + partial_bytes),
            None => (offset, bytes),
        };
        out.clear();
        match &mut self.pending {
            Some(p) => p.damage.bytes += bytes,
            None => {
                self.pending =
                    Some(Pending { damage: Damage { offset, bytes, reason, shape }, zero_bytes: 0 })
            }
        }
    }

    /// End of file: a record cut short is a truncated damage; zeros alone end the log cleanly.
    fn at_end(&mut self, dropped: u64) -> Option<LogEvent> {
        self.done = true;
        let partial = self.partial.take();
        if partial.is_some() || dropped > 0 {
            let (offset, bytes) = match partial {
                Some((first, b)) => (first, b + dropped),
                None => (self.block_start + self.block.len() as u64 - dropped, dropped),
            };
            match &mut self.pending {
                Some(p) => p.damage.bytes += bytes,
                None => {
                    let damage = Damage {
                        offset,
                        bytes,
                        reason: "record cut off by the end of the file",
                        shape: DamageShape::Truncated,
                    };
                    self.pending = Some(Pending { damage, zero_bytes: 0 });
                }
            }
        }
        let mut p = self.pending.take()?;
        // Zero fill inside a damaged tail is counted as zero fill, the rest as the damage.
        self.zero_tail += p.zero_bytes;
        p.damage.bytes -= p.zero_bytes;
        (p.damage.bytes > 0).then_some(LogEvent::Damage(p.damage))
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
            return self.bad(offset, "short header", self.block.len(), DamageShape::Garbled);
        };
        // A header with a page's worth of zeros (all of it, or its part in one page when it
        // straddles two), or zero from some byte on with only zeros after it in the block: a page
        // that never reached the disk, or an append that stopped inside the header.
        let header_zero = rest.get(..HEADER_SIZE).is_some_and(|h| has_zeroed_page(offset, h))
            || rest.get(HEADER_SIZE - 1..).is_some_and(|r| r.iter().all(|&b| b == 0));
        let end = self.pos + HEADER_SIZE + usize::from(u16::from_le_bytes([l0, l1]));
        if end > self.block.len() {
            // Only a cut at the end of the file can be torn; elsewhere the shape is already known.
            let len = usize::from(u16::from_le_bytes([l0, l1]));
            if self.eof && self.length_was_flipped(kind_byte, crc, len) {
                return self.bad(offset, "damaged record length", self.block.len(), DamageShape::Garbled);
            }
            if self.eof {
                // Cut off by the end of the file: the crash interrupted this append.
                self.pos = self.block.len();
                return Physical::End { dropped: avail as u64 };
            }
            let shape = if header_zero { DamageShape::ZeroedPages } else { DamageShape::Garbled };
            return self.bad(offset, "record length overruns its block", self.block.len(), shape);
        }
        let Some(kind) = RecordType::from_u8(kind_byte) else {
            if rest.iter().all(|&b| b == 0) {
                let bytes = rest.len() as u64;
                self.pos = self.block.len();
                return Physical::ZeroFill { offset, bytes };
            }
            // Nothing else in this block can be trusted.
            let shape = if header_zero { DamageShape::ZeroedPages } else { DamageShape::Garbled };
            let reason = if header_zero { "zeroed record header" } else { "bad record type" };
            return self.bad(offset, reason, self.block.len(), shape);
        };
        let start = self.pos + HEADER_SIZE;
        let payload = self.block.get(start..end).unwrap_or_default();
        if record_checksum(kind_byte, payload) != crc {
            let after = self.block.get(end..).unwrap_or_default();
            let zeros_from_here_on = has_zero_suffix(payload) && after.iter().all(|&b| b == 0);
            let record = self.block.get(self.pos..end).unwrap_or_default();
            let torn = (has_zeroed_page(offset, record) || zeros_from_here_on)
                && !self.length_was_flipped(kind_byte, crc, end - start);
            let shape = if torn { DamageShape::ZeroedPages } else { DamageShape::Garbled };
            // The header looks sane, so the next record most likely starts right after this one.
            return self.bad(offset, "checksum mismatch", end, shape);
        }
        self.pos = end;
        Physical::Fragment { kind, offset, start, end }
    }

    /// True when the record at `self.pos` verifies with a length that differs from the stored
    /// `len` in one bit or one whole byte: the length field was damaged, which a torn write
    /// cannot do (the header is written with the record, and a lost page reads as zeros).
    fn length_was_flipped(&self, kind_byte: u8, crc: u32, len: usize) -> bool {
        let flips = (0..16).map(|bit| len ^ (1 << bit)).chain([len ^ 0xFF, len ^ 0xFF00]);
        let start = self.pos + HEADER_SIZE;
        flips.filter(|&candidate| candidate != len).any(|candidate| {
            self.block.get(start..start + candidate).is_some_and(|p| record_checksum(kind_byte, p) == crc)
        })
    }

    fn bad(&mut self, offset: u64, reason: &'static str, resume_at: usize, shape: DamageShape) -> Physical {
        let bytes = resume_at.saturating_sub(self.pos) as u64;
        self.pos = resume_at;
        Physical::Bad { offset, reason, bytes, shape }
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

/// The shortest run of zeros at the end of a record that marks an append cut short inside the
/// record (the rest of the space holds a preallocating writer's zeros). Shorter runs are too
/// likely to be a value's own trailing zeros.
const MIN_ZERO_SUFFIX: usize = 16;

/// True when `payload` ends in at least [`MIN_ZERO_SUFFIX`] zeros (or is all zeros).
fn has_zero_suffix(payload: &[u8]) -> bool {
    let zeros = payload.iter().rev().take_while(|&&b| b == 0).count();
    zeros >= MIN_ZERO_SUFFIX.min(payload.len()) && zeros > 0
}

/// True when the part of `bytes` (a record or its header, at file offset `offset`) that lies in
/// some 4 KiB page is all zeros: what a page that never reached the disk leaves. A flipped byte
/// cannot do that unless a page holds just that one byte of the record.
fn has_zeroed_page(offset: u64, bytes: &[u8]) -> bool {
    let end = offset + bytes.len() as u64;
    let mut page = offset / PAGE_SIZE * PAGE_SIZE;
    while page < end {
        let from = (page.max(offset) - offset) as usize;
        let to = ((page + PAGE_SIZE).min(end) - offset) as usize;
        if bytes.get(from..to).is_some_and(|seg| !seg.is_empty() && seg.iter().all(|&b| b == 0)) {
            return true;
        }
        page += PAGE_SIZE;
    }
    false
}
