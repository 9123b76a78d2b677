//! `FaultFs`: wraps any [`FileSystem`] and makes chosen operations fail, by rule, at runtime.
//!
//! A [`Rule`] names an operation kind, optionally a path substring, when it fires (the Nth
//! matching operation, every Nth, every one after the first N, always) and what happens (an IO
//! error of a given kind, or a torn write that lands a prefix of the data and then fails). A
//! space limit turns writes past a byte budget into ENOSPC (`ErrorKind::StorageFull`) after
//! writing what still fits. Every operation is counted and every injected fault is logged, so a
//! failure is reproducible from the rule set.
//!
//! A failed operation never reaches the wrapped filesystem (except the landed prefix of a torn or
//! out-of-space write), so "fail every operation after op k" leaves exactly the state after op k:
//! with a [`crate::MemFs`] underneath that is a crash at op k. This module must not model
//! durability; that is the wrapped filesystem's job.

use std::collections::HashMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use strata::fs::{FileLock, FileSystem, RandomAccessFile, SequentialFile, WritableFile};
use strata::{Error, Result};

/// The kinds of filesystem operation a rule can target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `create` (a new or truncated file), `create_dir_all` and `link_or_copy`.
    Create,
    /// `WritableFile::append`.
    Write,
    /// `WritableFile::sync_data` (fdatasync).
    Sync,
    /// `rename`.
    Rename,
    /// `remove_file`.
    Remove,
    /// `sync_dir`.
    SyncDir,
    /// `read_exact_at` and sequential `read`.
    Read,
    /// `open_random` and `open_sequential`.
    Open,
    /// `list_dir`, `is_dir`, `file_size`.
    Metadata,
    /// `lock`.
    Lock,
    /// Only in rules and [`FaultFs::count`]: every operation.
    Any,
}

/// When a rule fires, counted over the operations it matches since it was added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Only the Nth matching operation (1 = the next one).
    Nth(u64),
    /// Every Nth matching operation.
    EveryNth(u64),
    /// Every matching operation after the first N.
    After(u64),
    /// Every matching operation.
    Always,
}

/// What a firing rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// The operation fails with this error kind and changes nothing.
    Fail(ErrorKind),
    /// For writes: the first `n` bytes (at most all but one) land, then the write fails. Other
    /// operations simply fail.
    Torn(usize),
    /// The operation panics and changes nothing: a custom filesystem's bug.
    Panic,
}

/// One fault-injection rule; build with [`Rule::new`] and the builder methods.
#[derive(Debug, Clone)]
pub struct Rule {
    op: Op,
    when: When,
    path_contains: Option<String>,
    effect: Effect,
    seen: u64,
}

impl Rule {
    /// Fails the next `op` with a generic IO error (EIO-like); refine with the methods below.
    pub fn new(op: Op) -> Self {
        Self { op, when: When::Nth(1), path_contains: None, effect: Effect::Fail(ErrorKind::Other), seen: 0 }
    }
    /// Sets when the rule fires.
    pub fn when(mut self, when: When) -> Self {
        self.when = when;
        self
    }
    /// Only operations on a path containing `s` count (for `rename`, either path).
    pub fn on_path(mut self, s: &str) -> Self {
        self.path_contains = Some(s.to_string());
        self
    }
    /// The error kind returned when the rule fires.
    pub fn kind(mut self, kind: ErrorKind) -> Self {
        self.effect = Effect::Fail(kind);
        self
    }
    /// Makes the operation panic instead of failing.
    pub fn panics(mut self) -> Self {
        self.effect = Effect::Panic;
        self
    }
    /// Makes a firing write land its first `keep` bytes before failing.
    pub fn torn(mut self, keep: usize) -> Self {
        self.effect = Effect::Torn(keep);
        self
    }

    fn matches(&self, op: Op, paths: &[&Path]) -> bool {
        let op_ok = self.op == Op::Any || self.op == op;
        let path_ok = self
            .path_contains
            .as_deref()
            .is_none_or(|s| paths.iter().any(|p| p.to_string_lossy().contains(s)));
        op_ok && path_ok
    }

    /// Counts one matching operation; true if the rule fires on it.
    fn fires(&mut self) -> bool {
        self.seen += 1;
        match self.when {
            When::Nth(n) => self.seen == n,
            When::EveryNth(n) => n > 0 && self.seen.is_multiple_of(n),
            When::After(n) => self.seen > n,
            When::Always => true,
        }
    }
}

#[derive(Default)]
struct State {
    rules: Vec<Rule>,
    counts: HashMap<Op, u64>,
    injected: Vec<String>,
    injected_paths: Vec<PathBuf>,
    /// Bytes that reached the wrapped filesystem through `append`.
    written: u64,
    /// Bytes that may still be written before ENOSPC; `None` = unlimited.
    space_left: Option<u64>,
    /// How long every file sync takes before it succeeds or fails.
    sync_latency: std::time::Duration,
    /// How long every `remove_file` takes before it succeeds or fails.
    remove_latency: std::time::Duration,
}

/// A fault-injecting wrapper around another filesystem. Clones share rules and counters.
#[derive(Clone)]
pub struct FaultFs {
    inner: Arc<dyn FileSystem>,
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for FaultFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.lock();
        f.debug_struct("FaultFs").field("rules", &st.rules).field("injected", &st.injected.len()).finish()
    }
}

fn injected(path: &Path, op: Op, kind: ErrorKind) -> Error {
    Error::io(path, std::io::Error::new(kind, format!("injected {op:?} fault")))
}

impl FaultFs {
    /// Wraps `inner` with no rules: every operation passes through.
    pub fn new(inner: Arc<dyn FileSystem>) -> Self {
        Self { inner, state: Arc::default() }
    }

    /// The wrapped filesystem.
    pub fn inner(&self) -> &Arc<dyn FileSystem> {
        &self.inner
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a rule; rules added earlier win when several fire on one operation.
    pub fn add_rule(&self, rule: Rule) {
        self.lock().rules.push(rule);
    }
    /// Fails the next `op`.
    pub fn fail_next(&self, op: Op) {
        self.add_rule(Rule::new(op));
    }
    /// Fails the `n`th `op` from now (1 = the next).
    pub fn fail_nth(&self, op: Op, n: u64) {
        self.add_rule(Rule::new(op).when(When::Nth(n)));
    }
    /// Fails every `op` after the next `n` ones.
    pub fn fail_after(&self, op: Op, n: u64) {
        self.add_rule(Rule::new(op).when(When::After(n)));
    }
    /// Fails every `n`th `op`.
    pub fn fail_every(&self, op: Op, n: u64) {
        self.add_rule(Rule::new(op).when(When::EveryNth(n)));
    }
    /// Allows `bytes` more bytes to be written, then returns ENOSPC; `None` lifts the limit.
    pub fn set_space_limit(&self, bytes: Option<u64>) {
        self.lock().space_left = bytes;
    }
    /// Makes every file sync sleep this long first, as a disk's fdatasync takes time, so that
    /// tests can make writers pile up into groups behind a sync; an injected sync failure then
    /// also comes after the wait. Directory syncs stay instant. Kept by `clear`.
    pub fn set_sync_latency(&self, latency: std::time::Duration) {
        self.lock().sync_latency = latency;
    }
    /// Sleeps for the latency `latency_of` picks (the sync or remove latency), then applies the
    /// rules for `op`.
    fn gate_after_latency(
        &self,
        op: Op,
        path: &Path,
        latency_of: fn(&State) -> std::time::Duration,
    ) -> Result<()> {
        let latency = latency_of(&self.lock());
        if !latency.is_zero() {
            std::thread::sleep(latency);
        }
        self.gate(op, &[path])
    }
    /// Makes every `remove_file` take `latency` first (as unlinking a large file can when the
    /// kernel's journal is busy), so tests can see what a slow deletion holds up. Kept by `clear`.
    pub fn set_remove_latency(&self, latency: std::time::Duration) {
        self.lock().remove_latency = latency;
    }
    /// Removes every rule and the space limit (counters and the log are kept).
    pub fn clear(&self) {
        let mut st = self.lock();
        st.rules.clear();
        st.space_left = None;
    }
    /// Operations of kind `op` seen so far (`Op::Any`: all of them), failed ones included.
    pub fn count(&self, op: Op) -> u64 {
        let st = self.lock();
        match op {
            Op::Any => st.counts.values().sum(),
            _ => st.counts.get(&op).copied().unwrap_or(0),
        }
    }
    /// A line per injected fault, oldest first.
    pub fn injected(&self) -> Vec<String> {
        self.lock().injected.clone()
    }

    /// The (first) path of each injected fault, oldest first.
    pub fn injected_paths(&self) -> Vec<PathBuf> {
        self.lock().injected_paths.clone()
    }
    /// Bytes written through this filesystem so far (landed prefixes of failed writes included).
    pub fn bytes_written(&self) -> u64 {
        self.lock().written
    }

    /// Counts the operation and returns the effect of the first rule that fires on it.
    fn check(&self, op: Op, paths: &[&Path]) -> Option<Effect> {
        let mut st = self.lock();
        *st.counts.entry(op).or_default() += 1;
        let mut effect = None;
        for rule in st.rules.iter_mut().filter(|r| r.matches(op, paths)) {
            if rule.fires() && effect.is_none() {
                effect = Some(rule.effect);
            }
        }
        if let Some(e) = effect {
            let n = st.counts.values().sum::<u64>();
            st.injected.push(format!("op #{n}: {op:?} on {:?}: {e:?}", paths));
            st.injected_paths.push(paths[0].to_path_buf());
        }
        effect
    }

    /// `Err` if a rule fires on a non-write operation.
    fn gate(&self, op: Op, paths: &[&Path]) -> Result<()> {
        match self.check(op, paths) {
            None => Ok(()),
            Some(Effect::Fail(kind)) => Err(injected(paths[0], op, kind)),
            Some(Effect::Torn(_)) => Err(injected(paths[0], op, ErrorKind::Other)),
            Some(Effect::Panic) => panic!("injected panic: {op:?} on {:?}", paths[0]),
        }
    }

    /// Takes up to `want` bytes from the space budget; returns how many may be written.
    fn reserve_space(&self, want: usize) -> usize {
        let mut st = self.lock();
        let granted = match &mut st.space_left {
            None => want,
            Some(left) => {
                let granted = want.min(usize::try_from(*left).unwrap_or(usize::MAX));
                *left -= granted as u64;
                granted
            }
        };
        st.written += granted as u64;
        granted
    }

    fn wrap_writable(&self, inner: Box<dyn WritableFile>, path: &Path) -> Box<dyn WritableFile> {
        Box::new(FaultWritable { inner, fs: self.clone(), path: path.to_path_buf() })
    }
}

struct FaultWritable {
    inner: Box<dyn WritableFile>,
    fs: FaultFs,
    path: PathBuf,
}

impl WritableFile for FaultWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let landed = match self.fs.check(Op::Write, &[&self.path]) {
            Some(Effect::Fail(kind)) => return Err(injected(&self.path, Op::Write, kind)),
            Some(Effect::Torn(keep)) => Err(keep.min(data.len().saturating_sub(1))),
            Some(Effect::Panic) => panic!("injected panic: write to {:?}", self.path),
            None => Ok(data.len()),
        };
        // A torn or out-of-space write still lands the bytes that "made it" before failing.
        let want = landed.unwrap_or_else(|n| n);
        let granted = self.fs.reserve_space(want);
        if granted > 0 {
            self.inner.append(&data[..granted])?;
        }
        match landed {
            Err(_) => Err(injected(&self.path, Op::Write, ErrorKind::Other)),
            Ok(_) if granted < want => Err(injected(&self.path, Op::Write, ErrorKind::StorageFull)),
            Ok(_) => Ok(()),
        }
    }
    fn sync_data(&mut self) -> Result<()> {
        self.fs.gate_after_latency(Op::Sync, &self.path, |st| st.sync_latency)?;
        self.inner.sync_data()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn preallocate(&mut self, upto: u64) -> Result<()> {
        // Failures are injected like any write's; the zeros are not charged against the space
        // limit (the appends that later fill them are).
        self.fs.gate(Op::Write, &[&self.path])?;
        self.inner.preallocate(upto)
    }
}

struct FaultRandom {
    inner: Arc<dyn RandomAccessFile>,
    fs: FaultFs,
    path: PathBuf,
}

impl RandomAccessFile for FaultRandom {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.fs.gate(Op::Read, &[&self.path])?;
        self.inner.read_exact_at(offset, buf)
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn will_need(&self, offset: u64, len: u64) {
        self.inner.will_need(offset, len);
    }
    // `mapped` stays `None` so that every read passes through `read_exact_at` and its rules.
}

struct FaultSequential {
    inner: Box<dyn SequentialFile>,
    fs: FaultFs,
    path: PathBuf,
}

impl SequentialFile for FaultSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        self.fs.gate(Op::Read, &[&self.path])?;
        self.inner.read(buf)
    }
}

impl FileSystem for FaultFs {
    fn create_dir_all(&self, path: &Path) -> Result<()> {
        self.gate(Op::Create, &[path])?;
        self.inner.create_dir_all(path)
    }
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.gate(Op::Create, &[path])?;
        Ok(self.wrap_writable(self.inner.create(path)?, path))
    }
    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.gate(Op::Open, &[path])?;
        let inner = self.inner.open_random(path)?;
        Ok(Arc::new(FaultRandom { inner, fs: self.clone(), path: path.to_path_buf() }))
    }
    fn open_random_unmapped(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.gate(Op::Open, &[path])?;
        let inner = self.inner.open_random_unmapped(path)?;
        Ok(Arc::new(FaultRandom { inner, fs: self.clone(), path: path.to_path_buf() }))
    }
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        self.gate(Op::Open, &[path])?;
        let inner = self.inner.open_sequential(path)?;
        Ok(Box::new(FaultSequential { inner, fs: self.clone(), path: path.to_path_buf() }))
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.gate(Op::Rename, &[from, to])?;
        self.inner.rename(from, to)
    }
    fn link_or_copy(&self, from: &Path, to: &Path) -> Result<()> {
        self.gate(Op::Create, &[from, to])?;
        self.inner.link_or_copy(from, to)
    }
    fn remove_file(&self, path: &Path) -> Result<()> {
        self.gate_after_latency(Op::Remove, path, |st| st.remove_latency)?;
        self.inner.remove_file(path)
    }
    fn list_dir(&self, path: &Path) -> Result<Vec<String>> {
        self.gate(Op::Metadata, &[path])?;
        self.inner.list_dir(path)
    }
    fn is_dir(&self, path: &Path) -> Result<Option<bool>> {
        self.gate(Op::Metadata, &[path])?;
        self.inner.is_dir(path)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        self.gate(Op::Metadata, &[path])?;
        self.inner.file_size(path)
    }
    fn sync_dir(&self, path: &Path) -> Result<()> {
        self.gate(Op::SyncDir, &[path])?;
        self.inner.sync_dir(path)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.gate(Op::Lock, &[path])?;
        self.inner.lock(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemFs;
    use std::path::PathBuf;

    fn setup() -> (FaultFs, MemFs, PathBuf) {
        let mem = MemFs::new();
        let fs = FaultFs::new(Arc::new(mem.clone()));
        let dir = PathBuf::from("/d");
        fs.create_dir_all(&dir).unwrap();
        (fs, mem, dir)
    }

    fn io_kind(e: &Error) -> Option<ErrorKind> {
        match e {
            Error::Io { source, .. } => Some(source.kind()),
            _ => None,
        }
    }

    #[test]
    fn fail_next_fails_once_and_counts() {
        let (fs, _, dir) = setup();
        let mut f = fs.create(&dir.join("a")).unwrap();
        fs.fail_next(Op::Sync);
        assert!(f.sync_data().is_err());
        f.sync_data().unwrap();
        assert_eq!(fs.count(Op::Sync), 2);
        assert_eq!(fs.injected().len(), 1);
    }

    #[test]
    fn path_filters_and_every_nth() {
        let (fs, _, dir) = setup();
        fs.add_rule(Rule::new(Op::Create).on_path(".sst").when(When::EveryNth(2)));
        fs.create(&dir.join("1.log")).unwrap();
        fs.create(&dir.join("1.sst")).unwrap();
        assert!(fs.create(&dir.join("2.sst")).is_err());
        fs.create(&dir.join("3.sst")).unwrap();
        assert!(fs.create(&dir.join("4.sst")).is_err());
        fs.clear();
        fs.create(&dir.join("5.sst")).unwrap();
    }

    #[test]
    fn torn_writes_land_a_prefix_then_fail() {
        let (fs, mem, dir) = setup();
        let path = dir.join("w");
        let mut f = fs.create(&path).unwrap();
        fs.add_rule(Rule::new(Op::Write).torn(3));
        assert!(f.append(b"abcdef").is_err());
        assert_eq!(mem.contents(&path).unwrap(), b"abc");
    }

    #[test]
    fn space_limit_gives_enospc_after_writing_what_fits() {
        let (fs, mem, dir) = setup();
        let path = dir.join("w");
        let mut f = fs.create(&path).unwrap();
        fs.set_space_limit(Some(5));
        f.append(b"abc").unwrap();
        let e = f.append(b"defg").unwrap_err();
        assert_eq!(io_kind(&e), Some(ErrorKind::StorageFull));
        assert_eq!(mem.contents(&path).unwrap(), b"abcde");
        fs.set_space_limit(None);
        f.append(b"!").unwrap();
    }

    #[test]
    fn after_n_fails_everything_later_and_changes_nothing() {
        let (fs, mem, dir) = setup();
        fs.fail_after(Op::Any, 2);
        let mut f = fs.create(&dir.join("x")).unwrap();
        f.append(b"1").unwrap();
        assert!(f.append(b"2").is_err());
        assert!(fs.rename(&dir.join("x"), &dir.join("y")).is_err());
        assert!(fs.open_sequential(&dir.join("x")).is_err());
        assert_eq!(mem.contents(&dir.join("x")).unwrap(), b"1");
        assert_eq!(fs.count(Op::Any), 6, "create_dir_all, create, 2 writes, rename, open");
    }
}
