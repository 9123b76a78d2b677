//! Power loss at page granularity while several threads write: for each seed, writer threads
//! run puts, deletes and `uint64add` merges (0 to 30% of them `sync=true`, by seed) into a
//! database on `MemFs` with 64 KiB memtables, so memtables switch, flush and compact, while a
//! reader thread holds snapshots and iterates. At a random moment, with writers still running,
//! the power is cut (`CrashMode::Pages`: any subset of each file's unsynced 4 KiB pages and of
//! each directory's unsynced entries reaches the disk). The crash image is reopened with default
//! options (plus the merge operator) and checked against the oracle below; then the reopened
//! database must take writes, and a second reopen must see exactly the same state.
//!
//! The oracle. The engine promises (docs/durability.md) that what survives a power loss is the
//! state after a prefix of the writes in sequence order, at least as long as every write
//! acknowledged with `sync=true` (a synced write makes every earlier write durable). The test
//! cannot see each write's sequence number (`Db::latest_sequence` is the database's, not the
//! write's), and recording acknowledgements under a lock after `write` returns would not give
//! the sequence order either: two groups committed back to back can wake their writers in either
//! order. So the check is in two parts that are valid whatever the interleaving:
//!
//! - Each thread owns its keys (`t{t}-k*` and the counter `t{t}-ctr`), and one thread's writes
//!   are in sequence order, since each returns before the next starts. So the recovered state
//!   restricted to a thread's keys must equal the state after a prefix `p_t` of that thread's
//!   writes; in particular its counter must be the sum of a prefix of its merge operands.
//!   Values are unique per write, so the state mostly pins `p_t` down (a delete can leave
//!   several candidates; all are kept).
//! - Across threads, each write records `lo` = `latest_sequence()` just before the call and
//!   `hi` = `latest_sequence()` just after it returned, so `lo < seq <= hi` (a leader numbers
//!   its group after every number already published, and publishes before acknowledging). If
//!   `hi(A) <= lo(B)` then `seq(A) < seq(B)`: a recovered B requires a recovered A. The
//!   floor: a thread's writes up to its last `sync=true` write acknowledged before the cut
//!   began must all be recovered, and by the rule above so must every write of any thread
//!   that returned before that synced write was issued. The check looks for the least `p_t`
//!   per thread (among the candidates, above the floor) closed under this rule; if none
//!   exists, no prefix of the sequence order explains the state.
//!
//! Writes issued after the cut cannot be in the image; they are excluded. Thread timing is not
//! reproducible, so replaying one seed runs the same workload and crash choices but may cut at a
//! different point; a failure prints everything needed to judge it.
//!
//! `STRATA_POWER_LOSS_SEEDS` sets the number of seeds (default 200); `STRATA_POWER_LOSS_SEED`
//! runs only that seed (`STRATA_POWER_LOSS_REPEAT` times, default 1, since its cut point
//! varies); `STRATA_POWER_LOSS_DUMP=<dir>` writes each failing crash image, as it was before
//! recovery touched it, to `<dir>/seed-<seed>/`. Every seed runs even after a failure; the test
//! then prints each failure and a summary by class (error text with numbers blanked) and fails.
//! When open fails, the failure also says what a salvage open (`skip_corrupted_wal_records`)
//! finds on the image, judged by the same oracle, to tell "the data was there" from "it was
//! lost".

use std::collections::{BTreeMap, VecDeque};
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use strata::fs::FileSystem;
use strata::{Db, Options, ReadOptions, WriteOptions};
use strata_testkit::{background_panics, dump, watch_background_panics, CrashMode, Kv, MemFs, Rng};

const THREADS: usize = 3;
/// Keys each thread puts and deletes (besides its counter): few, so they are overwritten often.
const KEYS: usize = 6;

fn dir() -> PathBuf {
    PathBuf::from("/db")
}

fn key(t: usize, j: usize) -> Vec<u8> {
    format!("t{t}-k{j}").into_bytes()
}

fn counter(t: usize) -> Vec<u8> {
    format!("t{t}-ctr").into_bytes()
}

#[derive(Clone, Debug)]
enum Op {
    Put(usize, Vec<u8>),
    Delete(usize),
    Merge(u64),
}

#[derive(Clone, Debug)]
struct Write {
    op: Op,
    sync: bool,
}

/// One thread's writes, all decided by the seed before anything runs. Values are unique per
/// write and straddle the blob threshold (200 bytes), so flushes write tables and blob files.
/// `sync_percent` of them are synced: with few, the unsynced tail of the WAL spans many pages
/// (and blocks) when the power goes; with many, the floor is close to the cut.
fn plan(rng: &mut Rng, t: usize, sync_percent: u64) -> Vec<Write> {
    let n = 60 + rng.up_to(90);
    (0..n)
        .map(|i| {
            let op = match rng.below(100) {
                0..55 => {
                    let len = 20 + rng.up_to(1200);
                    let v = format!("t{t}.w{i}.").into_bytes().into_iter().cycle().take(len).collect();
                    Op::Put(rng.below(KEYS as u64) as usize, v)
                }
                55..70 => Op::Delete(rng.below(KEYS as u64) as usize),
                _ => Op::Merge(1 + rng.below(1000)),
            };
            Write { op, sync: rng.percent(sync_percent) }
        })
        .collect()
}

/// The state of thread `t`'s keys after each prefix of its writes: `states[p]` is after `p`.
fn prefix_states(t: usize, writes: &[Write]) -> Vec<Kv> {
    let mut state = Kv::new();
    let mut sum = 0u64;
    let mut out = vec![state.clone()];
    for w in writes {
        match &w.op {
            Op::Put(j, v) => {
                state.insert(key(t, *j), v.clone());
            }
            Op::Delete(j) => {
                state.remove(&key(t, *j));
            }
            Op::Merge(n) => {
                sum += n;
                state.insert(counter(t), sum.to_le_bytes().to_vec());
            }
        }
        out.push(state.clone());
    }
    out
}

/// `latest_sequence()` just before a write was issued and just after it returned.
#[derive(Clone, Copy, Debug)]
struct Acked {
    lo: u64,
    hi: u64,
}

/// What one writer thread did.
#[derive(Default)]
struct Log {
    acked: Vec<Acked>,
    /// Writes issued before the cut was over: only these can be in the crash image.
    issued_before_cut: usize,
    error: Option<String>,
}

/// A failed seed: a class to group by and the details.
#[derive(Debug)]
struct Failure {
    class: String,
    detail: String,
}

fn fail<T>(class: &str, detail: impl Into<String>) -> Result<T, Failure> {
    Err(Failure { class: class.to_string(), detail: detail.into() })
}

/// Error text with every number blanked, so failures group by kind rather than by offset.
fn shape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !out.ends_with('#') {
                out.push('#');
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn first_options(fs: MemFs) -> Options {
    Options {
        fs: Arc::new(fs),
        write_buffer_size: 64 << 10,
        level0_compaction_trigger: 2,
        min_blob_size: 200,
        cache_size: 1 << 20,
        merge_operator: strata::merge::builtin("uint64add"),
        ..Options::default()
    }
}

/// Default options, except the filesystem and the merge operator the data needs.
fn reopen_options(fs: MemFs) -> Options {
    Options { fs: Arc::new(fs), merge_operator: strata::merge::builtin("uint64add"), ..Options::default() }
}

fn apply(db: &Db, t: usize, w: &Write) -> strata::Result<()> {
    let opts = WriteOptions { sync: w.sync, disable_wal: false };
    match &w.op {
        Op::Put(j, v) => db.put_opt(&opts, &key(t, *j), v),
        Op::Delete(j) => db.delete_opt(&opts, &key(t, *j)),
        Op::Merge(n) => db.merge_opt(&opts, &counter(t), &n.to_le_bytes()),
    }
}

/// Shared between the writers, the reader and the thread that cuts the power.
struct Run<'a> {
    db: &'a Db,
    logs: Vec<Mutex<Log>>,
    acked_total: AtomicUsize,
    cut: AtomicBool,
    stop: AtomicBool,
}

fn writer(run: &Run, t: usize, writes: &[Write], seed: u64) {
    let mut rng = Rng::new(seed ^ (t as u64 + 1).wrapping_mul(0x5851_F42D_4C95_7F2D));
    for (i, w) in writes.iter().enumerate() {
        if run.stop.load(SeqCst) {
            break;
        }
        if !run.cut.load(SeqCst) {
            run.logs[t].lock().unwrap().issued_before_cut = i + 1;
        }
        let lo = run.db.latest_sequence();
        let result = apply(run.db, t, w);
        let hi = run.db.latest_sequence();
        if let Err(e) = result {
            run.logs[t].lock().unwrap().error = Some(format!("write {i} failed: {e}"));
            break;
        }
        run.logs[t].lock().unwrap().acked.push(Acked { lo, hi });
        run.acked_total.fetch_add(1, SeqCst);
        if t == 0 && rng.percent(1) {
            if let Err(e) = run.db.compact_range(None, None) {
                run.logs[t].lock().unwrap().error = Some(format!("compact_range failed: {e}"));
                break;
            }
        }
    }
}

/// Every key and value visible through `snapshot`.
fn scan(db: &Db, snapshot: &strata::Snapshot) -> strata::Result<Kv> {
    let mut it = db.cursor(&ReadOptions { snapshot: Some(snapshot.clone()), ..ReadOptions::new() })?;
    it.seek_to_first();
    let mut out = Kv::new();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status()?;
    Ok(out)
}

/// Takes snapshots, keeps the last few alive while writes, flushes and compactions go on, and
/// checks that each still reads as it did when taken.
fn reader(run: &Run) -> Result<usize, String> {
    let mut held: VecDeque<(strata::Snapshot, Kv)> = VecDeque::new();
    let mut scans = 0;
    while !run.stop.load(SeqCst) {
        let snap = run.db.snapshot();
        let view = scan(run.db, &snap).map_err(|e| format!("scan failed: {e}"))?;
        for (old, seen) in &held {
            let again = scan(run.db, old).map_err(|e| format!("scan failed: {e}"))?;
            if &again != seen {
                return Err(format!("snapshot at {} changed under a reader", old.sequence()));
            }
        }
        held.push_back((snap, view));
        if held.len() > 3 {
            held.pop_front();
        }
        scans += 1;
        std::thread::sleep(Duration::from_micros(300));
    }
    Ok(scans)
}

/// What the cut saw: each thread's acknowledged writes and the flushes and compactions done as
/// the power went, and the image.
struct Cut {
    acked: Vec<usize>,
    flushes: u64,
    compactions: u64,
    image: MemFs,
}

/// Waits until `target` writes are acknowledged (or every writer is done), then cuts.
fn cut_power(run: &Run, mem: &MemFs, target: usize, planned: usize, seed: u64) -> Cut {
    while run.acked_total.load(SeqCst) < target.min(planned) && !run.stop.load(SeqCst) {
        std::thread::sleep(Duration::from_micros(50));
    }
    let acked = run.logs.iter().map(|l| l.lock().unwrap().acked.len()).collect();
    let (flushes, compactions) =
        (run.db.stats().flushes.load(SeqCst), run.db.stats().compactions.load(SeqCst));
    let image = mem.crash_clone(CrashMode::Pages(seed));
    run.cut.store(true, SeqCst);
    Cut { acked, flushes, compactions, image }
}

/// Everything the oracle needs about one thread.
struct ThreadRecord {
    writes: Vec<Write>,
    acked: Vec<Acked>,
    issued_before_cut: usize,
    acked_before_cut: usize,
}

impl ThreadRecord {
    /// Writes up to and including the last `sync=true` one acknowledged before the cut.
    fn floor(&self) -> usize {
        (0..self.acked_before_cut).rev().find(|&i| self.writes[i].sync).map_or(0, |i| i + 1)
    }

    /// How many of this thread's writes returned at or before sequence `lo` was published, so
    /// precede (in sequence order) any write issued when `latest_sequence()` read `lo`.
    fn returned_by(&self, lo: u64) -> usize {
        self.acked.iter().take_while(|a| a.hi <= lo).count()
    }
}

/// What the workload left for the oracle, or the failure that ended it.
struct Workload {
    sync_percent: u64,
    threads: Vec<ThreadRecord>,
    image: MemFs,
    flushes: u64,
    compactions: u64,
}

/// Runs the writers, the reader and the cut for one seed.
fn run_workload(seed: u64) -> Result<Workload, Failure> {
    let mut rng = Rng::new(seed);
    let sync_percent = [0, 1, 3, 10, 30][rng.below(5) as usize];
    let plans: Vec<Vec<Write>> = (0..THREADS).map(|t| plan(&mut rng, t, sync_percent)).collect();
    let planned: usize = plans.iter().map(Vec::len).sum();
    let target = rng.up_to(planned - 1);
    let mem = MemFs::new();
    let db = match Db::open(dir(), first_options(mem.clone())) {
        Ok(db) => db,
        Err(e) => return fail("first open failed", e.to_string()),
    };
    let run = Run {
        db: &db,
        logs: (0..THREADS).map(|_| Mutex::new(Log::default())).collect(),
        acked_total: AtomicUsize::new(0),
        cut: AtomicBool::new(false),
        stop: AtomicBool::new(false),
    };
    let (cut, read) = std::thread::scope(|s| {
        let writers: Vec<_> = plans
            .iter()
            .enumerate()
            .map(|(t, p)| {
                s.spawn({
                    let run = &run;
                    move || writer(run, t, p, seed)
                })
            })
            .collect();
        let reader = s.spawn(|| reader(&run));
        let run_ref = &run;
        let watcher = s.spawn(move || {
            // Lets the cut stop waiting if every writer ended early (a failed write).
            while writers.iter().any(|w| !w.is_finished()) {
                std::thread::sleep(Duration::from_micros(200));
            }
            run_ref.stop.store(true, SeqCst);
        });
        let cut = cut_power(&run, &mem, target, planned, seed);
        run.stop.store(true, SeqCst);
        watcher.join().expect("watcher");
        (cut, reader.join())
    });
    let logs = run.logs;
    drop(db);
    match read {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return fail("live reader failed", e),
        Err(_) => return fail("live reader panicked", "see the panic above"),
    }
    let mut threads = Vec::new();
    for (t, (log, writes)) in logs.into_iter().zip(plans).enumerate() {
        let log = log.into_inner().unwrap();
        if let Some(e) = log.error {
            return fail("live write failed", format!("thread {t}: {e}"));
        }
        let (acked_before_cut, issued_before_cut) = (cut.acked[t], log.issued_before_cut);
        threads.push(ThreadRecord { writes, acked: log.acked, issued_before_cut, acked_before_cut });
    }
    Ok(Workload {
        sync_percent,
        threads,
        image: cut.image,
        flushes: cut.flushes,
        compactions: cut.compactions,
    })
}

// ---------------------------------------------------------------------------------------------
// The oracle

fn owner(k: &[u8]) -> Option<usize> {
    (0..THREADS).find(|t| k.starts_with(format!("t{t}-").as_bytes()))
}

fn show(kv: &Kv) -> String {
    let items: Vec<String> = kv
        .iter()
        .map(|(k, v)| {
            let v = if v.len() == 8 {
                format!("{}", u64::from_le_bytes(v[..8].try_into().unwrap_or_default()))
            } else {
                String::from_utf8_lossy(&v[..v.len().min(12)]).into_owned()
            };
            format!("{}={v}", String::from_utf8_lossy(k))
        })
        .collect();
    items.join(" ")
}

/// The counter must be the sum of a prefix of the thread's merge operands, at least the prefix
/// before its floor.
fn check_counter(t: usize, rec: &ThreadRecord, mine: &Kv) -> Result<(), Failure> {
    let got = match mine.get(&counter(t)) {
        None => 0,
        Some(v) if v.len() == 8 => u64::from_le_bytes(v[..].try_into().unwrap_or_default()),
        Some(v) => {
            return fail("merge counter is not a prefix sum", format!("thread {t}: counter value {v:?}"))
        }
    };
    let (mut sum, mut at_floor, mut sums) = (0u64, 0u64, vec![0u64]);
    for (i, w) in rec.writes[..rec.issued_before_cut].iter().enumerate() {
        if let Op::Merge(n) = w.op {
            sum += n;
            sums.push(sum);
        }
        if i + 1 == rec.floor() {
            at_floor = sum;
        }
    }
    if got < at_floor {
        let detail = format!("thread {t}: counter {got}, but the synced floor needs at least {at_floor}");
        return fail("acknowledged synced write lost (merge counter)", detail);
    }
    if !sums.contains(&got) {
        let detail = format!("thread {t}: counter {got}, prefix sums {:?}...", &sums[..sums.len().min(12)]);
        return fail("merge counter is not a prefix sum", detail);
    }
    Ok(())
}

/// The prefixes of thread `t`'s issued writes whose state equals the recovered one.
fn candidates(t: usize, rec: &ThreadRecord, mine: &Kv) -> Result<Vec<usize>, Failure> {
    let states = prefix_states(t, &rec.writes[..rec.issued_before_cut]);
    let matching: Vec<usize> = (0..states.len()).filter(|&p| states[p] == *mine).collect();
    let floor = rec.floor();
    let context = || {
        format!(
            "thread {t}: {} writes issued before the cut, {} acknowledged, floor {floor}; recovered [{}]",
            rec.issued_before_cut,
            rec.acked_before_cut,
            show(mine)
        )
    };
    if matching.is_empty() {
        // The nearest prefix, to tell a lost synced write from a hole.
        let distance = |s: &Kv| {
            s.iter().filter(|(k, v)| mine.get(*k) != Some(v)).count()
                + mine.keys().filter(|k| !s.contains_key(*k)).count()
        };
        let nearest = (0..states.len()).min_by_key(|&p| distance(&states[p])).unwrap_or(0);
        let detail = format!("{}; nearest prefix {nearest} is [{}]", context(), show(&states[nearest]));
        return fail("thread's keys match no prefix of its writes (hole or wrong value)", detail);
    }
    if matching.iter().all(|&p| p < floor) {
        let detail = format!("{}; matches prefixes {matching:?}", context());
        return fail("acknowledged synced write lost", detail);
    }
    Ok(matching.into_iter().filter(|&p| p >= floor).collect())
}

/// The least per-thread prefixes, among the candidates, closed under "a write that returned
/// before another was issued precedes it". Fails if no choice is closed.
fn close_across_threads(w: &Workload, cands: &[Vec<usize>]) -> Result<Vec<usize>, Failure> {
    let mut p: Vec<usize> = cands.iter().map(|c| c[0]).collect();
    loop {
        let mut changed = false;
        for b in 0..THREADS {
            let Some(last) = p[b].checked_sub(1).and_then(|i| w.threads[b].acked.get(i)) else { continue };
            for a in 0..THREADS {
                let need = w.threads[a].returned_by(last.lo);
                if p[a] >= need {
                    continue;
                }
                let Some(&next) = cands[a].iter().find(|&&c| c >= need) else {
                    return Err(gap(w, cands, &p, (a, b), need));
                };
                p[a] = next;
                changed = true;
            }
        }
        if !changed {
            return Ok(p);
        }
    }
}

/// Thread `b`'s last recovered write (of prefixes `p`) needs `need` writes of thread `a`, more
/// than any candidate prefix of `a`: says whether `b`'s floor (its last synced write) already
/// needed them.
fn gap(w: &Workload, cands: &[Vec<usize>], p: &[usize], (a, b): (usize, usize), need: usize) -> Failure {
    let rec_b = &w.threads[b];
    let floor_write = rec_b.floor().checked_sub(1).and_then(|i| rec_b.acked.get(i));
    let synced = floor_write.is_some_and(|s| cands[a].iter().all(|&c| c < w.threads[a].returned_by(s.lo)));
    let class = if synced {
        "write acknowledged before a synced write (other thread) lost"
    } else {
        "cross-thread hole: a write recovered without one acknowledged before it was issued"
    };
    let last = p[b] - 1;
    let detail = format!(
        "thread {b}'s write {last} (sync={}) is recovered and was issued after thread {a}'s first {need} \
         writes returned, but thread {a} recovered only a prefix in {:?}; chosen prefixes {p:?}",
        rec_b.writes[last].sync, cands[a]
    );
    Failure { class: class.to_string(), detail }
}

/// Point reads agree with the scan: every key has its value, and absent keys read as absent.
fn check_gets(db: &Db, expected: &Kv, ctx: &str) -> Result<(), Failure> {
    let r = ReadOptions::new();
    let keys = (0..THREADS).flat_map(|t| (0..KEYS).map(move |j| key(t, j)).chain([counter(t)]));
    for k in keys {
        match db.get_opt(&r, &k) {
            Ok(got) if got.as_ref() == expected.get(&k) => {}
            Ok(got) => {
                let detail = format!(
                    "{ctx}: get {} = {got:?}, scan says {:?}",
                    String::from_utf8_lossy(&k),
                    expected.get(&k)
                );
                return fail("get disagrees with the scan", detail);
            }
            Err(e) => return fail("get failed", format!("{ctx}: {e}")),
        }
    }
    Ok(())
}

/// Checks the recovered state; returns the prefixes recovered per thread.
fn check_recovered(w: &Workload, state: &Kv) -> Result<Vec<usize>, Failure> {
    if let Some(k) = state.keys().find(|k| owner(k).is_none()) {
        return fail("unknown key recovered", String::from_utf8_lossy(k).into_owned());
    }
    let mut cands = Vec::new();
    for (t, rec) in w.threads.iter().enumerate() {
        let mine: Kv =
            state.iter().filter(|(k, _)| owner(k) == Some(t)).map(|(k, v)| (k.clone(), v.clone())).collect();
        check_counter(t, rec, &mine)?;
        cands.push(candidates(t, rec, &mine)?);
    }
    close_across_threads(w, &cands)
}

fn open(fs: MemFs, class: &str) -> Result<Db, Failure> {
    Db::open(dir(), reopen_options(fs))
        .or_else(|e| fail(&format!("{class}: {}", shape(&e.to_string())), e.to_string()))
}

fn scan_all(db: &Db, ctx: &str) -> Result<Kv, Failure> {
    dump(db).or_else(|e| fail("scan after recovery failed", format!("{ctx}: {e}")))
}

/// The reopened database takes writes (synced, in every thread's keys), and a second reopen
/// sees exactly what the first one had plus them.
fn check_writes_after_recovery(image: &MemFs, db: Db, mut expected: Kv) -> Result<(), Failure> {
    let sync = WriteOptions { sync: true, disable_wal: false };
    for t in 0..THREADS {
        let v = format!("t{t}.after-recovery").into_bytes();
        let sum =
            expected.get(&counter(t)).map_or(0, |c| u64::from_le_bytes(c[..].try_into().unwrap_or_default()));
        let written = db
            .put_opt(&sync, &key(t, 0), &v)
            .and_then(|()| db.merge_opt(&sync, &counter(t), &7u64.to_le_bytes()))
            .and_then(|()| db.delete_opt(&sync, &key(t, 1)));
        if let Err(e) = written {
            return fail("write after recovery failed", e.to_string());
        }
        expected.insert(key(t, 0), v);
        expected.insert(counter(t), (sum + 7).to_le_bytes().to_vec());
        expected.remove(&key(t, 1));
    }
    if let Err(e) = db.close() {
        return fail("close after recovery failed", e.to_string());
    }
    let db = open(image.clone(), "second reopen failed")?;
    let again = scan_all(&db, "second reopen")?;
    if again != expected {
        let detail = format!("expected [{}], got [{}]", show(&expected), show(&again));
        return fail("second reopen differs from the first plus the later writes", detail);
    }
    check_gets(&db, &expected, "second reopen")
}

/// What a passing seed exercised.
struct SeedStats {
    issued: usize,
    recovered: usize,
    floor: usize,
    flushes: u64,
    compactions: u64,
}

impl Workload {
    /// The workload at the cut, for a failure report.
    fn summary(&self) -> String {
        let threads: Vec<String> = self
            .threads
            .iter()
            .enumerate()
            .map(|(t, r)| {
                format!(
                    "t{t}: {} issued, {} acked, floor {}",
                    r.issued_before_cut,
                    r.acked_before_cut,
                    r.floor()
                )
            })
            .collect();
        format!(
            "{}% synced, {} flushes, {} compactions; {}",
            self.sync_percent,
            self.flushes,
            self.compactions,
            threads.join("; ")
        )
    }
}

/// A failed open of the crash image, with what a salvage open (`skip_corrupted_wal_records`,
/// read-only, on a copy) recovers judged by the same oracle: it tells whether the data the
/// contract needs was on the disk at all.
fn open_failure(w: &Workload, e: &strata::Error) -> Failure {
    let copy = w.image.crash_clone(CrashMode::KeepUnsynced);
    let salvage = Options { skip_corrupted_wal_records: true, ..reopen_options(copy) };
    let verdict = Db::open_read_only(dir(), salvage)
        .or_else(|e| fail("salvage open failed", e.to_string()))
        .and_then(|db| scan_all(&db, "salvage"))
        .and_then(|state| check_recovered(w, &state));
    let (salvage_class, salvage_detail) = match verdict {
        Ok(p) => ("a valid prefix", format!("prefixes {p:?}")),
        Err(f) if f.class.contains("salvage open failed") => ("nothing (salvage open failed)", f.detail),
        Err(f) if f.class.contains("synced") => {
            ("a state missing synced writes", format!("{}: {}", f.class, f.detail))
        }
        Err(f) => ("a state with a hole (not a prefix)", format!("{}: {}", f.class, f.detail)),
    };
    Failure {
        class: format!(
            "open after power loss failed: {} / salvage open recovers: {salvage_class}",
            shape(&e.to_string())
        ),
        detail: format!("{e}; salvage: {salvage_detail}"),
    }
}

/// Each thread's writes as the oracle saw them, one a line.
fn write_listing(w: &Workload) -> String {
    let mut out = String::new();
    for (t, r) in w.threads.iter().enumerate() {
        let (issued, acked, floor) = (r.issued_before_cut, r.acked_before_cut, r.floor());
        out += &format!("thread {t}: {issued} issued before the cut, {acked} acknowledged, floor {floor}\n");
        for (i, write) in r.writes[..issued].iter().enumerate() {
            let op = match &write.op {
                Op::Put(j, v) => format!("put t{t}-k{j} ({} bytes)", v.len()),
                Op::Delete(j) => format!("delete t{t}-k{j}"),
                Op::Merge(n) => format!("merge t{t}-ctr +{n}"),
            };
            let seq = r.acked.get(i).map_or(String::new(), |a| format!(" lo {} hi {}", a.lo, a.hi));
            out += &format!("  {i} {op} sync={}{seq}\n", write.sync);
        }
    }
    out
}

/// Writes the crash image's database directory to `$STRATA_POWER_LOSS_DUMP/seed-<seed>/`, with
/// the failure and the writes in `FAILURE.txt`, so a failing image can be opened again (by a
/// later engine, or the `strata` tool) although thread timing makes the seed hard to replay.
fn dump_image(image: &MemFs, w: &Workload, seed: u64, failure: &Failure) {
    let Some(root) = std::env::var_os("STRATA_POWER_LOSS_DUMP") else { return };
    let target = PathBuf::from(root).join(format!("seed-{seed}"));
    let written = std::fs::create_dir_all(&target).and_then(|()| {
        for name in image.list_dir(&dir()).unwrap_or_default() {
            if let Some(bytes) = image.contents(&dir().join(&name)) {
                std::fs::write(target.join(&name), bytes)?;
            }
        }
        let text = format!("[{}] {}\n\n{}", failure.class, failure.detail, write_listing(w));
        std::fs::write(target.join("FAILURE.txt"), text)
    });
    match written {
        Ok(()) => println!("seed {seed}: crash image written to {}", target.display()),
        Err(e) => println!("seed {seed}: could not write the crash image to {}: {e}", target.display()),
    }
}

fn run_seed(seed: u64) -> Result<SeedStats, Failure> {
    let w = run_workload(seed)?;
    // Recovery rewrites the image (new MANIFEST, WALs deleted): keep the crash as it was.
    let pristine = w.image.crash_clone(CrashMode::KeepUnsynced);
    check_image(&w).inspect_err(|f| dump_image(&pristine, &w, seed, f))
}

fn check_image(w: &Workload) -> Result<SeedStats, Failure> {
    let with_summary = |f: Failure| Failure { detail: format!("{} [{}]", f.detail, w.summary()), ..f };
    let db =
        Db::open(dir(), reopen_options(w.image.clone())).map_err(|e| with_summary(open_failure(w, &e)))?;
    let state = scan_all(&db, "first reopen").map_err(with_summary)?;
    check_gets(&db, &state, "first reopen").map_err(with_summary)?;
    let prefixes = check_recovered(w, &state).map_err(with_summary)?;
    check_writes_after_recovery(&w.image, db, state).map_err(with_summary)?;
    Ok(SeedStats {
        issued: w.threads.iter().map(|r| r.issued_before_cut).sum(),
        recovered: prefixes.iter().sum(),
        floor: w.threads.iter().map(ThreadRecord::floor).sum(),
        flushes: w.flushes,
        compactions: w.compactions,
    })
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|s| s.trim().parse().ok())
}

#[test]
fn power_loss_at_page_granularity_recovers_a_prefix_with_every_synced_write() {
    watch_background_panics();
    let seeds: Vec<u64> = match env_u64("STRATA_POWER_LOSS_SEED") {
        Some(seed) => vec![seed; env_u64("STRATA_POWER_LOSS_REPEAT").unwrap_or(1).max(1) as usize],
        None => (0..env_u64("STRATA_POWER_LOSS_SEEDS").unwrap_or(200)).collect(),
    };
    let start = Instant::now();
    let mut passed = Vec::new();
    let mut failures: BTreeMap<String, Vec<(u64, String)>> = BTreeMap::new();
    for &seed in &seeds {
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| run_seed(seed)));
        let failure = match outcome {
            Ok(Ok(stats)) => {
                passed.push(stats);
                continue;
            }
            Ok(Err(f)) => f,
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
                Failure { class: "panic".into(), detail: msg.unwrap_or_default() }
            }
        };
        println!("failing seed {seed}: [{}] {}", failure.class, failure.detail);
        failures.entry(failure.class).or_default().push((seed, failure.detail));
    }
    let sum = |f: fn(&SeedStats) -> usize| passed.iter().map(f).sum::<usize>();
    println!(
        "power loss (pages): {} seeds in {:.1}s, {} passed ({} writes issued before the cut, \
         {} recovered, floor {}; {} seeds flushed, {} compacted), {} failed",
        seeds.len(),
        start.elapsed().as_secs_f64(),
        passed.len(),
        sum(|s| s.issued),
        sum(|s| s.recovered),
        sum(|s| s.floor),
        passed.iter().filter(|s| s.flushes > 0).count(),
        passed.iter().filter(|s| s.compactions > 0).count(),
        failures.values().map(Vec::len).sum::<usize>()
    );
    for (class, seeds) in &failures {
        let first: Vec<u64> = seeds.iter().take(10).map(|(s, _)| *s).collect();
        println!(
            "  {} x [{class}], seeds {first:?}{}",
            seeds.len(),
            if seeds.len() > 10 { " ..." } else { "" }
        );
    }
    assert_eq!(background_panics(), 0, "a strata background thread panicked (see the output above)");
    assert!(
        failures.is_empty(),
        "{} of {} seeds failed (see above)",
        failures.values().map(Vec::len).sum::<usize>(),
        seeds.len()
    );
}

// ---------------------------------------------------------------------------------------------
// The oracle's own test: it must reject what it is there to catch.

fn record(writes: Vec<Write>, acked: Vec<(u64, u64)>, acked_before_cut: usize) -> ThreadRecord {
    let acked = acked.into_iter().map(|(lo, hi)| Acked { lo, hi }).collect::<Vec<_>>();
    ThreadRecord { issued_before_cut: writes.len(), writes, acked, acked_before_cut }
}

fn w(op: Op, sync: bool) -> Write {
    Write { op, sync }
}

/// The union of each thread's state after its prefix `p[t]`.
fn state_after(wl: &Workload, p: [usize; THREADS]) -> Kv {
    let mut state = Kv::new();
    for (t, rec) in wl.threads.iter().enumerate() {
        state.extend(prefix_states(t, &rec.writes)[p[t]].clone());
    }
    state
}

#[test]
fn the_oracle_rejects_lost_synced_writes_holes_and_cross_thread_gaps() {
    // Thread 0: three writes, the second synced, all acknowledged before the cut (sequences
    // 1..=3). Thread 1 issued its synced write after thread 0's three had returned (lo = 3).
    // Thread 2 issued one unsynced write concurrently with thread 0's first.
    let wl = Workload {
        sync_percent: 0,
        threads: vec![
            record(
                vec![
                    w(Op::Put(0, b"a".to_vec()), false),
                    w(Op::Put(1, b"b".to_vec()), true),
                    w(Op::Merge(5), false),
                ],
                vec![(0, 1), (1, 2), (2, 3)],
                3,
            ),
            record(vec![w(Op::Merge(3), true), w(Op::Put(0, b"c".to_vec()), false)], vec![(3, 4), (4, 5)], 0),
            record(vec![w(Op::Delete(2), false)], vec![(0, 2)], 0),
        ],
        image: MemFs::new(),
        flushes: 0,
        compactions: 0,
    };
    let class = |state: &Kv| check_recovered(&wl, state).map_err(|f| f.class);
    assert_eq!(check_recovered(&wl, &state_after(&wl, [3, 2, 1])).map_err(|f| f.class), Ok(vec![3, 2, 1]));
    assert_eq!(class(&state_after(&wl, [2, 0, 0])), Ok(vec![2, 0, 0]), "the floor alone is enough");
    assert_eq!(class(&state_after(&wl, [1, 0, 0])).unwrap_err(), "acknowledged synced write lost");
    let mut hole = state_after(&wl, [1, 0, 0]);
    hole.insert(counter(0), 5u64.to_le_bytes().to_vec());
    assert!(class(&hole).unwrap_err().starts_with("thread's keys match no prefix"));
    let mut bad_sum = state_after(&wl, [3, 0, 0]);
    bad_sum.insert(counter(0), 4u64.to_le_bytes().to_vec());
    assert_eq!(class(&bad_sum).unwrap_err(), "merge counter is not a prefix sum");
    // Thread 1's first write needs all of thread 0's.
    assert!(class(&state_after(&wl, [2, 1, 0])).unwrap_err().starts_with("cross-thread hole"));
    let mut stray = state_after(&wl, [3, 0, 0]);
    stray.insert(b"zz".to_vec(), b"?".to_vec());
    assert_eq!(class(&stray).unwrap_err(), "unknown key recovered");
    // Once thread 1's synced write was acknowledged before the cut, thread 0's third write
    // (returned before it was issued) is part of the floor.
    let mut wl = wl;
    wl.threads[1].acked_before_cut = 1;
    let class = |state: &Kv| check_recovered(&wl, state).map_err(|f| f.class);
    // Thread 2's delete (of an absent key) returned before it too: prefix 1, same state as 0.
    assert_eq!(class(&state_after(&wl, [3, 1, 0])), Ok(vec![3, 1, 1]));
    assert_eq!(
        class(&state_after(&wl, [2, 1, 0])).unwrap_err(),
        "write acknowledged before a synced write (other thread) lost"
    );
}
