//! `sst-dump FILE|DIR`: SST files on their own, like RocksDB's `sst_dump`: the footer's block
//! handles, data block count and sizes, and on request the properties, a summary (sst_dump's
//! `--show_summary`), every internal entry (user key, sequence, kind, value; `--from`/`--to`
//! restrict them to a key range) and a full checksum pass. A directory means every `.sst` in it.
//!
//! Owns: presenting one table file. Must not: open the database, consult the MANIFEST, or write
//! anything; the file is only read, through the engine's own `Table` and format decoders so the
//! tool never disagrees with the engine about the bytes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use serde_json::Value;
use strata::fs::RandomAccessFile;
use strata::internal::blob::BlobPointer;
use strata::internal::filenames::{self, FileKind};
use strata::internal::iter::InternalIterator;
use strata::internal::key::{self, ValueKind};
use strata::internal::sst::format::{read_block, BlockHandle, Footer, FOOTER_LEN};
use strata::internal::sst::{Block, Table, TableProperties};

use super::format::{entry_json, kind_name, object, parse_arg, put_bytes, Out, OutputArgs};
use super::{EXIT_ERROR, EXIT_OK};

/// Arguments of `sst-dump`.
#[derive(clap::Args, Debug, Clone)]
pub struct SstDumpArgs {
    /// The .sst file, or a directory: every .sst file in it, in name order.
    pub file: PathBuf,
    /// Print every table property.
    #[arg(long)]
    pub show_properties: bool,
    /// Print a summary: entries, data/index/filter sizes, compression, key and sequence range.
    #[arg(long = "show_summary", visible_alias = "show-summary")]
    pub show_summary: bool,
    /// With --scan (implied): start at this user key (inclusive; hex with --hex).
    #[arg(long, value_name = "KEY")]
    pub from: Option<String>,
    /// With --scan (implied): stop before this user key (exclusive; hex with --hex).
    #[arg(long, value_name = "KEY")]
    pub to: Option<String>,
    /// Print the offset and size of every data block.
    #[arg(long)]
    pub show_blocks: bool,
    /// Print every internal entry: key, sequence number, kind and value.
    #[arg(long)]
    pub scan: bool,
    /// Read every data block and check its checksum (exit 2 on damage).
    #[arg(long)]
    pub verify: bool,
}

/// The footer plus the data block handles from the index block.
struct Layout {
    footer: Footer,
    blocks: Vec<BlockHandle>,
}

/// Runs `sst-dump` on each file; the worst exit code of them.
pub fn sst_dump(args: OutputArgs, a: &SstDumpArgs) -> Result<u8> {
    let range = ScanRange {
        from: a.from.as_deref().map(|k| parse_arg(k, args.hex)).transpose()?,
        to: a.to.as_deref().map(|k| parse_arg(k, args.hex)).transpose()?,
    };
    let mut out = Out::new(args);
    let mut code = EXIT_OK;
    for path in table_files(&a.file)? {
        code = code.max(dump_one(&mut out, &path, a, &range)?);
    }
    out.flush()?;
    Ok(code)
}

/// The user key range of `--from`/`--to`.
struct ScanRange {
    from: Option<Vec<u8>>,
    to: Option<Vec<u8>>,
}

/// `path` itself, or for a directory its `.sst` files in name order (an error if it has none).
fn table_files(path: &Path) -> Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let names =
        strata::fs::default_fs().list_dir(path).with_context(|| format!("sst-dump {}", path.display()))?;
    let mut files: Vec<PathBuf> =
        names.iter().filter(|n| n.ends_with(".sst")).map(|n| path.join(n)).collect();
    files.sort();
    if files.is_empty() {
        bail!("sst-dump {}: no .sst file in the directory", path.display());
    }
    Ok(files)
}

fn dump_one(out: &mut Out, path: &Path, a: &SstDumpArgs, range: &ScanRange) -> Result<u8> {
    let ctx = || format!("sst-dump {}", path.display());
    // Not mapped: this tool is run on files one suspects, where a mapped read of a bad page
    // would kill it (SIGBUS) instead of naming the damage.
    let file = strata::fs::default_fs().open_random_unmapped(path).with_context(ctx)?;
    let number = file_number(path);
    let layout = read_layout(file.as_ref(), number).with_context(ctx)?;
    let table = Arc::new(Table::open(Arc::clone(&file), number, None).with_context(ctx)?);
    print_summary(out, path, &table, &layout)?;
    if a.show_blocks {
        print_blocks(out, &layout.blocks)?;
    }
    if a.show_properties {
        print_properties(out, table.properties())?;
    }
    if a.show_summary {
        print_table_summary(out, &table).with_context(ctx)?;
    }
    if a.scan || range.from.is_some() || range.to.is_some() {
        print_entries(out, &table, range).with_context(ctx)?;
    }
    if a.verify {
        return verify(out, path, &table);
    }
    Ok(EXIT_OK)
}

/// The number in `NNNNNN.sst`, used only to label errors; 0 for other names.
fn file_number(path: &Path) -> u64 {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    match filenames::parse(name) {
        Some((FileKind::Table, n)) => n,
        _ => 0,
    }
}

fn read_layout(file: &dyn RandomAccessFile, number: u64) -> Result<Layout> {
    let size = file.size();
    let at = size.checked_sub(FOOTER_LEN as u64).context("file too short to hold a footer")?;
    let mut buf = [0u8; FOOTER_LEN];
    file.read_exact_at(at, &mut buf)?;
    let footer = Footer::decode(&buf, number)?;
    let index = Arc::new(Block::new(read_block(file, number, &footer.index)?)?);
    let mut it = index.iter();
    let mut blocks = Vec::new();
    it.seek_to_first();
    while it.valid() {
        blocks.push(BlockHandle::decode_exact(it.value())?);
        it.next();
    }
    it.status()?;
    Ok(Layout { footer, blocks })
}

fn handle_json(h: &BlockHandle) -> Value {
    Value::Object(object([("offset", h.offset.into()), ("size", h.size.into())]))
}

fn print_summary(out: &mut Out, path: &Path, table: &Table, layout: &Layout) -> Result<()> {
    let sizes: Vec<u64> = layout.blocks.iter().map(|h| h.size).collect();
    let total: u64 = sizes.iter().sum();
    let (min, max) = (sizes.iter().min().copied().unwrap_or(0), sizes.iter().max().copied().unwrap_or(0));
    let p = table.properties();
    let f = &layout.footer;
    if out.json {
        let filter = if f.filter.size == 0 { Value::Null } else { handle_json(&f.filter) };
        return out.json(object([
            ("file", path.display().to_string().into()),
            ("file_size", table.file_size().into()),
            ("data_blocks", sizes.len().into()),
            ("data_block_bytes", total.into()),
            ("min_block_size", min.into()),
            ("max_block_size", max.into()),
            ("index_block", handle_json(&f.index)),
            ("filter_block", filter),
            ("properties_block", handle_json(&f.properties)),
            ("entries", p.num_entries.into()),
            ("deletions", p.num_deletions.into()),
        ]));
    }
    let avg = if sizes.is_empty() { 0.0 } else { total as f64 / sizes.len() as f64 };
    let filter = if f.filter.size == 0 { "none".to_string() } else { show_handle(&f.filter) };
    let lines = [
        format!("file: {}", path.display()),
        format!("file size: {} bytes", table.file_size()),
        format!("data blocks: {} ({total} bytes; min {min}, max {max}, avg {avg:.1})", sizes.len()),
        format!("index block: {}", show_handle(&f.index)),
        format!("filter block: {filter}"),
        format!("properties block: {}", show_handle(&f.properties)),
        format!("entries: {} ({} deletions)", p.num_entries, p.num_deletions),
    ];
    lines.iter().try_for_each(|l| out.line(l))
}

fn show_handle(h: &BlockHandle) -> String {
    format!("offset {} size {}", h.offset, h.size)
}

fn print_blocks(out: &mut Out, blocks: &[BlockHandle]) -> Result<()> {
    for (i, h) in blocks.iter().enumerate() {
        if out.json {
            out.json(object([("block", i.into()), ("offset", h.offset.into()), ("size", h.size.into())]))?;
        } else {
            out.line(&format!("block {i}: {}", show_handle(h)))?;
        }
    }
    Ok(())
}

fn properties(p: &TableProperties) -> [(&'static str, Value); 12] {
    [
        ("num_entries", p.num_entries.into()),
        ("num_deletions", p.num_deletions.into()),
        ("raw_key_bytes", p.raw_key_bytes.into()),
        ("raw_value_bytes", p.raw_value_bytes.into()),
        ("num_data_blocks", p.num_data_blocks.into()),
        ("data_size", p.data_size.into()),
        ("index_size", p.index_size.into()),
        ("filter_size", p.filter_size.into()),
        ("smallest_seq", p.smallest_seq.into()),
        ("largest_seq", p.largest_seq.into()),
        ("compression", p.compression.name().into()),
        ("bloom_bits_per_key", p.bloom_bits_per_key.into()),
    ]
}

fn print_properties(out: &mut Out, p: &TableProperties) -> Result<()> {
    let fields = properties(p);
    if out.json {
        return out.json(object([("properties", Value::Object(object(fields)))]));
    }
    out.line("properties:")?;
    for (name, value) in fields {
        let shown = value.as_str().map_or_else(|| value.to_string(), str::to_string);
        out.line(&format!("  strata.{name}: {shown}"))?;
    }
    Ok(())
}

/// The first and last user keys of a table (None when it has no entry).
fn key_range(table: &Arc<Table>) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
    let mut it = table.iter(false);
    it.seek_to_first();
    if !it.valid() {
        it.status()?;
        return Ok(None);
    }
    let first = key::user_key(it.key()).to_vec();
    it.seek_to_last();
    let last = if it.valid() { key::user_key(it.key()).to_vec() } else { first.clone() };
    it.status()?;
    Ok(Some((first, last)))
}

/// sst_dump's `--show_summary`: what the file holds, in a few lines.
fn print_table_summary(out: &mut Out, table: &Arc<Table>) -> Result<()> {
    let p = table.properties();
    let range = key_range(table)?;
    if out.json {
        let mut obj = object([
            ("entries", p.num_entries.into()),
            ("deletions", p.num_deletions.into()),
            ("data_blocks", p.num_data_blocks.into()),
            ("data_size", p.data_size.into()),
            ("index_size", p.index_size.into()),
            ("filter_size", p.filter_size.into()),
            ("bloom_bits_per_key", p.bloom_bits_per_key.into()),
            ("compression", p.compression.name().into()),
            ("raw_key_bytes", p.raw_key_bytes.into()),
            ("raw_value_bytes", p.raw_value_bytes.into()),
            ("smallest_seq", p.smallest_seq.into()),
            ("largest_seq", p.largest_seq.into()),
        ]);
        if let Some((first, last)) = &range {
            put_bytes(&mut obj, "smallest", first, out.hex);
            put_bytes(&mut obj, "largest", last, out.hex);
        }
        return out.json(object([("summary", Value::Object(obj))]));
    }
    let keys = match &range {
        Some((first, last)) => format!("{} .. {}", out.show(first), out.show(last)),
        None => "none (no entries)".to_string(),
    };
    let lines = [
        "summary:".to_string(),
        format!("  entries: {} ({} deletions)", p.num_entries, p.num_deletions),
        format!(
            "  sizes: data {} bytes in {} blocks, index {} bytes, filter {} bytes ({} bits per key)",
            p.data_size, p.num_data_blocks, p.index_size, p.filter_size, p.bloom_bits_per_key
        ),
        format!("  compression: {}", p.compression.name()),
        format!("  raw sizes: keys {} bytes, values {} bytes", p.raw_key_bytes, p.raw_value_bytes),
        format!("  key range: {keys}"),
        format!("  sequence range: {} .. {}", p.smallest_seq, p.largest_seq),
    ];
    lines.iter().try_for_each(|l| out.line(l))
}

fn print_entries(out: &mut Out, table: &Arc<Table>, range: &ScanRange) -> Result<()> {
    let mut it = table.iter(false);
    match &range.from {
        Some(k) => it.seek(&key::seek_key(k, key::MAX_SEQ)),
        None => it.seek_to_first(),
    }
    while it.valid() {
        // A key whose trailer does not parse is compared whole: shown, never a reason to stop.
        let user_key = key::parse(it.key()).map_or(it.key(), |p| p.user_key);
        if range.to.as_deref().is_some_and(|to| user_key >= to) {
            break;
        }
        print_entry(out, it.key(), it.value())?;
        it.next();
    }
    Ok(it.status()?)
}

/// What an entry's value is, by kind: nothing for a tombstone, a pointer for a blob.
fn value_text(out: &Out, kind: Option<ValueKind>, value: &[u8]) -> String {
    match kind {
        Some(ValueKind::Delete) => String::new(),
        Some(ValueKind::Blob) => match BlobPointer::decode(value) {
            Ok(p) => format!(" ==> blob(file={} offset={} size={})", p.file_number, p.offset, p.size),
            Err(e) => format!(" ==> {} (bad blob pointer: {e})", out.show(value)),
        },
        _ => format!(" ==> {}", out.show(value)),
    }
}

fn print_entry(out: &mut Out, ikey: &[u8], value: &[u8]) -> Result<()> {
    // An unparseable trailer is shown, not fatal: this tool exists to look at damaged files.
    let parsed = key::parse(ikey);
    let (user_key, seq) = parsed.map_or((ikey, 0), |p| (p.user_key, p.seq));
    let kind = parsed.map(|p| p.kind);
    if out.json {
        return out.json(entry_json(out.hex, user_key, seq, kind, value));
    }
    let line =
        format!("{} seq:{seq} kind:{}{}", out.show(user_key), kind_name(kind), value_text(out, kind, value));
    out.line(&line)
}

fn verify(out: &mut Out, path: &Path, table: &Table) -> Result<u8> {
    let result = table.verify_checksums();
    let ok = result.is_ok();
    if out.json {
        let error = result.as_ref().err().map_or(Value::Null, |e| e.to_string().into());
        out.json(object([("verify", if ok { "ok" } else { "corrupt" }.into()), ("error", error)]))?;
    } else {
        out.line(&format!("verify: {}", if ok { "OK" } else { "CORRUPT" }))?;
    }
    match result {
        Ok(()) => Ok(EXIT_OK),
        Err(e) => {
            eprintln!("strata: {}: {e}", path.display());
            Ok(EXIT_ERROR)
        }
    }
}
