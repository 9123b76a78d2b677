//! The benchmarks themselves: what one thread does for each db_bench benchmark name.
//!
//! Owns: the per-thread operation loops (which keys, which values, how many operations, what
//! counts as found, how many bytes are reported), following db_bench and peerbench.cc, and
//! which column family each key lives in (`--num_column_families`: key n in family n % N).
//! Must not: allocate per operation (keys live in a reused [`KeyBuf`], values are windows of
//! the shared pool), print, or start threads (the runner does that).

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use super::engine::{BenchDb, StatsKind};
use super::flags::Flags;
use super::keygen::{encode_key, KeyBuf, KeyRng, UniqueKeys};
use super::report::{ProgressCounter, Stats};
use super::valuegen::ValueGen;

/// Every benchmark name `strata bench` understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    FillSeq,
    FillRandom,
    /// Every key of `--num` exactly once, in a random order (db_bench's filluniquerandom).
    FillUniqueRandom,
    Overwrite,
    ReadRandom,
    /// Random point reads, `--batch_size` keys per call (db_bench's multireadrandom).
    MultiReadRandom,
    ReadSeq,
    ReadReverse,
    SeekRandom,
    UpdateRandom,
    MergeRandom,
    DeleteSeq,
    DeleteRandom,
    ReadWhileWriting,
    /// Range queries (seekrandom) with one rate-limited writer, as readwhilewriting.
    SeekRandomWhileWriting,
    Compact,
    Flush,
    Stats(StatsKind),
    /// LinkBench (issue 35): its own driver, linkbench/mod.rs, runs it.
    LinkBench,
    /// The insert benchmark (iibench, seed 004): its own driver, insertbench/mod.rs, runs it.
    InsertBench,
    /// rput and rget, against a replicated store: their own driver, replicated/mod.rs, runs them.
    Replicated,
}

/// Every benchmark name with its workload: the one list `parse`, `--help` and the error for an
/// unknown name read, so none of them can leave a benchmark out.
const TABLE: &[(&str, Workload)] = &[
    ("fillseq", Workload::FillSeq),
    ("fillrandom", Workload::FillRandom),
    ("filluniquerandom", Workload::FillUniqueRandom),
    ("overwrite", Workload::Overwrite),
    ("readrandom", Workload::ReadRandom),
    ("multireadrandom", Workload::MultiReadRandom),
    ("readseq", Workload::ReadSeq),
    ("readreverse", Workload::ReadReverse),
    ("seekrandom", Workload::SeekRandom),
    ("updaterandom", Workload::UpdateRandom),
    ("mergerandom", Workload::MergeRandom),
    ("deleteseq", Workload::DeleteSeq),
    ("deleterandom", Workload::DeleteRandom),
    ("readwhilewriting", Workload::ReadWhileWriting),
    ("seekrandomwhilewriting", Workload::SeekRandomWhileWriting),
    ("compact", Workload::Compact),
    ("flush", Workload::Flush),
    ("stats", Workload::Stats(StatsKind::Stats)),
    ("levelstats", Workload::Stats(StatsKind::LevelStats)),
    ("linkbench", Workload::LinkBench),
    ("insertbench", Workload::InsertBench),
    ("rput", Workload::Replicated),
    ("rget", Workload::Replicated),
];

/// The error text for a benchmark name [`Workload::parse`] does not know: it lists every one.
pub fn unknown_benchmark(name: &str) -> String {
    let known: Vec<&str> = TABLE.iter().map(|(n, _)| *n).collect();
    format!("unknown benchmark {name:?}; known: {}", known.join(" "))
}

impl Workload {
    /// The workload for a db_bench benchmark name.
    pub fn parse(name: &str) -> Option<Self> {
        TABLE.iter().find(|(n, _)| *n == name).map(|(_, w)| *w)
    }

    /// Whether db_bench starts this benchmark on a freshly destroyed database.
    pub fn needs_fresh_db(self) -> bool {
        matches!(self, Self::FillSeq | Self::FillRandom | Self::FillUniqueRandom)
    }

    /// The word in db_bench's `Microseconds per <op>:` histogram title.
    pub fn op_title(self) -> &'static str {
        match self {
            Self::FillSeq | Self::FillRandom | Self::FillUniqueRandom | Self::Overwrite => "write",
            Self::ReadRandom
            | Self::MultiReadRandom
            | Self::ReadSeq
            | Self::ReadReverse
            | Self::ReadWhileWriting => "read",
            Self::SeekRandom | Self::SeekRandomWhileWriting => "seek",
            Self::UpdateRandom => "update",
            Self::MergeRandom => "merge",
            Self::DeleteSeq | Self::DeleteRandom => "delete",
            Self::Compact
            | Self::Flush
            | Self::Stats(_)
            | Self::LinkBench
            | Self::InsertBench
            | Self::Replicated => "op",
        }
    }

    /// Whether thread 0 is a rate-limited writer running beside `--threads` readers.
    pub fn has_writer(self) -> bool {
        matches!(self, Self::ReadWhileWriting | Self::SeekRandomWhileWriting)
    }

    /// The found/updates message db_bench appends to the result line.
    pub fn message(self, found: u64, ops: u64) -> String {
        match self {
            Self::ReadRandom
            | Self::MultiReadRandom
            | Self::SeekRandom
            | Self::ReadWhileWriting
            | Self::SeekRandomWhileWriting => {
                format!("({found} of {ops} found)")
            }
            Self::UpdateRandom => format!("( updates:{ops} found:{found})"),
            Self::MergeRandom => format!("( updates:{ops})"),
            _ => String::new(),
        }
    }
}

/// State shared by the threads of one benchmark run.
pub struct Shared {
    /// Readers that have finished, so readwhilewriting's writer knows when to stop.
    pub readers_done: AtomicUsize,
    pub readers: usize,
}

/// One benchmark thread's context.
pub struct Ctx<'a> {
    pub tid: usize,
    pub db: &'a dyn BenchDb,
    pub flags: &'a Flags,
    pub shared: &'a Shared,
    pub progress: &'a ProgressCounter,
    pub keys: KeyBuf,
    pub rng: KeyRng,
    pub values: ValueGen,
    pub stats: Stats,
    pub found: u64,
    pub ops: u64,
    /// Set by readwhilewriting's writer: its numbers are reported apart from the readers'.
    pub exclude: bool,
}

impl Ctx<'_> {
    #[inline]
    fn finished(&mut self, n: u64) {
        self.stats.finished_ops(n);
        self.progress.set(self.stats.done());
    }
}

/// db_bench's `Duration`: an operation budget, or a time budget checked every 1000 operations.
struct Budget {
    max_ops: u64,
    ops: u64,
    max_secs: u64,
    start: Instant,
}

impl Budget {
    fn new(max_ops: u64, max_secs: u64) -> Self {
        Self { max_ops, ops: 0, max_secs, start: Instant::now() }
    }

    #[inline]
    fn done(&mut self, inc: u64) -> bool {
        let inc = inc.max(1);
        self.ops += inc;
        if self.max_secs == 0 {
            return self.ops > self.max_ops;
        }
        // Reading the clock every operation would cost more than some operations.
        if self.ops / 1000 != (self.ops - inc) / 1000 {
            return self.start.elapsed().as_secs() >= self.max_secs;
        }
        false
    }
}

/// Runs `w` on this thread.
pub fn run(w: Workload, c: &mut Ctx<'_>) -> Result<()> {
    match w {
        Workload::FillSeq => write(c, KeyOrder::Seq),
        Workload::FillRandom | Workload::Overwrite => write(c, KeyOrder::Random),
        Workload::FillUniqueRandom => write(c, KeyOrder::unique(c.flags, c.tid)),
        Workload::ReadRandom => read_random(c),
        Workload::MultiReadRandom => multi_read_random(c),
        Workload::ReadSeq => read_seq(c, false),
        Workload::ReadReverse => read_seq(c, true),
        Workload::SeekRandom => seek_random(c),
        Workload::UpdateRandom => update_random(c),
        Workload::MergeRandom => merge_random(c),
        Workload::DeleteSeq => delete(c, true),
        Workload::DeleteRandom => delete(c, false),
        _ if w.has_writer() && c.tid == 0 => rate_limited_writer(c),
        Workload::ReadWhileWriting => read_random(c),
        Workload::SeekRandomWhileWriting => seek_random(c),
        Workload::Compact => c.db.compact(),
        Workload::Flush => c.db.flush(),
        Workload::Stats(_) => bail!("stats is not a threaded benchmark"),
        Workload::LinkBench => bail!("linkbench runs through its own driver (bench/linkbench)"),
        Workload::InsertBench => bail!("insertbench runs through its own driver (bench/insertbench)"),
        Workload::Replicated => bail!("rput and rget run through their own driver (bench/replicated)"),
    }
}

/// The column family key `n` is written to and read from: n % `--num_column_families`.
/// db_bench picks a random family per write and reads from a random one; a fixed mapping lets
/// every read find its key where it was written. Family 0 is the default family.
#[inline]
fn family(f: &Flags, n: u64) -> usize {
    if f.num_column_families <= 1 {
        0
    } else {
        (n % f.num_column_families as u64) as usize
    }
}

/// The order a write benchmark visits keys in.
enum KeyOrder {
    /// 0, 1, 2, ... (fillseq).
    Seq,
    /// Drawn with replacement from the thread's key RNG (fillrandom, overwrite).
    Random,
    /// This thread's share of one permutation of every key: positions `start..end`.
    Unique { keys: UniqueKeys, start: u64, end: u64 },
}

impl KeyOrder {
    /// Thread `tid`'s part of filluniquerandom: the threads split the permutation `--seed`
    /// chooses into consecutive shares, so together they write every key of `--num` once.
    fn unique(f: &Flags, tid: usize) -> Self {
        let threads = f.threads.max(1) as u64;
        let share = |t: u64| f.num * t / threads;
        let (start, end) = (share(tid as u64), share(tid as u64 + 1));
        Self::Unique { keys: UniqueKeys::new(f.seed, f.num), start, end }
    }

    /// The key of the thread's `i`-th write.
    #[inline]
    fn key(&self, i: u64, rng: &mut KeyRng) -> u64 {
        match self {
            Self::Seq => i,
            Self::Random => rng.next_key(),
            Self::Unique { keys, start, .. } => keys.at(start + i),
        }
    }

    /// The operation and time budget: a random fill may run for `--duration`; the others end
    /// with their keys.
    fn budget(&self, f: &Flags) -> Budget {
        match self {
            Self::Seq => Budget::new(f.writes_per_thread(), 0),
            Self::Random => Budget::new(f.writes_per_thread(), f.duration),
            Self::Unique { start, end, .. } => Budget::new((end - start).min(f.writes_per_thread()), 0),
        }
    }
}

fn write(c: &mut Ctx<'_>, order: KeyOrder) -> Result<()> {
    let mut budget = order.budget(c.flags);
    if c.flags.cf_batch || (c.flags.batch_size > 1 && c.flags.num_column_families > 1) {
        return write_family_batches(c, &order, &mut budget);
    }
    if c.flags.batch_size > 1 {
        return write_batches(c, &order, &mut budget);
    }
    let (sync, no_wal, vsize) = (c.flags.sync, c.flags.disable_wal, c.flags.value_size);
    let mut i = 0u64;
    let mut bytes = 0u64;
    while !budget.done(1) {
        let n = order.key(i, &mut c.rng);
        i += 1;
        let key = c.keys.key(n);
        let value = c.values.generate(vsize);
        c.db.put_cf(family(c.flags, n), key, value, sync, no_wal)?;
        bytes += (key.len() + value.len()) as u64;
        c.finished(1);
    }
    c.stats.add_bytes(bytes);
    Ok(())
}

/// `--batch_size` > 1: each write is one batch; latency is per batch, operations per entry.
fn write_batches(c: &mut Ctx<'_>, order: &KeyOrder, budget: &mut Budget) -> Result<()> {
    let (batch, ksize, vsize) = (c.flags.batch_size, c.flags.key_size, c.flags.value_size);
    let mut key_arena = vec![b'0'; batch * ksize];
    let mut ranges = Vec::with_capacity(batch);
    let mut ops: Vec<(&[u8], &[u8])> = Vec::with_capacity(batch);
    let mut i = 0u64;
    let mut bytes = 0u64;
    while !budget.done(batch as u64) {
        ranges.clear();
        for slot in key_arena.chunks_exact_mut(ksize) {
            let n = order.key(i, &mut c.rng);
            i += 1;
            encode_key(n, slot);
            ranges.push(c.values.next_range(vsize));
        }
        let mut batch_ops = recycle(ops);
        let pool = c.values.pool();
        batch_ops.extend(key_arena.chunks_exact(ksize).zip(&ranges).map(|(k, r)| (k, &pool[r.clone()])));
        c.db.write_batch(&batch_ops, c.flags.sync, c.flags.disable_wal)?;
        ops = recycle(batch_ops);
        bytes += (batch * (ksize + vsize)) as u64;
        c.finished(batch as u64);
    }
    c.stats.add_bytes(bytes);
    Ok(())
}

/// Batches across column families: `--batch_size` keys per batch, each put into its own family,
/// or with `--cf_batch` into every family (one put per family, the same key, a fresh value
/// each). Latency is per batch, operations per entry; the budget counts keys, so `--cf_batch`
/// writes N entries per key.
fn write_family_batches(c: &mut Ctx<'_>, order: &KeyOrder, budget: &mut Budget) -> Result<()> {
    let (batch, ksize, vsize) = (c.flags.batch_size, c.flags.key_size, c.flags.value_size);
    let per_key = if c.flags.cf_batch { c.flags.num_column_families } else { 1 };
    let mut key_arena = vec![b'0'; batch * ksize];
    // Per entry: its family and the window of the value pool it puts.
    let mut entries: Vec<(usize, Range<usize>)> = Vec::with_capacity(batch * per_key);
    let mut ops: Vec<(usize, &[u8], &[u8])> = Vec::with_capacity(batch * per_key);
    let mut i = 0u64;
    let mut bytes = 0u64;
    while !budget.done(batch as u64) {
        entries.clear();
        for slot in key_arena.chunks_exact_mut(ksize) {
            let n = order.key(i, &mut c.rng);
            i += 1;
            encode_key(n, slot);
            if c.flags.cf_batch {
                entries.extend((0..per_key).map(|cf| (cf, c.values.next_range(vsize))));
            } else {
                entries.push((family(c.flags, n), c.values.next_range(vsize)));
            }
        }
        let mut batch_ops = recycle_cf(ops);
        let pool = c.values.pool();
        let keys = key_arena.chunks_exact(ksize).flat_map(|k| std::iter::repeat_n(k, per_key));
        batch_ops.extend(keys.zip(&entries).map(|(k, (cf, r))| (*cf, k, &pool[r.clone()])));
        c.db.write_batch_cf(&batch_ops, c.flags.sync, c.flags.disable_wal)?;
        ops = recycle_cf(batch_ops);
        bytes += (entries.len() * (ksize + vsize)) as u64;
        c.finished(entries.len() as u64);
    }
    c.stats.add_bytes(bytes);
    Ok(())
}

/// [`recycle`] for batches that name each entry's column family.
fn recycle_cf<'b>(mut v: Vec<(usize, &[u8], &[u8])>) -> Vec<(usize, &'b [u8], &'b [u8])> {
    v.clear();
    v.into_iter().map(|_| (0, &[][..], &[][..])).collect()
}

/// Empties a vector of borrowed pairs and hands its allocation to new borrows; the in-place
/// collect reuses the buffer because the element layout is unchanged, so batches don't allocate.
fn recycle<'b>(mut v: Vec<(&[u8], &[u8])>) -> Vec<(&'b [u8], &'b [u8])> {
    v.clear();
    v.into_iter().map(|_| (&[][..], &[][..])).collect()
}

fn read_random(c: &mut Ctx<'_>) -> Result<()> {
    let mut budget = Budget::new(c.flags.reads_per_thread(), c.flags.duration);
    let mut bytes = 0u64;
    while !budget.done(1) {
        let n = c.rng.next_key();
        let key = c.keys.key(n);
        c.ops += 1;
        if let Some(v) = c.db.get_cf(family(c.flags, n), key)? {
            c.found += 1;
            bytes += (key.len() + v.len()) as u64;
        }
        c.finished(1);
    }
    c.stats.add_bytes(bytes);
    Ok(())
}

/// `--batch_size` random keys per `multi_get` call; the budget counts keys, as db_bench's does.
fn multi_read_random(c: &mut Ctx<'_>) -> Result<()> {
    let (batch, ksize) = (c.flags.batch_size, c.flags.key_size);
    let mut budget = Budget::new(c.flags.reads_per_thread(), c.flags.duration);
    let mut key_arena = vec![b'0'; batch * ksize];
    let mut bytes = 0u64;
    while !budget.done(batch as u64) {
        for slot in key_arena.chunks_exact_mut(ksize) {
            encode_key(c.rng.next_key(), slot);
        }
        let keys: Vec<&[u8]> = key_arena.chunks_exact(ksize).collect();
        for v in c.db.multi_get(&keys)?.into_iter().flatten() {
            c.found += 1;
            bytes += (ksize + v.len()) as u64;
        }
        c.ops += batch as u64;
        c.finished(batch as u64);
    }
    c.stats.add_bytes(bytes);
    Ok(())
}

/// With column families, walks one family after another (in family order, backwards too) until
/// `--reads` entries were read in all.
fn read_seq(c: &mut Ctx<'_>, reverse: bool) -> Result<()> {
    let mut left = usize::try_from(c.flags.reads_per_thread()).unwrap_or(usize::MAX);
    let mut bytes = 0u64;
    let (stats, progress) = (&mut c.stats, c.progress);
    for cf in 0..c.flags.num_column_families {
        left -= c.db.scan_cf(cf, b"", left, reverse, &mut |k, v| {
            bytes += (k.len() + v.len()) as u64;
            stats.finished_ops(1);
            progress.set(stats.done());
        })?;
        if left == 0 {
            break;
        }
    }
    c.stats.add_bytes(bytes);
    Ok(())
}

/// Seek to a random key with a fresh iterator, then step `--seek_nexts` times: the engine
/// visits seek_nexts + 1 entries, as db_bench's Seek plus its Next calls do.
fn seek_random(c: &mut Ctx<'_>) -> Result<()> {
    let mut budget = Budget::new(c.flags.reads_per_thread(), c.flags.duration);
    let nexts = c.flags.seek_nexts;
    let mut bytes = 0u64;
    while !budget.done(1) {
        let n = c.rng.next_key();
        let key = c.keys.key(n);
        let mut idx = 0usize;
        let mut found = false;
        c.db.scan_cf(family(c.flags, n), key, nexts + 1, false, &mut |k, v| {
            found |= idx == 0 && k == key;
            if idx < nexts {
                bytes += (k.len() + v.len()) as u64;
            }
            idx += 1;
        })?;
        c.ops += 1;
        c.found += u64::from(found);
        c.finished(1);
    }
    c.stats.add_bytes(bytes);
    Ok(())
}

/// Read-modify-write: a get, then a put of a new value (not atomic, as in db_bench).
fn update_random(c: &mut Ctx<'_>) -> Result<()> {
    let mut budget = Budget::new(c.flags.readwrites_per_thread(), c.flags.duration);
    let (sync, no_wal, vsize) = (c.flags.sync, c.flags.disable_wal, c.flags.value_size);
    let mut bytes = 0u64;
    while !budget.done(1) {
        let n = c.rng.next_key();
        let key = c.keys.key(n);
        let cf = family(c.flags, n);
        c.ops += 1;
        if let Some(v) = c.db.get_cf(cf, key)? {
            c.found += 1;
            bytes += (key.len() + v.len()) as u64;
        }
        let value = c.values.generate(vsize);
        c.db.put_cf(cf, key, value, sync, no_wal)?;
        bytes += (key.len() + value.len()) as u64;
        c.finished(1);
    }
    c.stats.add_bytes(bytes);
    Ok(())
}

/// Blind read-modify-write through the merge operator: no read, one merge per operation.
fn merge_random(c: &mut Ctx<'_>) -> Result<()> {
    let mut budget = Budget::new(c.flags.readwrites_per_thread(), c.flags.duration);
    let (sync, no_wal, vsize) = (c.flags.sync, c.flags.disable_wal, c.flags.value_size);
    let mut bytes = 0u64;
    while !budget.done(1) {
        let n = c.rng.next_key();
        let key = c.keys.key(n);
        let value = c.values.generate(vsize);
        c.db.merge_cf(family(c.flags, n), key, value, sync, no_wal)?;
        bytes += (key.len() + value.len()) as u64;
        c.ops += 1;
        c.finished(1);
    }
    c.stats.add_bytes(bytes);
    Ok(())
}

fn delete(c: &mut Ctx<'_>, seq: bool) -> Result<()> {
    let secs = if seq { 0 } else { c.flags.duration };
    let mut budget = Budget::new(c.flags.num, secs);
    let (sync, no_wal) = (c.flags.sync, c.flags.disable_wal);
    let mut i = 0u64;
    while !budget.done(1) {
        let n = if seq { i } else { c.rng.next_key() };
        i += 1;
        c.db.delete_cf(family(c.flags, n), c.keys.key(n), sync, no_wal)?;
        c.finished(1);
    }
    Ok(())
}

/// readwhilewriting's thread 0: random puts until every reader is done, holding the rate to
/// `--benchmark_write_rate_limit` bytes/s by sleeping off any lead over the allowed schedule.
fn rate_limited_writer(c: &mut Ctx<'_>) -> Result<()> {
    c.exclude = true;
    let (sync, no_wal, vsize) = (c.flags.sync, c.flags.disable_wal, c.flags.value_size);
    let limit = c.flags.benchmark_write_rate_limit;
    let begin = Instant::now();
    let mut bytes = 0u64;
    while c.shared.readers_done.load(Ordering::Acquire) < c.shared.readers {
        let n = c.rng.next_key();
        let key = c.keys.key(n);
        let value = c.values.generate(vsize);
        c.db.put_cf(family(c.flags, n), key, value, sync, no_wal)?;
        bytes += (key.len() + value.len()) as u64;
        c.finished(1);
        if limit > 0 {
            let allowed = Duration::from_secs_f64(bytes as f64 / limit as f64);
            if let Some(lead) = allowed.checked_sub(begin.elapsed()) {
                std::thread::sleep(lead);
            }
        }
    }
    c.stats.add_bytes(bytes);
    Ok(())
}
