//! rput and rget on the in-process map and on a map that fails: what they count, print and
//! refuse.

use std::time::Duration;

use super::super::dbbench_output;
use super::super::flags;
use super::super::valuegen::ValuePool;
use super::engine_mem::MemKv;
use super::harness::{self, Config, Limit, Op};
use super::kv::{OpError, ReplicatedKv};

fn parse(args: &[&str]) -> flags::Flags {
    flags::parse(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn run_on<K: ReplicatedKv>(kv: K, args: &[&str]) -> (anyhow::Result<()>, String) {
    let f = parse(args);
    super::check(&f).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut out = Vec::new();
    let r = rt.block_on(super::run_all(kv, &f, &mut out));
    (r, String::from_utf8(out).unwrap())
}

#[test]
fn rput_then_rget_count_every_operation_and_print_parseable_lines() {
    let kv = MemKv::default();
    let args = [
        "--engine=memory",
        "--benchmarks=rput,rget",
        "--num=1000",
        "--threads=3",
        "--key_space=500",
        "--seed=7",
    ];
    let (r, out) = run_on(kv.clone(), &args);
    r.unwrap_or_else(|e| panic!("{e:#}\n{out}"));
    // The preload put every key of the key space, through batches no larger than the engine's.
    assert_eq!(kv.len(), 500, "{out}");
    assert!(out.contains("preload      : 500 keys put in "), "{out}");
    let parsed = dbbench_output::parse(&out);
    assert_eq!(parsed.len(), 2, "{out}");
    for (p, name) in parsed.iter().zip(["rput", "rget"]) {
        assert_eq!((p.name.as_str(), p.ops), (name, Some(1000)), "{out}");
        assert!(p.ops_per_sec > 0.0 && p.p99.is_some() && p.max.is_some(), "{out}");
    }
    assert!(out.contains("(1000 of 1000 found) (3 clients, 0 errors)"), "{out}");
    let table_row =
        out.lines().find(|l| l.starts_with("rget ") && !l.contains(" : ")).unwrap_or_else(|| panic!("{out}"));
    assert_eq!(table_row.split_whitespace().nth(1), Some("3"), "{table_row}");
}

#[test]
fn a_duration_run_stops_at_its_deadline() {
    let cfg = Config {
        op: Op::Put,
        clients: 4,
        limit: Limit::Duration(Duration::from_millis(200)),
        key_space: 100,
        key_size: 16,
        value_size: 10,
        seed: 1,
        pool: ValuePool::new(10, 0.5),
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let o = rt.block_on(harness::run(&Slow(MemKv::default()), &cfg));
    assert!(o.elapsed >= Duration::from_millis(200), "{:?}", o.elapsed);
    assert!(o.elapsed < Duration::from_secs(5), "{:?}", o.elapsed);
    // Each put takes at least 1 ms, so four clients do at most 4 x 200 (plus the last ones).
    assert!(o.ops > 4 && o.ops <= 4 * 201, "{}", o.ops);
    assert_eq!(o.hist.len(), o.ops);
    assert!(o.hist.min() >= 1000, "{}", o.hist.min());
}

#[test]
fn errors_are_counted_and_a_run_with_no_success_fails() {
    let (r, out) = run_on(Failing, &["--engine=memory", "--benchmarks=rput", "--num=20", "--threads=2"]);
    let e = r.unwrap_err().to_string();
    assert!(e.contains("rput: no operation succeeded (20 errors; the first: refused)"), "{e}");
    assert!(
        out.contains("operations; (2 clients, 20 errors)") && out.contains("first error: refused"),
        "{out}"
    );
}

#[test]
fn other_benchmarks_and_engines_are_refused() {
    let refused = |args: &[&str]| super::check(&parse(args)).unwrap_err().to_string();
    assert!(refused(&["--engine=memory", "--benchmarks=rput,fillseq"]).contains("--benchmarks=fillseq"));
    assert!(refused(&["--engine=strata", "--benchmarks=rput"]).contains("not --engine=strata"));
    assert!(
        refused(&["--engine=memory", "--benchmarks=rget", "--endpoints=,"]).contains("--endpoints is empty")
    );
    #[cfg(not(feature = "etcd"))]
    assert!(refused(&["--engine=etcd", "--benchmarks=rput"]).contains("--features etcd"));
    assert!(refused(&["--engine=cluster"]).contains("--benchmarks=fillseq"));
    assert!(super::wanted(&parse(&["--engine=etcd"])) && !super::wanted(&parse(&["--engine=memory"])));
    let f = parse(&["--engine=etcd"]);
    assert_eq!(super::endpoints(&f), ["127.0.0.1:2379", "127.0.0.1:22379", "127.0.0.1:32379"]);
    let f = parse(&["--engine=cluster", "--endpoints=a:1, b:2"]);
    assert_eq!(super::endpoints(&f), ["a:1", "b:2"]);
}

/// The in-process map, 1 ms slower per operation.
#[derive(Clone)]
struct Slow(MemKv);

impl ReplicatedKv for Slow {
    async fn put(&mut self, key: Vec<u8>, value: Vec<u8>) -> Result<(), OpError> {
        tokio::time::sleep(Duration::from_millis(1)).await;
        self.0.put(key, value).await
    }

    async fn get(&mut self, key: Vec<u8>) -> Result<Option<Vec<u8>>, OpError> {
        tokio::time::sleep(Duration::from_millis(1)).await;
        self.0.get(key).await
    }

    async fn put_many(&mut self, pairs: Vec<(Vec<u8>, Vec<u8>)>) -> Result<(), OpError> {
        self.0.put_many(pairs).await
    }

    fn max_batch(&self) -> usize {
        self.0.max_batch()
    }

    fn describe(&self) -> String {
        "slow memory".into()
    }
}

/// A store that refuses everything.
#[derive(Clone)]
struct Failing;

impl ReplicatedKv for Failing {
    async fn put(&mut self, _: Vec<u8>, _: Vec<u8>) -> Result<(), OpError> {
        Err(OpError("refused".into()))
    }

    async fn get(&mut self, _: Vec<u8>) -> Result<Option<Vec<u8>>, OpError> {
        Err(OpError("refused".into()))
    }

    async fn put_many(&mut self, _: Vec<(Vec<u8>, Vec<u8>)>) -> Result<(), OpError> {
        Err(OpError("refused".into()))
    }

    fn max_batch(&self) -> usize {
        1
    }

    fn describe(&self) -> String {
        "failing".into()
    }
}

/// rput and rget against three strata-server nodes in this process (real HTTP on loopback): the
/// preload and every get go through Raft, and every key rget reads was put.
#[cfg(feature = "cluster")]
#[test]
fn rput_and_rget_run_against_a_strata_cluster() {
    use strata_server::local_cluster::{fast_timeouts, LocalCluster};

    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let f =
        parse(&["--engine=cluster", "--benchmarks=rput,rget", "--num=200", "--threads=4", "--key_space=300"]);
    let out = rt.block_on(async {
        let cluster = LocalCluster::start(3, dir.path(), fast_timeouts).await.expect("start nodes");
        cluster.init().await.expect("init");
        let all = [1, 2, 3].into();
        cluster.wait_leader(&all, Duration::from_secs(10)).await.expect("a leader is elected");
        let mut out = Vec::new();
        let kv = super::engine_cluster::Cluster::new(&cluster.endpoints());
        let r = super::run_all(kv, &f, &mut out).await;
        let out = String::from_utf8(out).unwrap();
        r.unwrap_or_else(|e| panic!("{e:#}\n{out}"));
        cluster.shutdown().await;
        out
    });
    assert!(out.contains("preload      : 300 keys put in "), "{out}");
    let parsed = dbbench_output::parse(&out);
    assert_eq!(parsed.iter().map(|p| p.ops).collect::<Vec<_>>(), [Some(200), Some(200)], "{out}");
    assert!(out.contains("(200 of 200 found) (4 clients, 0 errors)"), "{out}");
}
