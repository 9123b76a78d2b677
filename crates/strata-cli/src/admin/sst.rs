//! `sst-dump FILE`: one SST file on its own, like RocksDB's `sst_dump`: the footer's block
//! handles, data block count and sizes, and on request the properties, every internal entry
//! (user key, sequence, kind, value) and a full checksum pass.
//!
//! Owns: presenting one table file. Must not: open the database, consult the MANIFEST, or write
//! anything; the file is only read, through the engine's own `Table` and format decoders so the
//! tool never disagrees with the engine about the bytes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use serde_json::Value;
use strata::fs::RandomAccessFile;
use strata::internal::blob::BlobPointer;
use strata::internal::filenames::{self, FileKind};
use strata::internal::iter::InternalIterator;
use strata::internal::key::{self, ValueKind};
use strata::internal::sst::format::{read_block, BlockHandle, Footer, FOOTER_LEN};
use strata::internal::sst::{Block, Table, TableProperties};

use super::format::{entry_json, kind_name, object, Out, OutputArgs};
use super::{EXIT_ERROR, EXIT_OK};

/// Arguments of `sst-dump`.
#[derive(clap::Args, Debug, Clone)]
pub struct SstDumpArgs {
    /// The .sst file.
    pub file: PathBuf,
    /// Print every table property.
    #[arg(long)]
    pub show_properties: bool,
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

/// Runs `sst-dump`.
pub fn sst_dump(args: OutputArgs, a: &SstDumpArgs) -> Result<u8> {
    let path = a.file.as_path();
    let ctx = || format!("sst-dump {}", path.display());
    // Not mapped: this tool is run on files one suspects, where a mapped read of a bad page
    // would kill it (SIGBUS) instead of naming the damage.
    let file = strata::fs::default_fs().open_random_unmapped(path).with_context(ctx)?;
    let number = file_number(path);
    let layout = read_layout(file.as_ref(), number).with_context(ctx)?;
    let table = Arc::new(Table::open(Arc::clone(&file), number, None).with_context(ctx)?);
    let mut out = Out::new(args);
    print_summary(&mut out, path, &table, &layout)?;
    if a.show_blocks {
        print_blocks(&mut out, &layout.blocks)?;
    }
    if a.show_properties {
        print_properties(&mut out, table.properties())?;
    }
    if a.scan {
        print_entries(&mut out, &table).with_context(ctx)?;
    }
    let code = if a.verify { verify(&mut out, path, &table)? } else { EXIT_OK };
    out.flush()?;
    Ok(code)
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

fn print_entries(out: &mut Out, table: &Arc<Table>) -> Result<()> {
    let mut it = table.iter(false);
    it.seek_to_first();
    while it.valid() {
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
