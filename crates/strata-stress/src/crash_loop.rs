//! The `crash-loop` command (db_crashtest.py's blackbox mode): start `strata-stress run` as a
//! child, SIGKILL it after a random delay so the database is never closed, run `--verify-only`
//! against the same database and oracle, and repeat. A child that exits by itself, or a
//! verification that fails, ends the loop with a nonzero exit code (3 for a mismatch).
//!
//! This module must not open the database or the oracle itself: children do all the work, so a
//! kill always hits a process that really holds the engine.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::failure::{Failure, EXIT_ENGINE, EXIT_MISMATCH};

/// Settings of the loop itself.
#[derive(Debug, Clone)]
pub struct LoopConfig {
    /// Kill/verify cycles.
    pub cycles: u32,
    /// Shortest delay before the kill.
    pub min_ms: u64,
    /// Longest delay before the kill.
    pub max_ms: u64,
    /// Seed for the kill delays; cycle `i`'s child runs with seed `seed + i`.
    pub seed: u64,
    /// Arguments shared by the `run` children and the verifier (`--db`, `--keys`, `--sync`, ...),
    /// without `--seed`.
    pub child_args: Vec<String>,
}

/// Figures parsed from a child's `key=value` line.
#[derive(Debug, Clone, Default)]
struct Fields(Vec<(String, u64)>);

impl Fields {
    fn parse(line: &str) -> Fields {
        Fields(
            line.split_whitespace()
                .filter_map(|w| w.split_once('='))
                .filter_map(|(k, v)| v.parse().ok().map(|v| (k.to_string(), v)))
                .collect(),
        )
    }

    fn get(&self, name: &str) -> u64 {
        self.0.iter().find(|(k, _)| k == name).map_or(0, |(_, v)| *v)
    }
}

/// Running totals.
#[derive(Debug, Default)]
struct Totals {
    acked_writes: u64,
    ops: u64,
    reads_verified: u64,
    keys_verified: u64,
    pending: u64,
}

/// Runs the loop; prints one line per cycle and a total line.
pub fn crash_loop(cfg: &LoopConfig) -> Result<(), Failure> {
    let start = Instant::now();
    let mut rng = fastrand::Rng::with_seed(cfg.seed);
    // Verifying first resolves anything an earlier interrupted loop left in flight and gives the
    // acknowledged-write count this loop starts from.
    let mut acked_before = verify(cfg)?.get("acked_writes");
    let mut t = Totals::default();
    for cycle in 0..cfg.cycles {
        let delay = rng.u64(cfg.min_ms..=cfg.max_ms.max(cfg.min_ms));
        let progress = run_and_kill(cfg, cycle, Duration::from_millis(delay))?;
        let v = verify(cfg).map_err(|f| at_cycle(f, cycle))?;
        let acked = v.get("acked_writes") - acked_before;
        acked_before = v.get("acked_writes");
        t.acked_writes += acked;
        t.ops += progress.get("ops");
        t.reads_verified += progress.get("reads_verified");
        t.keys_verified += v.get("keys");
        t.pending += v.get("pending");
        println!(
            "cycle {}/{}: killed after {delay} ms; acked_writes={acked} ops>={} reads_verified>={} in_flight_at_kill={} \
             (applied {}) keys_verified={} mismatches=0",
            cycle + 1,
            cfg.cycles,
            progress.get("ops"),
            progress.get("reads_verified"),
            v.get("pending"),
            v.get("pending_applied"),
            v.get("keys")
        );
    }
    println!(
        "crash-loop: cycles={} acked_writes={} acked_writes_lost=0 ops>={} reads_verified>={} keys_verified={} \
         in_flight_at_kill={} mismatches=0 seconds={:.1}",
        cfg.cycles,
        t.acked_writes,
        t.ops,
        t.reads_verified,
        t.keys_verified,
        t.pending,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

fn at_cycle(f: Failure, cycle: u32) -> Failure {
    match f {
        Failure::Mismatch(m) => Failure::Mismatch(format!("cycle {}: {m}", cycle + 1)),
        Failure::Engine(m) => Failure::Engine(format!("cycle {}: {m}", cycle + 1)),
        Failure::Tool(m) => Failure::Tool(format!("cycle {}: {m}", cycle + 1)),
    }
}

fn child(cfg: &LoopConfig, extra: &[String]) -> Result<Command, Failure> {
    let exe = std::env::current_exe().map_err(|e| Failure::Tool(format!("current_exe: {e}")))?;
    let mut c = Command::new(exe);
    c.arg("run").args(&cfg.child_args).args(extra);
    Ok(c)
}

/// Starts a `run` child, kills it after `delay`, and returns its last progress line's figures.
fn run_and_kill(cfg: &LoopConfig, cycle: u32, delay: Duration) -> Result<Fields, Failure> {
    let seed = cfg.seed.wrapping_add(u64::from(cycle) + 1).to_string();
    // The run would take days: it must be the kill that ends it.
    let extra = ["--seed", &seed, "--duration", "1000000", "--progress-ms", "20"].map(String::from);
    let mut child = child(cfg, &extra)?
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| Failure::Tool(format!("spawn run: {e}")))?;
    let reader = last_progress(&mut child);
    let deadline = Instant::now() + delay;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().map_err(|e| Failure::Tool(e.to_string()))? {
            let _ = reader.join();
            return Err(early_exit(status.code(), cycle));
        }
        std::thread::sleep(Duration::from_millis(5).min(deadline.saturating_duration_since(Instant::now())));
    }
    // Child::kill sends SIGKILL on Unix: no handler runs, the database is never closed.
    child.kill().map_err(|e| Failure::Tool(format!("kill: {e}")))?;
    child.wait().map_err(|e| Failure::Tool(e.to_string()))?;
    Ok(reader.join().unwrap_or_default())
}

fn early_exit(code: Option<i32>, cycle: u32) -> Failure {
    let m =
        format!("cycle {}: run child exited before the kill with {code:?} (see its output above)", cycle + 1);
    match code {
        Some(EXIT_MISMATCH) => Failure::Mismatch(m),
        Some(EXIT_ENGINE) => Failure::Engine(m),
        _ => Failure::Tool(m),
    }
}

/// Reads the child's stdout on a thread, keeping the last `progress` line and echoing any other
/// line (a mismatch report, for instance).
fn last_progress(child: &mut Child) -> JoinHandle<Fields> {
    let stdout = child.stdout.take().expect("stdout is piped");
    std::thread::spawn(move || {
        let mut last = Fields::default();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            match line.strip_prefix("progress ") {
                Some(p) => last = Fields::parse(p),
                None => println!("  child: {line}"),
            }
        }
        last
    })
}

/// Runs `run --verify-only` and returns the figures of its `verify:` line.
fn verify(cfg: &LoopConfig) -> Result<Fields, Failure> {
    let out = child(cfg, &["--verify-only".to_string()])?
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| Failure::Tool(format!("spawn verify: {e}")))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    match out.status.code() {
        Some(0) => {}
        Some(EXIT_MISMATCH) => {
            return Err(Failure::Mismatch(format!(
                "verify-only failed (its report is on stderr above) {}",
                stdout.trim()
            )))
        }
        Some(EXIT_ENGINE) => {
            return Err(Failure::Engine(format!(
                "verify-only failed (its report is on stderr above) {}",
                stdout.trim()
            )))
        }
        code => return Err(Failure::Tool(format!("verify-only exited with {code:?}: {}", stdout.trim()))),
    }
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("verify: "))
        .ok_or_else(|| Failure::Tool(format!("verify-only printed no figures: {stdout}")))?;
    Ok(Fields::parse(line))
}
