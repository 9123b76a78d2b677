//! Merge operators: read-modify-write without a read. A merge operand is stored as its own entry;
//! reads and compactions fold the operands onto the base value with [`MergeOperator::full_merge`].
//! Set one in [`Options::merge_operator`](crate::Options::merge_operator): a built-in one from
//! [`builtin`] or your own implementation of [`MergeOperator`].
//!
//! The operator's name is recorded in the database's OPTIONS file. It is not checked at open:
//! reopening a database with a different operator (or none, which makes reads of merged keys fail
//! with [`Error::Merge`](crate::error::Error::Merge)) is the caller's responsibility.

use std::sync::Arc;

/// Combines merge operands with an optional base value: RocksDB's `MergeOperator`. Implement it
/// to make read-modify-write updates (counters, appends, maxima, set unions) without reading
/// first. It must be deterministic, and is called from reader threads and background
/// compactions at once (hence `Send + Sync`).
///
/// A small operator that keeps the largest 8-byte little-endian number:
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use std::sync::Arc;
/// use strata::{Db, Error, MergeOperator, Options, ReadOptions, WriteOptions};
///
/// struct Max;
///
/// fn decode(b: &[u8]) -> Option<u64> {
///     Some(u64::from_le_bytes(b.try_into().ok()?))
/// }
///
/// impl MergeOperator for Max {
///     fn name(&self) -> &str {
///         "max"
///     }
///     fn full_merge(&self, _key: &[u8], base: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
///         let mut max = base.map_or(Some(0), decode)?;
///         for op in operands {
///             max = max.max(decode(op)?); // a malformed operand fails the read
///         }
///         Some(max.to_le_bytes().to_vec())
///     }
///     fn partial_merge(&self, key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
///         self.full_merge(key, None, operands) // max is associative
///     }
/// }
///
/// let db = Db::open(dir.path(), Options { merge_operator: Some(Arc::new(Max)), ..Options::default() })?;
/// let w = WriteOptions::default();
/// for n in [3u64, 9, 4] {
///     db.merge_opt(&w, b"high-score", &n.to_le_bytes())?;
/// }
/// assert_eq!(db.get(b"high-score")?, Some(9u64.to_le_bytes().to_vec()));
/// db.compact_range(None, None)?; // compaction folds the operands into one value
/// assert_eq!(db.get(b"high-score")?, Some(9u64.to_le_bytes().to_vec()));
///
/// // `full_merge` returning `None` makes the read fail with `Error::Merge`.
/// db.merge_opt(&w, b"broken", b"not 8 bytes")?;
/// assert!(matches!(db.get(b"broken"), Err(Error::Merge(_))));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait MergeOperator: Send + Sync {
    /// A stable name identifying the operator, recorded in the OPTIONS file (`merge_operator=`)
    /// so tools and [`Options::load_latest`](crate::Options::load_latest) can tell which one a
    /// database uses. See the example on [`MergeOperator`].
    fn name(&self) -> &str;
    /// Applies `operands` (oldest first) to `base` (`None` when there is no value or it was
    /// deleted) and returns the new value. Returns `None` if the operands cannot be applied: a
    /// read of the key then fails with [`Error::Merge`](crate::error::Error::Merge), and compaction
    /// keeps the operands unfolded. See the example on [`MergeOperator`].
    fn full_merge(&self, key: &[u8], base: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>>;
    /// Combines adjacent operands (oldest first) into one operand, if the operator allows it;
    /// the default returns `None` (cannot combine). Part of the RocksDB interface: the current
    /// engine folds operands only with [`full_merge`](MergeOperator::full_merge), so
    /// implementing it is optional.
    ///
    /// ```
    /// use strata::merge::Uint64AddOperator;
    /// use strata::MergeOperator;
    /// let (one, two) = (1u64.to_le_bytes(), 2u64.to_le_bytes());
    /// let combined = Uint64AddOperator.partial_merge(b"k", &[&one, &two]);
    /// assert_eq!(combined, Some(3u64.to_le_bytes().to_vec()));
    /// ```
    fn partial_merge(&self, key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        let _ = (key, operands);
        None
    }
}

/// Adds 8-byte little-endian unsigned counters (RocksDB's `uint64add`). A missing base counts as
/// zero; a base or operand of another length is treated as zero, as RocksDB does. Sums wrap on
/// overflow. Its name is `uint64add`; [`builtin`] returns it for that name.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use std::sync::Arc;
/// use strata::merge::Uint64AddOperator;
/// use strata::{Db, Options, ReadOptions, WriteOptions};
/// let db = Db::open(dir.path(), Options { merge_operator: Some(Arc::new(Uint64AddOperator)), ..Options::default() })?;
/// db.put(b"visits", &10u64.to_le_bytes())?;
/// db.merge(b"visits", &5u64.to_le_bytes())?;
/// let v = db.get(b"visits")?.unwrap();
/// assert_eq!(u64::from_le_bytes(v.try_into().unwrap()), 15);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct Uint64AddOperator;

fn as_u64(b: &[u8]) -> u64 {
    <[u8; 8]>::try_from(b).map(u64::from_le_bytes).unwrap_or(0)
}

impl MergeOperator for Uint64AddOperator {
    fn name(&self) -> &str {
        "uint64add"
    }
    fn full_merge(&self, _key: &[u8], base: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
        let sum = operands.iter().fold(base.map_or(0, as_u64), |acc, op| acc.wrapping_add(as_u64(op)));
        Some(sum.to_le_bytes().to_vec())
    }
    fn partial_merge(&self, _key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        let sum = operands.iter().fold(0u64, |acc, op| acc.wrapping_add(as_u64(op)));
        Some(sum.to_le_bytes().to_vec())
    }
}

/// Appends operands to the base with a delimiter (RocksDB's `stringappend`); with no base the
/// first operand starts the value. Its name is `stringappend`; [`builtin`] returns it with the
/// delimiter `,`.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use std::sync::Arc;
/// use strata::merge::StringAppendOperator;
/// use strata::{Db, Options, ReadOptions, WriteOptions};
/// let op = StringAppendOperator::new(b"; ");
/// let db = Db::open(dir.path(), Options { merge_operator: Some(Arc::new(op)), ..Options::default() })?;
/// for line in ["started", "loaded 3 files", "done"] {
///     db.merge(b"log", line.as_bytes())?;
/// }
/// assert_eq!(db.get(b"log")?, Some(b"started; loaded 3 files; done".to_vec()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct StringAppendOperator {
    delimiter: Vec<u8>,
}

impl StringAppendOperator {
    /// An operator that joins values with `delimiter` (any bytes, possibly empty);
    /// `StringAppendOperator::default()` uses `,`.
    ///
    /// ```
    /// use strata::merge::StringAppendOperator;
    /// use strata::MergeOperator;
    /// let op = StringAppendOperator::new(b"|");
    /// assert_eq!(op.full_merge(b"k", Some(b"a"), &[b"b", b"c"]), Some(b"a|b|c".to_vec()));
    /// assert_eq!(op.full_merge(b"k", None, &[b"b"]), Some(b"b".to_vec()));
    /// ```
    pub fn new(delimiter: &[u8]) -> Self {
        Self { delimiter: delimiter.to_vec() }
    }
}

impl Default for StringAppendOperator {
    fn default() -> Self {
        Self::new(b",")
    }
}

impl MergeOperator for StringAppendOperator {
    fn name(&self) -> &str {
        "stringappend"
    }
    fn full_merge(&self, _key: &[u8], base: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
        let mut out = base.map(<[u8]>::to_vec);
        for op in operands {
            match &mut out {
                Some(v) => {
                    v.extend_from_slice(&self.delimiter);
                    v.extend_from_slice(op);
                }
                None => out = Some(op.to_vec()),
            }
        }
        Some(out.unwrap_or_default())
    }
    fn partial_merge(&self, key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        self.full_merge(key, None, operands)
    }
}

/// Looks up a built-in operator by name (`uint64add`, `stringappend`, or RocksDB's class names
/// `UInt64AddOperator`, `StringAppendOperator`), as db_bench's `--merge_operator` flag does.
/// Returns `None` for any other name, ready for `Options::merge_operator`.
///
/// ```
/// let op = strata::merge::builtin("uint64add").expect("built in");
/// assert_eq!(op.name(), "uint64add");
/// assert_eq!(strata::merge::builtin("StringAppendOperator").map(|o| o.name().to_string()).as_deref(), Some("stringappend"));
/// assert!(strata::merge::builtin("max").is_none());
/// let opts = strata::Options { merge_operator: strata::merge::builtin("stringappend"), ..Default::default() };
/// # let _ = opts;
/// ```
pub fn builtin(name: &str) -> Option<Arc<dyn MergeOperator>> {
    match name {
        "uint64add" | "UInt64AddOperator" => Some(Arc::new(Uint64AddOperator)),
        "stringappend" | "StringAppendOperator" => Some(Arc::new(StringAppendOperator::default())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uint64add_sums_and_treats_missing_base_as_zero() {
        let op = Uint64AddOperator;
        let one = 1u64.to_le_bytes();
        let five = 5u64.to_le_bytes();
        assert_eq!(op.full_merge(b"k", None, &[&one, &five]), Some(6u64.to_le_bytes().to_vec()));
        assert_eq!(op.full_merge(b"k", Some(&five), &[&one]), Some(6u64.to_le_bytes().to_vec()));
        assert_eq!(op.partial_merge(b"k", &[&one, &one]), Some(2u64.to_le_bytes().to_vec()));
    }

    #[test]
    fn string_append_joins_with_delimiter() {
        let op = StringAppendOperator::default();
        assert_eq!(op.full_merge(b"k", Some(b"a"), &[b"b", b"c"]), Some(b"a,b,c".to_vec()));
        assert_eq!(op.full_merge(b"k", None, &[b"b"]), Some(b"b".to_vec()));
    }
}
