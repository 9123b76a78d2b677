//! `repair`: runs the engine's `Db::repair` on a database that will not open and prints its
//! report.
//!
//! Owns: choosing the options repair runs with and presenting the report. Must not: decide what
//! to keep or move itself; that is `strata::Db::repair`'s job.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{Map, Value};
use strata::db::LostFile;
use strata::{Db, Options, RepairReport};

use super::format::{object, Out, OutputArgs};
use super::EXIT_OK;

/// `repair`: rebuilds the MANIFEST from the data files; exit 0 when it wrote one, even if files
/// went to `lost/` (the report says which), 2 when it could not run.
pub fn repair(path: &Path, args: OutputArgs) -> Result<u8> {
    let report = Db::repair(path, repair_options(path))
        .with_context(|| format!("cannot repair database {}", path.display()))?;
    let mut out = Out::new(args);
    if out.json {
        out.json(report_json(&report))?;
    } else {
        print_report(&mut out, &report)?;
    }
    out.flush()?;
    Ok(EXIT_OK)
}

/// The options of the newest OPTIONS file (repair writes tables, which should look like the
/// database's own); defaults when there is none or it does not read, since a damaged database
/// may well have a damaged OPTIONS file too.
fn repair_options(path: &Path) -> Options {
    match Options::load_latest(path) {
        Ok(opts) => opts,
        Err(strata::Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Options::default()
        }
        Err(e) => {
            eprintln!(
                "strata: note: the OPTIONS file of {} does not read ({e}); repairing with defaults",
                path.display()
            );
            Options::default()
        }
    }
}

fn print_report(out: &mut Out, r: &RepairReport) -> Result<()> {
    for (what, files) in [
        ("LOST table", &r.tables_lost),
        ("LOST blob file", &r.blob_files_lost),
        ("replaced table", &r.tables_replaced),
        ("moved", &r.other_moved),
    ] {
        for f in files {
            out.line(&format!("{what} {} -> {}: {}", f.file, f.moved_to, f.reason))?;
        }
    }
    for d in &r.dangling_blob_references {
        out.line(&format!(
            "DANGLING table {:06}.sst: {} entries point into missing blob file {:06}.blob (reads of them fail)",
            d.table, d.entries, d.blob_file
        ))?;
    }
    out.line(&format!(
        "kept {} tables ({} written from WALs, {} rewritten), {} blob files; lost {} tables, {} blob files",
        r.tables_kept.len(),
        r.tables_from_wals.len(),
        r.tables_rewritten.len(),
        r.blob_files_kept.len(),
        r.tables_lost.len(),
        r.blob_files_lost.len()
    ))?;
    out.line(&format!(
        "WALs: {} files ({} cut short by an error), {} records salvaged, {} records dropped, {} bytes skipped",
        r.wal_files.len(),
        r.wal_files_cut_short.len(),
        r.wal_records_salvaged,
        r.wal_records_dropped,
        r.wal_bytes_skipped
    ))?;
    let verdict = if r.is_clean() { "nothing lost" } else { "some data lost, see above" };
    out.line(&format!(
        "wrote MANIFEST-{:06} (last sequence {}): {verdict}",
        r.manifest_number, r.last_sequence
    ))
}

fn lost_json(files: &[LostFile]) -> Value {
    let items = files.iter().map(|f| {
        Value::Object(object([
            ("file", f.file.as_str().into()),
            ("moved_to", f.moved_to.as_str().into()),
            ("reason", f.reason.as_str().into()),
        ]))
    });
    Value::Array(items.collect())
}

fn report_json(r: &RepairReport) -> Map<String, Value> {
    let dangling = r.dangling_blob_references.iter().map(|d| {
        Value::Object(object([
            ("table", d.table.into()),
            ("blob_file", d.blob_file.into()),
            ("entries", d.entries.into()),
        ]))
    });
    object([
        ("clean", r.is_clean().into()),
        ("manifest_number", r.manifest_number.into()),
        ("last_sequence", r.last_sequence.into()),
        ("tables_kept", r.tables_kept.clone().into()),
        ("tables_lost", lost_json(&r.tables_lost)),
        ("tables_replaced", lost_json(&r.tables_replaced)),
        ("tables_from_wals", r.tables_from_wals.clone().into()),
        ("tables_rewritten", r.tables_rewritten.clone().into()),
        ("blob_files_kept", r.blob_files_kept.clone().into()),
        ("blob_files_lost", lost_json(&r.blob_files_lost)),
        ("dangling_blob_references", Value::Array(dangling.collect())),
        ("wal_files", r.wal_files.clone().into()),
        ("wal_files_cut_short", r.wal_files_cut_short.clone().into()),
        ("wal_records_salvaged", r.wal_records_salvaged.into()),
        ("wal_records_dropped", r.wal_records_dropped.into()),
        ("wal_bytes_skipped", r.wal_bytes_skipped.into()),
        ("other_moved", lost_json(&r.other_moved)),
    ])
}
