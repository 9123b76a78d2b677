//! `wal-dump FILE`: every record of one write-ahead log: the header record that opens it (format
//! version and the earlier WAL recovery checks), then each write batch: its offset, first
//! sequence number, operation count, and each operation's kind, key and value. Also owns
//! the shared walk over a log-format file that `manifest-dump` reuses.
//!
//! Owns: presenting log records. Must not: open the database, skip damaged records silently, or
//! write anything: the file is read once, sequentially, with the engine's `LogReader`.

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde_json::Value;
use strata::batch::{decode_payload, OwnedRecord};
use strata::internal::key::ValueKind;
use strata::internal::wal::LogReader;
use strata::internal::wal_header::{RecordFlags, WalHeader};

use super::format::{entry_json, object, Out, OutputArgs, ARROW};
use super::EXIT_OK;

/// Calls `f(offset, payload)` for every logical record of the log file at `path`, in order, and
/// returns how many there were. Stops at the first damaged record with an error naming the file
/// and offset. A torn tail (an incomplete last record, normal after a crash) is reported on
/// stderr, not as an error. A file with bytes but no complete record at all is an error: it is
/// not a log file (or one torn during its very first write, which holds no data either way). A
/// file with no bytes, or only the zeros a preallocating writer puts ahead of its records, has
/// no record and no error: it is a log created and not yet written, as a crash can leave it.
pub fn for_each_record(path: &Path, mut f: impl FnMut(u64, &[u8]) -> Result<()>) -> Result<u64> {
    let file = strata::fs::default_fs()
        .open_sequential(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let mut reader = LogReader::new(file, false);
    let mut record = Vec::new();
    let mut records = 0u64;
    loop {
        let more = reader.read_record_into(&mut record).map_err(|e| {
            // A failed read (a directory, an I/O error) is not damage in the file.
            let what = match e {
                strata::Error::Io { .. } => "cannot read".to_string(),
                _ => format!("damaged record after offset {}", reader.last_record_offset()),
            };
            anyhow::Error::new(e).context(format!("{}: {what}", path.display()))
        })?;
        if !more {
            break;
        }
        records += 1;
        f(reader.last_record_offset(), &record)?;
    }
    let dropped = reader.tail_dropped_bytes();
    if records == 0 && dropped > 0 {
        bail!(
            "{}: not a log file: no complete record in its {dropped} bytes \
             (a log torn during its very first write looks the same, and holds no data)",
            path.display()
        );
    }
    if dropped > 0 {
        eprintln!(
            "note: {}: {dropped} bytes ignored: an incomplete last record (a torn tail)",
            path.display()
        );
    }
    Ok(records)
}

/// Runs `wal-dump`.
pub fn wal_dump(args: OutputArgs, path: &Path) -> Result<u8> {
    let mut out = Out::new(args);
    let mut version = 0;
    let result = for_each_record(path, |offset, payload| {
        if let Some(header) = WalHeader::decode(payload) {
            let header =
                header.with_context(|| format!("{}: bad WAL header at offset {offset}", path.display()))?;
            version = header.version;
            return print_header(&mut out, offset, &header);
        }
        // Version-2 WALs keep durability flags in the batch's first byte of sequence.
        let mut batch = payload.to_vec();
        RecordFlags::take(version, &mut batch);
        let (seq, ops) = decode_payload(&batch)
            .with_context(|| format!("{}: record at offset {offset} is not a write batch", path.display()))?;
        print_record(&mut out, offset, seq, &ops)
    });
    // Records decoded before a damaged one are still worth seeing, so flush before failing.
    out.flush()?;
    if result? == 0 {
        eprintln!("note: {}: no records: an empty log (created, then nothing written)", path.display());
    }
    Ok(EXIT_OK)
}

/// The header line: the format version, the WAL this one replaced, and the earlier WAL that
/// must be complete for this one to be replayed.
fn print_header(out: &mut Out, offset: u64, h: &WalHeader) -> Result<()> {
    if out.json {
        return out.json(object([
            ("offset", offset.into()),
            ("header_version", h.version.into()),
            ("prev_wal", h.prev_wal.into()),
            ("prev_last_sequence", h.prev_last_seq.into()),
            ("unsynced_wal", h.unsynced_wal.into()),
            ("unsynced_last_sequence", h.unsynced_last_seq.into()),
        ]));
    }
    let prev = if h.prev_wal == 0 {
        "no predecessor to check".to_string()
    } else {
        format!("follows WAL {:06} (last sequence {})", h.prev_wal, h.prev_last_seq)
    };
    let needs = if h.unsynced_wal == 0 {
        String::new()
    } else {
        format!(", replayed only if WAL {:06} reaches sequence {}", h.unsynced_wal, h.unsynced_last_seq)
    };
    out.line(&format!("offset {offset}: WAL header, version {}, {prev}{needs}", h.version))
}

fn kind_label(kind: ValueKind) -> &'static str {
    match kind {
        ValueKind::Delete => "DELETE",
        ValueKind::Put => "PUT",
        ValueKind::Merge => "MERGE",
        ValueKind::Blob => "BLOB",
        ValueKind::RangeDelete => "DELETE_RANGE",
    }
}

/// One batch: a header line, then one line per operation with the sequence it was given
/// (the batch's first sequence plus its index).
fn print_record(out: &mut Out, offset: u64, seq: u64, ops: &[OwnedRecord]) -> Result<()> {
    if out.json {
        let list = ops.iter().zip(seq..).map(|((family, kind, k, v), s)| {
            let mut entry = entry_json(out.hex, k, s, Some(*kind), v);
            if *family != 0 {
                entry.insert("column_family".into(), (*family).into());
            }
            Value::Object(entry)
        });
        let list: Vec<Value> = list.collect();
        return out.json(object([
            ("offset", offset.into()),
            ("sequence", seq.into()),
            ("count", ops.len().into()),
            ("ops", Value::Array(list)),
        ]));
    }
    out.line(&format!("offset {offset}: sequence {seq}, count {}", ops.len()))?;
    for ((family, kind, k, v), s) in ops.iter().zip(seq..) {
        let value =
            if *kind == ValueKind::Delete { String::new() } else { format!("{ARROW}{}", out.show(v)) };
        let cf = if *family == 0 { String::new() } else { format!(" cf:{family}") };
        out.line(&format!("  {} seq:{s}{cf} {}{value}", kind_label(*kind), out.show(k)))?;
    }
    Ok(())
}
