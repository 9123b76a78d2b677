//! The two LinkBench phases as threads: the load (nodes with their out-links and counts,
//! `--loaders` threads taking id ranges in turn) and the requests (`--requesters` threads
//! each drawing LinkBench's operation mix), timing every operation.
//!
//! Owns: the per-thread loops and their measurements. Must not: format output (mod.rs), know
//! an engine (store.rs) or decide a distribution (workload.rs).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Result;

use super::super::histogram::Histogram;
use super::super::report::{self, CsvReport, IntervalConfig, ProgressCounter};
use super::super::resources::own_switches;
use super::super::valuegen::{ValueGen, ValuePool};
use super::layout::{Link, Node};
use super::store::LinkStore;
use super::workload::{self as wl, Op, Rng, Zipf, OPS};

/// LinkBench's `LinkStore.DEFAULT_NODE_TYPE`.
const NODE_TYPE: u32 = 2048;
/// Node ids a loader takes at a time.
const LOAD_CHUNK: u64 = 100;
/// The most links one load write holds; a node with more is loaded in several (each one
/// atomic with the count so far).
const LINKS_PER_WRITE: usize = 1000;
/// The span, in milliseconds before the load started, of the loaded links' times.
const LOAD_TIME_SPAN_MS: u64 = 30 * 86_400_000;

/// What a phase needs to know.
pub struct PhaseConfig<'a> {
    pub maxid1: u64,
    pub threads: usize,
    pub seed: u64,
    /// Requests per requester (when `duration` is zero).
    pub requests: u64,
    pub duration: Duration,
    pub stats_interval: Option<Duration>,
    pub csv: Option<&'a CsvReport>,
    pub pool: &'a ValuePool,
}

/// Milliseconds since the epoch, LinkBench's link and node time.
fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// What the threads of one phase measured.
#[derive(Default)]
pub struct PhaseOut {
    /// Latency per operation kind (the load has one kind: a node with all its links).
    pub hists: Vec<Histogram>,
    pub nodes: u64,
    pub links: u64,
    /// The worker threads' own context switches (None if one could not read them).
    pub switches: Option<u64>,
}

impl PhaseOut {
    fn new(kinds: usize) -> Self {
        Self { hists: vec![Histogram::new(); kinds], nodes: 0, links: 0, switches: Some(0) }
    }

    fn merge(&mut self, o: PhaseOut) {
        for (a, b) in self.hists.iter_mut().zip(&o.hists) {
            a.merge(b);
        }
        self.nodes += o.nodes;
        self.links += o.links;
        self.switches = self.switches.zip(o.switches).map(|(a, b)| a + b);
    }
}

/// Runs `body(thread number, progress counter)` on `cfg.threads` threads with the interval
/// reporter beside them, and merges what they return.
fn on_threads(
    cfg: &PhaseConfig<'_>,
    kinds: usize,
    body: &(dyn Fn(usize, &ProgressCounter) -> Result<PhaseOut> + Sync),
) -> Result<PhaseOut> {
    let counters: Vec<ProgressCounter> = (0..cfg.threads).map(|_| ProgressCounter::default()).collect();
    let interval = IntervalConfig { print_every: cfg.stats_interval, csv: cfg.csv };
    let finished = AtomicBool::new(false);
    std::thread::scope(|s| {
        if interval.print_every.is_some() || interval.csv.is_some() {
            s.spawn(|| report::run_interval_reporter(&interval, &counters, &finished));
        }
        let handles: Vec<_> = (0..cfg.threads)
            .map(|t| {
                let counter = &counters[t];
                s.spawn(move || {
                    let before = own_switches();
                    let mut out = body(t, counter)?;
                    out.switches = own_switches().zip(before).map(|(a, b)| a.saturating_sub(b));
                    Ok(out)
                })
            })
            .collect();
        let outs: Vec<Result<PhaseOut>> =
            handles.into_iter().map(|h| h.join().expect("linkbench thread panicked")).collect();
        finished.store(true, Ordering::Release);
        let mut all = PhaseOut::new(kinds);
        for o in outs {
            all.merge(o?);
        }
        Ok(all)
    })
}

/// The load phase: every node in [START_ID, maxid1) with its out-links and their counts.
pub fn load(store: &dyn LinkStore, cfg: &PhaseConfig<'_>) -> Result<PhaseOut> {
    let next = AtomicU64::new(wl::START_ID);
    let base_time = now_ms();
    on_threads(cfg, 1, &|t, progress| {
        let mut out = PhaseOut::new(1);
        let mut rng = Rng::new(cfg.seed.wrapping_add(1000 + t as u64));
        let mut values = cfg.pool.generator();
        loop {
            let start = next.fetch_add(LOAD_CHUNK, Ordering::Relaxed);
            if start >= cfg.maxid1 {
                return Ok(out);
            }
            for id1 in start..(start + LOAD_CHUNK).min(cfg.maxid1) {
                let began = Instant::now();
                out.links += load_node(store, id1, cfg.seed, base_time, &mut rng, &mut values)?;
                out.hists[0].add(began.elapsed().as_micros() as u64);
                out.nodes += 1;
                progress.set(out.nodes);
            }
        }
    })
}

/// Loads node `id1` and its links of every type; returns how many links it wrote.
fn load_node(
    store: &dyn LinkStore,
    id1: u64,
    seed: u64,
    base_time: u64,
    rng: &mut Rng,
    values: &mut ValueGen,
) -> Result<u64> {
    let node = new_node(id1, base_time, rng, values);
    let mut node = Some(&node);
    let mut written = 0u64;
    for t in 0..wl::LINK_TYPE_COUNT {
        let link_type = wl::FIRST_LINK_TYPE + t;
        let n = wl::links_of_type(id1, link_type, seed);
        let mut batch = Vec::with_capacity((n as usize).min(LINKS_PER_WRITE));
        for j in 0..n {
            // ID2Chooser.chooseForLoad: id2 = id1 + j; times spread so id2 and time disagree.
            let time = base_time - rng.below(LOAD_TIME_SPAN_MS);
            batch.push(new_link(id1, link_type, id1 + j, time, rng, values));
            if batch.len() == LINKS_PER_WRITE || j + 1 == n {
                store.load(node.take(), &batch, j + 1)?;
                written += batch.len() as u64;
                batch.clear();
            }
        }
    }
    if let Some(n) = node {
        store.load(Some(n), &[], 0)?;
    }
    Ok(written)
}

fn new_node(id: u64, time: u64, rng: &mut Rng, values: &mut ValueGen) -> Node {
    let data = values.generate(rng.data_size(wl::NODE_DATA_MEAN)).to_vec();
    Node { id, node_type: NODE_TYPE, version: 0, time, data }
}

fn new_link(id1: u64, link_type: u64, id2: u64, time: u64, rng: &mut Rng, values: &mut ValueGen) -> Link {
    let data = values.generate(rng.data_size(wl::LINK_DATA_MEAN)).to_vec();
    Link { id1, link_type, id2, visible: true, version: 0, time, data }
}

/// The id distributions of the request phase (FBWorkload's shapes), shared by the threads.
pub struct IdChoosers {
    node_read: Zipf,
    node_update: Zipf,
    link_read: Zipf,
    link_write: Zipf,
}

impl IdChoosers {
    pub fn new(maxid1: u64, seed: u64) -> Self {
        let n = maxid1.saturating_sub(wl::START_ID).max(1);
        Self {
            node_read: Zipf::new(n, 0.625, seed ^ 1),
            node_update: Zipf::new(n, 0.606, seed ^ 2),
            link_read: Zipf::new(n, 0.8, seed ^ 3),
            link_write: Zipf::new(n, 0.741, seed ^ 4),
        }
    }
}

/// The request phase: each thread draws operations until its budget is spent.
pub fn requests(store: &dyn LinkStore, cfg: &PhaseConfig<'_>, ids: &IdChoosers) -> Result<PhaseOut> {
    let begin = Instant::now();
    on_threads(cfg, OPS.len(), &|t, progress| {
        let mut r = Requester {
            store,
            ids,
            cfg,
            rng: Rng::new(cfg.seed.wrapping_add(2000 + t as u64)),
            values: cfg.pool.generator(),
        };
        let mut out = PhaseOut::new(OPS.len());
        let mut done = 0u64;
        loop {
            let over =
                if cfg.duration.is_zero() { done >= cfg.requests } else { begin.elapsed() >= cfg.duration };
            if over {
                return Ok(out);
            }
            let op = r.rng.op();
            let began = Instant::now();
            r.run(op)?;
            out.hists[op.index()].add(began.elapsed().as_micros() as u64);
            done += 1;
            progress.set(done);
        }
    })
}

/// One requester thread's state.
struct Requester<'a> {
    store: &'a dyn LinkStore,
    ids: &'a IdChoosers,
    cfg: &'a PhaseConfig<'a>,
    rng: Rng,
    values: ValueGen,
}

impl Requester<'_> {
    fn run(&mut self, op: Op) -> Result<()> {
        let seed = self.cfg.seed;
        match op {
            Op::AddNode => {
                let node = new_node(0, now_ms(), &mut self.rng, &mut self.values);
                self.store.add_node(&node)?;
            }
            Op::UpdateNode => {
                let id = self.ids.node_update.next(&mut self.rng);
                let node = Node { version: 1, ..new_node(id, now_ms(), &mut self.rng, &mut self.values) };
                self.store.update_node(&node)?;
            }
            Op::DeleteNode => {
                let id = wl::START_ID + self.rng.below(self.cfg.maxid1.saturating_sub(wl::START_ID));
                self.store.delete_node(id)?;
            }
            Op::GetNode => {
                self.store.get_node(self.ids.node_read.next(&mut self.rng))?;
            }
            Op::AddLink | Op::UpdateLink => {
                let p = if op == Op::AddLink { wl::P_ADD_EXIST } else { wl::P_UPDATE_EXIST };
                let (id1, link_type) = (self.ids.link_write.next(&mut self.rng), self.rng.link_type());
                let id2 = wl::choose_id2(&mut self.rng, id1, link_type, p, seed);
                let link = new_link(id1, link_type, id2, now_ms(), &mut self.rng, &mut self.values);
                if op == Op::AddLink {
                    self.store.add_link(&link)?;
                } else {
                    self.store.update_link(&link)?;
                }
            }
            Op::DeleteLink => {
                let (id1, link_type) = (self.ids.link_write.next(&mut self.rng), self.rng.link_type());
                let id2 = wl::choose_id2(&mut self.rng, id1, link_type, wl::P_DELETE_EXIST, seed);
                self.store.delete_link(id1, link_type, id2)?;
            }
            Op::CountLink => {
                let (id1, link_type) = (self.ids.link_read.next(&mut self.rng), self.rng.link_type());
                self.store.count_links(id1, link_type)?;
            }
            Op::MultigetLink => self.multiget()?,
            Op::GetLinksList => {
                let (id1, link_type) = (self.ids.link_read.next(&mut self.rng), self.rng.link_type());
                self.store.get_link_list(id1, link_type, wl::LINK_LIST_LIMIT)?;
            }
        }
        Ok(())
    }

    /// ID2Chooser.chooseMultipleForOp: distinct id2s (tried up to 100 times each).
    fn multiget(&mut self) -> Result<()> {
        let (id1, link_type) = (self.ids.link_read.next(&mut self.rng), self.rng.link_type());
        let want = self.rng.multiget_count();
        let mut id2s: Vec<u64> = Vec::with_capacity(want);
        for _ in 0..want {
            let mut id2 = wl::choose_id2(&mut self.rng, id1, link_type, wl::P_GET_EXIST, self.cfg.seed);
            for _ in 0..100 {
                if !id2s.contains(&id2) {
                    break;
                }
                id2 = wl::choose_id2(&mut self.rng, id1, link_type, wl::P_GET_EXIST, self.cfg.seed);
            }
            id2s.push(id2);
        }
        self.store.get_links(id1, link_type, &id2s)?;
        Ok(())
    }
}
