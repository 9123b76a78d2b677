//! The engines `strata bench compare` can put side by side, and what each one is given.
//!
//! Owns: parsing `--engines=a,b,...` into [`Spec`]s (built into this binary, RocksDB's db_bench
//! program, or one of peerbench's engines), the flags peerbench accepts and the benchmarks it
//! can run (from bench/peers/peerbench.cc's ParseFlags and RunOne), turning a db_bench flag list
//! into peerbench's (dropping the rest), and the engine order of each round.
//! Must not: run anything or know about paths; compare.rs builds the command lines.

use anyhow::{bail, Result};

use super::engine;

/// The `--engines` default: today's two-engine compare.
pub const DEFAULT_ENGINES: &str = "strata,db_bench";

/// RocksDB's own db_bench program (`--db_bench=PATH`; Debian's is RocksDB 7.8.3).
pub const DB_BENCH: &str = "db_bench";

/// The engines of bench/peers/peerbench.cc (`--engine=NAME`).
pub const PEERBENCH_ENGINES: &[&str] = &["leveldb", "wiredtiger-btree", "wiredtiger-lsm", "lmdb"];

/// Every flag peerbench's ParseFlags accepts (it dies on any other), less `--engine` and `--db`,
/// which compare sets itself.
const PEERBENCH_FLAGS: &[&str] = &[
    "benchmarks",
    "num",
    "reads",
    "writes",
    "threads",
    "value_size",
    "key_size",
    "cache_size",
    "bloom_bits",
    "compression_type",
    "compression_ratio",
    "sync",
    "disable_wal",
    "use_existing_db",
    "histogram",
    "seed",
    "duration",
    "benchmark_write_rate_limit",
    "seek_nexts",
    "block_size",
    "wt_page_size",
    "write_buffer_size",
    "open_files",
    "lsm_chunk_size",
    "lmdb_map_size",
    "wt_open_config",
    "wt_table_config",
    "wt_snappy_ext",
    // Taken only to refuse anything but one family with a message, rather than be dropped here
    // and leave the peers measuring something else than the other engines.
    "num_column_families",
    "cf_batch",
];

/// peerbench's boolean flags, so `--noname` can be handed over as `--name=0`.
const PEERBENCH_BOOLS: &[&str] = &["sync", "disable_wal", "use_existing_db", "histogram", "cf_batch"];

/// The benchmarks peerbench runs (any other name makes it exit 1).
const PEERBENCH_BENCHMARKS: &[&str] = &[
    "fillseq",
    "fillrandom",
    "overwrite",
    "readrandom",
    "readseq",
    "seekrandom",
    "updaterandom",
    "readwhilewriting",
    "compact",
    "stats",
];

/// How an engine is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Compiled into this binary: `strata bench --engine=NAME`.
    BuiltIn,
    /// RocksDB's db_bench program.
    DbBench,
    /// peerbench with `--engine=NAME`.
    Peer,
}

impl Kind {
    /// Whether the program writes db_bench's `--report_file` throughput CSV (peerbench does not).
    pub fn writes_report_file(self) -> bool {
        !matches!(self, Kind::Peer)
    }

    /// Whether the program takes RocksDB's tuning flags (bench/rocksdb-tuning.flags).
    pub fn takes_tuning(self, name: &str) -> bool {
        match self {
            Kind::DbBench => true,
            Kind::BuiltIn => name == "rocksdb",
            Kind::Peer => false,
        }
    }
}

/// One engine of `--engines`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub name: String,
    pub kind: Kind,
}

/// Parses `--engines=a,b,c`; `built_in` is this binary's engine list ([`engine::ENGINES`]).
/// An engine this binary was built without fails here, before anything runs, with the rebuild
/// hint of [`engine::unknown_engine`].
pub fn parse(list: &str, built_in: &[&str]) -> Result<Vec<Spec>> {
    let mut specs: Vec<Spec> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let kind = if built_in.contains(&name) {
            Kind::BuiltIn
        } else if name == DB_BENCH {
            Kind::DbBench
        } else if PEERBENCH_ENGINES.contains(&name) {
            Kind::Peer
        } else {
            let why = engine::unknown_engine(name);
            if why.starts_with("unknown engine") {
                bail!("--engines: {why}; compare also runs {DB_BENCH} and {}", PEERBENCH_ENGINES.join(", "));
            }
            bail!("--engines: {why}");
        };
        if specs.iter().any(|s| s.name == name) {
            bail!("--engines names {name} twice");
        }
        specs.push(Spec { name: name.to_string(), kind });
    }
    if specs.is_empty() {
        bail!("--engines needs at least one engine, e.g. --engines={DEFAULT_ENGINES}");
    }
    Ok(specs)
}

/// A db_bench flag list turned into peerbench's: every flag in `--name=value` form, and the
/// flags peerbench does not take left out (returned separately so they can be reported).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filtered {
    pub args: Vec<String>,
    pub dropped: Vec<String>,
}

/// Keeps the flags of `args` that peerbench accepts. gflags spellings peerbench's own parser
/// does not know are rewritten: `-name=v` becomes `--name=v`, `--noname` becomes `--name=0`.
pub fn peerbench_args(args: &[String]) -> Filtered {
    let mut f = Filtered::default();
    for a in args {
        let body = a.trim_start_matches('-');
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (body, None),
        };
        let (name, value) = match (name.strip_prefix("no"), value) {
            (Some(rest), None) if PEERBENCH_BOOLS.contains(&rest) => (rest, Some("0")),
            _ => (name, value),
        };
        if !a.starts_with('-') || !PEERBENCH_FLAGS.contains(&name) {
            f.dropped.push(a.clone());
            continue;
        }
        f.args.push(match value {
            Some(v) => format!("--{name}={v}"),
            None => format!("--{name}"),
        });
    }
    f
}

/// The benchmarks of the last `--benchmarks=` in `args` (gflags keeps the last value).
pub fn benchmarks(args: &[String]) -> Vec<String> {
    args.iter()
        .rev()
        .find_map(|a| a.trim_start_matches('-').strip_prefix("benchmarks="))
        .map(|list| list.split(',').map(str::trim).filter(|b| !b.is_empty()).map(String::from).collect())
        .unwrap_or_default()
}

/// The benchmarks of these steps that peerbench cannot run; non-empty means the engine sits
/// this compare out.
pub fn peerbench_cannot_run(steps: &[&[String]]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for b in steps.iter().flat_map(|s| benchmarks(s)) {
        if !PEERBENCH_BENCHMARKS.contains(&b.as_str()) && !out.contains(&b) {
            out.push(b);
        }
    }
    out
}

/// The engine order of `round` (counted from 0) of `n` engines: it starts with engine
/// `round mod n` and goes round, so over `n` rounds every engine runs in every position once and
/// none always inherits the page cache (and the disk's dirty backlog) another one left.
pub fn rotation(round: usize, n: usize) -> Vec<usize> {
    (0..n).map(|i| (round + i) % n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn engine_lists_parse_into_kinds() {
        let e =
            parse(" strata, db_bench ,leveldb,lmdb,wiredtiger-lsm,memory", &["strata", "memory"]).unwrap();
        let kinds: Vec<(&str, Kind)> = e.iter().map(|s| (s.name.as_str(), s.kind)).collect();
        assert_eq!(
            kinds,
            [
                ("strata", Kind::BuiltIn),
                ("db_bench", Kind::DbBench),
                ("leveldb", Kind::Peer),
                ("lmdb", Kind::Peer),
                ("wiredtiger-lsm", Kind::Peer),
                ("memory", Kind::BuiltIn)
            ]
        );
        assert_eq!(parse(DEFAULT_ENGINES, engine::ENGINES).unwrap().len(), 2);
    }

    #[test]
    fn bad_engine_lists_are_explained() {
        let err = |l: &str| parse(l, &["strata", "memory"]).unwrap_err().to_string();
        assert!(err("strata,strata").contains("twice"));
        assert!(err(" , ").contains("at least one"));
        let unknown = err("strata,nosuch");
        assert!(
            unknown.contains("\"nosuch\"") && unknown.contains("db_bench") && unknown.contains("lmdb"),
            "{unknown}"
        );
        // An optional engine this binary lacks gets the rebuild hint, before anything runs.
        assert!(err("strata,rocksdb").contains("--features rocksdb"));
    }

    #[test]
    fn peerbench_gets_only_its_flags_in_its_spelling() {
        let f = peerbench_args(&strings(&[
            "--benchmarks=fillrandom",
            "-num=1000",
            "--merge_operator=uint64add",
            "--nouse_existing_db",
            "--histogram",
            "--report_file=/x.csv",
            "--min_blob_size=512",
            "--noverify_checksum",
            "stray",
            "--lmdb_map_size=1073741824",
        ]));
        assert_eq!(
            f.args,
            strings(&[
                "--benchmarks=fillrandom",
                "--num=1000",
                "--use_existing_db=0",
                "--histogram",
                "--lmdb_map_size=1073741824"
            ])
        );
        assert_eq!(
            f.dropped,
            strings(&[
                "--merge_operator=uint64add",
                "--report_file=/x.csv",
                "--min_blob_size=512",
                "--noverify_checksum",
                "stray"
            ])
        );
    }

    #[test]
    fn a_benchmark_peerbench_lacks_skips_it() {
        let load = strings(&["--num=10", "--use_existing_db=0", "--benchmarks=fillseq"]);
        let ok = strings(&["--benchmarks=readrandom,readrandom", "--num=10"]);
        assert!(peerbench_cannot_run(&[&load, &ok]).is_empty());
        let merge = strings(&["--benchmarks=fillseq", "--benchmarks=mergerandom,readrandom,mergerandom"]);
        assert_eq!(peerbench_cannot_run(&[&merge]), ["mergerandom"], "the last --benchmarks counts, once");
        assert_eq!(benchmarks(&strings(&["--num=1"])), Vec::<String>::new());
    }

    #[test]
    fn each_round_starts_with_the_next_engine() {
        assert_eq!(rotation(0, 3), [0, 1, 2]);
        assert_eq!(rotation(1, 3), [1, 2, 0]);
        assert_eq!(rotation(2, 3), [2, 0, 1]);
        assert_eq!(rotation(3, 3), [0, 1, 2]);
        assert_eq!(rotation(1, 2), [1, 0], "two engines alternate as before");
        // Over n rounds every engine goes first once and sits in every position once.
        for pos in 0..4 {
            let mut firsts: Vec<usize> = (0..4).map(|r| rotation(r, 4)[pos]).collect();
            firsts.sort();
            assert_eq!(firsts, [0, 1, 2, 3]);
        }
    }
}
