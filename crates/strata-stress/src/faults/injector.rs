//! The fault thread: at random moments (seeded) it arms one fault on the current `FaultFs` — a
//! failed write, sync, read, rename or create, a torn write, or a space limit (ENOSPC) — waits
//! for it to fire, and logs every step: what was armed, the operation it fired on (op number,
//! kind, path, effect, from `FaultFs::injected`), or that it expired unfired.
//!
//! One fault is armed at a time, and arming holds `Shared::gate`, which the coordinator takes
//! while it lifts faults and resumes or reopens, so no fault fires in the middle of recovery.
//! This module must not touch the database.

use std::io::ErrorKind;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use strata_testkit::{FaultFs, Op, Rule, When};

use super::Shared;

/// A fault that has not fired by then is taken back.
const EXPIRY: Duration = Duration::from_secs(3);

/// The kinds of fault, for arming and for the counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A write (append or preallocation) fails and lands nothing.
    Write,
    /// A file's fdatasync fails.
    Sync,
    /// A read fails.
    Read,
    /// A rename fails.
    Rename,
    /// Creating a file (or a hard link) fails.
    Create,
    /// A directory's fsync fails.
    SyncDir,
    /// The disk fills up: writes past a byte budget land what fits and fail with StorageFull.
    Enospc,
    /// A write lands a prefix of its bytes, then fails.
    Torn,
}

/// Every kind, in the order of `Stats::armed` / `Stats::fired`.
pub const KINDS: [Kind; 8] = [
    Kind::Write,
    Kind::Sync,
    Kind::Read,
    Kind::Rename,
    Kind::Create,
    Kind::SyncDir,
    Kind::Enospc,
    Kind::Torn,
];

impl Kind {
    /// Position in `KINDS` (the declaration order).
    pub fn index(self) -> usize {
        self as usize
    }

    fn pick(rng: &mut fastrand::Rng) -> Kind {
        // Weights: renames (checkpoints, a new MANIFEST), creates and directory syncs are rarer
        // operations than writes, syncs and reads.
        const WEIGHTED: [(Kind, u32); 8] = [
            (Kind::Write, 3),
            (Kind::Sync, 3),
            (Kind::Read, 3),
            (Kind::Rename, 1),
            (Kind::Create, 1),
            (Kind::SyncDir, 1),
            (Kind::Enospc, 2),
            (Kind::Torn, 3),
        ];
        let mut n = rng.u32(0..WEIGHTED.iter().map(|w| w.1).sum());
        for (k, w) in WEIGHTED {
            if n < w {
                return k;
            }
            n -= w;
        }
        Kind::Write
    }
}

/// How an armed fault is recognised as fired.
enum Armed {
    /// By a new entry in `FaultFs::injected` (index of the first new one).
    Rule(usize),
    /// By the space budget being used up: bytes written at arming plus the budget.
    Space(u64),
}

/// Runs until `Shared::stop`.
pub fn run(sh: &Shared, seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let (lo, hi) = sh.cfg.fault_ms;
    while sleep_unless_stopped(sh, Duration::from_millis(rng.u64(lo..=hi.max(lo)))) {
        let kind = Kind::pick(&mut rng);
        let (fs, epoch, armed) = {
            let _gate = sh.gate.lock().unwrap_or_else(|e| e.into_inner());
            let (fs, epoch) = sh.current_fs();
            fs.clear();
            let (armed, what) = arm(&fs, kind, &mut rng);
            sh.log.line(&format!("arm {kind:?}: {what}"));
            sh.stats.armed[kind.index()].fetch_add(1, Ordering::Relaxed);
            if kind == Kind::Read {
                // A worker may see the error before this thread sees the fault fire.
                *sh.last_read_fault.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
            }
            (fs, epoch, armed)
        };
        if !wait_for_fire(sh, &fs, epoch, kind, &armed) {
            let _gate = sh.gate.lock().unwrap_or_else(|e| e.into_inner());
            if sh.current_fs().1 == epoch {
                fs.clear();
            }
            sh.log.line(&format!("expired {kind:?}: never fired, taken back"));
            sh.stats.expired.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Sleeps `d` in short steps; false once the run is stopping.
fn sleep_unless_stopped(sh: &Shared, d: Duration) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if sh.stop.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5).min(end.saturating_duration_since(Instant::now())));
    }
    !sh.stop.load(Ordering::Relaxed)
}

/// An IO error kind for a failing operation: mostly EIO-like (not retryable), sometimes ENOSPC
/// (retryable), so both the reopen and the resume paths follow every kind of operation.
fn error_kind(rng: &mut fastrand::Rng) -> ErrorKind {
    if rng.u32(0..3) == 0 {
        ErrorKind::StorageFull
    } else {
        ErrorKind::Other
    }
}

/// Restricts `rule` to one kind of file, or none.
fn target(rule: Rule, rng: &mut fastrand::Rng, choices: &[&str]) -> (Rule, String) {
    match choices[rng.usize(0..choices.len())] {
        "" => (rule, "any file".to_string()),
        s => (rule.on_path(s), format!("paths containing {s:?}")),
    }
}

/// Arms one fault of `kind`; returns how to see it fire and a description for the log.
fn arm(fs: &FaultFs, kind: Kind, rng: &mut fastrand::Rng) -> (Armed, String) {
    const FILES: [&str; 5] = ["", ".log", ".sst", "MANIFEST", ".blob"];
    let (rule, n, what) = match kind {
        Kind::Enospc => {
            let budget = rng.u64(0..=512 << 10);
            fs.set_space_limit(Some(budget));
            let from = fs.bytes_written();
            return (
                Armed::Space(from + budget),
                format!("space limit: {budget} more bytes (at {from} written)"),
            );
        }
        Kind::Write => (Rule::new(Op::Write).kind(error_kind(rng)), rng.u64(1..=200), "write"),
        Kind::Torn => (Rule::new(Op::Write).torn(rng.usize(0..=4096)), rng.u64(1..=200), "torn write"),
        Kind::Sync => (Rule::new(Op::Sync).kind(error_kind(rng)), rng.u64(1..=20), "sync"),
        Kind::Read => (Rule::new(Op::Read), rng.u64(1..=500), "read"),
        Kind::Rename => (Rule::new(Op::Rename).kind(error_kind(rng)), rng.u64(1..=2), "rename"),
        Kind::SyncDir => (Rule::new(Op::SyncDir).kind(error_kind(rng)), rng.u64(1..=3), "directory sync"),
        Kind::Create => (Rule::new(Op::Create).kind(error_kind(rng)), rng.u64(1..=3), "create"),
    };
    let files: &[&str] = match kind {
        Kind::Read => &["", ".sst", ".blob"],
        Kind::Rename | Kind::Create | Kind::SyncDir => &[""],
        _ => &FILES,
    };
    let (rule, on) = target(rule.when(When::Nth(n)), rng, files);
    let desc = format!("{what} #{n} on {on}: {rule:?}");
    let base = fs.injected().len();
    fs.add_rule(rule);
    (Armed::Rule(base), desc)
}

/// Polls until the fault fires (logging it), the filesystem is replaced by a reopen, the run
/// stops, or `EXPIRY` passes. True when it fired or the filesystem went away.
fn wait_for_fire(sh: &Shared, fs: &FaultFs, epoch: u64, kind: Kind, armed: &Armed) -> bool {
    let end = Instant::now() + EXPIRY;
    while Instant::now() < end && !sh.stop.load(Ordering::Relaxed) {
        if sh.current_fs().1 != epoch {
            sh.log.line(&format!("gone {kind:?}: the database was reopened on a new filesystem first"));
            return true;
        }
        match armed {
            Armed::Rule(base) => {
                let lines = fs.injected();
                if lines.len() > *base {
                    for l in &lines[*base..] {
                        sh.log.line(&format!("fired {kind:?}: {l}"));
                    }
                    fired(sh, kind);
                    return true;
                }
            }
            Armed::Space(limit) => {
                let written = fs.bytes_written();
                if written >= *limit {
                    sh.log.line(&format!("fired {kind:?}: space budget used up ({written} bytes written)"));
                    fired(sh, kind);
                    return true;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

fn fired(sh: &Shared, kind: Kind) {
    sh.stats.fired[kind.index()].fetch_add(1, Ordering::Relaxed);
    if kind == Kind::Read {
        *sh.last_read_fault.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_listed_at_its_index_and_can_be_picked() {
        assert!(KINDS.iter().enumerate().all(|(i, k)| k.index() == i));
        let mut rng = fastrand::Rng::with_seed(7);
        let mut seen = [false; KINDS.len()];
        (0..10_000).for_each(|_| seen[Kind::pick(&mut rng).index()] = true);
        assert!(seen.iter().all(|&s| s), "{seen:?}");
    }
}
