//! Single-key and range commands: `get`, `put`, `delete`, `deleterange`, `scan`, `compact`, each in the column
//! family `--column_family` names (families.rs resolves it).
//!
//! Owns: turning arguments into engine calls and printing their results. Must not: open the
//! database itself (mod.rs decides read-only versus writable) or invent byte encodings
//! (format.rs).

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;
use strata::{Db, DbIterator, ReadOptions};

use super::families::family;
use super::format::{object, parse_arg, Out, OutputArgs};
use super::{close, open_read_only, EXIT_NOT_FOUND, EXIT_OK};

/// The range flags of `scan`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ScanArgs {
    /// Start at this key (inclusive; hex with --hex).
    #[arg(long, value_name = "KEY")]
    pub from: Option<String>,
    /// Stop before this key (exclusive; hex with --hex).
    #[arg(long, value_name = "KEY")]
    pub to: Option<String>,
    /// Only keys starting with this prefix (hex with --hex).
    #[arg(long, value_name = "PREFIX")]
    pub prefix: Option<String>,
    /// Print at most N entries.
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Walk from the last key backwards.
    #[arg(long)]
    pub reverse: bool,
}

/// `get KEY`: the value, or exit 1 with `Failed: NotFound` on stderr.
pub fn get(path: &Path, args: OutputArgs, cf: &str, key: &str) -> Result<u8> {
    let db = open_read_only(path)?;
    let handle = family(&db, cf)?;
    let k = parse_arg(key, args.hex)?;
    let mut out = Out::new(args);
    let value = db.get_cf(&handle, &k).with_context(|| format!("get {key}"))?;
    let Some(value) = value else {
        let in_family =
            if cf == super::families::DEFAULT { String::new() } else { format!(" column family {cf}") };
        eprintln!("Failed: NotFound: key {} in {}{in_family}", out.show(&k), path.display());
        return Ok(EXIT_NOT_FOUND);
    };
    if out.json {
        out.key_value(&k, &value)?;
    } else {
        let shown = out.show(&value);
        out.line(&shown)?;
    }
    out.flush()?;
    Ok(EXIT_OK)
}

/// `put KEY VALUE`.
pub fn put(db: Db, args: OutputArgs, cf: &str, key: &str, value: &str) -> Result<u8> {
    let handle = family(&db, cf)?;
    let (k, v) = (parse_arg(key, args.hex)?, parse_arg(value, args.hex)?);
    db.put_cf(&handle, &k, &v).with_context(|| format!("put {key}"))?;
    close(db)?;
    report_ok(args, "put", 1)
}

/// `delete KEY`.
pub fn delete(db: Db, args: OutputArgs, cf: &str, key: &str) -> Result<u8> {
    let handle = family(&db, cf)?;
    let k = parse_arg(key, args.hex)?;
    db.delete_cf(&handle, &k).with_context(|| format!("delete {key}"))?;
    close(db)?;
    report_ok(args, "delete", 1)
}

/// `deleterange BEGIN END`: every key in `[BEGIN, END)`, as `Db::delete_range`.
pub fn delete_range(db: Db, args: OutputArgs, cf: &str, begin: &str, end: &str) -> Result<u8> {
    let handle = family(&db, cf)?;
    let (b, e) = (parse_arg(begin, args.hex)?, parse_arg(end, args.hex)?);
    db.delete_range_cf(&handle, &b, &e).with_context(|| format!("deleterange {begin} {end}"))?;
    close(db)?;
    report_ok(args, "deleterange", 1)
}

/// `compact [--from K] [--to K]`: both ends inclusive, as `Db::compact_range`.
pub fn compact(db: Db, args: OutputArgs, cf: &str, from: Option<&str>, to: Option<&str>) -> Result<u8> {
    let handle = family(&db, cf)?;
    let from = from.map(|k| parse_arg(k, args.hex)).transpose()?;
    let to = to.map(|k| parse_arg(k, args.hex)).transpose()?;
    db.compact_range_cf(&handle, from.as_deref(), to.as_deref()).context("compact")?;
    close(db)?;
    report_ok(args, "compact", 0)
}

/// Runs `checkpoint`.
pub fn checkpoint(db: Db, args: OutputArgs, target: &std::path::Path) -> Result<u8> {
    db.checkpoint(target).with_context(|| format!("checkpoint to {}", target.display()))?;
    close(db)?;
    report_ok(args, "checkpoint", 0)
}

/// Prints `OK` (text) or `{"ok":true,...}` (JSON) after a write.
pub fn report_ok(args: OutputArgs, op: &str, entries: u64) -> Result<u8> {
    let mut out = Out::new(args);
    if out.json {
        out.json(object([("ok", Value::Bool(true)), ("op", op.into()), ("entries", entries.into())]))?;
    } else {
        out.line("OK")?;
    }
    out.flush()?;
    Ok(EXIT_OK)
}

/// `scan`: `key ==> value` per entry within the bounds, forwards or with `--reverse` backwards.
pub fn scan(db: &Db, args: OutputArgs, cf: &str, range: &ScanArgs) -> Result<u8> {
    let handle = family(db, cf)?;
    let parse = |s: &Option<String>| s.as_deref().map(|k| parse_arg(k, args.hex)).transpose();
    let opts = ReadOptions {
        lower_bound: parse(&range.from)?,
        upper_bound: parse(&range.to)?,
        prefix: parse(&range.prefix)?,
        // A scan would otherwise push the hot set out of the cache for nothing.
        fill_cache: false,
        ..ReadOptions::new()
    };
    let mut it = db.cursor_cf(&handle, &opts).context("scan")?;
    let mut out = Out::new(args);
    let limit = range.limit.unwrap_or(u64::MAX);
    walk(&mut it, range.reverse, limit, |k, v| out.key_value(k, v))?;
    out.flush()?;
    Ok(EXIT_OK)
}

/// Calls `f` for up to `limit` entries of `it` in the chosen direction; returns how many.
pub fn walk(
    it: &mut DbIterator,
    reverse: bool,
    limit: u64,
    mut f: impl FnMut(&[u8], &[u8]) -> Result<()>,
) -> Result<u64> {
    if reverse {
        it.seek_to_last();
    } else {
        it.seek_to_first();
    }
    let mut n = 0;
    while it.valid() && n < limit {
        f(it.key(), it.value())?;
        n += 1;
        if reverse {
            it.prev();
        } else {
            it.next();
        }
    }
    it.status().context("reading the database")?;
    Ok(n)
}
