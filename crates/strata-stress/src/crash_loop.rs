//! The crash loops (db_crashtest.py): start `strata-stress run` as a child, let it die without
//! closing the database, run `--verify-only` against the same database and oracle, and repeat.
//! How the child dies and with what it runs depends on the loop:
//!
//! - `crash-loop` (blackbox): SIGKILL after a random delay.
//! - `crash-loop --kill-points` (whitebox): the child is armed at one of the engine's kill points
//!   (see `kill_points`) and kills itself there; SIGKILL after `--max-ms` if it did not. At the
//!   end a table says how often each point fired, and a point that never did fails the loop.
//! - `crash-test`: each cycle's engine options, write mode and kill delay are drawn from the seed
//!   and the cycle number (see `crash_test`) and printed; `--kill-points` arms kill points too.
//!   A last verification reopens the database with the base options.
//!
//! A child that exits by itself, or a verification that fails, ends the loop with a nonzero exit
//! code (3 for a mismatch). This module must not open the database or the oracle itself:
//! children do all the work, so a kill always hits a process that really holds the engine.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::crash_test;
use crate::failure::{Failure, EXIT_ENGINE, EXIT_MISMATCH};
use crate::kill_points::{KillPoints, ENV_VARS};
use crate::worker::WriteMode;

/// The flags every child of a loop gets (`--seed` and the run-only flags aside).
#[derive(Debug, Clone)]
pub struct ChildSpec {
    /// Database directory.
    pub db: PathBuf,
    /// Oracle directory.
    pub expected: PathBuf,
    /// Worker threads.
    pub threads: u64,
    /// Key space size.
    pub keys: u64,
    /// `Options::write_buffer_size`.
    pub write_buffer_size: usize,
    /// Synced share and `disable_wal`.
    pub write_mode: WriteMode,
    /// Checkpoints per 10,000 operations.
    pub checkpoints_per_10k: u32,
    /// fdatasync the oracle after every intent.
    pub oracle_fsync: bool,
    /// More engine options, `key=value;...`.
    pub options: Option<String>,
    /// Column families, default included.
    pub families: usize,
}

impl ChildSpec {
    /// The command-line flags.
    pub fn args(&self) -> Vec<String> {
        let mut a: Vec<String> = vec![
            "--db".into(),
            self.db.display().to_string(),
            "--expected".into(),
            self.expected.display().to_string(),
            "--threads".into(),
            self.threads.to_string(),
            "--keys".into(),
            self.keys.to_string(),
            "--write-buffer-size".into(),
            self.write_buffer_size.to_string(),
            "--sync-percent".into(),
            self.write_mode.sync_percent.to_string(),
            "--checkpoints-per-10k".into(),
            self.checkpoints_per_10k.to_string(),
        ];
        if self.write_mode.disable_wal {
            a.push("--disable-wal".into());
        }
        if self.oracle_fsync {
            a.push("--oracle-fsync".into());
        }
        if let Some(options) = &self.options {
            a.push("--options".into());
            a.push(options.clone());
        }
        if self.families > 1 {
            a.extend(["--column-families".into(), self.families.to_string()]);
            a.extend(["--cf-drops-per-10k".into(), self.write_mode.cf_drops_per_10k.to_string()]);
        }
        a
    }
}

/// Which loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopKind {
    /// `crash-loop`, killed by the parent after a random delay.
    Blackbox,
    /// `crash-loop --kill-points`.
    KillPoints,
    /// `crash-test`, with kill points armed too or not.
    CrashTest {
        /// Arm kill points as `crash-loop --kill-points` does.
        kill_points: bool,
    },
}

/// Settings of the loop itself.
#[derive(Debug, Clone)]
pub struct LoopConfig {
    /// Which loop.
    pub kind: LoopKind,
    /// Kill/verify cycles.
    pub cycles: u32,
    /// Number of the first cycle (0-based): `crash-test` replays cycle C's options with C.
    pub first_cycle: u32,
    /// Shortest delay before the kill.
    pub min_ms: u64,
    /// Longest delay before the kill (with kill points: the fallback when none fired).
    pub max_ms: u64,
    /// Seed for the kill delays, arming and options; cycle `i`'s child runs with seed `seed + i + 1`.
    pub seed: u64,
    /// The children's flags (a `crash-test` cycle draws its own on top of them).
    pub spec: ChildSpec,
}

/// What one cycle runs.
struct Plan {
    spec: ChildSpec,
    delay: Duration,
    env: Vec<(String, String)>,
    armed: Option<String>,
}

/// How a cycle's child ended.
struct Ending {
    progress: Fields,
    ran: Duration,
    /// The kill point it died at; None when the parent killed it.
    fired: Option<String>,
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
    unlogged_cycles: u64,
    unlogged_reverted: u64,
    drops: u64,
    cross_family_batches: u64,
    drop_in_flight: u64,
    drop_applied: u64,
}

/// Runs the loop; prints one line per cycle (and, for `crash-test`, each cycle's options first)
/// and a total line.
pub fn crash_loop(cfg: &LoopConfig) -> Result<(), Failure> {
    let start = Instant::now();
    let mut rng = fastrand::Rng::with_seed(cfg.seed);
    let arm = matches!(cfg.kind, LoopKind::KillPoints | LoopKind::CrashTest { kill_points: true });
    let mut kill_points = arm.then(|| KillPoints::new(cfg.seed, &cfg.spec.expected)).transpose()?;
    // Verifying first resolves anything an earlier interrupted loop left in flight and gives the
    // acknowledged-write count this loop starts from.
    let mut acked_before = verify(&cfg.spec)?.get("acked_writes");
    let mut t = Totals::default();
    for cycle in cfg.first_cycle..cfg.first_cycle.saturating_add(cfg.cycles) {
        let plan = plan(cfg, cycle, &mut rng, kill_points.as_mut())?;
        let ending = run_and_kill(&plan, cfg.seed, cycle)?;
        let fired = match kill_points.as_mut() {
            Some(k) => k.outcome(ending.ran)?,
            None => None,
        };
        let ending = Ending { fired, ..ending };
        let v = verify(&plan.spec).map_err(|f| at_cycle(f, cycle, &plan, &ending))?;
        let acked = v.get("acked_writes") - acked_before;
        acked_before = v.get("acked_writes");
        t.add(acked, &ending.progress, &v, plan.spec.write_mode.disable_wal);
        print_cycle(cfg, cycle, &plan, &ending, acked, &v);
    }
    if let LoopKind::CrashTest { .. } = cfg.kind {
        let v = verify(&cfg.spec)?;
        println!("final verify with the base options: keys={} mismatches=0", v.get("keys"));
    }
    print_totals(cfg, &t, start.elapsed());
    match &kill_points {
        Some(k) => k.report(),
        None => Ok(()),
    }
}

impl Totals {
    fn add(&mut self, acked: u64, progress: &Fields, v: &Fields, unlogged: bool) {
        self.acked_writes += acked;
        self.ops += progress.get("ops");
        self.reads_verified += progress.get("reads_verified");
        self.keys_verified += v.get("keys");
        self.pending += v.get("pending");
        self.unlogged_cycles += u64::from(unlogged);
        self.unlogged_reverted += v.get("unlogged_reverted");
        self.drops += progress.get("drops");
        self.cross_family_batches += progress.get("cross_family_batches");
        self.drop_in_flight += v.get("drop_in_flight");
        self.drop_applied += v.get("drop_applied");
    }
}

/// Cycle `cycle`'s child flags, kill delay and kill-point arming.
fn plan(
    cfg: &LoopConfig,
    cycle: u32,
    rng: &mut fastrand::Rng,
    kp: Option<&mut KillPoints>,
) -> Result<Plan, Failure> {
    let (spec, mut delay) = match cfg.kind {
        LoopKind::CrashTest { .. } => {
            let d = crash_test::draw(&cfg.spec, cfg.seed, cycle, cfg.min_ms, cfg.max_ms);
            println!(
                "cycle {}/{} options: {} (these again: --seed {} --first-cycle {cycle} --cycles 1)",
                cycle + 1,
                cfg.first_cycle + cfg.cycles,
                d.describe,
                cfg.seed
            );
            (d.spec, d.delay)
        }
        _ => (cfg.spec.clone(), Duration::from_millis(rng.u64(cfg.min_ms..=cfg.max_ms.max(cfg.min_ms)))),
    };
    let (env, armed) = match kp {
        Some(k) => {
            let a = k.arm(cycle)?;
            (a.env, Some(a.describe))
        }
        None => (Vec::new(), None),
    };
    if cfg.kind == LoopKind::KillPoints {
        // The kill point should end the child; the timer only stops one whose point is not reached.
        delay = Duration::from_millis(cfg.max_ms);
    }
    Ok(Plan { spec, delay, env, armed })
}

fn print_cycle(cfg: &LoopConfig, cycle: u32, plan: &Plan, e: &Ending, acked: u64, v: &Fields) {
    let unlogged = if plan.spec.write_mode.disable_wal {
        format!(" unlogged_keys={} unlogged_reverted={}", v.get("unlogged_keys"), v.get("unlogged_reverted"))
    } else {
        String::new()
    };
    let families = if plan.spec.families > 1 {
        format!(
            " drops>={} cross_family_batches>={} drop_in_flight_at_kill={} (applied {})",
            e.progress.get("drops"),
            e.progress.get("cross_family_batches"),
            v.get("drop_in_flight"),
            v.get("drop_applied")
        )
    } else {
        String::new()
    };
    println!(
        "cycle {}/{}: {}; acked_writes={acked} ops>={} reads_verified>={} in_flight_at_kill={} (applied {}){unlogged}\
         {families} keys_verified={} mismatches=0",
        cycle + 1,
        cfg.first_cycle + cfg.cycles,
        how_it_ended(plan, e),
        e.progress.get("ops"),
        e.progress.get("reads_verified"),
        v.get("pending"),
        v.get("pending_applied"),
        v.get("keys")
    );
}

fn how_it_ended(plan: &Plan, e: &Ending) -> String {
    let ms = e.ran.as_millis();
    match (&e.fired, &plan.armed) {
        (Some(point), _) => format!("killed itself at kill point {point} after {ms} ms"),
        (None, Some(armed)) => format!("killed after {ms} ms, no kill point fired ({armed})"),
        (None, None) => format!("killed after {ms} ms"),
    }
}

fn print_totals(cfg: &LoopConfig, t: &Totals, elapsed: Duration) {
    let name = if let LoopKind::CrashTest { .. } = cfg.kind { "crash-test" } else { "crash-loop" };
    let unlogged = if t.unlogged_cycles > 0 {
        format!(" unlogged_cycles={} unlogged_reverted={}", t.unlogged_cycles, t.unlogged_reverted)
    } else {
        String::new()
    };
    let families = if cfg.spec.families > 1 {
        format!(
            " families={} drops>={} cross_family_batches>={} drop_in_flight_at_kill={} drop_found_applied={}",
            cfg.spec.families, t.drops, t.cross_family_batches, t.drop_in_flight, t.drop_applied
        )
    } else {
        String::new()
    };
    println!(
        "{name}: cycles={} acked_writes={} acked_writes_lost=0 ops>={} reads_verified>={} keys_verified={} \
         in_flight_at_kill={}{unlogged}{families} mismatches=0 seconds={:.1}",
        cfg.cycles,
        t.acked_writes,
        t.ops,
        t.reads_verified,
        t.keys_verified,
        t.pending,
        elapsed.as_secs_f64()
    );
}

fn at_cycle(f: Failure, cycle: u32, plan: &Plan, e: &Ending) -> Failure {
    let context =
        format!("cycle {} (child {}; sync={})", cycle + 1, how_it_ended(plan, e), plan.spec.write_mode);
    match f {
        Failure::Mismatch(m) => Failure::Mismatch(format!("{context}: {m}")),
        Failure::Engine(m) => Failure::Engine(format!("{context}: {m}")),
        Failure::Tool(m) => Failure::Tool(format!("{context}: {m}")),
        Failure::Coverage(m) => Failure::Coverage(format!("{context}: {m}")),
    }
}

/// A `run` child with `spec`'s flags and no kill point armed (the parent may have been started
/// with the variables set).
fn child(spec: &ChildSpec, extra: &[String]) -> Result<Command, Failure> {
    let exe = std::env::current_exe().map_err(|e| Failure::Tool(format!("current_exe: {e}")))?;
    let mut c = Command::new(exe);
    c.arg("run").args(spec.args()).args(extra);
    for var in ENV_VARS {
        c.env_remove(var);
    }
    Ok(c)
}

/// Starts cycle `cycle`'s `run` child and waits until it dies or `plan.delay` passes, then kills
/// it; returns its last progress line's figures and how long it ran.
fn run_and_kill(plan: &Plan, seed: u64, cycle: u32) -> Result<Ending, Failure> {
    let seed = seed.wrapping_add(u64::from(cycle) + 1).to_string();
    // The run would take days: it must be a kill that ends it.
    let extra = ["--seed", &seed, "--duration", "1000000", "--progress-ms", "20"].map(String::from);
    let mut child = child(&plan.spec, &extra)?
        .envs(plan.env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| Failure::Tool(format!("spawn run: {e}")))?;
    let reader = last_progress(&mut child);
    let started = Instant::now();
    let deadline = started + plan.delay;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().map_err(|e| Failure::Tool(e.to_string()))? {
            let progress = reader.join().unwrap_or_default();
            return died_by_itself(status, cycle, plan).map(|()| Ending {
                progress,
                ran: started.elapsed(),
                fired: None,
            });
        }
        std::thread::sleep(Duration::from_millis(5).min(deadline.saturating_duration_since(Instant::now())));
    }
    // Child::kill sends SIGKILL on Unix: no handler runs, the database is never closed.
    let ran = started.elapsed();
    child.kill().map_err(|e| Failure::Tool(format!("kill: {e}")))?;
    child.wait().map_err(|e| Failure::Tool(e.to_string()))?;
    Ok(Ending { progress: reader.join().unwrap_or_default(), ran, fired: None })
}

/// A child that ended before the deadline: fine only if it was armed and died by SIGKILL (its
/// own, at a kill point; the caller reads which from the log).
fn died_by_itself(status: ExitStatus, cycle: u32, plan: &Plan) -> Result<(), Failure> {
    if plan.armed.is_some() && status.signal() == Some(9) {
        return Ok(());
    }
    let code = status.code();
    let m =
        format!("cycle {}: run child exited before the kill with {status} (see its output above)", cycle + 1);
    Err(match code {
        Some(EXIT_MISMATCH) => Failure::Mismatch(m),
        Some(EXIT_ENGINE) => Failure::Engine(m),
        _ => Failure::Tool(m),
    })
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

/// Runs `run --verify-only` with `spec`'s flags and returns the figures of its `verify:` line.
fn verify(spec: &ChildSpec) -> Result<Fields, Failure> {
    let out = child(spec, &["--verify-only".to_string()])?
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| Failure::Tool(format!("spawn verify: {e}")))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let failed = |what: fn(String) -> Failure| {
        Err(what(format!("verify-only failed (its report is on stderr above) {}", stdout.trim())))
    };
    match out.status.code() {
        Some(0) => {}
        Some(EXIT_MISMATCH) => return failed(Failure::Mismatch),
        Some(EXIT_ENGINE) => return failed(Failure::Engine),
        code => return Err(Failure::Tool(format!("verify-only exited with {code:?}: {}", stdout.trim()))),
    }
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("verify: "))
        .ok_or_else(|| Failure::Tool(format!("verify-only printed no figures: {stdout}")))?;
    Ok(Fields::parse(line))
}
