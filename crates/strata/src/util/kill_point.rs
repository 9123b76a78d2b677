//! Kill points, as RocksDB's `TEST_KILL_RANDOM`: named places in the engine's write path where a
//! crash test can make the process die, so that recovery is tested from exactly the states that
//! step leaves on disk (a MANIFEST record appended but not synced, a new MANIFEST that CURRENT does
//! not name yet, a table half deleted ...), not only from wherever a timer happened to stop it.
//!
//! This module owns the list of point names, the switch that arms them and the kill itself. It
//! must not decide where the points go (the engine code does, one line each) nor anything about
//! what a crash test checks afterwards.
//!
//! Without the `kill-points` cargo feature (the default) [`kill_point`] is an empty inline
//! function: nothing is read, counted or compared. With it, the points still do nothing unless
//! the process was started with `STRATA_KILL_ODDS` set:
//!
//! - `STRATA_KILL_ODDS=N` (N >= 1): each time an armed point is reached the process dies there
//!   with probability 1/N (N = 1: at the first armed point reached).
//! - `STRATA_KILL_POINTS=SPEC` (default: every point): a comma-separated list of points to arm,
//!   each a full name or a prefix ending at a dot-separated part (`wal` arms `wal.append.before`
//!   and `wal.sync.after`, `wal.sync` only the two sync points), optionally with odds of its own:
//!   `manifest=3,wal.append=2000`. The last entry that matches a point decides its odds.
//! - `STRATA_KILL_SEED=S`: seeds the generator that draws the kills (default: time and pid).
//! - `STRATA_KILL_POINTS_LOG=PATH`: before dying, one line is appended there:
//!   `fired NAME reached NAME=COUNT,NAME=COUNT...` (how often each point was reached in this
//!   process, armed or not), so a parent running many crash cycles can count which points fired.
//!
//! The process dies by SIGKILL sent to itself (abort elsewhere than Linux): no destructor, no
//! flush of a user-space buffer and no core dump, exactly like `kill -9` from outside.

/// Every kill point, in write-path order. A test checks that each appears exactly once in the
/// engine's sources, and that no other name does.
pub const POINTS: &[&str] = &[
    // The group-commit leader appending a write group's WAL record (db/write.rs).
    "wal.append.before",
    "wal.append.after",
    // The leader's fdatasync of the current WAL for a sync=true group, and in sync_wal/close.
    "wal.sync.before",
    "wal.sync.after",
    // An SST builder's finish: before and after the last buffered write plus fdatasync.
    "table.finish.before_sync",
    "table.finish.after_sync",
    // A blob file's finish, likewise.
    "blob.finish.before_sync",
    "blob.finish.after_sync",
    // Compaction moving a live value out of a blob file chosen for collection into its new one.
    "blob.relocate",
    // VersionSet::log_and_apply: the directory fsync that makes new files' entries durable
    // before the MANIFEST names them.
    "dir.sync.before",
    "dir.sync.after",
    // VersionSet::log_and_apply: one version edit appended to the MANIFEST, then fdatasynced.
    "manifest.append.before",
    "manifest.append.after",
    "manifest.sync.after",
    // A new MANIFEST (written and synced) made current: before FileSystem::write_atomic replaces
    // CURRENT (temp file, fdatasync, rename, directory fsync), and after. Kept outside the
    // filesystem seam so that a FileSystem's own write_atomic is still the one used.
    "current.rename.before",
    "current.rename.after",
    // Deleting an obsolete file of each kind (db/background.rs delete_obsolete_files).
    "obsolete.delete.wal",
    "obsolete.delete.table",
    "obsolete.delete.blob",
    "obsolete.delete.manifest",
];

/// True when this build has the `kill-points` feature, so that `kill_point` can kill.
pub const ENABLED: bool = cfg!(feature = "kill-points");

/// Marks kill point `name` (one of [`POINTS`]). Without the `kill-points` feature this is
/// nothing at all.
#[cfg(not(feature = "kill-points"))]
#[inline(always)]
pub fn kill_point(_name: &'static str) {}

/// Marks kill point `name` (one of [`POINTS`]): counts the visit and, if the process was
/// configured to and the draw says so, kills the process here (see the module docs).
#[cfg(feature = "kill-points")]
#[inline]
pub fn kill_point(name: &'static str) {
    armed::reach(name);
}

// Read only by the armed kill points (feature `kill-points`) and the tests.
#[cfg(any(test, feature = "kill-points"))]
/// One entry of a `STRATA_KILL_POINTS` spec: the points it covers and their odds, if given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecEntry {
    /// A point name or a prefix of whole dot-separated parts.
    pub prefix: String,
    /// Odds of its own (1/N), instead of `STRATA_KILL_ODDS`.
    pub odds: Option<u64>,
}

#[cfg(any(test, feature = "kill-points"))]
impl SpecEntry {
    /// True when this entry covers `point`.
    pub fn covers(&self, point: &str) -> bool {
        point.strip_prefix(self.prefix.as_str()).is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
    }
}

#[cfg(any(test, feature = "kill-points"))]
/// Parses a `STRATA_KILL_POINTS` spec; `Err` names the entry that is malformed, has odds of 0
/// or covers no point.
pub fn parse_spec(spec: &str) -> Result<Vec<SpecEntry>, String> {
    let mut out = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (prefix, odds) = match item.split_once('=') {
            Some((p, n)) => match n.trim().parse::<u64>() {
                Ok(n) if n > 0 => (p.trim(), Some(n)),
                _ => return Err(format!("kill point entry {item:?}: odds must be a number >= 1")),
            },
            None => (item, None),
        };
        let entry = SpecEntry { prefix: prefix.to_string(), odds };
        if !POINTS.iter().any(|p| entry.covers(p)) {
            return Err(format!("kill point entry {item:?} names no kill point"));
        }
        out.push(entry);
    }
    Ok(out)
}

#[cfg(any(test, feature = "kill-points"))]
/// The odds of each point in [`POINTS`] order under `spec` with default odds `odds`; `None`
/// for points the spec does not arm (an empty spec arms every point).
pub fn odds_per_point(spec: &[SpecEntry], odds: u64) -> Vec<Option<u64>> {
    POINTS
        .iter()
        .map(|p| {
            if spec.is_empty() {
                return Some(odds);
            }
            spec.iter().rev().find(|e| e.covers(p)).map(|e| e.odds.unwrap_or(odds))
        })
        .collect()
}

/// Parses one `fired NAME reached A=1,B=2` line of a `STRATA_KILL_POINTS_LOG` into the fired
/// point and the reach counts; `None` for any other line.
pub fn parse_log_line(line: &str) -> Option<(String, Vec<(String, u64)>)> {
    let mut words = line.split_whitespace();
    if words.next()? != "fired" {
        return None;
    }
    let fired = words.next()?.to_string();
    let reached = match (words.next(), words.next()) {
        (Some("reached"), Some(list)) => list
            .split(',')
            .filter_map(|kv| kv.split_once('='))
            .filter_map(|(k, v)| v.parse().ok().map(|v| (k.to_string(), v)))
            .collect(),
        _ => Vec::new(),
    };
    Some((fired, reached))
}

#[cfg(feature = "kill-points")]
mod armed {
    use std::io::Write as _;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::OnceLock;

    use super::POINTS;

    const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

    /// What the environment asked for, read once.
    struct Config {
        /// Per point (POINTS order): kill with probability 1/odds; None = not armed.
        odds: Vec<Option<u64>>,
        log: Option<std::path::PathBuf>,
    }

    static CONFIG: OnceLock<Option<Config>> = OnceLock::new();
    static REACHED: [AtomicU64; POINTS.len()] = [const { AtomicU64::new(0) }; POINTS.len()];
    static STATE: AtomicU64 = AtomicU64::new(0);
    static FIRING: AtomicBool = AtomicBool::new(false);

    fn config() -> Option<&'static Config> {
        CONFIG.get_or_init(read_env).as_ref()
    }

    /// The configuration from the environment; None (points inert) when `STRATA_KILL_ODDS` is
    /// unset or 0. A bad spec is reported on stderr and leaves the points inert: the engine
    /// must not fail because of a test switch, and the crash test that set it sees no kills.
    fn read_env() -> Option<Config> {
        let odds: u64 = std::env::var("STRATA_KILL_ODDS").ok()?.trim().parse().ok().filter(|&n| n > 0)?;
        let spec = std::env::var("STRATA_KILL_POINTS").unwrap_or_default();
        let spec = match super::parse_spec(&spec) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("strata: STRATA_KILL_POINTS ignored, kill points stay inert: {e}");
                return None;
            }
        };
        let seed =
            std::env::var("STRATA_KILL_SEED").ok().and_then(|s| s.trim().parse().ok()).unwrap_or_else(|| {
                let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
                t.map_or(0, |d| d.as_nanos() as u64) ^ u64::from(std::process::id()).wrapping_mul(GAMMA)
            });
        STATE.store(seed, Ordering::Relaxed);
        let log = std::env::var_os("STRATA_KILL_POINTS_LOG").map(std::path::PathBuf::from);
        Some(Config { odds: super::odds_per_point(&spec, odds), log })
    }

    /// splitmix64 over a shared counter: threads draw from one sequence without locking.
    fn next_random() -> u64 {
        let mut z = STATE.fetch_add(GAMMA, Ordering::Relaxed).wrapping_add(GAMMA);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(super) fn reach(name: &'static str) {
        let Some(cfg) = config() else { return };
        let Some(i) = POINTS.iter().position(|p| *p == name) else {
            debug_assert!(false, "kill point {name:?} is not listed in POINTS");
            return;
        };
        REACHED[i].fetch_add(1, Ordering::Relaxed);
        if let Some(odds) = cfg.odds[i] {
            if next_random().is_multiple_of(odds) {
                die(cfg, name);
            }
        }
    }

    /// Logs the point and kills the process. A second thread that draws a kill meanwhile waits
    /// for the first one's: only one point fires per process.
    fn die(cfg: &Config, name: &str) -> ! {
        if FIRING.swap(true, Ordering::AcqRel) {
            loop {
                std::thread::park();
            }
        }
        if let Some(path) = &cfg.log {
            let reached: Vec<String> = POINTS
                .iter()
                .zip(&REACHED)
                .map(|(p, n)| (p, n.load(Ordering::Relaxed)))
                .filter(|&(_, n)| n > 0)
                .map(|(p, n)| format!("{p}={n}"))
                .collect();
            let line = format!("fired {name} reached {}\n", reached.join(","));
            // One write(2) of the whole line: it survives the kill that follows.
            let written = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut f| f.write_all(line.as_bytes()));
            if let Err(e) = written {
                eprintln!("strata: kill point {name}: cannot log to {}: {e}", path.display());
            }
        }
        #[cfg(target_os = "linux")]
        {
            let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
        }
        std::process::abort()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_arms_whole_name_parts_with_their_own_odds() {
        let spec = parse_spec("wal.sync=7, manifest ,obsolete.delete.wal=1").unwrap();
        let odds = odds_per_point(&spec, 100);
        let of = |name: &str| odds[POINTS.iter().position(|p| *p == name).unwrap()];
        assert_eq!(of("wal.sync.before"), Some(7));
        assert_eq!(of("wal.append.before"), None);
        assert_eq!(of("manifest.sync.after"), Some(100));
        assert_eq!(of("obsolete.delete.wal"), Some(1));
        assert_eq!(of("obsolete.delete.table"), None);
        assert!(odds_per_point(&[], 5).iter().all(|o| *o == Some(5)), "an empty spec arms everything");
    }

    #[test]
    fn a_bad_spec_is_refused_with_the_entry() {
        for (spec, needle) in [("wal.app", "names no kill point"), ("wal=0", "odds"), ("table=x", "odds")] {
            let e = parse_spec(spec).unwrap_err();
            assert!(e.contains(needle), "{spec}: {e}");
        }
        assert_eq!(parse_spec(" , ").unwrap(), Vec::new());
    }

    #[test]
    fn log_lines_round_trip() {
        let (fired, reached) =
            parse_log_line("fired wal.sync.after reached wal.sync.after=3,blob.relocate=10").unwrap();
        assert_eq!(fired, "wal.sync.after");
        assert_eq!(reached, vec![("wal.sync.after".to_string(), 3), ("blob.relocate".to_string(), 10)]);
        assert_eq!(parse_log_line("something else"), None);
    }

    /// Every listed point is placed exactly once in the engine, and nothing else is: a renamed
    /// or forgotten call would otherwise make a crash loop wait for a point that cannot fire.
    #[test]
    fn every_point_is_placed_exactly_once() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut found: Vec<String> = Vec::new();
        let mut stack = vec![src];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("util/kill_point.rs")
                {
                    let text = std::fs::read_to_string(&path).unwrap();
                    for piece in text.split("kill_point(\"").skip(1) {
                        found.push(piece.split('"').next().unwrap().to_string());
                    }
                }
            }
        }
        found.sort();
        let mut listed: Vec<String> = POINTS.iter().map(|p| p.to_string()).collect();
        listed.sort();
        assert_eq!(found, listed);
    }
}
