//! `idump` (ldb's name): every internal entry of one column family, as ldb's `idump` prints
//! them: `'key' seq:N, type:T => value`, then `Internal keys in range: N`.
//!
//! Owns: the range, limit and count-only handling and the line format. Must not: walk tables
//! itself; the entries come from the engine's `strata::internal::db::for_each_internal_entry`
//! (memtables and the current version's tables, one pinned view), so the tool never disagrees
//! with the engine about what is stored.

use anyhow::{Context, Result};
use serde_json::Value;
use strata::internal::blob::BlobPointer;
use strata::internal::db::for_each_internal_entry;
use strata::internal::key::{self, ValueKind};
use strata::Db;

use super::families::family;
use super::format::{entry_json, kind_name, object, parse_arg, Out, OutputArgs};
use super::EXIT_OK;

/// The flags of `idump`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct IdumpArgs {
    /// First user key (inclusive; hex with --hex).
    #[arg(long, value_name = "KEY")]
    pub from: Option<String>,
    /// End user key (exclusive, as in `scan`; ldb's idump includes it; hex with --hex).
    #[arg(long, value_name = "KEY")]
    pub to: Option<String>,
    /// Stop after N internal entries.
    #[arg(long = "max_keys", visible_alias = "max-keys", value_name = "N")]
    pub max_keys: Option<u64>,
    /// Print only the number of internal entries in the range.
    #[arg(long = "count_only", visible_alias = "count-only")]
    pub count_only: bool,
}

/// Runs `idump` on an open (read-only) database.
pub fn idump(db: &Db, args: OutputArgs, cf: &str, a: &IdumpArgs) -> Result<u8> {
    let handle = family(db, cf)?;
    let from = a.from.as_deref().map(|k| parse_arg(k, args.hex)).transpose()?;
    let to = a.to.as_deref().map(|k| parse_arg(k, args.hex)).transpose()?;
    let limit = a.max_keys.unwrap_or(u64::MAX);
    let mut out = Out::new(args);
    let mut count = 0u64;
    let mut failed = None;
    for_each_internal_entry(db, Some(&handle), from.as_deref(), |ikey: &[u8], value: &[u8]| {
        let parsed = key::parse(ikey);
        let user_key = parsed.map_or(ikey, |p| p.user_key);
        if count >= limit || to.as_deref().is_some_and(|t| user_key >= t) {
            return Ok(false);
        }
        count += 1;
        if !a.count_only {
            let (seq, kind) = parsed.map_or((0, None), |p| (p.seq, Some(p.kind)));
            // Output errors are not engine errors: keep the first, stop the walk.
            if let Err(e) = print_entry(&mut out, user_key, seq, kind, value) {
                failed = Some(e);
                return Ok(false);
            }
        }
        Ok(true)
    })
    .context("idump")?;
    if let Some(e) = failed {
        return Err(e);
    }
    if out.json {
        out.json(object([("internal_keys", Value::from(count))]))?;
    } else {
        out.line(&format!("Internal keys in range: {count}"))?;
    }
    out.flush()?;
    Ok(EXIT_OK)
}

fn print_entry(
    out: &mut Out,
    user_key: &[u8],
    seq: u64,
    kind: Option<ValueKind>,
    value: &[u8],
) -> Result<()> {
    if out.json {
        return out.json(entry_json(out.hex, user_key, seq, kind, value));
    }
    let shown = match kind {
        Some(ValueKind::Delete) => String::new(),
        Some(ValueKind::Blob) => match BlobPointer::decode(value) {
            Ok(p) => format!("blob(file={} offset={} size={})", p.file_number, p.offset, p.size),
            Err(_) => out.show(value),
        },
        _ => out.show(value),
    };
    let line = format!("'{}' seq:{seq}, type:{} => {shown}", out.show(user_key), kind_name(kind));
    out.line(&line)
}
