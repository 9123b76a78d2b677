//! Statistics counters and named properties (`strata.stats`, `strata.levelstats`, ...). Counters
//! are relaxed atomics bumped once per operation or job; nothing here takes a lock on a hot path.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::family::Family;
use super::info_log::LogSlot;
use super::DbInner;
use crate::compaction::picker;
use crate::metrics::{Counter, Histogram, HistogramSnapshot, BUCKET_BOUNDS_NANOS};
use crate::options::NUM_LEVELS;

/// Counters of work done since the database was opened, from [`Db::stats`](crate::Db::stats).
/// The counters are public atomics: read them with `load(Ordering::Relaxed)`. They are plain
/// totals since open (not persisted), updated as work happens, so reading several is not one
/// atomic snapshot. The same numbers appear in the `strata.stats` and `strata.prometheus`
/// properties.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use std::sync::atomic::Ordering::Relaxed;
/// use strata::{Db, Options, ReadOptions, WriteOptions};
/// // Values of 64 bytes or more go to blob files when flushed; latency histograms on.
/// let opts = Options { min_blob_size: 64, latency_histograms: true, ..Options::default() };
/// let db = Db::open(dir.path(), opts)?;
/// db.put_opt(&WriteOptions { sync: true, disable_wal: false }, b"small", b"v")?;
/// db.put(b"large", &[7u8; 100])?;
/// db.flush()?;
/// assert_eq!(db.get(b"large")?, Some(vec![7u8; 100]));
/// assert_eq!(db.get(b"missing")?, None);
///
/// let stats = db.stats();
/// assert_eq!(stats.keys_written.load(Relaxed), 2);
/// assert!(stats.wal_syncs.load(Relaxed) >= 1);
/// assert_eq!(stats.gets.load(Relaxed), 2);
/// assert_eq!(stats.blob_reads.load(Relaxed), 1);
/// assert_eq!(stats.flushes.load(Relaxed), 1);
/// assert!(stats.disk_bytes_written() >= stats.wal_bytes.load(Relaxed) + stats.flush_bytes.load(Relaxed));
/// assert_eq!(stats.get_latency.snapshot().count(), 2);
/// assert_eq!(stats.write_latency.snapshot().count(), 2);
/// assert!(stats.histograms_text().contains("strata.db.get.micros"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
    /// Point lookups served (striped: read it with `load`).
    pub gets: Counter,
    /// Values read from blob files (striped: read it with `load`). An iterator's are added at
    /// its next `seek` and when it is dropped.
    pub blob_reads: Counter,
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
    /// Microseconds writers were held back (slowed or stopped) because of too many L0 files.
    pub stall_level0_micros: AtomicU64,
    /// Microseconds writers were held back because of pending compaction bytes.
    pub stall_pending_bytes_micros: AtomicU64,
    /// Microseconds writers waited because every memtable was full.
    pub stall_memtables_micros: AtomicU64,
    /// Tables an iterator over one prefix left out because their filter holds none of it
    /// ([`Options::prefix_extractor`](crate::Options::prefix_extractor)).
    pub prefix_filter_skips: AtomicU64,
    /// Latency of `Db::get` calls (hits, misses and errors); empty unless
    /// [`Options::latency_histograms`](crate::Options::latency_histograms) is on.
    pub get_latency: Histogram,
    /// Latency of writes (`put`, `delete`, `merge`, `write`), from the call until the write is
    /// visible, including queueing behind other writers, stalls and WAL sync; empty unless
    /// [`Options::latency_histograms`](crate::Options::latency_histograms) is on.
    pub write_latency: Histogram,
    /// The info LOG and job ids.
    pub(crate) log: LogSlot,
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

    /// Bytes written to disk by the engine: WAL, flush and compaction output (the numerator of
    /// write amplification). See the example on [`Stats`].
    pub fn disk_bytes_written(&self) -> u64 {
        self.wal_bytes.load(Ordering::Relaxed)
            + self.flush_bytes.load(Ordering::Relaxed)
            + self.compaction_bytes_written.load(Ordering::Relaxed)
    }
}

const MIB: f64 = 1024.0 * 1024.0;

impl Stats {
    /// The latency histograms in RocksDB's statistics-dump shape, microseconds:
    /// `strata.db.get.micros P50 : x P95 : x P99 : x P100 : x COUNT : n SUM : s`. Percentiles are
    /// interpolated inside fixed buckets (1-2-5 steps), so they are estimates. One line per
    /// histogram, each ending in a newline.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, ReadOptions};
    /// let db = Db::open(dir.path(), Options { latency_histograms: true, ..Options::default() })?;
    /// db.get(b"k")?;
    /// let text = db.stats().histograms_text();
    /// let get_line = text.lines().find(|l| l.starts_with("strata.db.get.micros")).unwrap();
    /// assert!(get_line.contains("COUNT : 1"));
    /// assert!(text.lines().any(|l| l.starts_with("strata.db.write.micros")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn histograms_text(&self) -> String {
        let mut s = self.get_latency.snapshot().rocksdb_line("strata.db.get.micros");
        s.push('\n');
        s.push_str(&self.write_latency.snapshot().rocksdb_line("strata.db.write.micros"));
        s.push('\n');
        s
    }
}

/// Writes one Prometheus metric family header.
fn prom_header(s: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(s, "# HELP {name} {help}");
    let _ = writeln!(s, "# TYPE {name} {kind}");
}

fn prom_histogram(s: &mut String, name: &str, help: &str, h: &HistogramSnapshot) {
    prom_header(s, name, "histogram", help);
    let mut cumulative = 0u64;
    for (i, &bound) in BUCKET_BOUNDS_NANOS.iter().enumerate() {
        cumulative += h.buckets[i];
        let _ = writeln!(s, "{name}_bucket{{le=\"{}\"}} {cumulative}", bound as f64 / 1e9);
    }
    let _ = writeln!(s, "{name}_bucket{{le=\"+Inf\"}} {}", h.count());
    let _ = writeln!(s, "{name}_sum {}", h.sum_nanos as f64 / 1e9);
    let _ = writeln!(s, "{name}_count {}", h.count());
}

impl DbInner {
    pub(crate) fn property(&self, name: &str) -> Option<String> {
        self.property_of(&self.default, name)
    }

    /// A property of column family `family` where it has one of its own (files per level,
    /// level stats, pending compaction bytes, immutable memtables, table and blob sizes); the
    /// database-wide ones otherwise.
    pub(crate) fn property_of(&self, family: &Family, name: &str) -> Option<String> {
        let name = name.strip_prefix("strata.").or_else(|| name.strip_prefix("rocksdb."))?;
        let v = family.super_version.load().version.clone();
        if let Some(level) = name.strip_prefix("num-files-at-level") {
            let level: usize = level.parse().ok().filter(|&l| l < NUM_LEVELS)?;
            return Some(v.level_files(level).to_string());
        }
        match name {
            "stats" => Some(self.stats_text()),
            "levelstats" => Some(level_stats_text(family)),
            "estimate-pending-compaction-bytes" => {
                Some(picker::pending_compaction_bytes(&v, &family.opts).to_string())
            }
            "block-cache-usage" => Some(self.table_cache.block_cache().map_or(0, |c| c.usage()).to_string()),
            "block-cache-pinned-usage" => {
                Some(self.table_cache.block_cache().map_or(0, |c| c.pinned()).to_string())
            }
            "num-immutable-mem-table" => Some((family.memtable_budget.memtables() - 1).to_string()),
            "memtable-borrowed-bytes" => {
                Some(self.table_cache.block_cache().map_or(0, |c| c.reserved()).to_string())
            }
            "total-sst-files-size" => {
                Some((0..NUM_LEVELS).map(|l| v.level_bytes(l)).sum::<u64>().to_string())
            }
            "total-blob-file-size" => {
                Some(v.blob_files.values().map(|b| b.meta.file_size).sum::<u64>().to_string())
            }
            "mmap-reads" => Some(u8::from(self.table_cache.maps_new_files()).to_string()),
            "background-error" => Some(self.background_error().map_or(String::new(), |e| e.to_string())),
            "num-snapshots" => Some(self.snapshots.sequences().len().to_string()),
            "histograms" => Some(self.latency_text()),
            "recovery" => Some(self.recovery.lock().render()),
            "prometheus" => Some(self.prometheus_text()),
            _ => None,
        }
    }

    /// Runs `f`, recording how long it took in `histogram` when `latency_histograms` is on; with
    /// it off (the default) no clock is read.
    #[inline]
    pub(crate) fn timed<T>(&self, histogram: &Histogram, f: impl FnOnce() -> T) -> T {
        if !self.opts.latency_histograms {
            return f();
        }
        let start = std::time::Instant::now();
        let result = f();
        histogram.record(start.elapsed());
        result
    }

    /// The latency histograms' text, or a line saying they are off: zero counts next to the
    /// `gets` counter would read as "no reads" rather than "not measured".
    fn latency_text(&self) -> String {
        if self.opts.latency_histograms {
            self.stats.histograms_text()
        } else {
            "latency histograms: off (latency_histograms=true to measure them)\n".to_string()
        }
    }

    /// Counters, gauges and histograms in the Prometheus text exposition format (version 0.0.4).
    /// The latency histograms are left out while `latency_histograms` is off.
    fn prometheus_text(&self) -> String {
        let st = &self.stats;
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut s = String::new();
        let counters: [(&str, &str, u64); 12] = [
            (
                "strata_keys_written_total",
                "Keys written by users (each batch entry counts).",
                get(&st.keys_written),
            ),
            ("strata_user_bytes_written_total", "Bytes of user write batches.", get(&st.user_bytes)),
            ("strata_wal_bytes_written_total", "Bytes appended to WAL files.", get(&st.wal_bytes)),
            ("strata_wal_syncs_total", "WAL fdatasync calls.", get(&st.wal_syncs)),
            ("strata_gets_total", "Point lookups served.", st.gets.load(Ordering::Relaxed)),
            (
                "strata_blob_reads_total",
                "Values read from blob files.",
                st.blob_reads.load(Ordering::Relaxed),
            ),
            ("strata_flushes_total", "Memtable flushes.", get(&st.flushes)),
            ("strata_flush_bytes_written_total", "Bytes written by flushes.", get(&st.flush_bytes)),
            ("strata_compactions_total", "Compactions run, trivial moves included.", get(&st.compactions)),
            ("strata_trivial_moves_total", "Compactions that only moved files.", get(&st.trivial_moves)),
            (
                "strata_compaction_bytes_read_total",
                "Bytes read by compactions.",
                get(&st.compaction_bytes_read),
            ),
            (
                "strata_compaction_bytes_written_total",
                "Bytes written by compactions.",
                get(&st.compaction_bytes_written),
            ),
        ];
        for (name, help, v) in counters {
            prom_header(&mut s, name, "counter", help);
            let _ = writeln!(s, "{name} {v}");
        }
        let name = "strata_write_stall_seconds_total";
        prom_header(
            &mut s,
            name,
            "counter",
            "Seconds writers spent slowed down or stopped, by kind and reason.",
        );
        let _ = writeln!(s, "{name}{{kind=\"slowdown\"}} {}", get(&st.slowdown_micros) as f64 / 1e6);
        let _ = writeln!(s, "{name}{{kind=\"stop\"}} {}", get(&st.stop_micros) as f64 / 1e6);
        let name = "strata_write_stall_reason_seconds_total";
        prom_header(&mut s, name, "counter", "Seconds writers were held back, by reason.");
        for (reason, c) in [
            ("level0_files", &st.stall_level0_micros),
            ("pending_compaction_bytes", &st.stall_pending_bytes_micros),
            ("memtables", &st.stall_memtables_micros),
        ] {
            let _ = writeln!(s, "{name}{{reason=\"{reason}\"}} {}", get(c) as f64 / 1e6);
        }

        let v = self.default.super_version.load().version.clone();
        let name = "strata_level_files";
        prom_header(&mut s, name, "gauge", "SST files per level.");
        for level in 0..NUM_LEVELS {
            let _ = writeln!(s, "{name}{{level=\"{level}\"}} {}", v.level_files(level));
        }
        let name = "strata_level_bytes";
        prom_header(&mut s, name, "gauge", "Bytes of SST files per level.");
        for level in 0..NUM_LEVELS {
            let _ = writeln!(s, "{name}{{level=\"{level}\"}} {}", v.level_bytes(level));
        }
        let gauges: [(&str, &str, u64); 6] = [
            (
                "strata_blob_files_bytes",
                "Bytes of live blob files.",
                v.blob_files.values().map(|b| b.meta.file_size).sum(),
            ),
            (
                "strata_estimate_pending_compaction_bytes",
                "Bytes compaction must rewrite to bring every level under its target.",
                picker::pending_compaction_bytes(&v, &self.opts),
            ),
            (
                "strata_block_cache_usage_bytes",
                "Bytes held by the block cache.",
                self.table_cache.block_cache().map_or(0, |c| c.usage() as u64),
            ),
            (
                "strata_memtable_borrowed_bytes",
                "Block-cache capacity lent to memtables waiting for flush.",
                self.table_cache.block_cache().map_or(0, |c| c.reserved() as u64),
            ),
            ("strata_num_snapshots", "Live snapshots.", self.snapshots.sequences().len() as u64),
            (
                "strata_background_error",
                "1 when a background error made the database read-only.",
                u64::from(self.background_error().is_some()),
            ),
        ];
        for (name, help, value) in gauges {
            prom_header(&mut s, name, "gauge", help);
            let _ = writeln!(s, "{name} {value}");
        }
        if !self.opts.latency_histograms {
            return s;
        }
        prom_histogram(
            &mut s,
            "strata_get_latency_seconds",
            "Latency of point lookups.",
            &st.get_latency.snapshot(),
        );
        prom_histogram(
            &mut s,
            "strata_write_latency_seconds",
            "Latency of writes, queueing, stalls and WAL sync included.",
            &st.write_latency.snapshot(),
        );
        s
    }

    fn stats_text(&self) -> String {
        let st = &self.stats;
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let user = get(&st.user_bytes).max(1);
        let mut s = level_stats_text(&self.default);
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
        let _ = writeln!(
            s,
            "gets: {}  blob reads: {}",
            st.gets.load(Ordering::Relaxed),
            st.blob_reads.load(Ordering::Relaxed)
        );
        s.push_str(&self.latency_text());
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

/// Files, sizes and targets per level of one family's tree.
fn level_stats_text(family: &Family) -> String {
    let v = family.super_version.load().version.clone();
    let (targets, base) = picker::level_targets(&v, &family.opts);
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
