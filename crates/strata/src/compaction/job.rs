//! Executes a flush or compaction: reads one sorted stream of internal entries, drops what the
//! inputs' range tombstones hide and keeps what `retention` says survives of the rest (both in
//! `range_dels`), writes the tombstones still needed into the output tables, separates large
//! values into a new blob file, relocates values out of blob files chosen for garbage collection
//! and (writing the last level) values `scan_locality` finds scattered, and writes output tables
//! cut at user-key boundaries. It returns what it wrote; installing it in a version is the
//! caller's job. On any error the files it created are removed.
//!
//! A job sees the database only through a [`JobEnv`]: the filesystem, the directory, the
//! family's options, a file-number allocator, a blob reader and a cancel flag. It must not
//! reach for more, so that it can run (and be tested) without a database.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::blob::{BlobPointer, BlobWalk, BlobWalks, BlobWriter};
use crate::compaction::range_dels::JobRangeDels;
use crate::compaction::retention::{self, Entry, Rules};
use crate::compaction::scan_locality::ScanLocality;
use crate::error::{Error, Result};
use crate::filenames;
use crate::fs::FileSystem;
use crate::iter::InternalIterator;
use crate::key::{self, SeqNo, ValueKind};
use crate::options::Options;
use crate::range_del::RangeTombstone;
use crate::sst::{TableBuilder, TableBuilderOptions};
use crate::util::kill_point::kill_point;
use crate::version::edit::{BlobFileMeta, FileMeta};

mod filtering;

/// A blob file is rolled once it holds this many bytes.
const MAX_BLOB_FILE_BYTES: u64 = 256 << 20;

/// Reads the live value a blob pointer refers to.
pub(crate) trait BlobSource {
    /// The value `encoded` (a `BlobPointer`) points at; `walk` notes reads made in file order.
    fn read_blob(&self, user_key: &[u8], encoded: &[u8], walk: Option<&mut BlobWalk>) -> Result<Vec<u8>>;
}

/// Everything a job may use.
pub(crate) struct JobEnv<'a> {
    pub fs: &'a dyn FileSystem,
    pub dir: &'a Path,
    /// The options of the column family the job writes for.
    pub opts: &'a Options,
    /// Hands out a new file number for each output file.
    pub new_file_number: &'a dyn Fn() -> u64,
    pub blobs: &'a dyn BlobSource,
    /// Set when the database is closing: the job stops early with `Error::Closed`.
    pub cancel: &'a AtomicBool,
    /// The filter values pass through (`filtering`): compactions set it, flushes and the other
    /// writers of tables (recovery, repair, ingestion) do not.
    pub compaction_filter: Option<&'a dyn crate::compaction_filter::CompactionFilter>,
}

/// What to write.
pub(crate) struct OutputSpec {
    /// The level the tables are written for (selects compression).
    pub level: usize,
    /// Tables are cut at the first user-key boundary past this size.
    pub max_file_size: u64,
    /// Nothing older exists below the output level.
    pub bottommost: bool,
    /// Live snapshots, ascending.
    pub snapshots: Vec<SeqNo>,
    /// Blob files whose live values are rewritten into the new blob file.
    pub relocate_blob_files: HashSet<u64>,
    /// With n > 0, values in other blob files are moved into the new one wherever a window of
    /// neighbouring values would otherwise lie in more than n runs (`scan_locality`); 0 never.
    pub scan_runs: usize,
    /// The range tombstones of the inputs (a memtable's, or every input table's).
    pub range_dels: Vec<RangeTombstone>,
}

/// What was written.
#[derive(Default)]
pub(crate) struct Outputs {
    pub tables: Vec<FileMeta>,
    pub blob_files: Vec<BlobFileMeta>,
    /// Per blob file: (records, bytes) no longer referenced.
    pub garbage: BTreeMap<u64, (u64, u64)>,
    pub bytes_written: u64,
    pub entries_in: u64,
    pub entries_out: u64,
    /// Values moved for scan locality: (count, bytes of their records before the move).
    pub moved_for_scans: (u64, u64),
}

struct Job<'a> {
    db: &'a JobEnv<'a>,
    spec: &'a OutputSpec,
    table: Option<(u64, TableBuilder)>,
    blob: Option<BlobWriter>,
    created: Vec<PathBuf>,
    out: Outputs,
    key_buf: Vec<u8>,
    /// Live values moved out of mostly-dead blob files are read in each file's order:
    /// read-ahead hints per file.
    relocation_walks: BlobWalks,
    ptr_buf: Vec<u8>,
    /// `None` when the inputs hold no range tombstone.
    range_dels: Option<JobRangeDels>,
    /// `None` unless `spec.scan_runs` asks for it.
    locality: Option<ScanLocality>,
}

/// Runs the job over `input` (which is positioned by this function).
pub(crate) fn run(db: &JobEnv<'_>, input: &mut dyn InternalIterator, spec: &OutputSpec) -> Result<Outputs> {
    let mut job = Job {
        db,
        spec,
        table: None,
        blob: None,
        created: Vec::new(),
        out: Outputs::default(),
        key_buf: Vec::new(),
        relocation_walks: BlobWalks::default(),
        ptr_buf: Vec::new(),
        range_dels: JobRangeDels::new(spec.range_dels.clone(), &spec.snapshots, spec.bottommost),
        locality: (spec.scan_runs > 0).then(|| ScanLocality::new(spec.scan_runs)),
    };
    // A panic (an application's merge operator) is caught here, so its partial outputs are
    // removed like those of a failed write.
    let written = crate::util::panics::catch_panic(|| job.consume(input).and_then(|()| job.finish_all()))
        .unwrap_or_else(|message| {
            Err(Error::Background {
                context: format!("panicked while writing output files: {message}"),
                cause: None,
            })
        });
    match written {
        Ok(()) => Ok(job.out),
        Err(e) => {
            for path in &job.created {
                let _ = db.fs.remove_file(path);
            }
            Err(e)
        }
    }
}

impl Job<'_> {
    /// Walks the input one user key at a time. Without snapshots the newest version of a key
    /// decides alone unless it is a merge operand, so it is written straight from the input
    /// (no copy) and older versions are dropped as they pass; otherwise (snapshots, merges) the
    /// key's versions are collected and `retention` decides.
    fn consume(&mut self, input: &mut dyn InternalIterator) -> Result<()> {
        input.seek_to_first();
        let fast = self.spec.snapshots.is_empty();
        let mut user_key: Vec<u8> = Vec::new();
        let mut versions: Vec<Entry> = Vec::new();
        let mut decided = false; // the current key's newest version was handled on the fast path
        let mut started = false;
        while input.valid() {
            let parsed = key::parse(input.key())
                .filter(|p| p.kind != ValueKind::RangeDelete)
                .ok_or_else(|| Error::corruption("undecodable key in compaction input"))?;
            self.out.entries_in += 1;
            if self.range_dels.as_ref().is_some_and(|r| r.drops(parsed.user_key, parsed.seq)) {
                // Hidden from every reader: gone like a shadowed version, and so is its blob value.
                if parsed.kind == ValueKind::Blob {
                    self.add_garbage(input.value())?;
                }
                input.next();
                continue;
            }
            let same_key = started && key::same_user_key(parsed.user_key, &user_key);
            if !same_key {
                if !versions.is_empty() {
                    self.process(&user_key, std::mem::take(&mut versions))?;
                }
                if self.db.cancel.load(Ordering::Relaxed) {
                    return Err(Error::Closed);
                }
                user_key.clear();
                user_key.extend_from_slice(parsed.user_key);
                started = true;
                decided = fast && parsed.kind != ValueKind::Merge;
                if decided {
                    self.decide_newest(&user_key, parsed.seq, parsed.kind, input.value())?;
                    input.next();
                    continue;
                }
            } else if decided {
                if parsed.kind == ValueKind::Blob {
                    self.add_garbage(input.value())?;
                }
                input.next();
                continue;
            }
            versions.push(Entry { seq: parsed.seq, kind: parsed.kind, value: input.value().to_vec() });
            input.next();
        }
        input.status()?;
        if !versions.is_empty() {
            self.process(&user_key, versions)?;
        }
        Ok(())
    }

    /// The fast path: with no snapshots, the newest version of a key (not a merge operand) is the
    /// only one that survives; a tombstone with nothing below it survives neither.
    fn decide_newest(&mut self, user_key: &[u8], seq: u64, kind: ValueKind, value: &[u8]) -> Result<()> {
        self.cut_table_if_full()?;
        let filtered = self.filter_newest(user_key, seq, kind, value)?;
        let (kind, value) = filtered.as_ref().map_or((kind, value), |e| (e.kind, e.value.as_slice()));
        if kind == ValueKind::Delete && self.spec.bottommost {
            return Ok(());
        }
        self.emit(user_key, seq, kind, value)
    }

    fn cut_table_if_full(&mut self) -> Result<()> {
        if self.table.as_ref().is_some_and(|(_, b)| b.estimated_file_size() >= self.spec.max_file_size) {
            self.finish_table(false)?;
        }
        Ok(())
    }

    fn process(&mut self, user_key: &[u8], mut versions: Vec<Entry>) -> Result<()> {
        if let Some(newest) = versions.first_mut() {
            if let Some(e) = self.filter_newest(user_key, newest.seq, newest.kind, &newest.value)? {
                *newest = e;
            }
        }
        let db = self.db;
        let rules = Rules {
            snapshots: &self.spec.snapshots,
            bottommost: self.spec.bottommost,
            merge_operator: db.opts.merge_operator.as_deref(),
        };
        let outcome = retention::retain(user_key, versions, &rules, &mut |ptr| {
            db.blobs.read_blob(user_key, ptr, None)
        })?;
        for ptr in &outcome.dropped_blobs {
            self.add_garbage(ptr)?;
        }
        self.cut_table_if_full()?;
        for entry in outcome.kept {
            self.emit(user_key, entry.seq, entry.kind, &entry.value)?;
        }
        Ok(())
    }

    fn add_garbage(&mut self, encoded: &[u8]) -> Result<()> {
        let ptr = BlobPointer::decode(encoded)?;
        let g = self.out.garbage.entry(ptr.file_number).or_insert((0, 0));
        g.0 += 1;
        g.1 += ptr.size;
        Ok(())
    }

    fn emit(&mut self, user_key: &[u8], seq: u64, kind: ValueKind, value: &[u8]) -> Result<()> {
        let seq = if self.needs_no_sequence(seq, kind) { 0 } else { seq };
        let min_blob = self.db.opts.min_blob_size;
        // The pointer to a value written to a blob file; taken from `self` while `self` writes.
        let mut ptr = std::mem::take(&mut self.ptr_buf);
        let (kind, value) = match kind {
            ValueKind::Put if min_blob > 0 && value.len() >= min_blob => {
                self.write_blob(user_key, value, &mut ptr)?;
                if let Some(l) = self.locality.as_mut() {
                    l.note_moved();
                }
                (ValueKind::Blob, ptr.as_slice())
            }
            ValueKind::Blob if self.should_relocate(value)? => {
                self.relocate(user_key, value, &mut ptr)?;
                (ValueKind::Blob, ptr.as_slice())
            }
            _ => (kind, value),
        };
        self.key_buf.clear();
        key::append_internal_key(&mut self.key_buf, user_key, seq, kind as u8);
        let key_buf = std::mem::take(&mut self.key_buf);
        let added = self.table_builder().and_then(|b| b.add(&key_buf, value));
        self.key_buf = key_buf;
        self.ptr_buf = ptr;
        added?;
        self.out.entries_out += 1;
        Ok(())
    }

    /// Whether a version written at `seq` can be written with sequence number 0 (RocksDB's
    /// bottommost zeroing): at a level above L0 with nothing older below it, a value every
    /// snapshot sees is never ordered against another version again. Every newer version and
    /// every kept range tombstone covering it has a higher number, and a transaction's check
    /// reads it as older than its snapshot, which it is. Runs of zeros compress, and so the
    /// last level shrinks. L0 keeps its numbers (its files are ordered by them), and so do
    /// merge operands and tombstones.
    fn needs_no_sequence(&self, seq: u64, kind: ValueKind) -> bool {
        self.spec.bottommost
            && self.spec.level > 0
            && matches!(kind, ValueKind::Put | ValueKind::Blob)
            && self.spec.snapshots.first().is_none_or(|&oldest| seq <= oldest)
    }

    /// Whether the separated value `encoded` points at moves into this job's blob file: its file
    /// is being garbage collected, or it lies scattered from its neighbours (`scan_locality`).
    fn should_relocate(&mut self, encoded: &[u8]) -> Result<bool> {
        if self.spec.relocate_blob_files.is_empty() && self.locality.is_none() {
            return Ok(false);
        }
        let ptr = BlobPointer::decode(encoded)?;
        if self.spec.relocate_blob_files.contains(&ptr.file_number) {
            if let Some(l) = self.locality.as_mut() {
                l.note_moved();
            }
            return Ok(true);
        }
        let Some(l) = self.locality.as_mut() else { return Ok(false) };
        if l.keeps(&ptr) {
            return Ok(false);
        }
        self.out.moved_for_scans.0 += 1;
        self.out.moved_for_scans.1 += ptr.size;
        Ok(true)
    }

    /// Reads the live value `encoded` points at (each file's records in file order) and writes
    /// it to this job's blob file; its old record becomes garbage.
    fn relocate(&mut self, user_key: &[u8], encoded: &[u8], ptr: &mut Vec<u8>) -> Result<()> {
        let walk = self.relocation_walks.of(BlobPointer::decode(encoded)?.file_number);
        let live = self.db.blobs.read_blob(user_key, encoded, Some(walk))?;
        self.add_garbage(encoded)?;
        self.write_blob(user_key, &live, ptr)?;
        kill_point("blob.relocate");
        Ok(())
    }

    /// Appends `value` to the output blob file and sets `ptr` to its encoded pointer.
    fn write_blob(&mut self, user_key: &[u8], value: &[u8], ptr: &mut Vec<u8>) -> Result<()> {
        if self.blob.as_ref().is_some_and(|b| b.file_size() >= MAX_BLOB_FILE_BYTES) {
            self.finish_blob()?;
        }
        if self.blob.is_none() {
            let number = (self.db.new_file_number)();
            let path = filenames::blob(self.db.dir, number);
            self.created.push(path.clone());
            let file = self.db.fs.create(&path)?;
            self.blob = Some(BlobWriter::new(file, number, self.db.opts.blob_compression)?);
        }
        let writer = self.blob.as_mut().ok_or(Error::Closed)?;
        let pointer = writer.add(user_key, value)?;
        ptr.clear();
        pointer.encode(ptr);
        Ok(())
    }

    fn table_builder(&mut self) -> Result<&mut TableBuilder> {
        if self.table.is_none() {
            let number = (self.db.new_file_number)();
            let path = filenames::table(self.db.dir, number);
            self.created.push(path.clone());
            let file = self.db.fs.create(&path)?;
            let o = &self.db.opts;
            let opts = TableBuilderOptions {
                block_size: o.block_size,
                restart_interval: o.block_restart_interval,
                bloom_bits_per_key: o.bloom_bits_for_level(self.spec.level),
                compression: o.compression_for_level(self.spec.level),
                prefix_extractor: o.prefix_extractor,
            };
            self.table = Some((number, TableBuilder::new(file, opts)));
        }
        self.table.as_mut().map(|(_, b)| b).ok_or(Error::Closed)
    }

    /// Finishes the open output table; `last` says whether it is the job's last one (which
    /// takes every range tombstone left, and is opened for them if none is open).
    fn finish_table(&mut self, last: bool) -> Result<()> {
        if last && self.table.is_none() && self.range_dels.as_ref().is_some_and(JobRangeDels::pending) {
            self.table_builder()?;
        }
        if let (Some(r), Some((_, builder))) = (self.range_dels.as_mut(), self.table.as_mut()) {
            let upto = (!last).then(|| key::user_key(builder.last_key()).to_vec());
            builder.add_range_dels(r.take_for_table(upto.as_deref()));
        }
        let Some((number, builder)) = self.table.take() else { return Ok(()) };
        let s = builder.finish()?;
        self.out.bytes_written += s.file_size;
        self.out.tables.push(FileMeta {
            number,
            file_size: s.file_size,
            smallest: s.smallest,
            largest: s.largest,
            smallest_seq: s.smallest_seq,
            largest_seq: s.largest_seq,
            num_entries: s.num_entries,
            num_deletions: s.num_deletions,
            num_range_deletions: s.num_range_deletions,
        });
        Ok(())
    }

    fn finish_blob(&mut self) -> Result<()> {
        let Some(writer) = self.blob.take() else { return Ok(()) };
        let meta = writer.finish()?;
        self.out.bytes_written += meta.file_size;
        self.out.blob_files.push(meta);
        Ok(())
    }

    fn finish_all(&mut self) -> Result<()> {
        self.finish_table(true)?;
        self.finish_blob()
    }
}
