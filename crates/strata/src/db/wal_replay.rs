//! Replays the WALs at open under a [`WalRecoveryMode`], deciding for each damaged stretch or
//! broken WAL chain whether it is a torn unsynced tail (dropped, and reported) or corruption
//! (`Error::Corruption` naming the file and offset). The rule, and why it never drops a write
//! an acknowledged sync covered, is in docs/durability.md ("Torn versus corrupt").
//!
//! Evidence that a damaged part was durable comes from the records after it: a version-2 WAL
//! marks each record with what was synced when it was appended (`wal_header::RecordFlags`). In
//! point-in-time mode, torn-shaped damage is dropped only if no later intact record says the
//! damaged part had been synced.
//!
//! This module only reads: it never deletes, moves or writes a file.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::recovery_report::{DroppedTail, RecoveryReport};
use crate::batch::DecodedBatch;
use crate::error::{Error, Result};
use crate::filenames;
use crate::fs::FileSystem;
use crate::options::WalRecoveryMode;
use crate::wal::reader::{Damage, LogEvent};
use crate::wal::LogReader;
use crate::wal_header::{RecordFlags, WalHeader};

/// What the replay did.
#[derive(Debug, Default)]
pub(crate) struct Replayed {
    /// The highest sequence number replayed (0 if none).
    pub max_seq: u64,
    /// Tails dropped, damage skipped and WALs not replayed.
    pub report: RecoveryReport,
    /// WALs holding a stretch that was dropped or skipped (kept as evidence, not deleted).
    pub damaged_wals: Vec<u64>,
}

/// One item of a WAL.
enum Item {
    Header(WalHeader),
    Batch(RecordFlags),
    Damage(Damage),
    End,
}

/// A WAL being read: its reader and the format version its header gave.
struct WalCursor {
    number: u64,
    reader: LogReader,
    version: u32,
}

impl WalCursor {
    fn open(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<Self> {
        let reader = LogReader::new(fs.open_sequential(&filenames::wal(dir, number))?, false);
        Ok(Self { number, reader, version: 0 })
    }

    /// The next item; a batch's bytes are left in `buf` with its flags taken out.
    fn next(&mut self, buf: &mut Vec<u8>) -> Result<Item> {
        Ok(match self.reader.next_event(buf)? {
            LogEvent::End => Item::End,
            LogEvent::Damage(d) => Item::Damage(d),
            LogEvent::Record => match WalHeader::decode(buf) {
                Some(header) => {
                    let header = header.map_err(|e| wal_error(self.number, e))?;
                    self.version = header.version;
                    Item::Header(header)
                }
                None => Item::Batch(RecordFlags::take(self.version, buf)),
            },
        })
    }
}

/// A place where replay cannot simply go on.
struct Break {
    wal: u64,
    offset: u64,
    reason: String,
    /// A power cut could have left it.
    torn: bool,
    /// A chain break (about earlier WALs), not damage inside `wal`.
    chain: bool,
}

enum Decision {
    Continue,
    Stop,
}

/// Replays `wals` (ascending, all at or above `log_number`), handing each batch to `apply`.
pub(crate) fn replay(
    fs: &dyn FileSystem,
    dir: &Path,
    wals: &[u64],
    log_number: u64,
    mode: WalRecoveryMode,
    mut apply: impl FnMut(u64, &DecodedBatch<'_>) -> Result<()>,
) -> Result<Replayed> {
    let present: HashSet<u64> = wals.iter().copied().collect();
    let mut upto: HashMap<u64, u64> = HashMap::new();
    let mut out = Replayed::default();
    let mut buf = Vec::new();
    for (i, &number) in wals.iter().enumerate() {
        let mut wal = WalCursor::open(fs, dir, number)?;
        loop {
            let brk = match wal.next(&mut buf)? {
                Item::End => break,
                Item::Header(h) => {
                    let why = h.chain_break(log_number, |n| present.contains(&n), |n| upto.get(&n).copied());
                    let Some(why) = why else { continue };
                    let torn = !why.predecessor_was_durable;
                    Break { wal: number, offset: 0, reason: why.reason, torn, chain: true }
                }
                Item::Batch(_) => match DecodedBatch::decode(&buf) {
                    Ok(batch) => {
                        apply(number, &batch)?;
                        if batch.count > 0 {
                            let last = batch.first_seq + u64::from(batch.count) - 1;
                            upto.insert(number, last);
                            out.max_seq = out.max_seq.max(last);
                        }
                        continue;
                    }
                    Err(e) => {
                        let offset = wal.reader.last_record_offset();
                        Break {
                            wal: number,
                            offset,
                            reason: format!("undecodable batch: {e}"),
                            torn: false,
                            chain: false,
                        }
                    }
                },
                Item::Damage(d) => {
                    let later = wals.get(i + 1..).unwrap_or_default();
                    let reached = upto.get(&number).copied().unwrap_or(0);
                    if mode != WalRecoveryMode::AbsoluteConsistency {
                        if let Some(why) = failed_append(fs, dir, &mut wal, later, reached)? {
                            let brk = Break {
                                wal: number,
                                offset: d.offset,
                                reason: why,
                                torn: true,
                                chain: false,
                            };
                            tracing::warn!(target: "strata", wal = number, offset = d.offset, reason = %brk.reason,
                                "dropped the partial record of a failed WAL append");
                            out.report.wal_tails.push(tail(fs, dir, &brk, true)?);
                            note_damaged(&mut out.damaged_wals, number);
                            break;
                        }
                    }
                    Break {
                        wal: number,
                        offset: d.offset,
                        reason: d.reason.to_string(),
                        torn: d.looks_torn(),
                        chain: false,
                    }
                }
            };
            let later = wals.get(i + 1..).unwrap_or_default();
            match decide(fs, dir, mode, &brk, &mut wal, later)? {
                Decision::Continue => {
                    out.report.wal_skipped.push(tail(fs, dir, &brk, false)?);
                    note_damaged(&mut out.damaged_wals, number);
                }
                Decision::Stop => {
                    let dropped = tail(fs, dir, &brk, true)?;
                    tracing::warn!(target: "strata", wal = number, offset = brk.offset, bytes = dropped.bytes,
                        not_replayed = later.len(), reason = %brk.reason, "dropped a torn WAL tail and every later WAL");
                    out.report.wal_tails.push(dropped);
                    out.report.wals_not_replayed = later.to_vec();
                    note_damaged(&mut out.damaged_wals, number);
                    out.damaged_wals.extend_from_slice(later);
                    return Ok(out);
                }
            }
        }
    }
    Ok(out)
}

fn note_damaged(list: &mut Vec<u64>, wal: u64) {
    if list.last() != Some(&wal) {
        list.push(wal);
    }
}

/// The report entry for a break: to the end of the file when dropped.
fn tail(fs: &dyn FileSystem, dir: &Path, brk: &Break, to_end: bool) -> Result<DroppedTail> {
    let size = fs.file_size(&filenames::wal(dir, brk.wal))?;
    let bytes = if to_end { size.saturating_sub(brk.offset) } else { 0 };
    Ok(DroppedTail {
        file: format!("{:06}.log", brk.wal),
        offset: brk.offset,
        bytes,
        reason: brk.reason.clone(),
    })
}

/// Applies the recovery mode to a break. `wal` is positioned just after it.
fn decide(
    fs: &dyn FileSystem,
    dir: &Path,
    mode: WalRecoveryMode,
    brk: &Break,
    wal: &mut WalCursor,
    later: &[u64],
) -> Result<Decision> {
    let corruption = |extra: &str| {
        Error::corruption(format!("WAL {:06}.log at offset {}: {}{extra}", brk.wal, brk.offset, brk.reason))
    };
    match mode {
        WalRecoveryMode::SkipAnyCorruptedRecords => Ok(Decision::Continue),
        WalRecoveryMode::AbsoluteConsistency => {
            Err(corruption(" (absolute-consistency recovery accepts no damage)"))
        }
        _ if !brk.torn => {
            Err(corruption(" (a complete record that fails its check is damage, not a torn write)"))
        }
        WalRecoveryMode::TolerateCorruptedTailRecords => {
            match first_intact_after(fs, dir, wal, later, |_, _| true)? {
                None => Ok(Decision::Stop),
                Some(at) => Err(corruption(&format!(" (an intact record follows it: {at})"))),
            }
        }
        WalRecoveryMode::PointInTime => {
            let chain = brk.chain;
            let vouches = |same_wal: bool, f: RecordFlags| {
                if same_wal && !chain {
                    f.prefix_durable()
                } else {
                    f.earlier_wals_durable()
                }
            };
            match first_intact_after(fs, dir, wal, later, vouches)? {
                None => Ok(Decision::Stop),
                Some(at) => Err(corruption(&format!(
                    " (the record at {at} was appended after the damaged part had been synced, so it held acknowledged writes)"
                ))),
            }
        }
    }
}

/// When the damage `wal` is positioned after is the partial record of an append that failed:
/// nothing intact follows it in `wal`, and the next WAL's header (written by the engine when the
/// append failed) says `wal`'s acknowledged records end at a sequence number replay already
/// `reached`. Returns the reason to report; `Corruption` if the header matches but an intact
/// record follows the damage. Consumes the rest of `wal` only when the header matches.
fn failed_append(
    fs: &dyn FileSystem,
    dir: &Path,
    wal: &mut WalCursor,
    later: &[u64],
    reached: u64,
) -> Result<Option<String>> {
    let Some(&next) = later.first() else { return Ok(None) };
    let mut buf = Vec::new();
    let sealed = match WalCursor::open(fs, dir, next)?.next(&mut buf) {
        Ok(Item::Header(h)) => h.prev_wal == wal.number && h.prev_last_seq <= reached,
        _ => false,
    };
    if !sealed {
        return Ok(None);
    }
    if let Some(at) = first_intact_after(fs, dir, wal, &[], |_, _| true)? {
        // The successor says this WAL ended before the damage, yet a record follows it.
        return Err(Error::corruption(format!(
            "WAL {:06}.log: damage followed by {at}, after the end WAL {next:06}.log records for it",
            wal.number
        )));
    }
    Ok(Some(format!(
        "the partial record of an append that failed (WAL {next:06}.log says this WAL's acknowledged records end at sequence {reached} or before)"
    )))
}

/// Reads on from `wal`'s position and through the `later` WALs for an intact write batch for
/// which `wanted(in_same_wal, flags)` holds, or a later WAL's header that proves `wal` was
/// durable; returns where it is ("WAL n offset o").
fn first_intact_after(
    fs: &dyn FileSystem,
    dir: &Path,
    wal: &mut WalCursor,
    later: &[u64],
    wanted: impl Fn(bool, RecordFlags) -> bool,
) -> Result<Option<String>> {
    let mut buf = Vec::new();
    let damaged = wal.number;
    let mut scan = |cursor: &mut WalCursor, same: bool| -> Result<Option<String>> {
        loop {
            match cursor.next(&mut buf) {
                Ok(Item::End) => return Ok(None),
                Ok(Item::Header(h)) if !same && h.proves_durable(damaged) => {
                    return Ok(Some(format!("the header of WAL {:06}.log", cursor.number)));
                }
                Ok(Item::Batch(flags)) if wanted(same, flags) => {
                    let at =
                        format!("WAL {:06}.log offset {}", cursor.number, cursor.reader.last_record_offset());
                    return Ok(Some(at));
                }
                Ok(_) => {}
                // A damaged header after the break is more damage, not evidence either way.
                Err(Error::Corruption(_)) => {}
                Err(e) => return Err(e),
            }
        }
    };
    if let Some(at) = scan(wal, true)? {
        return Ok(Some(at));
    }
    for &number in later {
        if let Some(at) = scan(&mut WalCursor::open(fs, dir, number)?, false)? {
            return Ok(Some(at));
        }
    }
    Ok(None)
}

pub(crate) fn wal_error(number: u64, e: Error) -> Error {
    match e {
        Error::Corruption(m) => Error::Corruption(format!("WAL {number:06}.log: {m}")),
        other => other,
    }
}
