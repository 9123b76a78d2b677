//! `strata-stress`: a db_stress-like concurrent stress tool for strata with an expected-state
//! oracle (`run`, `run --verify-only`), a blackbox crash-loop driver (`crash-loop`), and an
//! in-memory run under random IO faults with crash images (`faults`).
//!
//! This file owns the command line only: it parses flags into the configs of `run` and
//! `crash_loop` and maps failures to exit codes (3 = mismatch, 2 = engine error, 1 = tool error).
//! It must not contain test logic.

mod crash_loop;
mod failure;
mod faults;
mod model;
mod oracle;
mod run;
mod verify;
mod worker;

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{Args, Parser, Subcommand};

use crate::failure::Failure;

#[derive(Parser)]
#[command(
    name = "strata-stress",
    about = "Concurrent stress and crash tests for strata against an expected-state oracle"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run threads of random operations, verifying every read; or verify the whole database.
    Run(RunArgs),
    /// Repeatedly run, SIGKILL after a random delay, and verify.
    CrashLoop(LoopArgs),
    /// Run in memory on a fault-injecting filesystem: random faults, resume or reopen after
    /// each error, crash images checked while writers run.
    Faults(faults::FaultArgs),
}

/// Flags shared by `run` and `crash-loop` (which passes them on to its children).
#[derive(Args, Clone)]
struct Common {
    /// Database directory.
    #[arg(long)]
    db: PathBuf,
    /// Oracle directory [default: <db>.expected].
    #[arg(long)]
    expected: Option<PathBuf>,
    /// Worker threads.
    #[arg(long, default_value_t = 4)]
    threads: u64,
    /// Key space size.
    #[arg(long, default_value_t = 10_000)]
    keys: u64,
    /// Writes with WriteOptions::sync = true (the default).
    #[arg(long, conflicts_with = "no_sync")]
    sync: bool,
    /// Writes with sync = false: WAL written but not fsynced before the ack.
    #[arg(long)]
    no_sync: bool,
    /// Seed [default: from the clock; printed].
    #[arg(long)]
    seed: Option<u64>,
    /// Options::write_buffer_size in bytes.
    #[arg(long, default_value_t = 256 << 10)]
    write_buffer_size: usize,
    /// More engine options by name, applied last: "key=value;key=value" (docs/tuning.md).
    #[arg(long)]
    options: Option<String>,
    /// fdatasync the oracle after every intent record (only matters for power loss).
    #[arg(long)]
    oracle_fsync: bool,
    /// Checkpoints per 10,000 operations: each is taken, opened and read back, then deleted.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=10_000))]
    checkpoints_per_10k: u32,
}

impl Common {
    fn expected(&self) -> PathBuf {
        self.expected.clone().unwrap_or_else(|| {
            let mut s = self.db.clone().into_os_string();
            s.push(".expected");
            PathBuf::from(s)
        })
    }

    fn seed(&self) -> u64 {
        self.seed.unwrap_or_else(|| {
            SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
        })
    }

    /// The flags a child process needs to act on the same database and oracle, seed excluded.
    fn child_args(&self) -> Vec<String> {
        let mut a = vec![
            "--db".into(),
            self.db.display().to_string(),
            "--expected".into(),
            self.expected().display().to_string(),
            "--threads".into(),
            self.threads.to_string(),
            "--keys".into(),
            self.keys.to_string(),
            "--write-buffer-size".into(),
            self.write_buffer_size.to_string(),
            if self.no_sync { "--no-sync" } else { "--sync" }.into(),
            "--checkpoints-per-10k".into(),
            self.checkpoints_per_10k.to_string(),
        ];
        if self.oracle_fsync {
            a.push("--oracle-fsync".into());
        }
        if let Some(options) = &self.options {
            a.push("--options".into());
            a.push(options.clone());
        }
        a
    }
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    common: Common,
    /// Total operations over all threads [default: 10000 unless --duration is given].
    #[arg(long)]
    ops: Option<u64>,
    /// Run for this many seconds.
    #[arg(long, conflicts_with = "ops")]
    duration: Option<f64>,
    /// Only reopen and verify the whole database against the oracle.
    #[arg(long)]
    verify_only: bool,
    /// Print a progress line every this many milliseconds (0 = never).
    #[arg(long, default_value_t = 0)]
    progress_ms: u64,
}

#[derive(Args)]
struct LoopArgs {
    #[command(flatten)]
    common: Common,
    /// Kill/verify cycles.
    #[arg(long)]
    cycles: u32,
    /// Shortest time a child runs before SIGKILL.
    #[arg(long, default_value_t = 100)]
    min_ms: u64,
    /// Longest time a child runs before SIGKILL.
    #[arg(long, default_value_t = 1500)]
    max_ms: u64,
}

fn run_config(a: &RunArgs) -> run::RunConfig {
    let c = &a.common;
    let seed = c.seed();
    if !a.verify_only {
        println!("seed={seed}");
    }
    run::RunConfig {
        db: c.db.clone(),
        expected: c.expected(),
        threads: c.threads.max(1),
        ops: a.ops.or(if a.duration.is_none() { Some(10_000) } else { None }),
        duration: a.duration.map(Duration::from_secs_f64),
        keys: c.keys.max(1),
        sync: !c.no_sync,
        seed,
        write_buffer_size: c.write_buffer_size,
        options: c.options.clone(),
        oracle_fsync: c.oracle_fsync,
        progress_ms: a.progress_ms,
        checkpoints_per_10k: c.checkpoints_per_10k,
    }
}

fn main() {
    let cli = Cli::parse();
    let result: Result<(), Failure> = match &cli.cmd {
        Cmd::Run(a) if a.verify_only => run::verify_only(&run_config(a)),
        Cmd::Run(a) => run::run(&run_config(a)),
        Cmd::Faults(a) => faults::run(a),
        Cmd::CrashLoop(a) => {
            let seed = a.common.seed();
            println!("seed={seed}");
            crash_loop::crash_loop(&crash_loop::LoopConfig {
                cycles: a.cycles,
                min_ms: a.min_ms,
                max_ms: a.max_ms,
                seed,
                child_args: a.common.child_args(),
            })
        }
    };
    if let Err(f) = result {
        f.exit();
    }
}
