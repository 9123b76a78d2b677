//! The value model: how a key index becomes key bytes, how an expected value becomes the exact
//! bytes the engine must return, and what a `uint64add` merge does to an expected value.
//!
//! This module owns only pure encodings. It must not touch the database or the oracle file, so the
//! same definitions serve the workers, the verifier and the tests.

use std::fmt;

/// Length of a "long" value: above the engine's default `min_blob_size` (512), so long values are
/// stored in blob files and key-value separation is exercised too.
pub const LONG_LEN: usize = 600;

/// What a key holds, in the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// No value (never written, or deleted).
    Absent = 0,
    /// Eight little-endian bytes: a valid `uint64add` base.
    Short = 1,
    /// `LONG_LEN` bytes starting with the number; `uint64add` treats such a base as zero.
    Long = 2,
}

impl Kind {
    /// Decodes the byte stored in the oracle file.
    pub fn from_u8(b: u8) -> Option<Kind> {
        match b {
            0 => Some(Kind::Absent),
            1 => Some(Kind::Short),
            2 => Some(Kind::Long),
            _ => None,
        }
    }
}

/// An expected value: a kind plus the number its bytes are derived from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Value {
    /// Which shape of bytes.
    pub kind: Kind,
    /// The number encoded in the first eight bytes.
    pub n: u64,
}

impl Value {
    /// The absent value.
    pub const ABSENT: Value = Value { kind: Kind::Absent, n: 0 };

    /// The exact bytes the engine must return for `key`, or `None` when absent.
    pub fn bytes(self, key: u64) -> Option<Vec<u8>> {
        let mut out = self.n.to_le_bytes().to_vec();
        match self.kind {
            Kind::Absent => return None,
            Kind::Short => {}
            // The filler depends on key and number, so a value written to the wrong key or a stale
            // blob read shows up as a byte difference, not just a length difference.
            Kind::Long => out.extend(
                (8..LONG_LEN).map(|i| (key.wrapping_mul(0x9e37) ^ self.n).wrapping_add(i as u64) as u8),
            ),
        }
        Some(out)
    }

    /// The result of merging `operand` into this value with `uint64add`: a base that is not eight
    /// bytes (absent or long) counts as zero, exactly as the engine's operator does.
    pub fn merged(self, operand: u64) -> Value {
        let base = if self.kind == Kind::Short { self.n } else { 0 };
        Value { kind: Kind::Short, n: base.wrapping_add(operand) }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            Kind::Absent => write!(f, "absent"),
            Kind::Short => write!(f, "u64 {} (8 bytes)", self.n),
            Kind::Long => write!(f, "u64 {} + filler ({LONG_LEN} bytes)", self.n),
        }
    }
}

/// Key bytes for key index `i`: fixed width, so byte order equals numeric order and a prefix of
/// all but the last two digits selects 100 consecutive keys.
pub fn key_bytes(i: u64) -> Vec<u8> {
    format!("k{i:08}").into_bytes()
}

/// The key index of `b`, if it is a key this tool writes.
pub fn parse_key(b: &[u8]) -> Option<u64> {
    let digits = b.strip_prefix(b"k")?;
    if digits.len() != 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// Describes bytes read from the engine for a mismatch report.
pub fn describe(actual: Option<&[u8]>) -> String {
    match actual {
        None => "absent".to_string(),
        Some(b) => {
            let n = <[u8; 8]>::try_from(b.get(..8).unwrap_or(b)).map(u64::from_le_bytes);
            let head: String = b.iter().take(16).map(|x| format!("{x:02x}")).collect();
            match n {
                Ok(n) => format!("{} bytes, first u64 {n}, head {head}", b.len()),
                Err(_) => format!("{} bytes, head {head}", b.len()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_sort_numerically() {
        assert_eq!(parse_key(&key_bytes(42)), Some(42));
        assert!(key_bytes(9) < key_bytes(10));
        assert_eq!(parse_key(b"k123"), None);
    }

    #[test]
    fn merge_treats_non_u64_base_as_zero() {
        let long = Value { kind: Kind::Long, n: 7 };
        assert_eq!(long.merged(3), Value { kind: Kind::Short, n: 3 });
        assert_eq!(Value::ABSENT.merged(3).n, 3);
        assert_eq!(Value { kind: Kind::Short, n: 7 }.merged(3).n, 10);
        assert_eq!(long.bytes(1).unwrap().len(), LONG_LEN);
    }
}
