//! Merge operators: read-modify-write without a read. A merge operand is stored as its own entry;
//! reads and compactions fold the operands onto the base value with [`MergeOperator::full_merge`].
//! The operator's name is persisted so a database is not reopened with a different one.

use std::sync::Arc;

/// Combines merge operands with an optional base value.
pub trait MergeOperator: Send + Sync {
    /// A stable name, persisted in the OPTIONS file.
    fn name(&self) -> &str;
    /// Applies `operands` (oldest first) to `base` (None when there is no value or it was
    /// deleted). Returns `None` if the operands cannot be applied; the read then fails.
    fn full_merge(&self, key: &[u8], base: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>>;
    /// Combines adjacent operands (oldest first) into one operand, if the operator allows it.
    fn partial_merge(&self, key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        let _ = (key, operands);
        None
    }
}

/// Adds 8-byte little-endian unsigned counters (RocksDB's `uint64add`). A missing base counts as
/// zero; a base or operand of another length is treated as zero, as RocksDB does.
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

/// Appends operands to the base with a delimiter (RocksDB's `stringappend`).
#[derive(Debug, Clone)]
pub struct StringAppendOperator {
    delimiter: Vec<u8>,
}

impl StringAppendOperator {
    /// Joins values with `delimiter`.
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

/// Looks up a built-in operator by name (`uint64add`, `stringappend`), as db_bench's
/// `--merge_operator` flag does.
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
