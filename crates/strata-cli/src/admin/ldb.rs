//! ldb's commands that the admin tool took over later: `batchput`, `approxsize`,
//! `get_property`, `idump` and `list_live_files_metadata` (ldb's names, with dashed aliases).
//!
//! Owns: their clap shape and dispatch, and the three small ones (`batchput`, `approxsize`,
//! `get_property`). `idump` is in idump.rs, `list_live_files_metadata` in live_files.rs.
//! Must not: decide how a database is opened (mod.rs's `open_read_only` / `open_writable`) or
//! invent byte encodings (format.rs).

use std::path::Path;

use anyhow::{bail, Context, Result};
use clap::Subcommand;
use serde_json::Value;
use strata::{Db, WriteBatch};

use super::families::{family, CfArg};
use super::format::{object, parse_arg, put_bytes, Out, OutputArgs};
use super::kv::report_ok;
use super::{close, idump, live_files, open_read_only, open_writable, DbArg, EXIT_OK};

/// The properties `get_property` knows (`Db::property`); `rocksdb.` works for `strata.` too.
/// A unit test checks every one answers, so this list cannot fall behind the engine unnoticed.
pub const PROPERTIES: [&str; 16] = [
    "strata.stats",
    "strata.levelstats",
    "strata.num-files-at-level<N>",
    "strata.estimate-pending-compaction-bytes",
    "strata.block-cache-usage",
    "strata.block-cache-pinned-usage",
    "strata.num-immutable-mem-table",
    "strata.memtable-borrowed-bytes",
    "strata.total-sst-files-size",
    "strata.total-blob-file-size",
    "strata.mmap-reads",
    "strata.background-error",
    "strata.num-snapshots",
    "strata.histograms",
    "strata.recovery",
    "strata.prometheus",
];

/// ldb's `batchput`, `approxsize`, `get_property`, `idump` and `list_live_files_metadata`.
#[derive(Subcommand, Debug)]
pub enum LdbCommand {
    /// Write KEY VALUE pairs as one atomic batch. Writes.
    #[command(name = "batchput", visible_alias = "batch-put")]
    BatchPut {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        out: OutputArgs,
        #[command(flatten)]
        cf: CfArg,
        /// Create the database if it does not exist (ldb's --create_if_missing also works).
        #[arg(long, alias = "create_if_missing")]
        create_if_missing: bool,
        /// KEY VALUE [KEY VALUE ...] (hex with --hex).
        #[arg(required = true, num_args = 2.., value_names = ["KEY", "VALUE"])]
        pairs: Vec<String>,
    },
    /// Approximate bytes on disk of the keys in [--from, --to) (tables and their blob share;
    /// unflushed writes are not counted). Read-only.
    #[command(name = "approxsize", visible_alias = "approx-size")]
    ApproxSize {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        out: OutputArgs,
        #[command(flatten)]
        cf: CfArg,
        /// First key (inclusive; default: the first key; hex with --hex).
        #[arg(long, value_name = "KEY")]
        from: Option<String>,
        /// End key (exclusive; default: past the last key; hex with --hex).
        #[arg(long, value_name = "KEY")]
        to: Option<String>,
    },
    /// Print a named property (`strata.stats`, ...; an unknown name lists them). Read-only.
    #[command(name = "get_property", visible_alias = "get-property")]
    GetProperty {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        out: OutputArgs,
        #[command(flatten)]
        cf: CfArg,
        /// The property name (`strata.` or `rocksdb.` prefix).
        name: String,
    },
    /// Print every internal entry (each version of each key, tombstones and merge operands)
    /// in [--from, --to): user key, sequence number, type and value. Read-only.
    Idump {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        out: OutputArgs,
        #[command(flatten)]
        cf: CfArg,
        #[command(flatten)]
        args: idump::IdumpArgs,
    },
    /// Per live SST file: column family, level, name, size, smallest and largest key,
    /// sequence range, entries; then the live blob files. Read-only.
    #[command(name = "list_live_files_metadata", visible_alias = "list-live-files-metadata")]
    ListLiveFilesMetadata {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        out: OutputArgs,
    },
}

/// Runs one of these commands; the exit code as [`super::run`] returns it.
pub fn run(cmd: LdbCommand) -> Result<u8> {
    match cmd {
        LdbCommand::BatchPut { db, out, cf, create_if_missing, pairs } => {
            // Checked before the open, so a bad command line creates and changes nothing.
            if pairs.len() % 2 != 0 {
                bail!(
                    "batchput takes KEY VALUE pairs: got {} arguments, the last key has no value",
                    pairs.len()
                );
            }
            let entries = parse_pairs(&pairs, out.hex)?;
            batch_put(open_writable(&db.db, create_if_missing)?, out, &cf.column_family, entries)
        }
        LdbCommand::ApproxSize { db, out, cf, from, to } => {
            approx_size(&db.db, out, &cf.column_family, from.as_deref(), to.as_deref())
        }
        LdbCommand::GetProperty { db, out, cf, name } => {
            get_property(&open_read_only(&db.db)?, out, &cf.column_family, &name)
        }
        LdbCommand::Idump { db, out, cf, args } => {
            idump::idump(&open_read_only(&db.db)?, out, &cf.column_family, &args)
        }
        LdbCommand::ListLiveFilesMetadata { db, out } => live_files::list(&db.db, out),
    }
}

fn parse_pairs(pairs: &[String], hex: bool) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    pairs.chunks_exact(2).map(|p| Ok((parse_arg(&p[0], hex)?, parse_arg(&p[1], hex)?))).collect()
}

/// `batchput K1 V1 ...`: one write batch, so either every pair is written or none.
fn batch_put(db: Db, args: OutputArgs, cf: &str, entries: Vec<(Vec<u8>, Vec<u8>)>) -> Result<u8> {
    let handle = family(&db, cf)?;
    let n = entries.len() as u64;
    let mut batch = WriteBatch::new();
    for (k, v) in entries {
        batch.put_cf(&handle, k, v);
    }
    db.write(batch).context("batchput")?;
    close(db)?;
    report_ok(args, "batchput", n)
}

/// `approxsize [--from K] [--to K]`: `Db::approximate_sizes_cf` of one range.
fn approx_size(path: &Path, args: OutputArgs, cf: &str, from: Option<&str>, to: Option<&str>) -> Result<u8> {
    let db = open_read_only(path)?;
    let handle = family(&db, cf)?;
    let start = from.map(|k| parse_arg(k, args.hex)).transpose()?.unwrap_or_default();
    let end = match to {
        Some(k) => parse_arg(k, args.hex)?,
        None => past_last_key(path, cf)?,
    };
    let sizes =
        db.approximate_sizes_cf(&handle, &[start.as_slice()..end.as_slice()]).context("approxsize")?;
    let bytes = sizes.first().copied().unwrap_or(0);
    let mut out = Out::new(args);
    if out.json {
        let mut obj = object([("bytes", bytes.into())]);
        put_bytes(&mut obj, "from", &start, out.hex);
        put_bytes(&mut obj, "to", &end, out.hex);
        out.json(obj)?;
    } else {
        out.line(&bytes.to_string())?;
    }
    out.flush()?;
    Ok(EXIT_OK)
}

/// A key greater than every key in the family's tables: the largest user key of its live files
/// with a zero byte appended (the empty key when it has no file, so the range is empty).
fn past_last_key(path: &Path, cf: &str) -> Result<Vec<u8>> {
    let files = live_files::live_tables(path)?;
    let largest = files.iter().filter(|f| f.family == cf).map(|f| f.largest_user_key()).max();
    Ok(largest.map(|k| [k, &[0]].concat()).unwrap_or_default())
}

/// `get_property NAME`: the value as the engine gives it; an unknown name lists the known ones.
fn get_property(db: &Db, args: OutputArgs, cf: &str, name: &str) -> Result<u8> {
    let handle = family(db, cf)?;
    let Some(value) = db.property_cf(&handle, name) else {
        bail!(
            "unknown property {name:?}; the properties are: {} (the rocksdb. prefix works too)",
            PROPERTIES.join(", ")
        );
    };
    let mut out = Out::new(args);
    if out.json {
        out.json(object([("property", name.into()), ("value", Value::String(value))]))?;
    } else {
        out.line(value.trim_end_matches('\n'))?;
    }
    out.flush()?;
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_property_answers() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), strata::Options::default()).unwrap();
        for name in PROPERTIES {
            let name = name.replace("<N>", "0");
            assert!(db.property(&name).is_some(), "{name}");
            assert!(db.property(&name.replace("strata.", "rocksdb.")).is_some(), "{name}");
        }
        assert!(db.property("strata.no-such-property").is_none());
    }
}
