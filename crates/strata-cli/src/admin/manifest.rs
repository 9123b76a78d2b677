//! `manifest-dump`: every version edit of a MANIFEST, decoded, followed by the resulting
//! per-level file lists, like `ldb manifest_dump`.
//!
//! Owns: presenting version edits. Must not: recover or open the database (which could decide
//! things about the directory); it reads CURRENT and one MANIFEST and nothing else, and writes
//! nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::{Map, Value};
use strata::internal::filenames;
use strata::internal::key;
use strata::internal::version::version::Version;
use strata::internal::version::{FileMeta, VersionEdit};
use strata::options::NUM_LEVELS;

use super::format::{object, put_bytes, show, Out, OutputArgs};
use super::wal::for_each_record;
use super::EXIT_OK;

/// Runs `manifest-dump` on `file`, or on the MANIFEST named by `db`'s CURRENT.
pub fn manifest_dump(args: OutputArgs, db: Option<&Path>, file: Option<&Path>) -> Result<u8> {
    let path = match (file, db) {
        (Some(f), _) => f.to_path_buf(),
        (None, Some(dir)) => current_manifest(dir)?,
        (None, None) => bail!("give --db=PATH or a MANIFEST file"),
    };
    let mut out = Out::new(args);
    // Per column family id: its name and the version the MANIFEST describes for it.
    let mut families: BTreeMap<u32, (String, Version)> =
        BTreeMap::from([(0, ("default".to_string(), Version::default()))]);
    let mut n = 0u64;
    let result = for_each_record(&path, |offset, record| {
        let edits = VersionEdit::decode_group(record)
            .with_context(|| format!("{}: edit at offset {offset} does not decode", path.display()))?;
        for edit in edits {
            n += 1;
            // Titled at the first edit, so a file that is missing or not a MANIFEST prints nothing.
            if n == 1 && !out.json {
                out.line(&format!("{}:", path.display()))?;
            }
            print_edit(&mut out, n, offset, &edit)?;
            apply_edit(&mut families, &edit)
                .with_context(|| format!("{}: edit #{n} at offset {offset}", path.display()))?;
        }
        Ok(())
    });
    out.flush()?;
    if result? == 0 {
        bail!("{}: no version edits (not a MANIFEST?)", path.display());
    }
    for (id, (name, version)) in &families {
        if families.len() > 1 && !out.json {
            out.line(&format!("column family {id} ({name}):"))?;
        }
        print_version(&mut out, version)?;
    }
    out.flush()?;
    Ok(EXIT_OK)
}

/// Applies one edit to the family it names: creates, drops, or moves it to its next version.
/// Applying shows the version the MANIFEST describes, and catches edits that contradict it.
fn apply_edit(families: &mut BTreeMap<u32, (String, Version)>, edit: &VersionEdit) -> Result<()> {
    let id = edit.column_family;
    if let Some(name) = &edit.add_column_family {
        families.insert(id, (name.clone(), Version::default()));
    }
    let Some((_, version)) = families.get_mut(&id) else {
        bail!("the edit names column family {id}, which does not exist")
    };
    *version = version.apply(edit)?;
    if edit.drop_column_family {
        families.remove(&id);
    }
    Ok(())
}

/// `dir/<name in CURRENT>`, checked the way recovery checks it.
fn current_manifest(dir: &Path) -> Result<PathBuf> {
    let current = dir.join(filenames::CURRENT);
    let text =
        std::fs::read_to_string(&current).with_context(|| format!("cannot read {}", current.display()))?;
    let name = text.strip_suffix('\n').filter(|n| !n.contains('/') && n.starts_with("MANIFEST-"));
    match name {
        Some(n) => Ok(dir.join(n)),
        None => bail!("{}: {text:?} is not a MANIFEST name ending in a newline", current.display()),
    }
}

/// An internal key as `user_key@seq:kind`, or shown raw if it does not parse.
fn show_ikey(ikey: &[u8], hex: bool) -> String {
    match key::parse(ikey) {
        Some(p) => format!("{}@{}:{:?}", show(p.user_key, hex), p.seq, p.kind),
        None => show(ikey, hex),
    }
}

fn print_edit(out: &mut Out, n: u64, offset: u64, e: &VersionEdit) -> Result<()> {
    if out.json {
        return out.json(edit_json(out.hex, n, offset, e));
    }
    out.line(&format!("edit #{n} at offset {offset}:"))?;
    for line in edit_lines(out.hex, e) {
        out.line(&format!("  {line}"))?;
    }
    Ok(())
}

fn edit_lines(hex: bool, e: &VersionEdit) -> Vec<String> {
    let mut lines = Vec::new();
    let scalars = [
        ("log_number", e.log_number),
        ("next_file_number", e.next_file_number),
        ("last_sequence", e.last_sequence),
    ];
    if e.column_family != 0 {
        lines.push(format!("column family: {}", e.column_family));
    }
    lines.extend(e.add_column_family.iter().map(|name| format!("create column family: {name}")));
    if e.drop_column_family {
        lines.push("drop column family".to_string());
    }
    lines.extend(e.max_column_family.iter().map(|m| format!("max column family: {m}")));
    lines.extend(e.comparator.iter().map(|c| format!("comparator: {c}")));
    lines.extend(scalars.iter().filter_map(|(name, v)| v.map(|v| format!("{name}: {v}"))));
    lines.extend(
        e.compact_cursors.iter().map(|(l, k)| format!("compact cursor: level {l} at {}", show_ikey(k, hex))),
    );
    lines.extend(e.deleted_files.iter().map(|(l, n)| format!("delete file: level {l} #{n}")));
    lines.extend(e.new_files.iter().map(|(l, f)| format!("add file: level {l} {}", file_text(f, hex))));
    lines.extend(e.new_blob_files.iter().map(|b| {
        format!(
            "add blob file: #{} size {} records {} bytes {}",
            b.number, b.file_size, b.total_count, b.total_bytes
        )
    }));
    lines.extend(e.blob_garbage.iter().map(|(n, c, b)| format!("blob garbage: #{n} records {c} bytes {b}")));
    lines.extend(e.deleted_blob_files.iter().map(|n| format!("delete blob file: #{n}")));
    lines
}

fn file_text(f: &FileMeta, hex: bool) -> String {
    format!(
        "#{} size {} [{} .. {}] seq {}..{} entries {} deletions {}",
        f.number,
        f.file_size,
        show_ikey(&f.smallest, hex),
        show_ikey(&f.largest, hex),
        f.smallest_seq,
        f.largest_seq,
        f.num_entries,
        f.num_deletions
    )
}

fn file_json(hex: bool, level: u32, f: &FileMeta) -> Value {
    let mut obj =
        object([("level", level.into()), ("number", f.number.into()), ("size", f.file_size.into())]);
    put_bytes(&mut obj, "smallest", &f.smallest, hex);
    put_bytes(&mut obj, "largest", &f.largest, hex);
    for (name, v) in [
        ("smallest_seq", f.smallest_seq),
        ("largest_seq", f.largest_seq),
        ("entries", f.num_entries),
        ("deletions", f.num_deletions),
    ] {
        obj.insert(name.into(), v.into());
    }
    Value::Object(obj)
}

fn edit_json(hex: bool, n: u64, offset: u64, e: &VersionEdit) -> Map<String, Value> {
    let opt = |v: Option<u64>| v.map_or(Value::Null, Value::from);
    let pairs = |v: &[(u64, u64, u64)]| -> Value {
        v.iter()
            .map(|(n, c, b)| {
                Value::Object(object([
                    ("file", (*n).into()),
                    ("records", (*c).into()),
                    ("bytes", (*b).into()),
                ]))
            })
            .collect()
    };
    let cursors = e.compact_cursors.iter().map(|(l, k)| {
        let mut c = object([("level", (*l).into())]);
        put_bytes(&mut c, "key", k, hex);
        Value::Object(c)
    });
    let blobs = e.new_blob_files.iter().map(|b| {
        Value::Object(object([
            ("number", b.number.into()),
            ("size", b.file_size.into()),
            ("records", b.total_count.into()),
            ("bytes", b.total_bytes.into()),
        ]))
    });
    object([
        ("edit", n.into()),
        ("offset", offset.into()),
        ("column_family", e.column_family.into()),
        ("create_column_family", e.add_column_family.clone().map_or(Value::Null, Value::from)),
        ("drop_column_family", e.drop_column_family.into()),
        ("max_column_family", e.max_column_family.map_or(Value::Null, Value::from)),
        ("comparator", e.comparator.clone().map_or(Value::Null, Value::from)),
        ("log_number", opt(e.log_number)),
        ("next_file_number", opt(e.next_file_number)),
        ("last_sequence", opt(e.last_sequence)),
        ("compact_cursors", cursors.collect()),
        (
            "deleted_files",
            e.deleted_files.iter().map(|(l, n)| Value::from(vec![u64::from(*l), *n])).collect(),
        ),
        ("new_files", e.new_files.iter().map(|(l, f)| file_json(hex, *l, f)).collect()),
        ("new_blob_files", blobs.collect()),
        ("blob_garbage", pairs(&e.blob_garbage)),
        ("deleted_blob_files", e.deleted_blob_files.clone().into()),
    ])
}

/// The version after the last edit: the live files of each level and the blob files.
fn print_version(out: &mut Out, v: &Version) -> Result<()> {
    let levels: Vec<Vec<u64>> = v.files.iter().map(|fs| fs.iter().map(|f| f.number).collect()).collect();
    let blobs: Vec<u64> = v.blob_files.keys().copied().collect();
    if out.json {
        let levels = levels.into_iter().map(Value::from).collect();
        return out.json(object([(
            "version",
            Value::Object(object([("levels", levels), ("blob_files", blobs.into())])),
        )]));
    }
    out.line("resulting version:")?;
    for (level, files) in levels.iter().enumerate().take(NUM_LEVELS) {
        let bytes = v.level_bytes(level);
        out.line(&format!("  level {level}: {} files, {bytes} bytes {files:?}", files.len()))?;
    }
    out.line(&format!("  blob files: {blobs:?}"))
}
