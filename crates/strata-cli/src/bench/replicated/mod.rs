//! `strata bench --benchmarks=rput,rget --engine=etcd|cluster --endpoints=host:port,...`
//! (issue 38): throughput and latency of a replicated key-value store seen from `--threads`
//! concurrent clients, each with one operation in flight. `rput` puts random keys of
//! `--key_space` (each put acknowledged once a majority has it durably); `rget` first preloads
//! every key of the key space (unless `--use_existing_db`), then reads random ones with
//! linearizable gets. Each runs `--duration` seconds, or `--num` operations in all.
//! `--engine=memory` runs them on a map in this process, to measure the harness alone.
//!
//! Owns: the choice of engine, the flags' meaning for these benchmarks, and the run (header,
//! preload, benchmarks, table). Must not: contain the client loops (harness.rs), formats
//! (output.rs) or engine calls (kv.rs's trait and the engine_* files).

#[cfg(feature = "cluster")]
mod engine_cluster;
#[cfg(feature = "etcd")]
mod engine_etcd;
mod engine_mem;
mod harness;
mod kv;
mod output;
#[cfg(test)]
mod tests;

use std::io::Write;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};

use super::flags::Flags;
use super::valuegen::ValuePool;
use harness::{Config, Limit, Op};
use kv::ReplicatedKv;
use output::{Header, Row};

/// The benchmark names this module runs.
pub const BENCHMARKS: &[&str] = &["rput", "rget"];

/// Every replicated engine, built in or not; each needs the cargo feature of its name.
const OPTIONAL: &[&str] = &["etcd", "cluster"];

/// The engines rput and rget run on in this binary: the in-process map and the replicated
/// engines built with their features.
const BUILT: &[&str] = &[
    "memory",
    #[cfg(feature = "etcd")]
    "etcd",
    #[cfg(feature = "cluster")]
    "cluster",
];

/// Whether `name` is a replicated engine (built in or not), for `--engine`'s check.
pub fn is_engine(name: &str) -> bool {
    OPTIONAL.contains(&name)
}

/// Whether `flags` ask for a replicated benchmark or engine; [`run`] then takes the whole run.
pub fn wanted(flags: &Flags) -> bool {
    is_engine(&flags.engine) || flags.benchmarks.iter().any(|b| BENCHMARKS.contains(&b.as_str()))
}

/// The members `scripts/etcd-cluster.sh` and `scripts/cluster-start.sh` start on loopback.
fn default_endpoints(engine: &str) -> &'static str {
    match engine {
        "etcd" => "127.0.0.1:2379,127.0.0.1:22379,127.0.0.1:32379",
        _ => "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003",
    }
}

/// The `--endpoints` list, or the engine's loopback default.
fn endpoints(flags: &Flags) -> Vec<String> {
    let given = flags.endpoints.as_deref().unwrap_or_else(|| default_endpoints(&flags.engine));
    given.split(',').map(str::trim).filter(|e| !e.is_empty()).map(String::from).collect()
}

/// Refuses a command line this module cannot run, before anything connects.
fn check(flags: &Flags) -> Result<()> {
    let engine = flags.engine.as_str();
    if let Some(b) = flags.benchmarks.iter().find(|b| !BENCHMARKS.contains(&b.as_str())) {
        bail!(
            "--benchmarks={b}: rput and rget run only with each other, and a replicated engine \
             (--engine=etcd or cluster) runs only them"
        );
    }
    if !is_engine(engine) && engine != "memory" {
        bail!(
            "rput and rget run against a cluster: --engine=etcd or --engine=cluster, with \
             --endpoints=host:port,... (not --engine={engine})"
        );
    }
    if !BUILT.contains(&engine) {
        bail!(
            "this strata binary was built without the {engine} engine: build it with \
             `cargo build --release -p strata-kv-cli --features {engine}`"
        );
    }
    if endpoints(flags).is_empty() {
        bail!("--endpoints is empty: give host:port,host:port,...");
    }
    Ok(())
}

/// Runs the replicated benchmarks `flags` name against `--engine`, writing to `out`; an error
/// when a benchmark had no operation succeed (the cluster is down or unreachable).
pub fn run(flags: &Flags, out: &mut dyn Write) -> Result<()> {
    check(flags)?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(run_engine(flags, out))
}

async fn run_engine(flags: &Flags, out: &mut dyn Write) -> Result<()> {
    let endpoints = endpoints(flags);
    #[cfg(feature = "etcd")]
    if flags.engine == "etcd" {
        let kv = engine_etcd::Etcd::connect(&endpoints).await.context("connecting to etcd")?;
        return run_all(kv, flags, out).await;
    }
    #[cfg(feature = "cluster")]
    if flags.engine == "cluster" {
        return run_all(engine_cluster::Cluster::new(&endpoints), flags, out).await;
    }
    if flags.engine == "memory" {
        return run_all(engine_mem::MemKv::default(), flags, out).await;
    }
    bail!("--engine={} (endpoints {endpoints:?}) passed the check against BUILT", flags.engine)
}

/// The benchmarks of `flags`, in order, against `kv`.
async fn run_all<K: ReplicatedKv>(kv: K, flags: &Flags, out: &mut dyn Write) -> Result<()> {
    let limit = match flags.duration {
        0 => Limit::Ops(flags.num),
        s => Limit::Duration(Duration::from_secs(s)),
    };
    let seed = match flags.seed {
        0 => SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_micros() as u64),
        s => s,
    };
    let header = Header {
        benchmarks: &flags.benchmarks,
        engine: &kv.describe(),
        clients: flags.threads,
        key_size: flags.key_size,
        key_space: flags.key_space,
        value_size: flags.value_size,
        limit,
        seed,
    };
    write!(out, "{}", header.text())?;
    let pool = ValuePool::new(flags.value_size, flags.compression_ratio);
    let mut rows = Vec::new();
    for name in &flags.benchmarks {
        let op = if name == "rget" { Op::Get } else { Op::Put };
        let cfg = Config {
            op,
            clients: flags.threads,
            limit,
            key_space: flags.key_space,
            key_size: flags.key_size,
            value_size: flags.value_size,
            seed,
            pool: pool.clone(),
        };
        if op == Op::Get && !flags.use_existing_db {
            let t = Instant::now();
            harness::preload(&kv, &cfg).await.context("preloading rget's key space")?;
            let secs = t.elapsed().as_secs_f64();
            writeln!(out, "preload      : {} keys put in {secs:.3} seconds (not measured)", cfg.key_space)?;
        }
        let row = Row { name: name.clone(), clients: cfg.clients, outcome: harness::run(&kv, &cfg).await };
        write!(out, "{}", row.block(op == Op::Get))?;
        out.flush()?;
        rows.push(row);
    }
    write!(out, "{}", output::table(&rows))?;
    out.flush()?;
    if let Some(r) = rows.iter().find(|r| r.outcome.ops == 0 && r.outcome.errors > 0) {
        let first = r.outcome.first_error.as_ref().map(ToString::to_string).unwrap_or_default();
        bail!("{}: no operation succeeded ({} errors; the first: {first})", r.name, r.outcome.errors);
    }
    Ok(())
}
