//! Statistics counters and named properties (`strata.stats`, `strata.levelstats`, ...). Counters
//! are relaxed atomics bumped once per operation or job; nothing here takes a lock on a hot path.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::DbInner;
use crate::compaction::picker;
use crate::options::NUM_LEVELS;

/// Counters of work done since the database was opened.
#[derive(Debug, Default)]
pub struct Stats {
    /// Keys written by users (each batch entry counts).
    pub keys_written: AtomicU64,
    /// Bytes of user write batches.
    pub user_bytes: AtomicU64,
    /// Bytes appended to WAL files.
    pub wal_bytes: AtomicU64,
    /// WAL fdatasync calls.
    pub wal_syncs: AtomicU64,
    /// Point lookups served.
    pub gets: AtomicU64,
    /// Values read from blob files.
    pub blob_reads: AtomicU64,
    /// Memtable flushes.
    pub flushes: AtomicU64,
    /// Bytes written by flushes (tables and blob files).
    pub flush_bytes: AtomicU64,
    /// Compactions run, including trivial moves.
    pub compactions: AtomicU64,
    /// Compactions that only moved files.
    pub trivial_moves: AtomicU64,
    /// Bytes read by compactions.
    pub compaction_bytes_read: AtomicU64,
    /// Bytes written by compactions.
    pub compaction_bytes_written: AtomicU64,
    /// Microseconds writers spent slowed down.
    pub slowdown_micros: AtomicU64,
    /// Microseconds writers spent stopped.
    pub stop_micros: AtomicU64,
}

impl Stats {
    pub(crate) fn add_user_write(&self, keys: u64, bytes: u64) {
        self.keys_written.fetch_add(keys, Ordering::Relaxed);
        self.user_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(crate) fn add_stall(&self, d: Duration, stopped: bool) {
        let counter = if stopped { &self.stop_micros } else { &self.slowdown_micros };
        counter.fetch_add(d.as_micros() as u64, Ordering::Relaxed);
    }

    /// Bytes written to disk by the engine: WAL, flush and compaction output.
    pub fn disk_bytes_written(&self) -> u64 {
        self.wal_bytes.load(Ordering::Relaxed)
            + self.flush_bytes.load(Ordering::Relaxed)
            + self.compaction_bytes_written.load(Ordering::Relaxed)
    }
}

const MIB: f64 = 1024.0 * 1024.0;

impl DbInner {
    pub(crate) fn property(&self, name: &str) -> Option<String> {
        let name = name.strip_prefix("strata.").or_else(|| name.strip_prefix("rocksdb."))?;
        let v = self.super_version.load().version.clone();
        if let Some(level) = name.strip_prefix("num-files-at-level") {
            let level: usize = level.parse().ok().filter(|&l| l < NUM_LEVELS)?;
            return Some(v.level_files(level).to_string());
        }
        match name {
            "stats" => Some(self.stats_text()),
            "levelstats" => Some(self.level_stats_text()),
            "estimate-pending-compaction-bytes" => {
                Some(picker::pending_compaction_bytes(&v, &self.opts).to_string())
            }
            "block-cache-usage" => Some(self.table_cache.block_cache().map_or(0, |c| c.usage()).to_string()),
            "total-sst-files-size" => {
                Some((0..NUM_LEVELS).map(|l| v.level_bytes(l)).sum::<u64>().to_string())
            }
            "total-blob-file-size" => {
                Some(v.blob_files.values().map(|b| b.meta.file_size).sum::<u64>().to_string())
            }
            "background-error" => Some(self.background_error().map_or(String::new(), |e| e.to_string())),
            "num-snapshots" => Some(self.snapshots.sequences().len().to_string()),
            _ => None,
        }
    }

    fn level_stats_text(&self) -> String {
        let v = self.super_version.load().version.clone();
        let (targets, base) = picker::level_targets(&v, &self.opts);
        let mut s = String::from("Level Files Size(MB) Target(MB)\n--------------------------------\n");
        for level in 0..NUM_LEVELS {
            let target = if level == 0 || level < base { 0.0 } else { targets[level] as f64 / MIB };
            let _ = writeln!(
                s,
                "{level:>5} {:>5} {:>8.1} {:>10.1}",
                v.level_files(level),
                v.level_bytes(level) as f64 / MIB,
                target
            );
        }
        let blob_bytes: u64 = v.blob_files.values().map(|b| b.meta.file_size).sum();
        let garbage: u64 = v.blob_files.values().map(|b| b.garbage_bytes).sum();
        let _ = writeln!(
            s,
            " blob {:>5} {:>8.1} garbage {:.1} MB",
            v.blob_files.len(),
            blob_bytes as f64 / MIB,
            garbage as f64 / MIB
        );
        s
    }

    fn stats_text(&self) -> String {
        let st = &self.stats;
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let user = get(&st.user_bytes).max(1);
        let mut s = self.level_stats_text();
        let _ = writeln!(
            s,
            "keys written: {}  user bytes: {:.1} MB",
            get(&st.keys_written),
            get(&st.user_bytes) as f64 / MIB
        );
        let _ = writeln!(s, "wal: {:.1} MB in {} syncs", get(&st.wal_bytes) as f64 / MIB, get(&st.wal_syncs));
        let _ = writeln!(
            s,
            "flush: {} jobs, {:.1} MB written",
            get(&st.flushes),
            get(&st.flush_bytes) as f64 / MIB
        );
        let _ = writeln!(
            s,
            "compaction: {} jobs ({} trivial moves), {:.1} MB read, {:.1} MB written",
            get(&st.compactions),
            get(&st.trivial_moves),
            get(&st.compaction_bytes_read) as f64 / MIB,
            get(&st.compaction_bytes_written) as f64 / MIB
        );
        let _ = writeln!(s, "write amplification: {:.2}", st.disk_bytes_written() as f64 / user as f64);
        let _ = writeln!(
            s,
            "stalls: slowdown {:.3} s, stop {:.3} s",
            get(&st.slowdown_micros) as f64 / 1e6,
            get(&st.stop_micros) as f64 / 1e6
        );
        let _ = writeln!(s, "gets: {}  blob reads: {}", get(&st.gets), get(&st.blob_reads));
        if let Some(c) = self.table_cache.block_cache() {
            let _ = writeln!(
                s,
                "block cache: {:.1} / {:.1} MB",
                c.usage() as f64 / MIB,
                c.capacity() as f64 / MIB
            );
        }
        s
    }
}
