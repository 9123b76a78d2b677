//! `dump` and `load`: every live key/value out as lines, and those lines back in.
//!
//! The line format is `scan`'s: `key ==> value`, each side text or `0x` hex (format.rs picks hex
//! whenever text could be misread), or with `--json` one `{"key":…,"value":…}` object per line
//! (`key_hex`/`value_hex` for bytes that are not text). `load` accepts both, line by line, and
//! RocksDB's `ldb dump`/`ldb scan` output as it is: the same lines (ldb's `--hex` is uppercase,
//! which `0x` hex reads too) and the `Keys in range: N` line `ldb dump` ends with.
//!
//! Owns: the dump line grammar and batching of loaded entries. Must not: open the database
//! (mod.rs does) or write anything during `dump`.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde_json::{Map, Value};
use strata::{ColumnFamily, Db, ReadOptions, WriteBatch};

use super::families::family;
use super::format::{get_bytes, parse_shown, Out, OutputArgs, ARROW};
use super::kv::{report_ok, walk};
use super::{close, EXIT_OK};

/// Entries per write batch in `load`: large enough to amortize the WAL write, small enough that
/// a batch stays far below the memtable size.
const LOAD_BATCH: usize = 1000;

/// `dump`: every key and value of the latest state of family `cf`, in key order.
pub fn dump(db: &Db, args: OutputArgs, cf: &str) -> Result<u8> {
    let handle = family(db, cf)?;
    let opts = ReadOptions { fill_cache: false, ..ReadOptions::new() };
    let mut it = db.cursor_cf(&handle, &opts).context("dump")?;
    let mut out = Out::new(args);
    walk(&mut it, false, u64::MAX, |k, v| out.key_value(k, v))?;
    out.flush()?;
    Ok(EXIT_OK)
}

/// `load`: writes the entries of a dump read from `file` (stdin when `None`) to family `cf`.
pub fn load(db: Db, args: OutputArgs, cf: &str, file: Option<&Path>) -> Result<u8> {
    let handle = family(&db, cf)?;
    let (reader, source): (Box<dyn BufRead>, String) = match file {
        Some(p) => {
            let f = File::open(p).with_context(|| format!("cannot open {}", p.display()))?;
            (Box::new(BufReader::new(f)), p.display().to_string())
        }
        None => (Box::new(io::stdin().lock()), "stdin".to_string()),
    };
    let loaded = load_lines(&db, &handle, reader, &source)?;
    close(db)?;
    report_ok(args, "load", loaded)
}

fn load_lines(db: &Db, cf: &ColumnFamily, reader: Box<dyn BufRead>, source: &str) -> Result<u64> {
    let mut batch = WriteBatch::new();
    let mut loaded = 0u64;
    for (i, line) in reader.lines().enumerate() {
        let line = line.with_context(|| format!("reading {source}"))?;
        let Some((k, v)) = parse_line(&line).with_context(|| format!("{source}:{}", i + 1))? else {
            continue;
        };
        batch.put_cf(cf, k, v);
        loaded += 1;
        if batch.len() >= LOAD_BATCH {
            write(db, &mut batch)?;
        }
    }
    write(db, &mut batch)?;
    Ok(loaded)
}

fn write(db: &Db, batch: &mut WriteBatch) -> Result<()> {
    let full = std::mem::take(batch);
    db.write(full).context("writing loaded entries")
}

/// One dump line as (key, value); `None` for a blank line and for the count `ldb dump` prints
/// last (a line without the separator, so never an entry).
pub fn parse_line(line: &str) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
    if line.is_empty() || is_ldb_count(line) {
        return Ok(None);
    }
    if line.starts_with('{') {
        let obj: Map<String, Value> = serde_json::from_str(line).context("not a JSON object")?;
        return Ok(Some((get_bytes(&obj, "key")?, get_bytes(&obj, "value")?)));
    }
    let Some((k, v)) = line.split_once(ARROW) else {
        bail!("expected `key{ARROW}value`");
    };
    Ok(Some((parse_shown(k)?, parse_shown(v)?)))
}

/// `Keys in range: N`, the last line of `ldb dump`'s output.
fn is_ldb_count(line: &str) -> bool {
    line.strip_prefix("Keys in range: ")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::super::format::show;
    use super::*;

    #[test]
    fn dumped_lines_parse_back() {
        let pairs: [(&[u8], &[u8]); 4] =
            [(b"a ==>", b"x ==> y"), (b"", b""), (b"{json-looking", &[0, 1]), (b" k ", b"v ")];
        for (k, v) in pairs {
            for hex in [false, true] {
                let line = format!("{}{ARROW}{}", show(k, hex), show(v, hex));
                assert_eq!(parse_line(&line).unwrap(), Some((k.to_vec(), v.to_vec())), "{line:?}");
            }
        }
        assert!(parse_line("no arrow").is_err());
        assert_eq!(parse_line("Keys in range: 12").unwrap(), None, "ldb dump's last line");
        assert!(parse_line("Keys in range: many").is_err());
        assert_eq!(
            parse_line("0x6B ==> 0x0A").unwrap(),
            Some((b"k".to_vec(), b"\n".to_vec())),
            "ldb's uppercase"
        );
        assert_eq!(parse_line(r#"{"key":"a","value_hex":"00"}"#).unwrap(), Some((b"a".to_vec(), vec![0])));
    }
}
