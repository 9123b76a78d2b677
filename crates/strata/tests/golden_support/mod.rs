//! Helpers shared by the golden-bytes tests (`golden_log.rs`, `golden_table.rs`,
//! `golden_blob.rs`): hex literals, the checksum rule of docs/format.md computed independently of
//! strata's own CRC code, and in-memory files. It must not build or parse any strata structure:
//! the tests do that through the crate's encoders and decoders, so a helper can never hide a
//! format change.

// Each test binary includes this module and uses a different subset of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::fs::{FileSystem, RandomAccessFile, SequentialFile, WritableFile};
use strata_testkit::MemFs;

/// Parses a hex literal; whitespace (used to separate fields) is ignored.
pub fn unhex(literal: &str) -> Vec<u8> {
    let digits: Vec<u8> = literal.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    assert!(digits.len().is_multiple_of(2), "odd number of hex digits in {literal:?}");
    digits
        .chunks(2)
        .map(|pair| {
            let text = std::str::from_utf8(pair).expect("ASCII");
            u8::from_str_radix(text, 16).unwrap_or_else(|_| panic!("bad hex {text:?} in {literal:?}"))
        })
        .collect()
}

/// Lower-case hex of `bytes`, no separators.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Asserts that `actual` is the golden literal; on a mismatch prints both as plain hex, so the
/// difference (and, for a deliberate format change, the new literal) is easy to read off.
#[track_caller]
pub fn assert_golden(actual: &[u8], golden: &str) {
    let expected = unhex(golden);
    assert!(
        actual == expected.as_slice(),
        "bytes differ from the golden literal\n  actual:   {}\n  expected: {}",
        hex(actual),
        hex(&expected)
    );
}

/// docs/format.md: `masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8` of the CRC32C of the
/// concatenated `parts`. Uses the `crc32c` crate, not strata's checksum code, so the test checks
/// the rule as written rather than the implementation against itself.
// Written exactly as the spec sentence, not as `rotate_right(15)`.
#[allow(clippy::manual_rotate)]
pub fn spec_masked_crc(parts: &[&[u8]]) -> u32 {
    let crc = parts.iter().fold(0, |crc, part| crc32c::crc32c_append(crc, part));
    ((crc >> 15) | (crc << 17)).wrapping_add(0xa282_ead8)
}

/// docs/format.md: "`varint` is unsigned LEB128 (7 bits per byte, low group first, at most 10
/// bytes)". Reads one at `*pos` and advances it; written from that sentence, not strata's code.
pub fn spec_varint(bytes: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    for i in 0..10 {
        let b = bytes[*pos];
        *pos += 1;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return v;
        }
    }
    panic!("varint longer than 10 bytes");
}

/// A little-endian u16 at `at`.
pub fn le16(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(bytes[at..at + 2].try_into().expect("2 bytes"))
}

/// A little-endian u32 at `at`.
pub fn le32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

/// A little-endian u64 at `at`.
pub fn le64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// An in-memory directory for files written or read by the tests.
pub struct MemDir {
    pub fs: MemFs,
    dir: PathBuf,
}

impl MemDir {
    pub fn new() -> Self {
        let fs = MemFs::new();
        let dir = PathBuf::from("/golden");
        fs.create_dir_all(&dir).expect("create the directory");
        Self { fs, dir }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// A new, empty file to hand to a strata writer.
    pub fn create(&self, name: &str) -> Box<dyn WritableFile> {
        self.fs.create(&self.path(name)).expect("create a file")
    }

    /// Everything written to `name` so far.
    pub fn contents(&self, name: &str) -> Vec<u8> {
        self.fs.contents(&self.path(name)).expect("the file exists")
    }

    /// Stores `bytes` as file `name` (for decoding a golden literal through a file reader).
    pub fn store(&self, name: &str, bytes: &[u8]) {
        let mut f = self.create(name);
        f.append(bytes).expect("append");
    }

    pub fn open_random(&self, name: &str) -> Arc<dyn RandomAccessFile> {
        self.fs.open_random(&self.path(name)).expect("open for reading")
    }

    pub fn open_sequential(&self, name: &str) -> Box<dyn SequentialFile> {
        self.fs.open_sequential(&self.path(name)).expect("open for reading")
    }

    pub fn names(&self, dir: &Path) -> Vec<String> {
        let mut names = self.fs.list_dir(dir).expect("list the directory");
        names.sort();
        names
    }
}
