//! How the admin commands show bytes and write results: the text-or-hex encoding of keys and
//! values, parsing of KEY arguments and dump lines, and the `Out` writer that emits either text
//! lines or JSON Lines.
//!
//! Owns: every byte encoding the admin tool prints or reads back, so `dump` output and `load`
//! input cannot drift apart. Must not: open databases or files; it only formats and parses.

use std::io::{self, BufWriter, Stdout, Write};

use anyhow::{bail, Context, Result};
use serde_json::{Map, Value};
use strata::internal::blob::BlobPointer;
use strata::internal::key::ValueKind;

/// The separator between a key and its value in `scan`, `dump` and `load` lines (as in `ldb`).
pub const ARROW: &str = " ==> ";

/// `0x` + lowercase hex, the way `ldb --hex` prints bytes.
pub fn to_hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(2 + bytes.len() * 2);
    s.push_str("0x");
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// True when `bytes` can be printed as text and still be read back unambiguously: valid UTF-8,
/// no control characters (a newline would split a line), no leading `0x` (which marks hex) or
/// `{` (which marks a JSON line in `load`), and no `" ==>"` (the separator is `" ==> "`, and a
/// key ending in `" ==>"` would split one character early).
fn is_safe_text(bytes: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(bytes) else { return false };
    !s.chars().any(char::is_control)
        && !s.starts_with("0x")
        && !s.starts_with("0X")
        && !s.starts_with('{')
        && !s.contains(" ==>")
}

/// Bytes as text when that is safe (see [`is_safe_text`]), otherwise as `0x` hex; always hex
/// when `hex` is set.
pub fn show(bytes: &[u8], hex: bool) -> String {
    if !hex && is_safe_text(bytes) {
        // Checked by is_safe_text; the fallback is unreachable but keeps this panic-free.
        return String::from_utf8_lossy(bytes).into_owned();
    }
    to_hex(bytes)
}

/// Parses hex with or without a `0x` prefix (`0x6131` or `6131`).
pub fn parse_hex(s: &str) -> Result<Vec<u8>> {
    let digits = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s);
    if !digits.len().is_multiple_of(2) {
        bail!("{s:?} is not hex: odd number of digits");
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            digits
                .get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .with_context(|| format!("{s:?} is not hex"))
        })
        .collect()
}

/// A KEY/VALUE argument: hex when `--hex` was given, otherwise the literal text.
pub fn parse_arg(s: &str, hex: bool) -> Result<Vec<u8>> {
    if hex {
        parse_hex(s)
    } else {
        Ok(s.as_bytes().to_vec())
    }
}

/// Reads back one token printed by [`show`]: `0x…` is hex, anything else is literal text.
pub fn parse_shown(s: &str) -> Result<Vec<u8>> {
    if s.starts_with("0x") || s.starts_with("0X") {
        parse_hex(s)
    } else {
        Ok(s.as_bytes().to_vec())
    }
}

/// Adds `bytes` to a JSON object as `name` (a text string) when it is safe text and `hex` is
/// off, otherwise as `name_hex` (hex digits without `0x`), so a script never has to guess.
pub fn put_bytes(obj: &mut Map<String, Value>, name: &str, bytes: &[u8], hex: bool) {
    if !hex && is_safe_text(bytes) {
        obj.insert(name.to_string(), Value::String(String::from_utf8_lossy(bytes).into_owned()));
    } else {
        let digits = to_hex(bytes).split_off(2);
        obj.insert(format!("{name}_hex"), Value::String(digits));
    }
}

/// Reads back a field written by [`put_bytes`]: `name` as text or `name_hex` as hex.
pub fn get_bytes(obj: &Map<String, Value>, name: &str) -> Result<Vec<u8>> {
    if let Some(v) = obj.get(name) {
        let s = v.as_str().with_context(|| format!("field {name:?} is not a string"))?;
        return Ok(s.as_bytes().to_vec());
    }
    let hex_name = format!("{name}_hex");
    match obj.get(&hex_name).and_then(Value::as_str) {
        Some(s) => parse_hex(s),
        None => bail!("missing field {name:?} or {hex_name:?}"),
    }
}

/// Output flags shared by every admin command.
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct OutputArgs {
    /// Keys and values in and out are hex (`0x6131` or `6131`); output is always hex.
    #[arg(long)]
    pub hex: bool,
    /// Print one JSON object per line (JSON Lines) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Buffered stdout that knows the output flags.
pub struct Out {
    pub hex: bool,
    pub json: bool,
    w: BufWriter<Stdout>,
}

impl Out {
    pub fn new(args: OutputArgs) -> Self {
        Out { hex: args.hex, json: args.json, w: BufWriter::new(io::stdout()) }
    }

    /// Writes one text line.
    pub fn line(&mut self, s: &str) -> Result<()> {
        writeln!(self.w, "{s}").context("writing to stdout")
    }

    /// Writes one JSON object as a line.
    pub fn json(&mut self, obj: Map<String, Value>) -> Result<()> {
        let text = serde_json::to_string(&Value::Object(obj))?;
        self.line(&text)
    }

    /// Bytes shown per the `--hex` flag.
    pub fn show(&self, bytes: &[u8]) -> String {
        show(bytes, self.hex)
    }

    /// `key ==> value` (text) or `{"key":…,"value":…}` (JSON).
    pub fn key_value(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.json {
            let mut obj = Map::new();
            put_bytes(&mut obj, "key", key, self.hex);
            put_bytes(&mut obj, "value", value, self.hex);
            return self.json(obj);
        }
        let line = format!("{}{ARROW}{}", self.show(key), self.show(value));
        self.line(&line)
    }

    pub fn flush(&mut self) -> Result<()> {
        self.w.flush().context("writing to stdout")
    }
}

/// Builds a JSON object from `(name, value)` pairs.
pub fn object<const N: usize>(fields: [(&str, Value); N]) -> Map<String, Value> {
    fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// The lowercase name of an entry kind; `unknown` for a trailer that does not parse.
pub fn kind_name(kind: Option<ValueKind>) -> &'static str {
    match kind {
        Some(ValueKind::Delete) => "delete",
        Some(ValueKind::Put) => "put",
        Some(ValueKind::Merge) => "merge",
        Some(ValueKind::Blob) => "blob",
        Some(ValueKind::RangeDelete) => "range_delete",
        None => "unknown",
    }
}

/// One entry as JSON; a blob pointer's fields are numbers, not bytes.
pub fn entry_json(
    hex: bool,
    user_key: &[u8],
    seq: u64,
    kind: Option<ValueKind>,
    value: &[u8],
) -> Map<String, Value> {
    let mut obj = Map::new();
    put_bytes(&mut obj, "key", user_key, hex);
    obj.insert("seq".into(), seq.into());
    obj.insert("kind".into(), kind_name(kind).into());
    match kind {
        Some(ValueKind::Delete) => {}
        Some(ValueKind::Blob) => match BlobPointer::decode(value) {
            Ok(p) => {
                let ptr = [("file", p.file_number), ("offset", p.offset), ("size", p.size)];
                obj.insert("blob".into(), Value::Object(object(ptr.map(|(k, v)| (k, v.into())))));
            }
            // A damaged pointer is shown as the bytes it is.
            Err(_) => put_bytes(&mut obj, "value", value, hex),
        },
        _ => put_bytes(&mut obj, "value", value, hex),
    }
    obj
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_bytes_read_back_exactly() {
        let cases: [&[u8]; 9] = [
            b"",
            b"plain",
            b"0xlooks-hex",
            b"a ==> b",
            b"a ==>",
            b"line\nbreak",
            &[0, 255, 7],
            "ünï".as_bytes(),
            b" x ",
        ];
        for c in cases {
            assert_eq!(parse_shown(&show(c, false)).unwrap(), c, "{c:?}");
            assert_eq!(parse_shown(&show(c, true)).unwrap(), c, "{c:?}");
        }
        assert_eq!(show(b"a1", true), "0x6131");
    }

    #[test]
    fn hex_arguments_take_either_form_and_reject_junk() {
        assert_eq!(parse_hex("0x6131").unwrap(), b"a1");
        assert_eq!(parse_hex("6131").unwrap(), b"a1");
        assert!(parse_hex("613").is_err());
        assert!(parse_hex("zz").is_err());
    }

    #[test]
    fn json_fields_read_back() {
        let mut obj = Map::new();
        put_bytes(&mut obj, "key", b"text", false);
        put_bytes(&mut obj, "value", &[1, 2], false);
        assert!(obj.contains_key("key") && obj.contains_key("value_hex"));
        assert_eq!(get_bytes(&obj, "key").unwrap(), b"text");
        assert_eq!(get_bytes(&obj, "value").unwrap(), [1, 2]);
    }
}
