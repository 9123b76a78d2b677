//! Repair's WAL salvage: every WAL record that still decodes goes into memtables that the
//! engine's flush job writes to new L0 tables. A damaged stretch is skipped and a batch that does
//! not decode whole is dropped whole; the WALs themselves are left for `mod.rs` to move to
//! `lost/` once the new MANIFEST is current. It must not decide where tables go: that is
//! `placement.rs`.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{families_unsupported, scan_table, Repair};
use crate::batch::DecodedBatch;
use crate::compaction::job::{self, OutputSpec};
use crate::db::DbInner;
use crate::error::{Error, Result};
use crate::filenames;
use crate::memtable::MemTable;
use crate::version::edit::DEFAULT_FAMILY;
use crate::wal::LogReader;
use crate::wal_header::{RecordFlags, WalHeader, WAL_FORMAT_VERSION};

// WALs: every record that still reads becomes part of a new L0 table.
impl Repair {
    /// Replays every WAL (oldest first, skipping damage) into memtables flushed to tables. The
    /// WALs stay until the new MANIFEST is current: until then the old one (which does not list
    /// the new tables) may still be the one an open reads.
    pub(super) fn salvage_wals(&mut self, db: &DbInner, wals: &BTreeSet<u64>) -> Result<()> {
        let mut mem = Arc::new(MemTable::new());
        for &number in wals {
            let reason = match self.salvage_wal(db, number, &mut mem)? {
                None => "salvaged: its records are in the repaired tables".to_string(),
                // Opening failed, or reading hit an IO error: what was read before it is kept.
                Some(e) => {
                    self.report.wal_files_cut_short.push(number);
                    format!("read stopped at an error (records before it are kept): {e}")
                }
            };
            self.report.wal_files.push(number);
            self.wals_read.push((number, reason));
        }
        if !mem.is_empty() {
            self.flush(db, &mem)?;
        }
        Ok(())
    }

    /// Replays one WAL into `mem`. Returns the error that stopped the reading early, if one did;
    /// `Err` is for failures to write what was read.
    fn salvage_wal(&mut self, db: &DbInner, number: u64, mem: &mut Arc<MemTable>) -> Result<Option<Error>> {
        let file = match self.fs.open_sequential(&filenames::wal(&self.dir, number)) {
            Ok(file) => file,
            Err(e) => return Ok(Some(e)),
        };
        let mut reader = LogReader::new(file, true);
        let mut record = Vec::new();
        let stopped = loop {
            match reader.read_record_into(&mut record) {
                Ok(true) => {}
                Ok(false) => break None,
                Err(e) => break Some(e),
            }
            if WalHeader::decode(&record).is_some() {
                continue; // the chain check is for open; repair keeps every record it can read
            }
            // Clearing the flags byte is right for every version (it is a sequence number's
            // always-zero top byte before version 2), and needs no header that may be damaged.
            RecordFlags::take(WAL_FORMAT_VERSION, &mut record);
            self.salvage_batch(db, &record, mem)?;
        };
        self.report.wal_bytes_skipped += reader.skipped_bytes() + reader.tail_dropped_bytes();
        if reader.skipped_bytes() > 0 {
            tracing::warn!(target: "strata", wal = number, bytes = reader.skipped_bytes(), "repair: skipped damaged WAL bytes");
        }
        Ok(stopped)
    }

    /// Adds one WAL record's batch to `mem`, or drops it whole if any of it does not decode.
    fn salvage_batch(&mut self, db: &DbInner, record: &[u8], mem: &mut Arc<MemTable>) -> Result<()> {
        let decoded = DecodedBatch::decode(record)
            .and_then(|b| b.records().collect::<Result<Vec<_>>>().map(|recs| (b.first_seq, recs)));
        let Ok((first_seq, records)) = decoded else {
            self.report.wal_records_dropped += 1;
            self.report.wal_bytes_skipped += record.len() as u64;
            return Ok(());
        };
        if records.is_empty() {
            return Ok(());
        }
        // The same sequence number twice in one memtable (a WAL copied, or a replayed one kept)
        // would be two entries with one internal key: flush first, and let the overlap
        // resolution see two tables.
        if !mem.is_empty() && first_seq <= mem.largest_seq() {
            self.flush(db, mem)?;
            *mem = Arc::new(MemTable::new());
        }
        if records.iter().any(|r| r.0 != DEFAULT_FAMILY) {
            return Err(families_unsupported());
        }
        for (seq, (_, kind, k, v)) in (first_seq..).zip(records) {
            mem.add(seq, kind, k, v);
        }
        self.report.wal_records_salvaged += 1;
        if mem.approximate_memory_usage() >= db.opts.write_buffer_size {
            self.flush(db, mem)?;
            *mem = Arc::new(MemTable::new());
        }
        Ok(())
    }

    /// Writes `mem` to L0 tables (and blob files) with the engine's flush job.
    fn flush(&mut self, db: &DbInner, mem: &Arc<MemTable>) -> Result<()> {
        let spec = OutputSpec {
            level: 0,
            max_file_size: u64::MAX,
            bottommost: false,
            snapshots: Vec::new(),
            relocate_blob_files: Default::default(),
            scan_runs: 0,
            range_dels: mem.range_tombstones(),
        };
        let new_file_number = || db.versions.lock().new_file_number();
        let out = job::run(&db.job_env(&db.default, &new_file_number), &mut mem.iter(), &spec)?;
        for meta in out.blob_files {
            self.blob_files.insert(meta.number, meta);
        }
        for t in out.tables {
            let info = scan_table(self.fs.as_ref(), &self.dir, t.number)?;
            self.note_table(&info);
            self.report.tables_from_wals.push(t.number);
            self.tables.push(info);
        }
        Ok(())
    }
}
