//! `list_live_files_metadata` (ldb's name): every live SST file of every column family, with
//! RocksDB's `LiveFileMetaData` columns (column family, level, name, size, smallest and largest
//! key, sequence range, entries, deletions), then the live blob files.
//!
//! Owns: reading the live file set from the MANIFEST and presenting it. Must not: write
//! anything; the database is opened read-only (for its errors: not a database, corruption) and
//! the MANIFEST read again with `VersionSet::recover`, which only reads.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{Map, Value};
use strata::internal::key;
use strata::internal::version::set::VersionSet;

use super::format::{object, put_bytes, Out, OutputArgs};
use super::{open_read_only, EXIT_OK};

/// One live SST file as `list_live_files_metadata` prints it.
pub struct LiveTable {
    pub family: String,
    pub level: usize,
    pub number: u64,
    pub size: u64,
    /// Internal keys, as the MANIFEST records them.
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    pub smallest_seq: u64,
    pub largest_seq: u64,
    pub entries: u64,
    pub deletions: u64,
}

impl LiveTable {
    pub fn largest_user_key(&self) -> &[u8] {
        key::user_key(&self.largest)
    }
}

/// One live blob file.
struct LiveBlob {
    family: String,
    number: u64,
    size: u64,
    records: u64,
    garbage_bytes: u64,
}

fn recover(path: &Path) -> Result<VersionSet> {
    let recovered = VersionSet::recover(path, strata::fs::default_fs())
        .with_context(|| format!("reading the MANIFEST of {}", path.display()))?;
    Ok(recovered.set)
}

/// Every live SST file of every family, families in id order, then by level and key.
pub fn live_tables(path: &Path) -> Result<Vec<LiveTable>> {
    Ok(live_files(path)?.0)
}

/// The live SST and blob files of every family, from one read of the MANIFEST.
fn live_files(path: &Path) -> Result<(Vec<LiveTable>, Vec<LiveBlob>)> {
    let set = recover(path)?;
    let (mut tables, mut blobs) = (Vec::new(), Vec::new());
    for fam in set.families().values() {
        for (level, files) in fam.current.files.iter().enumerate() {
            tables.extend(files.iter().map(|f| LiveTable {
                family: fam.name.clone(),
                level,
                number: f.number,
                size: f.file_size,
                smallest: f.smallest.clone(),
                largest: f.largest.clone(),
                smallest_seq: f.smallest_seq,
                largest_seq: f.largest_seq,
                entries: f.num_entries,
                deletions: f.num_deletions,
            }));
        }
        blobs.extend(fam.current.blob_files.values().map(|b| LiveBlob {
            family: fam.name.clone(),
            number: b.meta.number,
            size: b.meta.file_size,
            records: b.meta.total_count,
            garbage_bytes: b.garbage_bytes,
        }));
    }
    Ok((tables, blobs))
}

/// Runs `list_live_files_metadata`.
pub fn list(path: &Path, args: OutputArgs) -> Result<u8> {
    // The open names what is wrong with a directory that is not a healthy database.
    drop(open_read_only(path)?);
    let (tables, blobs) = live_files(path)?;
    let mut out = Out::new(args);
    for t in &tables {
        if out.json {
            out.json(table_json(out.hex, t))?;
        } else {
            let line = table_line(&out, t);
            out.line(&line)?;
        }
    }
    for b in &blobs {
        if out.json {
            out.json(object([
                ("column_family", b.family.as_str().into()),
                ("blob_file", format!("{:06}.blob", b.number).into()),
                ("number", b.number.into()),
                ("size", b.size.into()),
                ("records", b.records.into()),
                ("garbage_bytes", b.garbage_bytes.into()),
            ]))?;
        } else {
            out.line(&format!(
                "column_family:{} blob_file:{:06}.blob size:{} records:{} garbage_bytes:{}",
                b.family, b.number, b.size, b.records, b.garbage_bytes
            ))?;
        }
    }
    if !out.json {
        out.line(&format!("{} live SST file(s), {} live blob file(s)", tables.len(), blobs.len()))?;
    }
    out.flush()?;
    Ok(EXIT_OK)
}

fn table_line(out: &Out, t: &LiveTable) -> String {
    format!(
        "column_family:{} level:{} file:{:06}.sst size:{} smallest:{} largest:{} seq:{}..{} entries:{} \
         deletions:{}",
        t.family,
        t.level,
        t.number,
        t.size,
        out.show(key::user_key(&t.smallest)),
        out.show(key::user_key(&t.largest)),
        t.smallest_seq,
        t.largest_seq,
        t.entries,
        t.deletions
    )
}

fn table_json(hex: bool, t: &LiveTable) -> Map<String, Value> {
    let mut obj = object([
        ("column_family", t.family.as_str().into()),
        ("level", t.level.into()),
        ("file", format!("{:06}.sst", t.number).into()),
        ("number", t.number.into()),
        ("size", t.size.into()),
        ("smallest_seq", t.smallest_seq.into()),
        ("largest_seq", t.largest_seq.into()),
        ("entries", t.entries.into()),
        ("deletions", t.deletions.into()),
    ]);
    put_bytes(&mut obj, "smallest", key::user_key(&t.smallest), hex);
    put_bytes(&mut obj, "largest", key::user_key(&t.largest), hex);
    obj
}
