//! The one table mapping db_bench flag names to typed fields, with db_bench's defaults.
//!
//! Owns: gflags-style parsing (`--name=value`, `-name=value`, `--flag`/`--noflag` for booleans),
//! the defaults (applied from the same table, so a default can't drift from its parser), and the
//! error texts (an unknown flag lists every known one). db_bench flags strata has no flag of its
//! own for are mapped or ignored, each with a note, by flags_compat.rs.
//! Must not: open a database, validate engine-specific ranges (the engine does that at open), or
//! print anything.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::flags_compat;

/// Every benchmark flag, typed. Defaults come from [`FLAGS`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Flags {
    pub benchmarks: Vec<String>,
    pub num: u64,
    /// Reads per thread; negative means `num`.
    pub reads: i64,
    /// Writes per thread; negative means `num`.
    pub writes: i64,
    pub threads: usize,
    pub key_size: usize,
    pub value_size: usize,
    pub compression_type: String,
    pub compression_ratio: f64,
    pub cache_size: u64,
    /// Negative means the engine's default (10 bits per key).
    pub bloom_bits: i64,
    /// No bloom filters in last-level tables (RocksDB's `optimize_filters_for_hits`).
    pub optimize_filters_for_hits: bool,
    /// RocksDB: keep index and filter blocks in the block cache, charged to it (strata always
    /// does).
    pub cache_index_and_filter_blocks: bool,
    pub write_buffer_size: Option<u64>,
    pub sync: bool,
    pub disable_wal: bool,
    /// None means a fresh temporary directory, deleted afterwards.
    pub db: Option<PathBuf>,
    pub use_existing_db: bool,
    pub histogram: bool,
    /// `--statistics`: the engine keeps its own statistics (strata's latency histograms,
    /// RocksDB's `Statistics`), off by default as in db_bench.
    pub statistics: bool,
    /// 0 means "derive one from the clock", as db_bench does.
    pub seed: u64,
    /// Seconds; 0 means op-count driven.
    pub duration: u64,
    pub stats_interval_seconds: u64,
    pub report_interval_seconds: u64,
    pub report_file: Option<PathBuf>,
    pub seek_nexts: usize,
    pub merge_operator: Option<String>,
    /// Bytes per second for the readwhilewriting writer; 0 means unlimited.
    pub benchmark_write_rate_limit: u64,
    pub batch_size: usize,
    /// `--num_column_families`: the default family plus `column_family_name_000001`...; key n
    /// lives in family n % N.
    pub num_column_families: usize,
    /// `--cf_batch`: each write is one batch putting its key into every column family.
    pub cf_batch: bool,
    pub min_blob_size: Option<usize>,
    /// strata: the `Options` preset to start from (other flags override it).
    pub preset: Option<String>,
    /// strata: `key=value;...` options applied last (`Options::with_option_string`).
    pub options: Option<String>,
    /// Which engine runs the benchmark (strata-specific).
    pub engine: String,
    pub max_write_buffer_number: Option<usize>,
    pub compaction_nice: Option<u8>,
    pub sync_gather_micros: Option<u32>,
    pub write_spin_micros: Option<u32>,
    pub target_file_size_base: Option<u64>,
    pub level0_file_num_compaction_trigger: Option<usize>,
    pub block_size: Option<usize>,
    pub block_restart_interval: Option<usize>,
    /// A named sequence of benchmark steps instead of `--benchmarks` (strata-specific).
    pub pattern: Option<String>,
    /// Draw the `--report_file` throughput as an SVG here after the run (strata-specific).
    pub plot: Option<PathBuf>,
    /// Tuning flags that were given but have no strata equivalent, for a note in the header.
    pub ignored: Vec<String>,
    /// One line per db_bench-only flag given: what strata does instead (flags_compat.rs).
    pub notes: Vec<String>,
    /// db_bench-only flags mapped onto strata options: (option name, value).
    pub mapped_options: Vec<(String, String)>,
    /// db_bench's `--min_level_to_compress` (becomes `compression_per_level`).
    pub min_level_to_compress: Option<i64>,
    /// `--options` as given; `options` is it with the mapped flags in front.
    pub user_options: Option<String>,
    /// linkbench: node ids are 1..maxid1 (LinkBench's `maxid1`, exclusive).
    pub maxid1: u64,
    /// linkbench: load-phase threads.
    pub loaders: usize,
    /// linkbench: request-phase threads.
    pub requesters: usize,
    /// linkbench: requests per requester (unless `--duration`).
    pub requests: u64,
    /// linkbench: each write operation is one transaction (false: a plain write batch).
    pub transactions: bool,
    /// linkbench on strata: `optimistic` (conflicts found at commit) or `pessimistic` (locks).
    pub txn_mode: String,
    /// linkbench: run the count checker after the requests.
    pub linkbench_check: bool,
    /// linkbench: after the load, flush and wait for compactions before the requests.
    pub linkbench_settle: bool,
    /// linkbench: after the requests too, and count what that wrote against them.
    pub linkbench_settle_after: bool,
    /// insertbench: rows each client inserts in l.i0 (no indexes) and in l.i1 (with them).
    pub ib_rows_l0: u64,
    pub ib_rows_l1: u64,
    /// insertbench: rows per insert (one write batch) in l.i0.
    pub ib_l0_rows_per_commit: usize,
    /// insertbench: rows per insert in l.i1 and the query phases.
    pub ib_rows_per_commit: usize,
    /// insertbench: index entries each query reads.
    pub ib_rows_per_query: usize,
    /// insertbench: seconds of each query phase.
    pub ib_query_seconds: u64,
    /// insertbench: the data column's length is drawn from ib_data_min..=ib_data_max.
    pub ib_data_min: usize,
    pub ib_data_max: usize,
    /// insertbench: the phases to run, in order.
    pub ib_phases: Vec<String>,
    /// insertbench: run the index checker at the end.
    pub ib_check: bool,
    /// insertbench: after the phases, flush and wait for compactions, and report the size.
    pub ib_settle: bool,
    /// rput/rget: the cluster's client addresses; None means the engine's loopback default.
    pub endpoints: Option<String>,
    /// rput/rget: keys are drawn from 0..key_space (rget preloads them all).
    pub key_space: u64,
}

impl Flags {
    /// Reads per thread, resolving db_bench's "negative means num".
    pub fn reads_per_thread(&self) -> u64 {
        u64::try_from(self.reads).unwrap_or(self.num)
    }

    /// Writes per thread, resolving db_bench's "negative means num".
    pub fn writes_per_thread(&self) -> u64 {
        u64::try_from(self.writes).unwrap_or(self.num)
    }

    /// Operations per thread for read-modify-write benchmarks (db_bench's `readwrites_`).
    pub fn readwrites_per_thread(&self) -> u64 {
        if self.reads < 0 && self.writes < 0 {
            self.num
        } else {
            self.reads.max(self.writes).max(0) as u64
        }
    }
}

type Setter = fn(&mut Flags, &str) -> Result<(), String>;

/// One row of the flag table.
pub struct FlagSpec {
    pub name: &'static str,
    /// Parsed with `set` to build the defaults; empty means "unset".
    pub default: &'static str,
    pub is_bool: bool,
    pub help: &'static str,
    set: Setter,
}

const fn flag(name: &'static str, default: &'static str, help: &'static str, set: Setter) -> FlagSpec {
    FlagSpec { name, default, is_bool: false, help, set }
}

const fn bool_flag(name: &'static str, default: &'static str, help: &'static str, set: Setter) -> FlagSpec {
    FlagSpec { name, default, is_bool: true, help, set }
}

/// Benchmarks run when `--benchmarks` is not given.
pub const DEFAULT_BENCHMARKS: &str = "fillseq,readrandom,overwrite";

/// The flag table: db_bench's names and defaults.
pub static FLAGS: &[FlagSpec] = &[
    flag("benchmarks", DEFAULT_BENCHMARKS, "comma-separated benchmarks to run in order", |f, v| {
        let names: Vec<String> =
            v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
        // Checked here, not when the run reaches the name, so a typo fails before anything is
        // printed, created or filled.
        if let Some(bad) = names.iter().find(|n| super::workloads::Workload::parse(n).is_none()) {
            return Err(super::workloads::unknown_benchmark(bad));
        }
        f.benchmarks = names;
        Ok(())
    }),
    flag("num", "1000000", "number of keys", |f, v| set_num(&mut f.num, v)),
    flag("reads", "-1", "reads per thread (<0: num)", |f, v| set_num(&mut f.reads, v)),
    flag("writes", "-1", "writes per thread (<0: num)", |f, v| set_num(&mut f.writes, v)),
    flag("threads", "1", "concurrent benchmark threads", |f, v| set_min(&mut f.threads, v, 1)),
    flag("key_size", "16", "key size in bytes", |f, v| set_min(&mut f.key_size, v, 1)),
    flag("value_size", "100", "value size in bytes", |f, v| set_num(&mut f.value_size, v)),
    flag("compression_type", "snappy", "none, snappy, lz4 or zstd", |f, v| {
        let c = v.to_ascii_lowercase();
        match c.as_str() {
            "none" | "no" | "nocompression" | "snappy" | "lz4" | "zstd" => {
                f.compression_type = c;
                Ok(())
            }
            _ => Err(format!("unknown compression {v:?} (expected none, snappy, lz4 or zstd)")),
        }
    }),
    flag(
        "compression_ratio",
        "0.5",
        "fraction of a value that is random; as in db_bench, 1 or more gives incompressible values",
        |f, v| {
            let r: f64 = v.parse().map_err(|_| format!("{v:?} is not a number"))?;
            // db_bench draws len * ratio random bytes per 100-byte fragment and keeps the first
            // 100, so anything above 1 is incompressible; past 100 it only slows the pool's build.
            if !(0.0..=MAX_COMPRESSION_RATIO).contains(&r) {
                return Err(format!(
                    "{r} is outside 0..={MAX_COMPRESSION_RATIO} (any ratio of 1 or more already gives \
                     incompressible values)"
                ));
            }
            f.compression_ratio = r;
            Ok(())
        },
    ),
    flag("cache_size", "33554432", "block cache bytes", |f, v| set_num(&mut f.cache_size, v)),
    flag("bloom_bits", "-1", "bloom filter bits per key (<0: engine default 10)", |f, v| {
        set_num(&mut f.bloom_bits, v)
    }),
    bool_flag(
        "optimize_filters_for_hits",
        "0",
        "no bloom filters in tables of the last level (RocksDB's option of the same name)",
        |f, v| set_bool(&mut f.optimize_filters_for_hits, v),
    ),
    bool_flag(
        "cache_index_and_filter_blocks",
        "0",
        "RocksDB: index and filter blocks live in the block cache, charged to it, instead of \
         beside it (strata always charges them to the cache; this flag changes nothing there)",
        |f, v| set_bool(&mut f.cache_index_and_filter_blocks, v),
    ),
    flag("write_buffer_size", "", "memtable bytes (engine default if unset)", |f, v| {
        set_some(&mut f.write_buffer_size, v)
    }),
    bool_flag("sync", "0", "fsync every write", |f, v| set_bool(&mut f.sync, v)),
    bool_flag("disable_wal", "0", "write without the WAL", |f, v| set_bool(&mut f.disable_wal, v)),
    flag("db", "", "database directory (default: a temporary directory, deleted afterwards)", |f, v| {
        f.db = (!v.is_empty()).then(|| PathBuf::from(v));
        Ok(())
    }),
    bool_flag("use_existing_db", "0", "keep the database; fill benchmarks are skipped", |f, v| {
        set_bool(&mut f.use_existing_db, v)
    }),
    bool_flag("histogram", "0", "print the full latency histogram", |f, v| set_bool(&mut f.histogram, v)),
    flag("seed", "0", "key RNG seed base (0: from the clock)", |f, v| set_num(&mut f.seed, v)),
    flag("duration", "0", "seconds per random benchmark (0: op-count driven)", |f, v| {
        set_num(&mut f.duration, v)
    }),
    flag("stats_interval_seconds", "0", "print throughput every N seconds", |f, v| {
        set_num(&mut f.stats_interval_seconds, v)
    }),
    flag("report_interval_seconds", "0", "seconds between --report_file rows (default 1)", |f, v| {
        set_num(&mut f.report_interval_seconds, v)
    }),
    flag("report_file", "", "CSV of secs_elapsed,interval_qps", |f, v| {
        f.report_file = (!v.is_empty()).then(|| PathBuf::from(v));
        Ok(())
    }),
    flag("seek_nexts", "0", "next() calls after each seek in seekrandom", |f, v| {
        set_num(&mut f.seek_nexts, v)
    }),
    flag(
        "preset",
        "",
        "strata: start from this Options preset (balanced, bulk_load, read_heavy, low_memory); \
         other flags given, and --cache_size and --compression_type always, override it",
        |f, v| {
            f.preset = (!v.is_empty()).then(|| v.to_string());
            Ok(())
        },
    ),
    flag(
        "options",
        "",
        "strata: any Options by name, as key=value;key=value (docs/tuning.md), applied after \
         every other flag",
        |f, v| {
            f.user_options = (!v.is_empty()).then(|| v.to_string());
            Ok(())
        },
    ),
    flag("merge_operator", "", "merge operator name (uint64add, stringappend)", |f, v| {
        f.merge_operator = (!v.is_empty()).then(|| v.to_string());
        Ok(())
    }),
    flag("benchmark_write_rate_limit", "0", "readwhilewriting writer bytes/s (0: unlimited)", |f, v| {
        set_num(&mut f.benchmark_write_rate_limit, v)
    }),
    flag("batch_size", "1", "puts per write batch; keys per multireadrandom call", |f, v| {
        set_min(&mut f.batch_size, v, 1)
    }),
    flag(
        "num_column_families",
        "1",
        "column families: default plus column_family_name_000001...; key n is written to and \
         read from family n % N (strata only among the built-in engines)",
        |f, v| set_min(&mut f.num_column_families, v, 1),
    ),
    bool_flag(
        "cf_batch",
        "0",
        "strata: each write is one batch putting its key into every column family (N puts, a \
         fresh value each; --num counts keys, so N x num entries); needs --num_column_families>1",
        |f, v| set_bool(&mut f.cf_batch, v),
    ),
    flag(
        "min_blob_size",
        "",
        "strata: values this long go to blob files (engine default if unset)",
        |f, v| set_some(&mut f.min_blob_size, v),
    ),
    flag(
        "engine",
        DEFAULT_ENGINE,
        "strata: engine to run (strata, memory; rocksdb, heed, fjall, redb, sled with their features; \
         etcd and cluster, for rput and rget, with theirs)",
        |f, v| {
            if super::engine::ENGINES.contains(&v) || super::replicated::is_engine(v) {
                f.engine = v.to_string();
                Ok(())
            } else {
                Err(super::engine::unknown_engine(v))
            }
        },
    ),
    flag("pattern", "", "strata: run a step sequence instead of --benchmarks (forestdb)", |f, v| match v {
        "" => Ok(()),
        "forestdb" => {
            f.pattern = Some(v.to_string());
            Ok(())
        }
        _ => Err(format!("unknown pattern {v:?} (expected forestdb)")),
    }),
    flag("plot", "", "strata: draw throughput over time as this SVG (uses --report_file)", |f, v| {
        f.plot = (!v.is_empty()).then(|| PathBuf::from(v));
        Ok(())
    }),
    flag("max_write_buffer_number", "", "memtables kept in memory", |f, v| {
        set_some(&mut f.max_write_buffer_number, v)
    }),
    flag("compaction_nice", "", "strata: nice value of the compaction threads (0-19)", |f, v| {
        set_some(&mut f.compaction_nice, v)
    }),
    flag(
        "sync_gather_micros",
        "",
        "strata: longest wait (us) of a synced group for its writers (0: off)",
        |f, v| set_some(&mut f.sync_gather_micros, v),
    ),
    flag(
        "write_spin_micros",
        "",
        "strata: longest spin (us) of a queued writer before it blocks (0: off)",
        |f, v| set_some(&mut f.write_spin_micros, v),
    ),
    flag("target_file_size_base", "", "target SST file size", |f, v| {
        set_some(&mut f.target_file_size_base, v)
    }),
    flag("level0_file_num_compaction_trigger", "", "L0 files that trigger compaction", |f, v| {
        set_some(&mut f.level0_file_num_compaction_trigger, v)
    }),
    flag("block_size", "", "SST block size", |f, v| set_some(&mut f.block_size, v)),
    flag("block_restart_interval", "", "keys between restart points in data blocks", |f, v| {
        set_some(&mut f.block_restart_interval, v)
    }),
    bool_flag(
        "statistics",
        "0",
        "the engine keeps statistics: strata's latency histograms, RocksDB's Statistics",
        |f, v| set_bool(&mut f.statistics, v),
    ),
    flag("maxid1", "100001", "linkbench: load nodes 1..maxid1 (exclusive), as LinkBench's maxid1", |f, v| {
        set_min(&mut f.maxid1, v, 2)
    }),
    flag("loaders", "2", "linkbench: load-phase threads", |f, v| set_min(&mut f.loaders, v, 1)),
    flag("requesters", "2", "linkbench: request-phase threads", |f, v| set_min(&mut f.requesters, v, 1)),
    flag("requests", "100000", "linkbench: requests per requester (unless --duration)", |f, v| {
        set_num(&mut f.requests, v)
    }),
    bool_flag(
        "transactions",
        "1",
        "linkbench: each link write is one transaction with its count (0: plain batches, which \
         can lose count updates)",
        |f, v| set_bool(&mut f.transactions, v),
    ),
    flag(
        "txn_mode",
        "optimistic",
        "linkbench on strata: optimistic (conflicts found at commit, retried) or pessimistic \
         (TransactionDb: get_for_update locks, as RocksDB's TransactionDB)",
        |f, v| match v {
            "optimistic" | "pessimistic" => {
                f.txn_mode = v.to_string();
                Ok(())
            }
            _ => Err(format!("{v:?}: use optimistic or pessimistic")),
        },
    ),
    bool_flag(
        "linkbench_check",
        "1",
        "linkbench: check every count against its links after the requests (a full scan; 0 skips it, \
         for a run whose database a later run checks)",
        |f, v| set_bool(&mut f.linkbench_check, v),
    ),
    bool_flag(
        "linkbench_settle",
        "1",
        "linkbench: after the load, flush every table and wait for compactions, so the requests start \
         from a settled database on every engine (0: the requests compact what the load left)",
        |f, v| set_bool(&mut f.linkbench_settle, v),
    ),
    bool_flag(
        "linkbench_settle_after",
        "0",
        "linkbench: after the requests, flush every table and wait for compactions too, and print \
         a second Efficiency line that counts what settling wrote against the requests (what a \
         phase left to compact depends on when it stopped)",
        |f, v| set_bool(&mut f.linkbench_settle_after, v),
    ),
    flag(
        "ib_rows_l0",
        "1000000",
        "insertbench: rows each client inserts in l.i0 (no indexes yet)",
        |f, v| set_num(&mut f.ib_rows_l0, v),
    ),
    flag(
        "ib_rows_l1",
        "100000",
        "insertbench: rows each client inserts in l.i1 (with its index entries)",
        |f, v| set_num(&mut f.ib_rows_l1, v),
    ),
    flag("ib_l0_rows_per_commit", "100", "insertbench: rows per insert (one write batch) in l.i0", |f, v| {
        set_min(&mut f.ib_l0_rows_per_commit, v, 1)
    }),
    flag(
        "ib_rows_per_commit",
        "50",
        "insertbench: rows per insert (one write batch of the rows and their index entries) in l.i1 \
         and the query phases",
        |f, v| set_min(&mut f.ib_rows_per_commit, v, 1),
    ),
    flag("ib_rows_per_query", "10", "insertbench: index entries each range query reads", |f, v| {
        set_min(&mut f.ib_rows_per_query, v, 1)
    }),
    flag("ib_query_seconds", "60", "insertbench: seconds each query phase (qrN) runs", |f, v| {
        set_min(&mut f.ib_query_seconds, v, 1)
    }),
    flag("ib_data_min", "10", "insertbench: shortest data column, bytes", |f, v| {
        set_num(&mut f.ib_data_min, v)
    }),
    flag("ib_data_max", "20", "insertbench: longest data column, bytes", |f, v| {
        set_num(&mut f.ib_data_max, v)
    }),
    flag(
        "ib_phases",
        "l.i0,l.x,l.i1,qr100,qr1000",
        "insertbench: phases in order, from l.i0 (load), l.x (create indexes), l.i1 (load with \
         indexes), qrN (queries beside N inserts/s per client); empty: the checker only",
        |f, v| {
            f.ib_phases = super::insertbench::parse_phases(v)?;
            Ok(())
        },
    ),
    bool_flag(
        "ib_check",
        "1",
        "insertbench: check every row against its index entries at the end",
        |f, v| set_bool(&mut f.ib_check, v),
    ),
    bool_flag(
        "ib_settle",
        "0",
        "insertbench: after the phases, flush every family, wait for compactions and report the \
         database's size (the size of the data, not of a compaction backlog)",
        |f, v| set_bool(&mut f.ib_settle, v),
    ),
    flag(
        "endpoints",
        "",
        "rput/rget: client addresses host:port,... of the cluster (default: the loopback members \
         scripts/etcd-cluster.sh or scripts/cluster-start.sh start)",
        |f, v| {
            f.endpoints = (!v.is_empty()).then(|| v.to_string());
            Ok(())
        },
    ),
    flag("key_space", "100000", "rput/rget: keys drawn from 0..key_space; rget preloads them all", |f, v| {
        set_min(&mut f.key_space, v, 1)
    }),
];

/// The engine benchmarked unless `--engine` says otherwise (`memory` measures the harness alone).
const DEFAULT_ENGINE: &str = "strata";

/// The largest `--compression_ratio` taken (see its setter).
const MAX_COMPRESSION_RATIO: f64 = 100.0;

fn set_num<T: std::str::FromStr>(slot: &mut T, v: &str) -> Result<(), String> {
    *slot = v.parse().map_err(|_| format!("{v:?} is not a valid integer"))?;
    Ok(())
}

fn set_min<T: std::str::FromStr + PartialOrd + std::fmt::Display>(
    slot: &mut T,
    v: &str,
    min: T,
) -> Result<(), String> {
    let n: T = v.parse().map_err(|_| format!("{v:?} is not a valid integer"))?;
    if n < min {
        return Err(format!("must be at least {min}"));
    }
    *slot = n;
    Ok(())
}

fn set_some<T: std::str::FromStr>(slot: &mut Option<T>, v: &str) -> Result<(), String> {
    *slot = Some(v.parse().map_err(|_| format!("{v:?} is not a valid integer"))?);
    Ok(())
}

fn set_bool(slot: &mut bool, v: &str) -> Result<(), String> {
    *slot = match v.to_ascii_lowercase().as_str() {
        "1" | "true" | "t" | "yes" | "y" => true,
        "0" | "false" | "f" | "no" | "n" => false,
        _ => return Err(format!("{v:?} is not a boolean (use 1/0/true/false)")),
    };
    Ok(())
}

/// Why the command line was rejected, or a request for help.
#[derive(Debug, PartialEq)]
pub enum FlagError {
    Help,
    Invalid(String),
}

impl std::fmt::Display for FlagError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Help => f.write_str("help requested"),
            Self::Invalid(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for FlagError {}

/// The defaults, as db_bench has them.
pub fn defaults() -> Flags {
    let mut f = Flags::default();
    for spec in FLAGS.iter().filter(|s| !s.default.is_empty()) {
        (spec.set)(&mut f, spec.default).expect("flag table defaults parse");
    }
    f
}

/// Parses db_bench-style arguments (without the program or subcommand name).
pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<Flags, FlagError> {
    let mut f = defaults();
    for arg in args {
        apply(&mut f, arg.as_ref())?;
    }
    // After every flag, so --compression_type may follow --min_level_to_compress.
    f.options = flags_compat::options_text(&f);
    Ok(f)
}

fn apply(f: &mut Flags, arg: &str) -> Result<(), FlagError> {
    if matches!(arg, "--help" | "-help" | "-h") {
        return Err(FlagError::Help);
    }
    let body = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')).ok_or_else(|| {
        FlagError::Invalid(format!("unexpected argument {arg:?}: flags look like --name=value"))
    })?;
    let (name, value) = match body.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (body, None),
    };
    if lookup(name).is_none() {
        if let Some((name, value)) = compat_flag(name, value) {
            return flags_compat::apply(f, name, &value)
                .map_err(|why| FlagError::Invalid(format!("--{name}: {why}")));
        }
    }
    let (spec, value) = resolve(name, value)?;
    (spec.set)(f, &value).map_err(|why| FlagError::Invalid(format!("--{}: {why}", spec.name)))
}

/// A db_bench-only flag (flags_compat.rs) and its value; a bare `--flag` is 1 and `--noflag`
/// 0, as gflags reads booleans (which most of them are).
fn compat_flag<'a>(name: &'a str, value: Option<&str>) -> Option<(&'a str, String)> {
    if flags_compat::is_compat(name) {
        return Some((name, value.unwrap_or("1").to_string()));
    }
    let negated = name.strip_prefix("no").filter(|n| flags_compat::is_compat(n))?;
    value.is_none().then(|| (negated, "0".to_string()))
}

/// Finds the table row for `name`, expanding gflags' bare `--flag` and `--noflag` booleans.
fn resolve(name: &str, value: Option<&str>) -> Result<(&'static FlagSpec, String), FlagError> {
    if let Some(spec) = lookup(name) {
        return match (value, spec.is_bool) {
            (Some(v), _) => Ok((spec, v.to_string())),
            (None, true) => Ok((spec, "1".to_string())),
            (None, false) => Err(FlagError::Invalid(format!("--{name} needs a value: --{name}=VALUE"))),
        };
    }
    if let Some(spec) = name.strip_prefix("no").and_then(lookup).filter(|s| s.is_bool) {
        if value.is_none() {
            return Ok((spec, "0".to_string()));
        }
    }
    Err(FlagError::Invalid(unknown_flag_message(name)))
}

fn lookup(name: &str) -> Option<&'static FlagSpec> {
    FLAGS.iter().find(|s| s.name == name)
}

fn unknown_flag_message(name: &str) -> String {
    let known: Vec<String> = FLAGS.iter().map(|s| format!("--{}", s.name)).collect();
    let compat: Vec<String> = flags_compat::names().map(|n| format!("--{n}")).collect();
    format!(
        "unknown flag --{name}\nknown flags: {}\ndb_bench flags accepted with a note: {}",
        known.join(", "),
        compat.join(", ")
    )
}

/// The `--help` text: every flag with its default and meaning.
pub fn help_text() -> String {
    let mut s = String::from(
        "usage: strata bench [--name=value ...]   (RocksDB db_bench flags)\n\
         \x20      strata bench --pattern=forestdb [--duration=S --threads=N --num=K ...]\n\
         \x20      strata bench compare [--rounds=N] [--db_bench=PATH] [--load=STEP] [--db=DIR]\n\
         \x20                           [--plot=F.svg] -- <db_bench flags>\n\
         \x20      strata bench plot A.csv [B.csv ...] [-o OUT.svg]\n\
         \x20      (`strata bench compare --help` and `strata bench plot --help` say more)\n\n\
         benchmarks: fillseq fillrandom overwrite readrandom multireadrandom readseq readreverse seekrandom\n\
         \x20           updaterandom mergerandom deleterandom deleteseq readwhilewriting\n\
         \x20           seekrandomwhilewriting compact flush stats levelstats\n\
         \x20           linkbench (alone: --maxid1 --loaders --requesters --requests --transactions --txn_mode)\n\
         \x20           insertbench (alone: --threads clients, --ib_phases --ib_rows_l0 --ib_rows_l1 ...)\n\
         \x20           rput rget (replicated: --engine=etcd|cluster --endpoints --threads clients --key_space)\n\nflags:\n",
    );
    for spec in FLAGS {
        let def = if spec.default.is_empty() { "unset" } else { spec.default };
        let _ = writeln!(s, "  --{:<36} {} (default: {def})", spec.name, spec.help);
    }
    s.push_str("\ndb_bench flags strata maps onto its options or ignores, with a note on stderr:\n ");
    let mut width = 1;
    for name in flags_compat::names() {
        if width + name.len() + 3 > 100 {
            s.push_str("\n ");
            width = 1;
        }
        let _ = write!(s, " --{name}");
        width += name.len() + 3;
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_db_benchs() {
        let f = parse::<&str>(&[]).unwrap();
        assert_eq!(f.benchmarks, ["fillseq", "readrandom", "overwrite"]);
        assert_eq!((f.num, f.reads, f.threads), (1_000_000, -1, 1));
        assert_eq!((f.key_size, f.value_size), (16, 100));
        assert_eq!(f.compression_type, "snappy");
        assert_eq!(f.compression_ratio, 0.5);
        assert_eq!((f.cache_size, f.bloom_bits), (33_554_432, -1));
        assert_eq!((f.write_buffer_size, &f.db, f.min_blob_size), (None, &None, None));
        assert!(!f.sync && !f.disable_wal && !f.use_existing_db && !f.histogram);
        assert_eq!((f.seed, f.duration, f.seek_nexts, f.batch_size), (0, 0, 0, 1));
        assert_eq!((f.num_column_families, f.cf_batch), (1, false));
        assert_eq!(f.reads_per_thread(), 1_000_000);
    }

    #[test]
    fn values_and_booleans_parse() {
        let f = parse(&[
            "--benchmarks=fillrandom,compact",
            "--num=500",
            "--histogram",
            "--sync=true",
            "--nodisable_wal",
            "-use_existing_db=1",
            "--write_buffer_size=134217728",
            "--db=/tmp/x",
        ])
        .unwrap();
        assert_eq!(f.benchmarks, ["fillrandom", "compact"]);
        assert_eq!(f.num, 500);
        assert!(f.histogram && f.sync && !f.disable_wal && f.use_existing_db);
        assert_eq!(f.write_buffer_size, Some(134_217_728));
        assert_eq!(f.db, Some(PathBuf::from("/tmp/x")));
    }

    #[test]
    fn tuning_flags_file_is_accepted() {
        let text = include_str!("../../rocksdb-tuning.flags");
        let args: Vec<&str> = text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).collect();
        let f = parse(&args).unwrap();
        assert_eq!(f.max_write_buffer_number, Some(3));
        assert_eq!(f.level0_file_num_compaction_trigger, Some(4));
        assert_eq!(f.ignored.len(), 4, "{:?}", f.ignored);
    }

    #[test]
    fn unknown_flag_lists_known_ones() {
        let err = parse(&["--nmu=5"]).unwrap_err().to_string();
        assert!(err.contains("unknown flag --nmu"), "{err}");
        assert!(err.contains("--num") && err.contains("--benchmarks") && err.contains("--seek_nexts"));
    }

    #[test]
    fn bad_values_name_the_flag() {
        let err = parse(&["--num=12x"]).unwrap_err().to_string();
        assert_eq!(err, "--num: \"12x\" is not a valid integer");
        assert!(parse(&["--sync=maybe"]).unwrap_err().to_string().starts_with("--sync:"));
        assert!(parse(&["--threads=0"]).is_err());
        assert!(parse(&["--num_column_families=0"]).unwrap_err().to_string().contains("at least 1"));
        assert!(parse(&["--num"]).unwrap_err().to_string().contains("needs a value"));
        assert!(parse(&["--nonum"]).is_err(), "--no prefix only for booleans");
        assert!(parse(&["num=5"]).is_err());
        let err = parse(&["--benchmarks=fillseq,nosuch"]).unwrap_err().to_string();
        assert!(
            err.starts_with("--benchmarks: unknown benchmark \"nosuch\"") && err.contains("multireadrandom")
        );
        assert_eq!(parse(&["--help"]).unwrap_err(), FlagError::Help);
    }
}
