//! The entries of a [`WriteBatchWithIndex`](super::WriteBatchWithIndex)'s index and what a key's
//! entries amount to: its base (a put or delete in the batch, or the database's value) and the
//! merge operands over it. Shared by the batch's point reads and its iterator; it must not read
//! the database.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::merge::MergeOperator;

/// One operation on a key, as the index keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum IndexedOp {
    Put(Vec<u8>),
    Delete,
    Merge(Vec<u8>),
}

/// The operations on each key of one column family, oldest first. Every operation is kept (not
/// only the last), so rolling back to a savepoint can drop the newest ones.
pub(crate) type FamilyIndex = BTreeMap<Vec<u8>, Vec<IndexedOp>>;

/// What a key's operations in the batch amount to.
pub(crate) struct Resolved<'a> {
    /// `Some` when a put (`Some(value)`) or delete (`None`) in the batch decides the base value;
    /// `None` when the database's value is the base.
    pub base: Option<Option<&'a [u8]>>,
    /// The merge operands after that base, oldest first.
    pub operands: Vec<&'a [u8]>,
}

/// Reduces a key's operations (oldest first) to their base and the merges over it.
pub(crate) fn resolve(ops: &[IndexedOp]) -> Resolved<'_> {
    let last_base = ops.iter().rposition(|op| !matches!(op, IndexedOp::Merge(_)));
    let base = last_base.map(|i| match &ops[i] {
        IndexedOp::Put(v) => Some(v.as_slice()),
        _ => None,
    });
    let after = &ops[last_base.map_or(0, |i| i + 1)..];
    let operands = after
        .iter()
        .filter_map(|op| match op {
            IndexedOp::Merge(v) => Some(v.as_slice()),
            _ => None,
        })
        .collect();
    Resolved { base, operands }
}

impl Resolved<'_> {
    /// The key's value with the batch applied over `db_value` (used only when the batch has no
    /// base of its own); `None` when deleted or absent.
    pub fn value_over(
        &self,
        op: Option<&Arc<dyn MergeOperator>>,
        key: &[u8],
        db_value: Option<&[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        let base = self.base.unwrap_or(db_value);
        if self.operands.is_empty() {
            return Ok(base.map(<[u8]>::to_vec));
        }
        fold(op, key, base, &self.operands).map(Some)
    }
}

/// Folds `operands` (oldest first) over `base`, failing as `Db::get` does.
pub(crate) fn fold(
    op: Option<&Arc<dyn MergeOperator>>,
    key: &[u8],
    base: Option<&[u8]>,
    operands: &[&[u8]],
) -> Result<Vec<u8>> {
    let op =
        op.ok_or_else(|| Error::Merge("merge operands found but no merge operator is configured".into()))?;
    op.full_merge(key, base, operands)
        .ok_or_else(|| Error::Merge(format!("operator {} failed on key {:?}", op.name(), key)))
}
