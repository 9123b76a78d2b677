//! Whole-database inspection: `stats` (from the engine's named properties) and `check` (the
//! engine's `verify_db`).
//!
//! Owns: presenting what the engine reports. Must not: write to the database directory, or
//! re-implement verification; `check` only prints what `strata::verify::verify_db` found.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{Map, Value};
use strata::internal::version::set::VersionSet;
use strata::options::NUM_LEVELS;
use strata::verify::{verify_db, VerifyReport};
use strata::Db;

use super::format::{object, Out, OutputArgs};
use super::{open_read_only, EXIT_ERROR, EXIT_OK};

/// Single-number properties shown after the `strata.stats` text, with their JSON names.
const NUMBER_PROPERTIES: [(&str, &str); 4] = [
    ("strata.estimate-pending-compaction-bytes", "pending_compaction_bytes"),
    ("strata.block-cache-usage", "block_cache_usage"),
    ("strata.total-sst-files-size", "total_sst_files_size"),
    ("strata.total-blob-file-size", "total_blob_file_size"),
];

/// `stats`: the `strata.stats` property (per-level table, write amplification, cache) plus the
/// single-number properties. Counters such as write amplification count work done since open,
/// and this open is a fresh read-only one, so they describe nothing but this inspection.
pub fn stats(path: &Path, args: OutputArgs) -> Result<u8> {
    let db = open_read_only(path)?;
    let mut out = Out::new(args);
    if out.json {
        out.json(stats_json(path, &db)?)?;
    } else {
        out.line(db.property("strata.stats").unwrap_or_default().trim_end())?;
        for (name, _) in NUMBER_PROPERTIES {
            let value = db.property(name).unwrap_or_default();
            out.line(&format!("{}: {value}", name.trim_start_matches("strata.")))?;
        }
        out.line(&format!("last sequence: {}", db.latest_sequence()))?;
    }
    out.flush()?;
    Ok(EXIT_OK)
}

fn number(db: &Db, name: &str) -> Value {
    db.property(name).and_then(|v| v.parse::<u64>().ok()).map_or(Value::Null, Value::from)
}

/// Files and bytes per level. Bytes are not a property, so they come from the MANIFEST, read
/// again (read-only) for the same version the handle recovered.
fn levels_json(path: &Path) -> Result<Value> {
    let recovered = VersionSet::recover(path, strata::fs::default_fs())
        .with_context(|| format!("reading the MANIFEST of {}", path.display()))?;
    let v = recovered.set.current();
    let levels = (0..NUM_LEVELS).map(|l| {
        Value::Object(object([
            ("level", l.into()),
            ("files", v.level_files(l).into()),
            ("bytes", v.level_bytes(l).into()),
        ]))
    });
    Ok(Value::Array(levels.collect()))
}

fn stats_json(path: &Path, db: &Db) -> Result<Map<String, Value>> {
    let mut obj = object([("levels", levels_json(path)?)]);
    for (name, field) in NUMBER_PROPERTIES {
        obj.insert(field.to_string(), number(db, name));
    }
    let st = db.stats();
    let user = st.user_bytes.load(std::sync::atomic::Ordering::Relaxed);
    let wamp = (user > 0).then(|| st.disk_bytes_written() as f64 / user as f64);
    obj.insert("write_amplification".into(), wamp.map_or(Value::Null, Value::from));
    obj.insert("last_sequence".into(), db.latest_sequence().into());
    obj.insert("stats_text".into(), db.property("strata.stats").unwrap_or_default().into());
    Ok(obj)
}

/// `check`: verifies every checksum; prints each problem; exit 2 if there is any.
pub fn check(path: &Path, args: OutputArgs) -> Result<u8> {
    let report = verify_db(path, strata::fs::default_fs())
        .with_context(|| format!("cannot check database {}", path.display()))?;
    let mut out = Out::new(args);
    for p in &report.problems {
        if out.json {
            out.json(object([("file", p.file.as_str().into()), ("problem", p.message.as_str().into())]))?;
        } else {
            out.line(&format!("CORRUPT {}: {}", p.file, p.message))?;
        }
    }
    print_summary(&mut out, &report)?;
    out.flush()?;
    if !report.lost_files.is_empty() {
        // Not a problem: files an open or a repair set aside instead of deleting.
        eprintln!(
            "strata: note: {} holds {} file(s) set aside by recovery: {}",
            path.join("lost").display(),
            report.lost_files.len(),
            report.lost_files.join(", ")
        );
    }
    if report.is_ok() {
        return Ok(EXIT_OK);
    }
    let files: Vec<&str> = report.problems.iter().map(|p| p.file.as_str()).collect();
    eprintln!(
        "strata: check found {} problem(s) in {}: {}",
        report.problems.len(),
        path.display(),
        files.join(", ")
    );
    Ok(EXIT_ERROR)
}

fn print_summary(out: &mut Out, r: &VerifyReport) -> Result<()> {
    if out.json {
        return out.json(object([
            ("ok", r.is_ok().into()),
            ("problems", r.problems.len().into()),
            ("tables", r.tables.into()),
            ("table_entries", r.table_entries.into()),
            ("blob_files", r.blob_files.into()),
            ("blob_records", r.blob_records.into()),
            ("wal_files", r.wal_files.into()),
            ("wal_records", r.wal_records.into()),
        ]));
    }
    let verdict = if r.is_ok() { "OK".to_string() } else { format!("{} problem(s)", r.problems.len()) };
    out.line(&format!(
        "checked {} tables ({} entries), {} blob files ({} records), {} WAL files ({} records): {verdict}",
        r.tables, r.table_entries, r.blob_files, r.blob_records, r.wal_files, r.wal_records
    ))
}
