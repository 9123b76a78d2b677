//! The kill-point side of the crash loops (db_crashtest.py's whitebox mode): which of the
//! engine's kill points (`strata::internal::util::kill_point`) a cycle's child is armed at and with what
//! odds, which one fired, and the table of how often each fired.
//!
//! Each cycle arms one target point, taken round-robin in an order shuffled from the seed (points
//! that have not fired yet first), so every point gets its share of cycles whatever its reach
//! rate; every fifth cycle arms all points at once, so the first one drawn wins as in RocksDB's
//! whitebox runs. The odds of a target are drawn from 1 up to a ceiling per point that fits how
//! often the stress workload reaches it (per write for the WAL, per file or edit for the rest),
//! so the kill lands at a random visit rather than always the first.
//!
//! This module must not spawn processes or open the database; `crash_loop` does.

use std::path::{Path, PathBuf};
use std::time::Duration;

use strata::internal::util::kill_point::{parse_log_line, POINTS};

use crate::failure::Failure;

/// The environment variables the engine reads (`strata::internal::util::kill_point`).
pub const ENV_VARS: [&str; 4] =
    ["STRATA_KILL_ODDS", "STRATA_KILL_POINTS", "STRATA_KILL_SEED", "STRATA_KILL_POINTS_LOG"];

/// The ceiling of the odds drawn when `point` is the target: about the visits the stress
/// workload makes in a second (measured over 500 cycles with 4 threads, 20% synced writes and a
/// 1 KiB MANIFEST: ~4,000/s for each WAL append point, ~900/s for the WAL sync points, blob
/// relocation in bursts averaging ~3,800/s, 20-40/s for the per-file and per-edit points, ~6/s
/// for the CURRENT rename and MANIFEST deletion, which are bursty and get a lower ceiling), so
/// the kill lands anywhere in the child's first second or so, rarely after the `--max-ms` timer.
fn max_odds(point: &str) -> u64 {
    match point {
        p if p.starts_with("wal.append.") => 3000,
        p if p.starts_with("wal.sync.") => 600,
        "blob.relocate" => 300,
        "obsolete.delete.manifest" => 4,
        p if p.starts_with("current.") => 4,
        _ => 20,
    }
}

/// Arming and tallying of kill points over a loop.
pub struct KillPoints {
    rng: fastrand::Rng,
    order: Vec<usize>,
    log: PathBuf,
    targeted: Vec<u64>,
    fired: Vec<u64>,
    by_timer: u64,
    /// Visits of each point in the children that fired, and how long those children ran: the
    /// rates the odds ceilings (`max_odds`) are tuned from.
    reached: Vec<u64>,
    reached_secs: f64,
}

/// What one cycle's child is armed with.
pub struct Arming {
    /// Environment of the `run` child.
    pub env: Vec<(String, String)>,
    /// For the cycle's line: the target and odds.
    pub describe: String,
}

impl KillPoints {
    /// A schedule drawn from `seed`; the engine logs fired points to `<expected>/kill-points.log`.
    pub fn new(seed: u64, expected: &Path) -> Result<KillPoints, Failure> {
        if !strata::internal::util::kill_point::ENABLED {
            return Err(Failure::Tool(
                "this strata-stress was built without kill points: build it with `--features kill-points`"
                    .into(),
            ));
        }
        Ok(KillPoints {
            rng: fastrand::Rng::with_seed(seed ^ 0x6b69_6c6c),
            order: Vec::new(),
            log: expected.join("kill-points.log"),
            targeted: vec![0; POINTS.len()],
            fired: vec![0; POINTS.len()],
            by_timer: 0,
            reached: vec![0; POINTS.len()],
            reached_secs: 0.0,
        })
    }

    /// The arming of cycle `cycle` (0-based). Clears the log, so it holds this cycle's line only.
    pub fn arm(&mut self, cycle: u32) -> Result<Arming, Failure> {
        match std::fs::remove_file(&self.log) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Failure::Tool(format!("{}: {e}", self.log.display())))
            }
            _ => {}
        }
        let (spec, describe) = if cycle % 5 == 4 {
            let all: Vec<String> = POINTS.iter().map(|p| format!("{p}={}", max_odds(p) * 4)).collect();
            (all.join(","), "armed: every point".to_string())
        } else {
            let i = self.next_target();
            self.targeted[i] += 1;
            let odds = self.rng.u64(1..=max_odds(POINTS[i]));
            (format!("{}={odds}", POINTS[i]), format!("armed: {} odds 1/{odds}", POINTS[i]))
        };
        let env = [
            ("STRATA_KILL_ODDS", "1".to_string()),
            ("STRATA_KILL_POINTS", spec),
            ("STRATA_KILL_SEED", self.rng.u64(..).to_string()),
            ("STRATA_KILL_POINTS_LOG", self.log.display().to_string()),
        ];
        Ok(Arming { env: env.into_iter().map(|(k, v)| (k.to_string(), v)).collect(), describe })
    }

    /// The next target: a round of every point in a shuffled order, those that have not fired
    /// yet first, so a point whose turn passed without firing gets the next chance.
    fn next_target(&mut self) -> usize {
        if self.order.is_empty() {
            self.order = (0..POINTS.len()).collect();
            self.rng.shuffle(&mut self.order);
            // Stable: the shuffle still orders each group. Targets are popped from the end.
            self.order.sort_by_key(|&i| self.fired[i] == 0);
        }
        self.order.pop().expect("refilled above")
    }

    /// The point the cycle's child died at, if one fired (read from the log), and counts it;
    /// `ran` is how long the child lived.
    pub fn outcome(&mut self, ran: Duration) -> Result<Option<String>, Failure> {
        let text = match std::fs::read_to_string(&self.log) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(Failure::Tool(format!("{}: {e}", self.log.display()))),
        };
        let Some((fired, reached)) = text.lines().find_map(parse_log_line) else {
            self.by_timer += 1;
            return Ok(None);
        };
        let index = |name: &str| POINTS.iter().position(|p| *p == name);
        let i = index(&fired).ok_or_else(|| Failure::Tool(format!("unknown kill point logged: {text}")))?;
        self.fired[i] += 1;
        for (name, n) in reached {
            if let Some(j) = index(&name) {
                self.reached[j] += n;
            }
        }
        self.reached_secs += ran.as_secs_f64();
        Ok(Some(fired))
    }

    /// Prints the table of targeted and fired counts; fails when a point never fired.
    pub fn report(&self) -> Result<(), Failure> {
        println!("kill points: fired={} by_timer={}", self.fired.iter().sum::<u64>(), self.by_timer);
        println!("  {:<28} {:>8} {:>6} {:>10}", "point", "targeted", "fired", "reached/s");
        for (i, p) in POINTS.iter().enumerate() {
            let rate = self.reached[i] as f64 / self.reached_secs.max(1e-9);
            println!("  {p:<28} {:>8} {:>6} {rate:>10.1}", self.targeted[i], self.fired[i]);
        }
        let never: Vec<&str> =
            POINTS.iter().zip(&self.fired).filter(|(_, &n)| n == 0).map(|(p, _)| *p).collect();
        if never.is_empty() {
            return Ok(());
        }
        Err(Failure::Coverage(format!("kill points that never fired: {}", never.join(", "))))
    }
}
