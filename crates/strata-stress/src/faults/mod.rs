//! The `faults` command: the stress workload of `run` on `strata_testkit::FaultFs` over
//! `MemFs`, with a thread injecting random faults (failed writes, syncs, reads, renames and
//! creates, torn writes, ENOSPC), the engine resumed (`Db::resume`) after a retryable error or
//! reopened as after a process crash otherwise, and crash images (power loss at page
//! granularity, or a process crash) taken while writers run and checked in a separate `Db`.
//!
//! A separate command rather than a mode of `run`: it runs in memory (no `--db`, no oracle file,
//! nothing for `crash-loop` to restart), expects engine errors instead of failing on the first,
//! and needs an oracle that knows about failed writes and crash images (`state`, `judge`).
//!
//! Threads: workers (`worker`), the fault thread (`injector`), and the coordinator (`coord`, the
//! calling thread), which alone resumes, reopens and takes images. Every fault, image, resume
//! and reopen is logged with its time (`log`), the seed is printed, and a failure prints both
//! and exits non-zero; a failing crash image is also written to `--dump-dir`. Thread timing is
//! not reproducible: a seed replays the same operation streams, fault schedule and crash choices,
//! and the log says when each fault fired.
//!
//! This file owns the configuration, the state shared between threads and the summary.

mod coord;
mod errors;
mod injector;
mod judge;
mod log;
mod recovered;
mod state;
mod worker;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use clap::Args;
use strata::Db;
use strata_testkit::{FaultFs, MemFs};

use crate::failure::Failure;

use self::errors::ErrorCounts;
use self::log::FaultLog;
use self::state::State;

/// Flags of `strata-stress faults`.
#[derive(Args, Clone, Debug)]
pub struct FaultArgs {
    /// Run for this many seconds.
    #[arg(long, default_value_t = 20.0)]
    duration: f64,
    /// Worker threads.
    #[arg(long, default_value_t = 4)]
    threads: u64,
    /// Key space size.
    #[arg(long, default_value_t = 10_000)]
    keys: u64,
    /// Seed [default: from the clock; printed].
    #[arg(long)]
    seed: Option<u64>,
    /// Percent of writes made with sync = true.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(0..=100))]
    sync_percent: u32,
    /// Options::write_buffer_size in bytes.
    #[arg(long, default_value_t = 256 << 10)]
    write_buffer_size: usize,
    /// More engine options by name, applied last: "key=value;key=value" (docs/tuning.md).
    #[arg(long)]
    options: Option<String>,
    /// Seconds between crash images.
    #[arg(long, default_value_t = 2.0)]
    image_secs: f64,
    /// Shortest pause before the next fault is armed, in ms.
    #[arg(long, default_value_t = 50)]
    fault_min_ms: u64,
    /// Longest pause before the next fault is armed, in ms.
    #[arg(long, default_value_t = 600)]
    fault_max_ms: u64,
    /// The fault log [default: strata-faults-<seed>.log in the temporary directory].
    #[arg(long)]
    log: Option<PathBuf>,
    /// Where a failing crash image is written (image-<n>/) [default: beside the log].
    #[arg(long)]
    dump_dir: Option<PathBuf>,
    /// Keep going after a failing crash image (the run still exits non-zero at the end).
    #[arg(long)]
    keep_going: bool,
    /// Also print every fault-log line to stdout.
    #[arg(long)]
    verbose: bool,
    /// Accept a known engine issue instead of failing: after a WAL append that failed part way
    /// (a torn write or ENOSPC) less than 16 bytes short of a record's end, open reports
    /// Corruption. When the WAL's bytes show exactly that, reopen in salvage mode, count it
    /// and go on.
    #[arg(long)]
    tolerate_short_append: bool,
}

/// The resolved configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Wall-clock length of the run.
    pub duration: Duration,
    /// Worker threads.
    pub threads: u64,
    /// Key space size.
    pub keys: u64,
    /// The run's seed.
    pub seed: u64,
    /// Percent of synced writes.
    pub sync_percent: u32,
    /// `Options::write_buffer_size`.
    pub write_buffer_size: usize,
    /// Extra options.
    pub options: Option<String>,
    /// Time between crash images.
    pub image_every: Duration,
    /// Pause range before arming a fault, in ms.
    pub fault_ms: (u64, u64),
    /// The fault log.
    pub log: PathBuf,
    /// Where failing images go.
    pub dump_dir: PathBuf,
    /// Go on after a failing image.
    pub keep_going: bool,
    /// Echo the log.
    pub verbose: bool,
    /// Salvage the short-append corruption instead of failing.
    pub tolerate_short_append: bool,
}

impl FaultArgs {
    /// Resolves defaults (the seed from the clock, the log in the temporary directory).
    pub fn config(&self) -> Config {
        let seed = self.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        let log = self
            .log
            .clone()
            .unwrap_or_else(|| std::env::temp_dir().join(format!("strata-faults-{seed}.log")));
        let dump_dir = self.dump_dir.clone().unwrap_or_else(|| {
            let mut s = log.clone().into_os_string();
            s.push(".images");
            PathBuf::from(s)
        });
        Config {
            duration: Duration::from_secs_f64(self.duration.max(0.0)),
            threads: self.threads.max(1),
            keys: self.keys.max(1),
            seed,
            sync_percent: self.sync_percent,
            write_buffer_size: self.write_buffer_size,
            options: self.options.clone(),
            image_every: Duration::from_secs_f64(self.image_secs.max(0.05)),
            fault_ms: (self.fault_min_ms, self.fault_max_ms),
            log,
            dump_dir,
            keep_going: self.keep_going,
            verbose: self.verbose,
            tolerate_short_append: self.tolerate_short_append,
        }
    }
}

/// Counters printed in the summary.
#[derive(Default)]
pub struct Stats {
    /// Worker operations completed.
    pub ops: AtomicU64,
    /// Key writes acknowledged.
    pub writes_acked: AtomicU64,
    /// Key writes that returned an (expected) error.
    pub writes_failed: AtomicU64,
    /// Writes not issued because the database was read-only.
    pub writes_skipped: AtomicU64,
    /// Values read and checked.
    pub reads_verified: AtomicU64,
    /// Reads that returned an (expected) error.
    pub read_errors: AtomicU64,
    /// Range scans checked.
    pub scans: AtomicU64,
    /// Snapshot read rounds checked.
    pub snapshots: AtomicU64,
    /// Successful flushes.
    pub flushes: AtomicU64,
    /// Successful compact_range calls.
    pub compactions: AtomicU64,
    /// Successful sync_wal calls.
    pub sync_wals: AtomicU64,
    /// Checkpoints taken and read back.
    pub checkpoints: AtomicU64,
    /// Faults armed, by `injector::KINDS`.
    pub armed: [AtomicU64; injector::KINDS.len()],
    /// Faults that fired, by `injector::KINDS`.
    pub fired: [AtomicU64; injector::KINDS.len()],
    /// Faults taken back unfired.
    pub expired: AtomicU64,
}

/// The database's filesystem: the `MemFs` it lives on and the `FaultFs` it sees. Replaced when a
/// process crash is simulated; `epoch` counts the replacements.
pub struct Env {
    mem: MemFs,
    fs: FaultFs,
    epoch: u64,
}

/// Everything the threads share.
pub struct Shared {
    cfg: Config,
    state: State,
    db: RwLock<Option<Db>>,
    env: Mutex<Env>,
    /// Held while a fault is armed, and by the coordinator while it lifts faults and recovers.
    gate: Mutex<()>,
    /// Set by a worker whose write, flush or compaction failed: the coordinator should look.
    read_only: AtomicBool,
    /// Workers wait before their next operation while set (the coordinator wants the database).
    pause: AtomicBool,
    stop: AtomicBool,
    stats: Stats,
    errors: ErrorCounts,
    log: FaultLog,
    /// When a read fault was last armed or fired.
    last_read_fault: Mutex<Option<Instant>>,
}

impl Shared {
    /// The current `FaultFs` and its epoch.
    fn current_fs(&self) -> (FaultFs, u64) {
        let env = self.env.lock().unwrap_or_else(|e| e.into_inner());
        (env.fs.clone(), env.epoch)
    }

    /// The current `MemFs`.
    fn current_mem(&self) -> MemFs {
        self.env.lock().unwrap_or_else(|e| e.into_inner()).mem.clone()
    }

    /// Prints the seed, the failure and the fault log, and exits with the failure's code.
    fn die(&self, f: &Failure) -> ! {
        eprintln!(
            "FAILED: faults seed={} (rerun: strata-stress faults --seed {} ...)",
            self.cfg.seed, self.cfg.seed
        );
        eprintln!("{}", self.log.dump());
        self.log.line(&format!("FAILED: {f}"));
        f.exit()
    }
}

/// The engine options of the database under test, on `fs`.
fn db_options(cfg: &Config, fs: FaultFs) -> Result<strata::Options, Failure> {
    let opts = crate::run::db_options(cfg.write_buffer_size, cfg.options.as_deref())?;
    Ok(strata::Options { fs: Arc::new(fs), ..opts })
}

/// `strata-stress faults`.
pub fn run(args: &FaultArgs) -> Result<(), Failure> {
    let cfg = args.config();
    strata_testkit::watch_background_panics();
    let log = FaultLog::create(&cfg.log, cfg.verbose)
        .map_err(|e| Failure::Tool(format!("fault log {}: {e}", cfg.log.display())))?;
    println!("seed={} log={}", cfg.seed, cfg.log.display());
    log.line(&format!("start: {cfg:?}"));
    let mem = MemFs::new();
    let fs = FaultFs::new(Arc::new(mem.clone()));
    let db = Db::open(recovered::db_dir(), db_options(&cfg, fs.clone())?)?;
    let sh = Shared {
        state: State::new(cfg.keys),
        db: RwLock::new(Some(db)),
        env: Mutex::new(Env { mem, fs, epoch: 0 }),
        gate: Mutex::default(),
        read_only: AtomicBool::new(false),
        pause: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        stats: Stats::default(),
        errors: ErrorCounts::default(),
        log,
        last_read_fault: Mutex::default(),
        cfg,
    };
    let start = Instant::now();
    let report = std::thread::scope(|s| {
        let workers: Vec<_> = (0..sh.cfg.threads)
            .map(|id| {
                s.spawn({
                    let sh = &sh;
                    move || worker_loop(sh, id)
                })
            })
            .collect();
        let injector = s.spawn(|| injector::run(&sh, sh.cfg.seed ^ 0xfa17_5eed));
        let result = coord::Coordinator::new(&sh).run(&workers);
        sh.stop.store(true, Ordering::SeqCst);
        injector.join().unwrap_or_else(|_| sh.die(&Failure::Tool("the fault thread panicked".into())));
        for w in workers {
            w.join()
                .unwrap_or_else(|_| sh.die(&Failure::Engine("a worker thread panicked (see above)".into())));
        }
        result
    });
    let report = report.unwrap_or_else(|f| sh.die(&f));
    print_summary(&sh, &report, start.elapsed());
    if report.image_failures > 0 {
        let f = Failure::Mismatch(format!(
            "{} crash image(s) failed their check (see above)",
            report.image_failures
        ));
        sh.die(&f);
    }
    Ok(())
}

fn worker_loop(sh: &Shared, id: u64) {
    let mut w = worker::Worker::new(sh, sh.cfg.seed, id);
    while !sh.stop.load(Ordering::Relaxed) {
        if sh.pause.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        let guard = sh.db.read().unwrap_or_else(|e| e.into_inner());
        let Some(db) = guard.as_ref() else {
            drop(guard);
            std::thread::sleep(Duration::from_millis(1));
            continue;
        };
        if let Err(f) = w.step(db) {
            sh.die(&f);
        }
    }
}

fn print_summary(sh: &Shared, r: &coord::Report, elapsed: Duration) {
    let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let st = &sh.stats;
    println!(
        "faults: seed={} threads={} keys={} sync_percent={} seconds={:.1} ops={} writes_acked={} writes_failed={} \
         writes_skipped={} reads_verified={} read_errors={} scans={} snapshots={} flushes={} compactions={} sync_wals={} checkpoints={}",
        sh.cfg.seed,
        sh.cfg.threads,
        sh.cfg.keys,
        sh.cfg.sync_percent,
        elapsed.as_secs_f64(),
        g(&st.ops),
        g(&st.writes_acked),
        g(&st.writes_failed),
        g(&st.writes_skipped),
        g(&st.reads_verified),
        g(&st.read_errors),
        g(&st.scans),
        g(&st.snapshots),
        g(&st.flushes),
        g(&st.compactions),
        g(&st.sync_wals),
        g(&st.checkpoints)
    );
    let kinds: Vec<String> = injector::KINDS
        .iter()
        .map(|k| {
            format!(
                "{}={}/{}",
                format!("{k:?}").to_lowercase(),
                g(&st.fired[k.index()]),
                g(&st.armed[k.index()])
            )
        })
        .collect();
    let fired: u64 = st.fired.iter().map(g).sum();
    println!(
        "faults-injected: total={fired} {} expired={} (fired/armed by kind)",
        kinds.join(" "),
        g(&st.expired)
    );
    println!(
        "faults-recovery: images={} (power={} process={} short_of_acked={} short_with_clean_report={} with_report={} failed={}) \
         resumes={} reopens={} (process_crash={} clean_close={} history_limit={}) short_append_salvages={} final={}",
        r.images_power + r.images_process,
        r.images_power,
        r.images_process,
        r.images_short,
        r.images_short_clean,
        r.images_reported,
        r.image_failures,
        r.resumes,
        r.reopens_crash + r.reopens_close,
        r.reopens_crash,
        r.reopens_close,
        r.reopens_history,
        r.short_appends,
        r.final_check
    );
    print!("faults-errors (expected, by where seen and class):\n{}", sh.errors.render());
}
