//! `strata-stress`: a db_stress-like concurrent stress tool for strata with an expected-state
//! oracle (`run`, `run --verify-only`), a crash-loop driver killed from outside or at the
//! engine's kill points (`crash-loop`, `crash-loop --kill-points`), a crash driver that draws
//! each cycle's options (`crash-test`), an in-memory run under random IO faults with crash
//! images (`faults`), and bank transfers in transactions under kill -9 cycles (`bank`).
//!
//! This file owns the command line only: it parses flags into the configs of `run` and
//! `crash_loop` and maps failures to exit codes (3 = mismatch, 2 = engine error, 1 = tool error,
//! 4 = a kill point never fired). It must not contain test logic.

mod bank;
mod crash_loop;
mod crash_test;
mod failure;
mod families;
mod faults;
mod history;
mod kill_points;
mod model;
mod oracle;
mod run;
mod verify;
mod worker;

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{Args, Parser, Subcommand};

use crate::crash_loop::{ChildSpec, LoopConfig, LoopKind};
use crate::failure::Failure;
use crate::worker::WriteMode;

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
    /// Repeatedly run, SIGKILL after a random delay (or at a kill point), and verify.
    CrashLoop(LoopArgs),
    /// As crash-loop, with engine options, write mode and kill delay drawn for every cycle.
    CrashTest(TestArgs),
    /// Run in memory on a fault-injecting filesystem: random faults, resume or reopen after
    /// each error, crash images checked while writers run.
    Faults(faults::FaultArgs),
    /// Bank transfers in transactions under kill -9 cycles: the total never changes, every
    /// transfer is all or nothing, every acknowledged one survives.
    Bank(bank::BankArgs),
    /// One child of `bank` (started by it).
    #[command(hide = true)]
    BankChild(bank::ChildArgs),
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
    #[arg(long, conflicts_with_all = ["no_sync", "sync_percent"])]
    sync: bool,
    /// Writes with sync = false: WAL written but not fsynced before the ack.
    #[arg(long, conflicts_with = "sync_percent")]
    no_sync: bool,
    /// This percentage of writes with sync = true, drawn per write.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=100))]
    sync_percent: Option<u32>,
    /// Writes with disable_wal = true: a crash loses what was not flushed, and the verifier
    /// accepts any value a key took since (the unlogged history, docs/durability.md).
    #[arg(long)]
    disable_wal: bool,
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
    /// Column families, default included: keys are spread over them (--keys each), batches
    /// span them, and the last one is dropped and recreated now and then. 1 = the default only.
    #[arg(long, alias = "column_families", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    column_families: u16,
    /// Drops (and recreations) of the last column family per 10,000 operations (with
    /// --column-families 2 or more).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(0..=10_000))]
    cf_drops_per_10k: u32,
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

    fn write_mode(&self) -> WriteMode {
        let sync_percent = self.sync_percent.unwrap_or(if self.no_sync { 0 } else { 100 });
        WriteMode { sync_percent, disable_wal: self.disable_wal, cf_drops_per_10k: self.cf_drops_per_10k }
    }

    /// The flags a child process needs to act on the same database and oracle, seed excluded.
    fn child_spec(&self) -> ChildSpec {
        ChildSpec {
            db: self.db.clone(),
            expected: self.expected(),
            threads: self.threads,
            keys: self.keys,
            write_buffer_size: self.write_buffer_size,
            write_mode: self.write_mode(),
            checkpoints_per_10k: self.checkpoints_per_10k,
            oracle_fsync: self.oracle_fsync,
            options: self.options.clone(),
            families: usize::from(self.column_families),
        }
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
    /// Longest time a child runs before SIGKILL (with --kill-points: the time given to the
    /// armed point to fire before the SIGKILL).
    #[arg(long, default_value_t = 1500)]
    max_ms: u64,
    /// Arm the engine's kill points (a build with `--features kill-points`): each cycle's child
    /// kills itself at one, and a table of the points that fired ends the loop, which fails
    /// (exit 4) if some point never fired.
    #[arg(long)]
    kill_points: bool,
}

#[derive(Args)]
struct TestArgs {
    #[command(flatten)]
    looping: LoopArgs,
    /// Number of the first cycle (0-based): `--seed S --first-cycle C --cycles 1` draws cycle C's
    /// options again (the line of cycle C+1 in a loop's output).
    #[arg(long, default_value_t = 0)]
    first_cycle: u32,
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
        write_mode: c.write_mode(),
        seed,
        write_buffer_size: c.write_buffer_size,
        options: c.options.clone(),
        oracle_fsync: c.oracle_fsync,
        progress_ms: a.progress_ms,
        checkpoints_per_10k: c.checkpoints_per_10k,
        families: usize::from(c.column_families),
    }
}

fn loop_config(a: &LoopArgs, kind: LoopKind, first_cycle: u32) -> LoopConfig {
    let seed = a.common.seed();
    println!("seed={seed}");
    LoopConfig {
        kind,
        cycles: a.cycles,
        first_cycle,
        min_ms: a.min_ms,
        max_ms: a.max_ms,
        seed,
        spec: a.common.child_spec(),
    }
}

fn main() {
    let cli = Cli::parse();
    let result: Result<(), Failure> = match &cli.cmd {
        Cmd::Run(a) if a.verify_only => run::verify_only(&run_config(a)),
        Cmd::Run(a) => run::run(&run_config(a)),
        Cmd::Faults(a) => faults::run(a),
        Cmd::Bank(a) => bank::run(a),
        Cmd::BankChild(a) => Err(bank::run_child(a)),
        Cmd::CrashLoop(a) => {
            let kind = if a.kill_points { LoopKind::KillPoints } else { LoopKind::Blackbox };
            crash_loop::crash_loop(&loop_config(a, kind, 0))
        }
        Cmd::CrashTest(a) => {
            let kind = LoopKind::CrashTest { kill_points: a.looping.kill_points };
            crash_loop::crash_loop(&loop_config(&a.looping, kind, a.first_cycle))
        }
    };
    if let Err(f) = result {
        f.exit();
    }
}
