//! `PrefixExtractor` (RocksDB's `prefix_extractor`, a `SliceTransform`): which leading bytes of a
//! key are its prefix. Tables written with one add each key's prefix to their bloom filter, so an
//! iterator over one prefix (`ReadOptions::prefix`) skips the tables that hold none of it. This
//! module owns the transform and its names only; the filter and the skipping live in `sst` and
//! `db`.

use super::value::OptionValue;

/// How a key's prefix is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PrefixExtractor {
    /// The first `n` bytes; keys shorter than `n` have no prefix (RocksDB's
    /// `NewFixedPrefixTransform`).
    Fixed(usize),
    /// The first `n` bytes, or the whole key when it is shorter (RocksDB's
    /// `NewCappedPrefixTransform`).
    Capped(usize),
}

impl PrefixExtractor {
    /// The prefix of `key` that tables add to their filter, if it has one.
    pub fn prefix_of<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        match *self {
            PrefixExtractor::Fixed(n) => key.get(..n),
            PrefixExtractor::Capped(n) => Some(&key[..n.min(key.len())]),
        }
    }

    /// What to look up in a filter to learn whether a table may hold keys starting with
    /// `wanted`: every such key has this prefix. `None` when `wanted` is shorter than the
    /// prefix length (keys starting with it have different prefixes; no filter can answer).
    pub fn probe_for<'k>(&self, wanted: &'k [u8]) -> Option<&'k [u8]> {
        let (PrefixExtractor::Fixed(n) | PrefixExtractor::Capped(n)) = *self;
        wanted.get(..n)
    }

    /// The number tables record in their properties (`strata.prefix_extractor`): a filter
    /// answers prefix questions only for the extractor it was built with.
    pub fn code(&self) -> u64 {
        match *self {
            PrefixExtractor::Fixed(n) => (1 << 32) | n as u64,
            PrefixExtractor::Capped(n) => (2 << 32) | n as u64,
        }
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        let (PrefixExtractor::Fixed(n) | PrefixExtractor::Capped(n)) = *self;
        n
    }

    /// Always false: an extractor of length 0 is refused by `Options::validate`.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl OptionValue for Option<PrefixExtractor> {
    /// `fixed:N` / `capped:N`, or RocksDB's `rocksdb.FixedPrefix.N` / `rocksdb.CappedPrefix.N`;
    /// `nullptr` or an empty value for none.
    fn parse_value(v: &str) -> Result<Self, String> {
        let v = v.trim();
        if v.is_empty() || v == "nullptr" {
            return Ok(None);
        }
        let (kind, n) = v
            .split_once(':')
            .or_else(|| v.strip_prefix("rocksdb.").and_then(|r| r.rsplit_once('.')))
            .ok_or_else(|| format!("invalid value {v:?} (expected fixed:N or capped:N)"))?;
        let n: usize = n.parse().map_err(|_| format!("invalid length in {v:?}"))?;
        match kind.to_ascii_lowercase().as_str() {
            "fixed" | "fixedprefix" => Ok(Some(PrefixExtractor::Fixed(n))),
            "capped" | "cappedprefix" => Ok(Some(PrefixExtractor::Capped(n))),
            _ => Err(format!("invalid value {v:?} (expected fixed:N or capped:N)")),
        }
    }

    fn format_value(&self) -> String {
        match self {
            None => "nullptr".to_string(),
            Some(PrefixExtractor::Fixed(n)) => format!("fixed:{n}"),
            Some(PrefixExtractor::Capped(n)) => format!("capped:{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_probes() {
        let fixed = PrefixExtractor::Fixed(4);
        assert_eq!(fixed.prefix_of(b"user123"), Some(&b"user"[..]));
        assert_eq!(fixed.prefix_of(b"abc"), None, "shorter keys have no fixed prefix");
        let capped = PrefixExtractor::Capped(4);
        assert_eq!(capped.prefix_of(b"abc"), Some(&b"abc"[..]));
        assert_eq!(capped.probe_for(b"userXYZ"), Some(&b"user"[..]));
        assert_eq!(capped.probe_for(b"use"), None);
        assert_ne!(fixed.code(), capped.code());
    }

    #[test]
    fn names_round_trip_and_rocksdb_names_parse() {
        for v in [None, Some(PrefixExtractor::Fixed(8)), Some(PrefixExtractor::Capped(3))] {
            assert_eq!(<Option<PrefixExtractor>>::parse_value(&v.format_value()), Ok(v));
        }
        assert_eq!(
            <Option<PrefixExtractor>>::parse_value("rocksdb.FixedPrefix.6"),
            Ok(Some(PrefixExtractor::Fixed(6)))
        );
        assert_eq!(
            <Option<PrefixExtractor>>::parse_value("rocksdb.CappedPrefix.2"),
            Ok(Some(PrefixExtractor::Capped(2)))
        );
        assert!(<Option<PrefixExtractor>>::parse_value("hash:4").is_err());
        assert!(<Option<PrefixExtractor>>::parse_value("fixed:x").is_err());
    }
}
