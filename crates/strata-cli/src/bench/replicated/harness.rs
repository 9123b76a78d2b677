//! The concurrent clients of rput and rget: `--threads` tokio tasks, each with its own key
//! sequence and value cursor, issuing one operation at a time for `--duration` seconds or
//! until `--num` operations are done, timing each one.
//!
//! Owns: the client loops, the per-operation timing (HdrHistogram, microseconds), error
//! counting and the preload of rget's key space. Must not: print (output.rs formats what it
//! returns) or know which engine it drives (kv.rs's trait only).

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use tokio::task::JoinSet;

use super::super::keygen::{encode_key, KeyRng};
use super::super::valuegen::ValuePool;
use super::kv::{OpError, ReplicatedKv};

/// Which operation the clients issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// A put of a random key of the key space, acknowledged by a majority.
    Put,
    /// A linearizable get of a random key of the key space.
    Get,
}

/// When the clients stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// Every client stops at the first operation it would begin after this long.
    Duration(Duration),
    /// This many operations in all, spread evenly over the clients.
    Ops(u64),
}

/// One benchmark's settings.
#[derive(Clone)]
pub struct Config {
    pub op: Op,
    pub clients: usize,
    pub limit: Limit,
    pub key_space: u64,
    pub key_size: usize,
    pub value_size: usize,
    /// Client `i` draws its keys from `seed + i`.
    pub seed: u64,
    pub pool: ValuePool,
}

/// What one benchmark measured, all clients together.
pub struct Outcome {
    /// Latencies of the operations that succeeded, in microseconds.
    pub hist: Histogram<u64>,
    /// Operations that succeeded.
    pub ops: u64,
    /// Operations that failed (for puts: outcome unknown).
    pub errors: u64,
    /// Gets that found their key.
    pub found: u64,
    /// From the start of the clients to the last one's end.
    pub elapsed: Duration,
    /// Sum of the clients' own busy time, for db_bench's micros/op.
    pub client_secs: f64,
    pub first_error: Option<OpError>,
}

impl Outcome {
    fn empty() -> Outcome {
        Outcome {
            hist: new_histogram(),
            ops: 0,
            errors: 0,
            found: 0,
            elapsed: Duration::ZERO,
            client_secs: 0.0,
            first_error: None,
        }
    }
}

/// The slowest latency the histogram tells apart; anything slower is counted as this.
const MAX_LATENCY_US: u64 = 120_000_000;

/// How long a client waits after an error before its next operation, so a cluster that is down
/// is not hammered by a tight loop of refusals (the wait is not counted as a latency).
const ERROR_BACKOFF: Duration = Duration::from_millis(10);

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).expect("constant histogram bounds are valid")
}

/// Runs the clients of `cfg` against `kv` and merges what they measured.
pub async fn run<K: ReplicatedKv>(kv: &K, cfg: &Config) -> Outcome {
    let start = Instant::now();
    let mut set = JoinSet::new();
    for i in 0..cfg.clients {
        let quota = match cfg.limit {
            Limit::Ops(n) => n / cfg.clients as u64 + u64::from((i as u64) < n % cfg.clients as u64),
            Limit::Duration(_) => u64::MAX,
        };
        let deadline = match cfg.limit {
            Limit::Duration(d) => Some(start + d),
            Limit::Ops(_) => None,
        };
        set.spawn(client(kv.clone(), cfg.clone(), i as u64, quota, deadline));
    }
    let mut all = Outcome::empty();
    while let Some(joined) = set.join_next().await {
        let one = match joined {
            Ok(o) => o,
            // A client task can only end this way by panicking; that is a bug of the harness.
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        };
        merge(&mut all, one);
    }
    all.elapsed = start.elapsed();
    all
}

fn merge(all: &mut Outcome, one: Outcome) {
    // Both histograms have the same bounds, so adding cannot fail.
    let _ = all.hist.add(&one.hist);
    all.ops += one.ops;
    all.errors += one.errors;
    all.found += one.found;
    all.client_secs += one.client_secs;
    if all.first_error.is_none() {
        all.first_error = one.first_error;
    }
}

/// One client: operations back to back until its quota or the deadline.
async fn client<K: ReplicatedKv>(
    mut kv: K,
    cfg: Config,
    index: u64,
    quota: u64,
    deadline: Option<Instant>,
) -> Outcome {
    let begin = Instant::now();
    let mut rng = KeyRng::new(cfg.seed.wrapping_add(index), cfg.key_space);
    let mut values = cfg.pool.generator();
    let mut o = Outcome::empty();
    while o.ops + o.errors < quota && deadline.is_none_or(|d| Instant::now() < d) {
        let key = key_bytes(rng.next_key(), cfg.key_size);
        let t = Instant::now();
        let r = match cfg.op {
            Op::Put => kv.put(key, values.generate(cfg.value_size).to_vec()).await.map(|()| false),
            Op::Get => kv.get(key).await.map(|v| v.is_some()),
        };
        match r {
            Ok(found) => {
                o.hist.saturating_record(t.elapsed().as_micros() as u64);
                o.ops += 1;
                o.found += u64::from(found);
            }
            Err(e) => {
                o.errors += 1;
                o.first_error.get_or_insert(e);
                tokio::time::sleep(ERROR_BACKOFF).await;
            }
        }
    }
    o.client_secs = begin.elapsed().as_secs_f64();
    o
}

/// db_bench's layout of key `n` (keygen.rs), so the keys are those of the other benchmarks.
pub fn key_bytes(n: u64, key_size: usize) -> Vec<u8> {
    let mut k = vec![0u8; key_size];
    encode_key(n, &mut k);
    k
}

/// How many batches of the preload are in flight at once.
const PRELOAD_CONCURRENCY: usize = 8;

/// Puts every key of `[0, key_space)` with a value of `value_size` bytes, in batches of the
/// engine's largest size, several batches at a time. Not measured.
pub async fn preload<K: ReplicatedKv>(kv: &K, cfg: &Config) -> Result<(), OpError> {
    let batch = kv.max_batch().max(1) as u64;
    let batches = cfg.key_space.div_ceil(batch);
    let mut set = JoinSet::new();
    for lane in 0..PRELOAD_CONCURRENCY as u64 {
        let (mut kv, cfg) = (kv.clone(), cfg.clone());
        set.spawn(async move {
            let mut values = cfg.pool.generator();
            for b in (lane..batches).step_by(PRELOAD_CONCURRENCY) {
                let keys = b * batch..((b + 1) * batch).min(cfg.key_space);
                let pairs = keys
                    .map(|n| (key_bytes(n, cfg.key_size), values.generate(cfg.value_size).to_vec()))
                    .collect();
                kv.put_many(pairs).await?;
            }
            Ok::<(), OpError>(())
        });
    }
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok(r) => r?,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
    Ok(())
}
