//! The `run` command: opens the database and the oracle, resolves writes a crash left in flight,
//! runs the worker threads until the operation budget or the deadline, prints progress lines for
//! the crash-loop driver, and verifies the whole database at the end. `--verify-only` does just
//! the verification.
//!
//! This module owns process-level orchestration only; it must not generate operations (`worker`)
//! or judge the database (`verify`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use strata::{Db, Options};

use crate::failure::Failure;
use crate::families::{self, Families, Layout};
use crate::history::{self, History};
use crate::oracle::{DropPhase, Oracle};
use crate::verify::{verify_db, Unlogged};
use crate::worker::{CheckpointArea, Stats, Worker, WriteMode};

/// Everything `run` needs, resolved from the command line.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Database directory.
    pub db: PathBuf,
    /// Oracle directory.
    pub expected: PathBuf,
    /// Worker threads.
    pub threads: u64,
    /// Total operations over all threads (None: until the deadline).
    pub ops: Option<u64>,
    /// Wall-clock limit.
    pub duration: Option<Duration>,
    /// Key space size.
    pub keys: u64,
    /// How writes are made: the share with `sync = true`, and `disable_wal`.
    pub write_mode: WriteMode,
    /// Base seed of the threads' generators.
    pub seed: u64,
    /// `Options::write_buffer_size`: small, so flushes and compactions happen during short runs.
    pub write_buffer_size: usize,
    /// More options by name (`Options::with_option_string`), applied last.
    pub options: Option<String>,
    /// fdatasync the oracle after every intent.
    pub oracle_fsync: bool,
    /// Interval of `progress` lines on stdout; 0 = none.
    pub progress_ms: u64,
    /// Checkpoints per 10,000 operations.
    pub checkpoints_per_10k: u32,
    /// Column families, default included (1 = none besides the default).
    pub families: usize,
}

impl RunConfig {
    fn layout(&self) -> Layout {
        Layout { families: self.families, keys: self.keys }
    }
}

/// The engine options every subcommand opens the database with: small files and levels, then
/// `extra` (`key=value;...`) on top.
pub fn db_options(write_buffer_size: usize, extra: Option<&str>) -> Result<Options, Failure> {
    let opts = Options {
        write_buffer_size,
        // Small files and levels so a short run exercises multi-level compaction.
        target_file_size: 1 << 20,
        max_bytes_for_level_base: 4 << 20,
        level0_compaction_trigger: 2,
        merge_operator: strata::merge::builtin("uint64add"),
        ..Options::default()
    };
    match extra {
        Some(text) => opts.with_option_string(text).map_err(|e| Failure::Tool(format!("--options: {e}"))),
        None => Ok(opts),
    }
}

/// An open database with its oracle and family handles.
pub struct Opened {
    /// The database, every family of the layout open (created if missing).
    pub db: Db,
    /// The oracle.
    pub oracle: Oracle,
    /// The families' handles.
    pub fams: Families,
    /// Whether the MANIFEST listed the dropping family before the open (which recreates it).
    pub dropping_listed: bool,
}

/// Opens the oracle, refusing to invent an empty oracle for a database that already has data:
/// every read would then be reported as a mismatch for the wrong reason.
pub fn open_pair(cfg: &RunConfig) -> Result<Opened, Failure> {
    if !Oracle::exists(&cfg.expected) && has_entries(&cfg.db) {
        return Err(Failure::Tool(format!(
            "{} holds files but {} has no oracle: use a fresh --db or the matching --expected",
            cfg.db.display(),
            cfg.expected.display()
        )));
    }
    let oracle = Oracle::open(&cfg.expected, cfg.keys, cfg.families as u64, cfg.oracle_fsync)?;
    // The other way round, a leftover oracle beside a fresh --db: every acknowledged key it
    // records would be reported lost.
    if !has_entries(&cfg.db) && oracle.all_slots().iter().any(|s| s.acked > 0) {
        return Err(Failure::Tool(format!(
            "{} records acknowledged writes but {} holds no database: remove the oracle or use the matching --db",
            cfg.expected.display(),
            cfg.db.display()
        )));
    }
    let opts = db_options(cfg.write_buffer_size, cfg.options.as_deref())?;
    let dropping_listed = families::dropping_listed(&cfg.db, &opts, cfg.layout())?;
    let db = families::open_db(&cfg.db, &opts, cfg.layout())?;
    let fams = Families::new(&db, cfg.layout(), opts)?;
    Ok(Opened { db, oracle, fams, dropping_listed })
}

fn has_entries(dir: &Path) -> bool {
    std::fs::read_dir(dir).map(|mut d| d.next().is_some()).unwrap_or(false)
}

/// `run --verify-only`.
pub fn verify_only(cfg: &RunConfig) -> Result<(), Failure> {
    let o = open_pair(cfg)?;
    println!("{}", verify_after_crash(cfg, &o)?);
    o.db.close()?;
    Ok(())
}

/// Verifies a database reopened after a crash, accepting the loss of what an unlogged run wrote
/// since its last flush, then forgets that run's history: the oracle is exact again.
fn verify_after_crash(cfg: &RunConfig, o: &Opened) -> Result<crate::verify::Report, Failure> {
    let unlogged = history::load(&cfg.expected, cfg.keys)?;
    let report = verify_db(&o.db, &o.fams, &o.oracle, &unlogged, o.dropping_listed)?;
    history::clear(&cfg.expected)?;
    Ok(report)
}

/// `run`.
pub fn run(cfg: &RunConfig) -> Result<(), Failure> {
    let o = open_pair(cfg)?;
    let unlogged_before = history::load(&cfg.expected, cfg.keys)?;
    if !unlogged_before.is_empty()
        || o.oracle.drop_phase() != DropPhase::Live
        || o.oracle.all_slots().iter().any(|s| s.pending.is_some())
    {
        println!("startup {}", verify_after_crash(cfg, &o)?);
    }
    let Opened { db, oracle, fams, .. } = o;
    let history = cfg.write_mode.disable_wal.then(|| History::create(&cfg.expected)).transpose()?;
    let stats = Stats::default();
    let area = checkpoint_area(cfg)?;
    let start = Instant::now();
    run_threads(cfg, &db, &oracle, &fams, &stats, &area, history.as_ref());
    let elapsed = start.elapsed();
    // The database is still open: even unlogged writes must all be there.
    let report = verify_db(&db, &fams, &oracle, &Unlogged::new(), true)?;
    print_summary(cfg, &stats, &fams, elapsed);
    println!("final {report}");
    db.close()?;
    oracle.sync()?;
    // Closing flushed the unlogged writes: they are as durable as any now.
    history::clear(&cfg.expected)?;
    Ok(())
}

/// `<expected>/checkpoints`, emptied: a run killed while checkpointing leaves its copy there.
/// Beside the oracle, on the same filesystem as the database in the usual layout, so checkpoints
/// hard-link rather than copy.
fn checkpoint_area(cfg: &RunConfig) -> Result<CheckpointArea, Failure> {
    let dir = cfg.expected.join("checkpoints");
    let tool = |e: std::io::Error| Failure::Tool(format!("checkpoint area {}: {e}", dir.display()));
    match std::fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(tool(e)),
        _ => {}
    }
    std::fs::create_dir_all(&dir).map_err(tool)?;
    let options = db_options(cfg.write_buffer_size, cfg.options.as_deref())?;
    Ok(CheckpointArea { dir, options, per_10k: cfg.checkpoints_per_10k })
}

fn run_threads(
    cfg: &RunConfig,
    db: &Db,
    oracle: &Oracle,
    fams: &Families,
    stats: &Stats,
    area: &CheckpointArea,
    history: Option<&History>,
) {
    let deadline = cfg.duration.map(|d| Instant::now() + d);
    let per_thread = cfg.ops.map(|n| n.div_ceil(cfg.threads));
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..cfg.threads)
            .map(|id| {
                s.spawn(move || {
                    let mut w = Worker::new(db, oracle, fams, stats, cfg.write_mode, cfg.seed, id)
                        .with_checkpoints(area)
                        .with_history(history);
                    let mut n = 0u64;
                    while per_thread.is_none_or(|p| n < p) && deadline.is_none_or(|d| Instant::now() < d) {
                        // A failure ends the process at once: the database is known to be wrong
                        // (or unusable) and other threads must not keep writing to it.
                        w.step().unwrap_or_else(|f| f.exit());
                        n += 1;
                    }
                })
            })
            .collect();
        if cfg.progress_ms > 0 {
            s.spawn(|| report_progress(stats, fams, &done, cfg.progress_ms));
        }
        for w in workers {
            // A worker panic is a bug in this tool; re-raise it.
            w.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        }
        done.store(true, Ordering::Release);
    });
}

/// Prints a `progress` line every `ms` until `done`: the crash-loop driver keeps the last one it
/// saw before the kill.
fn report_progress(stats: &Stats, fams: &Families, done: &AtomicBool, ms: u64) {
    while !done.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(ms));
        println!("progress {}", counters(stats, fams));
    }
}

fn counters(stats: &Stats, fams: &Families) -> String {
    let g = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    let families = match fams.layout.families {
        1 => String::new(),
        n => format!(
            " families={n} cross_family_batches={} drops={}",
            g(&stats.cross_family_batches),
            g(&fams.drops)
        ),
    };
    format!(
        "ops={} writes={} batches={} reads_verified={} scans={} snapshots={} flushes={} compactions={} checkpoints={}{families}",
        g(&stats.ops),
        g(&stats.writes),
        g(&stats.batches),
        g(&stats.reads_verified),
        g(&stats.scans),
        g(&stats.snapshots),
        g(&stats.flushes),
        g(&stats.compactions),
        g(&stats.checkpoints)
    )
}

fn print_summary(cfg: &RunConfig, stats: &Stats, fams: &Families, elapsed: Duration) {
    let secs = elapsed.as_secs_f64();
    let ops = stats.ops.load(Ordering::Relaxed);
    println!(
        "run: threads={} keys={} sync={} seed={} {} seconds={secs:.2} ops_per_sec={:.0}",
        cfg.threads,
        cfg.keys,
        cfg.write_mode,
        cfg.seed,
        counters(stats, fams),
        ops as f64 / secs.max(1e-9)
    );
}
