//! Option values as text: the syntax of each value type an option can have, read from the
//! strings options files, option strings and bindings pass, and written back as the options file
//! writes them.
//!
//! Owns: parsing (integers with RocksDB's binary K/M/G/T suffixes, booleans, compression names,
//! recovery modes) and formatting, such that formatting then parsing gives the value back.
//! Must not: know option names or ranges; the table in `table.rs` names the options, and
//! `Options::validate` checks ranges and how options relate.

use super::{Compression, WalRecoveryMode};

/// A value type of an option, as text. `parse_value`'s error says what is wrong with the text;
/// the caller adds the option's name.
pub(crate) trait OptionValue: Sized {
    fn parse_value(v: &str) -> Result<Self, String>;
    fn format_value(&self) -> String;
}

impl OptionValue for bool {
    fn parse_value(v: &str) -> Result<Self, String> {
        match v.to_ascii_lowercase().as_str() {
            "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            _ => Err(format!("invalid value {v:?} (expected true or false)")),
        }
    }

    fn format_value(&self) -> String {
        self.to_string()
    }
}

/// An unsigned integer, optionally with a binary K/M/G/T suffix as RocksDB accepts (`64M`).
fn parse_u64(v: &str) -> Result<u64, String> {
    let bad =
        || format!("invalid value {v:?} (expected an unsigned integer, optionally with a K/M/G/T suffix)");
    let (digits, shift) = match v.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&v[..v.len() - 1], 10),
        Some('M') => (&v[..v.len() - 1], 20),
        Some('G') => (&v[..v.len() - 1], 30),
        Some('T') => (&v[..v.len() - 1], 40),
        _ => (v, 0),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let n: u64 = digits.parse().map_err(|_| format!("value {v:?} is too large"))?;
    n.checked_mul(1u64 << shift).ok_or_else(|| format!("value {v:?} is too large"))
}

/// The unsigned integer types, parsed as a `u64` and narrowed.
macro_rules! unsigned_value {
    ($($t:ty),*) => {$(
        impl OptionValue for $t {
            fn parse_value(v: &str) -> Result<Self, String> {
                <$t>::try_from(parse_u64(v)?).map_err(|_| format!("value {v:?} is too large"))
            }

            fn format_value(&self) -> String {
                self.to_string()
            }
        }
    )*};
}

unsigned_value!(u8, u32, u64, usize);

impl OptionValue for f64 {
    fn parse_value(v: &str) -> Result<Self, String> {
        v.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| format!("invalid value {v:?} (expected a number)"))
    }

    /// Rust prints the shortest text that parses back to the same `f64`.
    fn format_value(&self) -> String {
        self.to_string()
    }
}

impl OptionValue for Compression {
    fn parse_value(v: &str) -> Result<Self, String> {
        Compression::parse(v).map_err(|_| format!("invalid value {v:?} (expected none, snappy, lz4 or zstd)"))
    }

    fn format_value(&self) -> String {
        self.name().to_string()
    }
}

/// A compression per level, colon-separated (`none:none:snappy`); empty is the empty list.
impl OptionValue for Vec<Compression> {
    fn parse_value(v: &str) -> Result<Self, String> {
        if v.is_empty() {
            return Ok(Vec::new());
        }
        v.split(':').map(|c| Compression::parse_value(c.trim())).collect()
    }

    fn format_value(&self) -> String {
        self.iter().map(|c| c.name()).collect::<Vec<_>>().join(":")
    }
}

impl OptionValue for WalRecoveryMode {
    fn parse_value(v: &str) -> Result<Self, String> {
        WalRecoveryMode::parse(v).ok_or_else(|| {
            format!(
                "unknown mode {v:?} (kPointInTimeRecovery, kAbsoluteConsistency, \
                 kTolerateCorruptedTailRecords, kSkipAnyCorruptedRecords)"
            )
        })
    }

    fn format_value(&self) -> String {
        self.name().to_string()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn sizes_take_binary_suffixes_and_reject_the_rest() {
        assert_eq!(u64::parse_value("64M"), Ok(64 << 20));
        assert_eq!(u64::parse_value("3k"), Ok(3 << 10));
        assert_eq!(usize::parse_value("1T"), Ok(1 << 40));
        for bad in ["", "M", "-1", "1.5", "12x", " 1", "0x10"] {
            assert!(u64::parse_value(bad).is_err(), "{bad:?}");
        }
        assert!(u64::parse_value("16777216T").unwrap_err().contains("too large"));
        assert!(u8::parse_value("256").unwrap_err().contains("too large"));
    }

    #[test]
    fn booleans_compressions_and_modes_parse_what_they_format() {
        assert_eq!(bool::parse_value("TRUE"), Ok(true));
        assert_eq!(bool::parse_value("0"), Ok(false));
        assert!(bool::parse_value("yes").is_err());
        let levels = vec![Compression::None, Compression::Zstd, Compression::Lz4];
        assert_eq!(Vec::<Compression>::parse_value(&levels.format_value()), Ok(levels));
        assert_eq!(Vec::<Compression>::parse_value(""), Ok(Vec::new()));
        assert!(Vec::<Compression>::parse_value("none:gzip").unwrap_err().contains("\"gzip\""));
        let mode = WalRecoveryMode::AbsoluteConsistency;
        assert_eq!(WalRecoveryMode::parse_value(&mode.format_value()), Ok(mode));
        assert!(f64::parse_value("inf").is_err() && f64::parse_value("NaN").is_err());
    }

    proptest! {
        #[test]
        fn integers_and_numbers_round_trip(n in any::<u64>(), x in -1e300f64..1e300) {
            prop_assert_eq!(u64::parse_value(&n.format_value()), Ok(n));
            prop_assert_eq!(f64::parse_value(&x.format_value()), Ok(x));
        }

        #[test]
        fn a_suffix_multiplies_by_its_power_of_two(n in 0u64..(1 << 20), s in 0usize..4) {
            let (suffix, shift) = [("K", 10), ("M", 20), ("G", 30), ("T", 40)][s];
            prop_assert_eq!(u64::parse_value(&format!("{n}{suffix}")), Ok(n << shift));
        }
    }
}
