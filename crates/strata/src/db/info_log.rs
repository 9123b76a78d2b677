//! The info `LOG` file and structured events.
//!
//! Like RocksDB, a database opened for writing keeps a human-readable `LOG` in its directory:
//! lines `2026/11/22-03:04:05.123456 [INFO] message` (UTC) and, for flushes, compactions, stalls
//! and background errors, `EVENT_LOG_v1 {"time_micros":...,"job":...,"event":"flush_finished",...}`
//! JSON lines that tools can grep and parse. The same happenings are also `tracing` events with
//! target `strata`.
//!
//! An existing `LOG` is renamed to `LOG.old.<micros>` at open and whenever it would grow past
//! `Options::max_log_file_size`; at most `Options::keep_log_file_num` old files are kept. All IO
//! goes through the engine's `FileSystem`. `WritableFile::append` hands each line to the kernel at
//! once, so a crash loses no line already logged; the LOG is never fsynced. Logging never fails a
//! user operation: an IO error is reported once through `tracing` and logging pauses for ten
//! seconds before it tries again with a fresh file. Read-only opens and `info_log = false` write
//! nothing.

use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use super::family::Family;
use super::{DbInner, SuperVersion};
use crate::error::Result;
use crate::fs::{FileSystem, WritableFile};
use crate::options::NUM_LEVELS;

/// The name of the info log in the database directory.
pub const LOG_NAME: &str = "LOG";
/// Rotated logs are named `LOG.old.<micros since the epoch>`.
pub const OLD_LOG_PREFIX: &str = "LOG.old.";

const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(10);

/// Severity of a LOG line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Info,
    Warn,
    Error,
}

impl Level {
    fn tag(self) -> &'static str {
        match self {
            Level::Info => "[INFO]",
            Level::Warn => "[WARN]",
            Level::Error => "[ERROR]",
        }
    }
}

pub(crate) fn now_micros() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// `2026/11/22-03:04:05.123456` (UTC) for microseconds since the Unix epoch.
pub(crate) fn format_time(micros: u64) -> String {
    let secs = micros / 1_000_000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}/{month:02}/{day:02}-{:02}:{:02}:{:02}.{:06}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        micros % 1_000_000
    )
}

/// One `EVENT_LOG_v1` JSON object, built field by field.
pub(crate) struct Event {
    buf: String,
}

fn json_escape(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl Event {
    pub(crate) fn new(job: u64, event: &str) -> Event {
        let mut buf = format!("{{\"time_micros\":{},\"job\":{job},\"event\":", now_micros());
        json_escape(&mut buf, event);
        Event { buf }
    }

    fn key(&mut self, k: &str) {
        self.buf.push(',');
        json_escape(&mut self.buf, k);
        self.buf.push(':');
    }

    pub(crate) fn num(mut self, k: &str, v: u64) -> Event {
        self.key(k);
        let _ = write!(self.buf, "{v}");
        self
    }

    pub(crate) fn boolean(mut self, k: &str, v: bool) -> Event {
        self.key(k);
        let _ = write!(self.buf, "{v}");
        self
    }

    pub(crate) fn string(mut self, k: &str, v: &str) -> Event {
        self.key(k);
        json_escape(&mut self.buf, v);
        self
    }

    pub(crate) fn nums(mut self, k: &str, vs: impl IntoIterator<Item = u64>) -> Event {
        self.key(k);
        self.buf.push('[');
        for (i, v) in vs.into_iter().enumerate() {
            if i > 0 {
                self.buf.push(',');
            }
            let _ = write!(self.buf, "{v}");
        }
        self.buf.push(']');
        self
    }

    fn finish(mut self) -> String {
        self.buf.push('}');
        self.buf
    }
}

struct LogState {
    file: Option<Box<dyn WritableFile>>,
    last_old_micros: u64,
    retry_at: Option<Instant>,
}

/// The open `LOG` file of one database.
pub(crate) struct InfoLog {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    max_size: u64,
    keep: usize,
    state: Mutex<LogState>,
}

impl InfoLog {
    fn open(fs: Arc<dyn FileSystem>, dir: &Path, max_size: u64, keep: usize) -> InfoLog {
        let log = InfoLog {
            fs,
            dir: dir.to_path_buf(),
            max_size,
            keep,
            state: Mutex::new(LogState { file: None, last_old_micros: 0, retry_at: None }),
        };
        log.start_new_file(&mut log.state.lock());
        log
    }

    /// Renames an existing `LOG` away, creates a fresh one and deletes old logs beyond `keep`.
    fn start_new_file(&self, st: &mut LogState) {
        st.file = None;
        match self.try_start_new_file(st) {
            Ok(file) => {
                st.file = Some(file);
                st.retry_at = None;
            }
            Err(e) => {
                tracing::warn!(target: "strata", error = %e, "could not start the info LOG; logging to it is paused");
                st.retry_at = Some(Instant::now() + RETRY_AFTER_FAILURE);
            }
        }
    }

    fn try_start_new_file(&self, st: &mut LogState) -> Result<Box<dyn WritableFile>> {
        let current = self.dir.join(LOG_NAME);
        if self.fs.is_dir(&current)?.is_some() {
            let micros = now_micros().max(st.last_old_micros + 1);
            st.last_old_micros = micros;
            self.fs.rename(&current, &self.dir.join(format!("{OLD_LOG_PREFIX}{micros}")))?;
        }
        let file = self.fs.create(&current)?;
        self.prune_old_files();
        Ok(file)
    }

    fn prune_old_files(&self) {
        let Ok(names) = self.fs.list_dir(&self.dir) else { return };
        let mut old: Vec<(u64, String)> = names
            .into_iter()
            .filter_map(|n| Some((n.strip_prefix(OLD_LOG_PREFIX)?.parse().ok()?, n)))
            .collect();
        if old.len() <= self.keep {
            return;
        }
        old.sort_unstable();
        let excess = old.len() - self.keep;
        for (_, name) in old.into_iter().take(excess) {
            if let Err(e) = self.fs.remove_file(&self.dir.join(&name)) {
                tracing::warn!(target: "strata", error = %e, file = %name, "could not delete an old info LOG");
            }
        }
    }

    fn write_line(&self, line: &str) {
        let mut st = self.state.lock();
        if st.file.is_none() {
            match st.retry_at {
                Some(t) if Instant::now() < t => return,
                _ => self.start_new_file(&mut st),
            }
        }
        let needs_rotation =
            st.file.as_ref().is_some_and(|f| !f.is_empty() && f.len() + line.len() as u64 > self.max_size);
        if needs_rotation {
            self.start_new_file(&mut st);
        }
        let Some(file) = st.file.as_mut() else { return };
        if let Err(e) = file.append(line.as_bytes()) {
            tracing::warn!(target: "strata", error = %e, "writing the info LOG failed; logging to it is paused");
            st.file = None;
            st.retry_at = Some(Instant::now() + RETRY_AFTER_FAILURE);
        }
    }
}

/// Where a database keeps its [`InfoLog`], created at the first line logged.
#[derive(Default)]
pub(crate) struct LogSlot {
    log: OnceLock<InfoLog>,
    next_job: AtomicU64,
    /// The last stall reported in the LOG (`reason * 2 + stopped`, plus one), and when.
    last_stall: AtomicU64,
    last_stall_micros: AtomicU64,
}

impl fmt::Debug for LogSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogSlot").field("open", &self.log.get().is_some()).finish_non_exhaustive()
    }
}

/// Why writers were held back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StallReason {
    /// Too many L0 files.
    Level0Files,
    /// Too many bytes waiting for compaction.
    PendingCompactionBytes,
    /// Every memtable is full and waiting for flush.
    Memtables,
}

impl StallReason {
    pub(crate) fn name(self) -> &'static str {
        match self {
            StallReason::Level0Files => "level0_files",
            StallReason::PendingCompactionBytes => "pending_compaction_bytes",
            StallReason::Memtables => "memtables",
        }
    }
}

impl DbInner {
    fn info_log(&self) -> Option<&InfoLog> {
        if self.read_only || !self.opts.info_log {
            return None;
        }
        Some(self.stats.log.log.get_or_init(|| {
            InfoLog::open(
                Arc::clone(&self.fs),
                &self.dir,
                self.opts.max_log_file_size,
                self.opts.keep_log_file_num,
            )
        }))
    }

    /// Appends one line to the LOG (nothing when the LOG is off or the handle read-only).
    pub(crate) fn log(&self, level: Level, msg: fmt::Arguments<'_>) {
        if let Some(log) = self.info_log() {
            log.write_line(&format!("{} {} {msg}\n", format_time(now_micros()), level.tag()));
        }
    }

    /// Appends an `EVENT_LOG_v1` line.
    pub(crate) fn log_event(&self, event: Event) {
        if let Some(log) = self.info_log() {
            let time = format_time(now_micros());
            log.write_line(&format!("{time} [INFO] EVENT_LOG_v1 {}\n", event.finish()));
        }
    }

    /// A fresh id tying a job's started and finished events together.
    pub(crate) fn next_job_id(&self) -> u64 {
        self.stats.log.next_job.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Files per level of `family`, for `lsm_state` in its flush and compaction events.
    pub(crate) fn lsm_state(&self, family: &Family) -> Vec<u64> {
        let v = family.super_version.load().version.clone();
        (0..NUM_LEVELS).map(|l| v.level_files(l) as u64).collect()
    }

    /// Writes the LOG header of a database opened for writing: version, path and every option.
    pub(crate) fn log_open(&self) {
        if self.info_log().is_none() {
            return;
        }
        self.log(Level::Info, format_args!("strata version {}", env!("CARGO_PKG_VERSION")));
        self.log(Level::Info, format_args!("DB path: {}", self.dir.display()));
        for line in self.render_options().lines() {
            let line = line.trim();
            let Some((k, v)) = line.split_once('=') else { continue };
            if k != "strata_version" && k != "options_file_version" {
                self.log(Level::Info, format_args!("Options.{k}: {v}"));
            }
        }
        // What recovery dropped or set aside (docs/durability.md, "Recovery"): never silent.
        let report = self.recovery.lock().clone();
        if !report.is_clean() {
            for line in report.render().lines() {
                self.log(Level::Warn, format_args!("Recovery: {line}"));
            }
        }
    }

    /// Records a write stall (a slowdown sleep, or a wait for background progress when
    /// `stopped`): per-reason counters, a `tracing` event, and — when the reason changes or a
    /// second has passed since the last one — a LOG line and a `write_stall` event.
    pub(crate) fn report_stall(&self, sv: &SuperVersion, stopped: bool, d: Duration) {
        self.record_stall(sv, self.stall_reason(sv, stopped), stopped, d);
    }

    /// Why writes reading `sv` are held back: the memtables, while they are full and neither L0
    /// nor pending compaction bytes are over their slowdown threshold (or writes are stopped),
    /// else L0 if it is over its threshold, else pending compaction bytes.
    pub(crate) fn stall_reason(&self, sv: &SuperVersion, stopped: bool) -> StallReason {
        let o = &self.opts;
        let l0 = sv.version.files[0].len();
        let memtables_full = !self.default.memtable_budget.has_room();
        let below_slowdown = l0 < o.level0_slowdown_trigger
            && sv
                .version
                .pending_compaction_bytes(|v| crate::compaction::picker::pending_compaction_bytes(v, o))
                < o.soft_pending_compaction_bytes;
        if memtables_full && (stopped || below_slowdown) {
            StallReason::Memtables
        } else if (stopped && l0 >= o.level0_stop_trigger) || (!stopped && l0 >= o.level0_slowdown_trigger) {
            StallReason::Level0Files
        } else {
            StallReason::PendingCompactionBytes
        }
    }

    /// [`report_stall`](Self::report_stall) for a stall whose reason was decided when it began
    /// (a slowdown's delays are reported in batches, by which time the LSM may have changed).
    pub(crate) fn record_stall(&self, sv: &SuperVersion, reason: StallReason, stopped: bool, d: Duration) {
        let o = &self.opts;
        let l0 = sv.version.files[0].len();
        let micros = d.as_micros() as u64;
        let counter = match reason {
            StallReason::Level0Files => &self.stats.stall_level0_micros,
            StallReason::PendingCompactionBytes => &self.stats.stall_pending_bytes_micros,
            StallReason::Memtables => &self.stats.stall_memtables_micros,
        };
        counter.fetch_add(micros, Ordering::Relaxed);
        tracing::debug!(target: "strata", reason = reason.name(), stopped, micros, "write stall");

        let code = reason as u64 * 2 + u64::from(stopped) + 1;
        let now = now_micros();
        let slot = &self.stats.log;
        let prev = slot.last_stall.swap(code, Ordering::Relaxed);
        let last = slot.last_stall_micros.load(Ordering::Relaxed);
        if prev == code && now.saturating_sub(last) < 1_000_000 {
            return;
        }
        slot.last_stall_micros.store(now, Ordering::Relaxed);
        let verb = if stopped { "Stopping" } else { "Stalling" };
        let detail = match reason {
            StallReason::Level0Files => format!("we have {l0} level-0 files"),
            StallReason::PendingCompactionBytes => format!(
                "of estimated pending compaction bytes {}",
                crate::compaction::picker::pending_compaction_bytes(&sv.version, o)
            ),
            StallReason::Memtables => format!(
                "we have {} immutable memtables (waiting for flush), max_write_buffer_number is set to {} \
                 and {} more borrow block-cache capacity",
                sv.imm.len(),
                o.max_write_buffer_number,
                self.default.memtable_budget.borrowed_slots()
            ),
        };
        tracing::warn!(target: "strata", reason = reason.name(), stopped, micros, "{verb} writes because {detail}");
        self.log(Level::Warn, format_args!("{verb} writes because {detail}"));
        self.log_event(
            Event::new(0, "write_stall")
                .string("reason", reason.name())
                .boolean("stopped", stopped)
                .num("duration_micros", micros)
                .num("level0_files", l0 as u64)
                .num("immutable_memtables", sv.imm.len() as u64),
        );
    }

    /// Records a background error in the LOG and as an event.
    pub(crate) fn log_background_error(&self, what: &str, e: &dyn fmt::Display) {
        self.log(
            Level::Error,
            format_args!("Background error in {what}: {e}; the database is now read-only"),
        );
        self.log_event(
            Event::new(0, "background_error").string("what", what).string("error", &e.to_string()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stalls_and_background_errors_reach_the_log_and_counters() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::Db::open(dir.path(), crate::Options::default()).unwrap();
        let inner = &db.inner;
        let sv = inner.default.super_version.load_full();
        inner.report_stall(&sv, true, Duration::from_millis(5));
        inner.report_stall(&sv, true, Duration::from_millis(5));
        inner.report_stall(&sv, false, Duration::from_millis(2));
        inner.log_background_error("flush", &"disk on fire");
        let st = &inner.stats;
        assert_eq!(st.stall_pending_bytes_micros.load(Ordering::Relaxed), 12_000);
        assert_eq!(st.stall_level0_micros.load(Ordering::Relaxed), 0);
        let log = std::fs::read_to_string(dir.path().join(LOG_NAME)).unwrap();
        // The repeated stop within a second is counted but logged once.
        assert_eq!(
            log.matches("Stopping writes because of estimated pending compaction bytes").count(),
            1,
            "{log}"
        );
        assert_eq!(log.matches("Stalling writes because").count(), 1, "{log}");
        assert_eq!(log.matches("\"event\":\"write_stall\"").count(), 2, "{log}");
        assert!(log.contains("[ERROR] Background error in flush: disk on fire"), "{log}");
        assert!(log.contains("\"event\":\"background_error\",\"what\":\"flush\""), "{log}");
        let prom = db.property("strata.prometheus").unwrap();
        assert!(
            prom.contains(
                "strata_write_stall_reason_seconds_total{reason=\"pending_compaction_bytes\"} 0.012"
            ),
            "{prom}"
        );
    }

    #[test]
    fn a_slowdown_is_counted_under_the_reason_it_began_with() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::Db::open(dir.path(), crate::Options::default()).unwrap();
        let inner = &db.inner;
        let sv = inner.default.super_version.load_full();
        // An empty database is under no pressure: inferred from it, the reason is the fallback.
        assert_eq!(inner.stall_reason(&sv, false), StallReason::PendingCompactionBytes);
        // A slowdown that began under L0 pressure is reported after compaction cleared L0.
        inner.record_stall(&sv, StallReason::Level0Files, false, Duration::from_millis(3));
        let st = &inner.stats;
        assert_eq!(st.stall_level0_micros.load(Ordering::Relaxed), 3_000);
        assert_eq!(st.stall_pending_bytes_micros.load(Ordering::Relaxed), 0);
        let log = std::fs::read_to_string(dir.path().join(LOG_NAME)).unwrap();
        assert!(log.contains("Stalling writes because we have 0 level-0 files"), "{log}");
    }

    #[test]
    fn formats_utc_times() {
        assert_eq!(format_time(0), "1970/01/01-00:00:00.000000");
        // 2024-02-29T23:59:58.000123Z
        assert_eq!(format_time(1_709_251_198_000_123), "2024/02/29-23:59:58.000123");
        assert_eq!(format_time(951_782_400_000_000), "2000/02/29-00:00:00.000000");
    }

    #[test]
    fn events_are_json() {
        let e = Event::new(7, "flush_finished")
            .num("bytes", 10)
            .nums("lsm_state", [1, 2])
            .string("error", "a \"b\"\n")
            .boolean("trivial_move", true)
            .finish();
        assert!(e.starts_with("{\"time_micros\":"), "{e}");
        assert!(
            e.ends_with(
                "\"job\":7,\"event\":\"flush_finished\",\"bytes\":10,\"lsm_state\":[1,2],\
                 \"error\":\"a \\\"b\\\"\\n\",\"trivial_move\":true}"
            ),
            "{e}"
        );
    }
}
