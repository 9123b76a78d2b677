//! The coordinator of the `faults` command (the calling thread). It alone changes the database
//! handle and the filesystem under it:
//! - When a worker saw a write-path error, it reads the database's background error (typed,
//!   through `flush`), lifts every fault, and then, if the error is retryable, calls
//!   `Db::resume` and checks a synced write is acknowledged again; otherwise it checks that
//!   `resume` leaves the error as it is, and reopens the database as after a process crash
//!   (a `KeepUnsynced` image of the `MemFs`) or after a clean `close`, chosen by the seed, and
//!   judges what the reopen recovered (every acknowledged write, failed writes whole or not at
//!   all) before the workers go on from it.
//! - Every `--image-secs` it takes a crash image while writers run (power loss at page
//!   granularity, or a process crash) and checks it in a separate `Db` (`recovered`).
//! - Every second it folds histories up to the durability floor; when a key's history still
//!   grows past a limit (failed writes pile up without a reopen), it reopens.
//! - At the end it reopens after a clean close and checks once more.
//!
//! This module must not generate workload operations (`worker`) or arm faults (`injector`).

use std::sync::atomic::Ordering;
use std::sync::{RwLockWriteGuard, TryLockError};
use std::thread::ScopedJoinHandle;
use std::time::{Duration, Instant};

use strata::{Db, Options};
use strata_testkit::{background_panics, CrashMode, FaultFs, MemFs};

use crate::failure::Failure;

use super::errors::classify;
use super::judge::{self, Cut, CutMode};
use super::recovered::{self, Found};
use super::worker::{Outcome, Worker};
use super::{db_options, Shared};

/// Events left on one key after folding that trigger a reopen.
const HISTORY_LIMIT: usize = 50_000;
/// How long paused workers may take to finish their operations.
const PAUSE_TIMEOUT: Duration = Duration::from_secs(120);

/// What the coordinator did.
#[derive(Debug, Default)]
pub struct Report {
    /// Power-loss images checked.
    pub images_power: u64,
    /// Process-crash images checked.
    pub images_process: u64,
    /// Images missing writes acknowledged before them (allowed for unsynced writes after a
    /// power loss).
    pub images_short: u64,
    /// Of those, images whose recovery report was clean (the log simply ended early).
    pub images_short_clean: u64,
    /// Images whose open reported something dropped or set aside.
    pub images_reported: u64,
    /// Images that failed their check.
    pub image_failures: u64,
    /// Successful `Db::resume` calls.
    pub resumes: u64,
    /// Reopens as after a process crash.
    pub reopens_crash: u64,
    /// Reopens after a clean close.
    pub reopens_close: u64,
    /// Of all reopens, those made because histories grew too long.
    pub reopens_history: u64,
    /// Opens that failed on the short-append corruption and were salvaged
    /// (`--tolerate-short-append`).
    pub short_appends: u64,
    /// The final check's outcome.
    pub final_check: String,
}

/// The coordinator's state.
pub struct Coordinator<'a> {
    sh: &'a Shared,
    rng: fastrand::Rng,
    probe: Worker<'a>,
    report: Report,
}

impl<'a> Coordinator<'a> {
    /// Seeded from the run's seed.
    pub fn new(sh: &'a Shared) -> Self {
        let seed = sh.cfg.seed ^ 0xc00d_1a7e;
        Coordinator {
            sh,
            rng: fastrand::Rng::with_seed(seed),
            probe: Worker::new(sh, seed, sh.cfg.threads),
            report: Report::default(),
        }
    }

    /// Runs until the deadline, then the final check.
    pub fn run(mut self, workers: &[ScopedJoinHandle<'_, ()>]) -> Result<Report, Failure> {
        let sh = self.sh;
        let start = Instant::now();
        let deadline = start + sh.cfg.duration;
        let (mut next_image, mut next_fold) = (start + sh.cfg.image_every, start + Duration::from_secs(1));
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
            if workers.iter().any(ScopedJoinHandle::is_finished) {
                return Err(Failure::Engine(
                    "a worker thread ended early (an engine panic? see above)".into(),
                ));
            }
            if background_panics() > 0 {
                return Err(Failure::Engine("a strata background thread panicked (see above)".into()));
            }
            if sh.read_only.load(Ordering::Acquire) {
                self.handle_error()?;
            }
            if Instant::now() >= next_image {
                self.image()?;
                next_image = Instant::now() + sh.cfg.image_every;
            }
            if Instant::now() >= next_fold {
                if sh.state.fold(sh.state.floor()) > HISTORY_LIMIT {
                    self.report.reopens_history += 1;
                    self.reopen("history limit")?;
                }
                next_fold = Instant::now() + Duration::from_secs(1);
            }
        }
        sh.stop.store(true, Ordering::SeqCst);
        self.finish()?;
        Ok(self.report)
    }

    fn log(&self, text: &str) {
        self.sh.log.line(text);
    }

    /// A worker saw a write-path error: resume or reopen.
    fn handle_error(&mut self) -> Result<(), Failure> {
        let sh = self.sh;
        let gate = sh.gate.lock().unwrap_or_else(|e| e.into_inner());
        sh.current_fs().0.clear();
        let guard = sh.db.read().unwrap_or_else(|e| e.into_inner());
        let db = guard.as_ref().expect("the database is open outside reopen");
        let text = db.property("strata.background-error").unwrap_or_default();
        if text.is_empty() {
            // A write failed without the database turning read-only, or a stale report.
            sh.read_only.store(false, Ordering::Release);
            return Ok(());
        }
        let err = match db.flush() {
            Err(e) => e,
            Ok(()) => {
                return Err(Failure::Mismatch(format!(
                    "strata.background-error says {text:?}, but flush succeeded"
                )))
            }
        };
        let class = classify(&err).map_err(|why| Failure::Engine(format!("background error: {why}")))?;
        sh.errors.add("background error", &class);
        self.log(&format!("error: {err}; faults lifted"));
        let resumed = if err.is_retryable() {
            self.resume(db)?
        } else {
            match db.resume() {
                Err(e) if !e.is_retryable() => self.log(&format!("resume leaves it: {e}")),
                other => {
                    return Err(Failure::Mismatch(format!(
                        "resume() on a non-retryable background error ({err}) returned {other:?}"
                    )))
                }
            }
            false
        };
        drop((guard, gate));
        if resumed {
            Ok(())
        } else {
            self.reopen(&class)
        }
    }

    /// Resumes after a retryable error (faults already lifted) and checks writes work again.
    /// False when the retry met a non-retryable error: the caller reopens.
    fn resume(&mut self, db: &Db) -> Result<bool, Failure> {
        for _ in 0..3 {
            let t = Instant::now();
            match db.resume() {
                Ok(()) => {
                    self.log(&format!("resumed in {:.1} ms", t.elapsed().as_secs_f64() * 1e3));
                    self.report.resumes += 1;
                    match self.probe.probe(db)? {
                        Outcome::Acked => self.log("a synced write after the resume was acknowledged"),
                        other => {
                            return Err(Failure::Engine(format!(
                                "a synced write after a successful resume was not acknowledged ({other:?})"
                            )))
                        }
                    }
                    self.sh.read_only.store(false, Ordering::Release);
                    return Ok(true);
                }
                Err(e) => {
                    let class = classify(&e).map_err(|why| Failure::Engine(format!("resume: {why}")))?;
                    self.sh.errors.add("resume", &class);
                    self.log(&format!("resume failed: {e}"));
                    if !e.is_retryable() {
                        return Ok(false);
                    }
                }
            }
        }
        Err(Failure::Engine("resume kept failing with a retryable error after every fault was lifted".into()))
    }

    /// Waits until no worker uses the database, and takes it.
    fn take_db(&self) -> Result<RwLockWriteGuard<'a, Option<Db>>, Failure> {
        self.sh.pause.store(true, Ordering::Release);
        let end = Instant::now() + PAUSE_TIMEOUT;
        loop {
            match self.sh.db.try_write() {
                Ok(g) => return Ok(g),
                Err(TryLockError::Poisoned(p)) => return Ok(p.into_inner()),
                Err(TryLockError::WouldBlock) if Instant::now() > end => {
                    return Err(Failure::Engine(format!(
                        "paused workers did not finish their operations within {PAUSE_TIMEOUT:?}: a hang in the engine?"
                    )))
                }
                Err(TryLockError::WouldBlock) => std::thread::sleep(Duration::from_millis(1)),
            }
        }
    }

    /// Closes (cleanly, or as a process crash) and reopens the database, judges what it
    /// recovered, and restarts the expected state from it.
    fn reopen(&mut self, why: &str) -> Result<(), Failure> {
        let crash = self.rng.bool();
        self.reopen_as(why, crash)
    }

    fn reopen_as(&mut self, why: &str, crash: bool) -> Result<(), Failure> {
        let sh = self.sh;
        let _gate = sh.gate.lock().unwrap_or_else(|e| e.into_inner());
        sh.current_fs().0.clear();
        let mut guard = self.take_db()?;
        let db = guard.take().expect("the database is open outside reopen");
        let c0 = sh.state.tick();
        let mem = self.shut_down(db, crash, why)?;
        let fs = FaultFs::new(std::sync::Arc::new(mem.clone()));
        {
            let mut env = sh.env.lock().unwrap_or_else(|e| e.into_inner());
            (env.mem, env.fs, env.epoch) = (mem.clone(), fs.clone(), env.epoch + 1);
        }
        let pristine = mem.crash_clone(CrashMode::KeepUnsynced);
        let t = Instant::now();
        let hists = sh.state.histories(u64::MAX);
        let cut = Cut { mode: CutMode::Process, c0, floor: sh.state.floor() };
        let options = db_options(&sh.cfg, fs)?;
        let with_mode = |mode| Options { wal_recovery_mode: mode, ..options.clone() };
        let opened = recovered::open(&mem, sh.cfg.tolerate_short_append, with_mode)
            .map_err(|e| Failure::Engine(format!("reopen after {why} failed: {e}")));
        let (db, salvaged) = opened.inspect_err(|f| self.dump_reopen(&pristine, f))?;
        self.note_salvage(salvaged.as_deref(), &format!("reopen after {why}"));
        let found = recovered::check(&db, &mem, &hists, &cut, salvaged.is_some())
            .map_err(|m| Failure::Mismatch(format!("after the reopen ({why}): {m}")))
            .inspect_err(|f| self.dump_reopen(&pristine, f))?;
        self.log(&format!(
            "reopened in {:.1} ms and checked: {} failed writes found applied; report: {}",
            t.elapsed().as_secs_f64() * 1e3,
            found.verdict.failed_applied,
            found.report.render().trim_end().replace('\n', "; ")
        ));
        self.log_failed_applied(&found, &hists, &cut);
        sh.state.rebase(&found.values);
        *guard = Some(db);
        sh.read_only.store(false, Ordering::Release);
        sh.pause.store(false, Ordering::Release);
        Ok(())
    }

    /// Counts and logs an open that needed salvage mode for the short-append corruption.
    fn note_salvage(&mut self, salvaged: Option<&str>, what: &str) {
        if let Some(s) = salvaged {
            self.report.short_appends += 1;
            self.log(&format!("KNOWN ISSUE (tolerated): {what}: default open failed on a short append: {s}; opened in salvage mode"));
        }
    }

    /// Writes the filesystem a failed reopen started from to `<dump-dir>/reopen-<n>/`.
    fn dump_reopen(&self, pristine: &MemFs, f: &Failure) {
        let n = self.report.reopens_crash + self.report.reopens_close;
        let target = self.sh.cfg.dump_dir.join(format!("reopen-{n}"));
        let note = format!("seed {} reopen #{n}\n{f}\n", self.sh.cfg.seed);
        match recovered::dump(pristine, &target, &note) {
            Ok(()) => self.log(&format!("the database before the failed reopen is in {}", target.display())),
            Err(e) => self.log(&format!("could not write the database to {}: {e}", target.display())),
        }
    }

    /// Logs the history of a few keys whose recovered value needs a failed write.
    fn log_failed_applied(&self, found: &Found, hists: &[super::state::History], cut: &Cut) {
        for &k in &found.verdict.failed_applied_keys {
            self.log(&format!(
                "  k{k:08} recovered a failed write:{}",
                judge::history_text(&hists[k as usize], cut)
            ));
        }
    }

    /// Ends the old database's life: a process crash (an image of everything written so far; the
    /// handle is then dropped on the old filesystem) or a clean close. Returns the `MemFs` to
    /// reopen from.
    fn shut_down(&mut self, db: Db, crash: bool, why: &str) -> Result<MemFs, Failure> {
        let mem = self.sh.env.lock().unwrap_or_else(|e| e.into_inner()).mem.clone();
        if crash {
            let next = mem.crash_clone(CrashMode::KeepUnsynced);
            drop(db);
            self.report.reopens_crash += 1;
            self.log(&format!("reopen after {why}: process crash"));
            return Ok(next);
        }
        let in_error = db.property("strata.background-error").is_some_and(|t| !t.is_empty());
        match db.close() {
            Ok(()) if in_error => {
                return Err(Failure::Mismatch(
                    "close() returned Ok although the database was in its error state".into(),
                ))
            }
            Ok(()) => {}
            Err(e) => {
                let class = classify(&e).map_err(|w| Failure::Engine(format!("close: {w}")))?;
                self.sh.errors.add("close", &class);
            }
        }
        self.report.reopens_close += 1;
        self.log(&format!("reopen after {why}: clean close"));
        Ok(mem)
    }

    /// Takes a crash image while the workers run and checks it.
    fn image(&mut self) -> Result<(), Failure> {
        let sh = self.sh;
        let power = self.rng.u32(0..10) < 6;
        let crash_seed = self.rng.u64(..);
        let mode = if power { CrashMode::Pages(crash_seed) } else { CrashMode::KeepUnsynced };
        let mem = sh.env.lock().unwrap_or_else(|e| e.into_inner()).mem.clone();
        let floor = sh.state.floor();
        let c0 = sh.state.tick();
        let img = mem.crash_clone(mode);
        let c1 = sh.state.tick();
        let hists = sh.state.histories(c1);
        let cut = Cut { mode: if power { CutMode::Power } else { CutMode::Process }, c0, floor };
        let n = self.report.images_power + self.report.images_process + self.report.image_failures + 1;
        let pristine = img.crash_clone(CrashMode::KeepUnsynced);
        let t = Instant::now();
        match recovered::check_image(&img, &hists, &cut, sh.cfg.tolerate_short_append) {
            Ok((found, salvaged)) => {
                self.note_salvage(salvaged.as_deref(), &format!("image #{n}"));
                self.count_image(power, &found);
                self.log(&format!(
                    "image #{n} {mode:?} (ticks {c0}..{c1}, floor {floor}) ok in {:.0} ms: {} keys short, {} failed writes applied; report: {}",
                    t.elapsed().as_secs_f64() * 1e3,
                    found.verdict.keys_short,
                    found.verdict.failed_applied,
                    found.report.render().trim_end().replace('\n', "; ")
                ));
                self.log_failed_applied(&found, &hists, &cut);
                Ok(())
            }
            Err(m) => self.image_failed(n, mode, &pristine, &m),
        }
    }

    fn count_image(&mut self, power: bool, found: &Found) {
        let r = &mut self.report;
        if power {
            r.images_power += 1;
        } else {
            r.images_process += 1;
        }
        let clean = found.report.is_clean();
        r.images_reported += u64::from(!clean);
        if found.verdict.keys_short > 0 {
            r.images_short += 1;
            r.images_short_clean += u64::from(clean);
        }
    }

    fn image_failed(&mut self, n: u64, mode: CrashMode, pristine: &MemFs, m: &str) -> Result<(), Failure> {
        self.report.image_failures += 1;
        let target = self.sh.cfg.dump_dir.join(format!("image-{n}"));
        let note = format!("seed {} image #{n} {mode:?}\n{m}\n", self.sh.cfg.seed);
        let saved = match recovered::dump(pristine, &target, &note) {
            Ok(()) => format!("image written to {}", target.display()),
            Err(e) => format!("could not write the image to {}: {e}", target.display()),
        };
        let text = format!("crash image #{n} ({mode:?}) FAILED: {m}\n    {saved}");
        self.log(&text);
        eprintln!("{text}");
        if self.sh.cfg.keep_going {
            Ok(())
        } else {
            Err(Failure::Mismatch(text))
        }
    }

    /// After the deadline (workers stopping): reopen after a clean close, check, close.
    fn finish(&mut self) -> Result<(), Failure> {
        // Always a clean close: it checks what `close` keeps.
        self.reopen_as("end of run", false)?;
        let mut guard = self.take_db()?;
        let db = guard.take().expect("reopened");
        let present = recovered::read_all(&db, self.sh.state.keys())
            .map_err(Failure::Mismatch)?
            .iter()
            .filter(|v| v.is_some())
            .count();
        db.close().map_err(|e| Failure::Engine(format!("final close: {e}")))?;
        self.report.final_check = format!("ok({present}_keys_present)");
        Ok(())
    }
}
