//! Which versions of a user key survive a flush or compaction. Snapshots split a key's history
//! into stripes: a version is visible to the oldest snapshot at or above its sequence number, or
//! to "latest" when there is none. Within a stripe only the newest version can be read, so the
//! rest are dropped. Merge operands are folded onto a base in the same stripe. At the bottommost
//! level a tombstone with nothing older left to hide is dropped too, unless it is newer than the
//! oldest snapshot: an optimistic transaction's commit check (`txn::transaction`) reads the
//! newest sequence number of a key it tracked and must see a delete made after its snapshot.
//!
//! Pure logic: no IO. Blob values are resolved through the caller's `read_blob` callback.

use crate::error::Result;
use crate::key::{SeqNo, ValueKind};
use crate::merge::MergeOperator;

/// One version of a user key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Sequence number.
    pub seq: SeqNo,
    /// Kind.
    pub kind: ValueKind,
    /// Value (an encoded blob pointer for `Blob`).
    pub value: Vec<u8>,
}

/// How to decide what survives.
pub struct Rules<'a> {
    /// Live snapshot sequence numbers, ascending.
    pub snapshots: &'a [SeqNo],
    /// No older data for these keys exists below the output level.
    pub bottommost: bool,
    /// Folds merge operands.
    pub merge_operator: Option<&'a dyn MergeOperator>,
}

impl Rules<'_> {
    fn stripe(&self, seq: SeqNo) -> usize {
        self.snapshots.partition_point(|&s| s < seq)
    }

    /// Whether every live snapshot sees the write at `seq` (true without snapshots).
    fn older_than_every_snapshot(&self, seq: SeqNo) -> bool {
        self.snapshots.first().is_none_or(|&oldest| seq <= oldest)
    }
}

/// The result for one user key: kept entries (newest first) and dropped blob pointers.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Entries to write, newest first.
    pub kept: Vec<Entry>,
    /// Encoded blob pointers no longer referenced (their values become garbage).
    pub dropped_blobs: Vec<Vec<u8>>,
}

/// Decides which of `versions` (one user key, newest first) survive.
pub fn retain(
    user_key: &[u8],
    versions: Vec<Entry>,
    rules: &Rules<'_>,
    read_blob: &mut dyn FnMut(&[u8]) -> Result<Vec<u8>>,
) -> Result<Outcome> {
    let mut out = Outcome::default();
    let mut rest = versions.into_iter().peekable();
    while let Some(first) = rest.next() {
        let stripe = rules.stripe(first.seq);
        let mut same_stripe = Vec::new();
        while let Some(next) = rest.next_if(|e| rules.stripe(e.seq) == stripe) {
            same_stripe.push(next);
        }
        let older_remain = rest.peek().is_some();
        resolve_stripe(user_key, first, same_stripe, older_remain, rules, read_blob, &mut out)?;
    }
    Ok(out)
}

/// Handles one stripe: `first` is its newest version, `older` the rest (newest first).
fn resolve_stripe(
    user_key: &[u8],
    first: Entry,
    older: Vec<Entry>,
    older_stripes_remain: bool,
    rules: &Rules<'_>,
    read_blob: &mut dyn FnMut(&[u8]) -> Result<Vec<u8>>,
    out: &mut Outcome,
) -> Result<()> {
    let drop_all = |entries: &[Entry], out: &mut Outcome| {
        for e in entries.iter().filter(|e| e.kind == ValueKind::Blob) {
            out.dropped_blobs.push(e.value.clone());
        }
    };
    match first.kind {
        ValueKind::RangeDelete => {
            return Err(crate::error::Error::corruption("a range deletion among point entries"))
        }
        ValueKind::Delete
            if rules.bottommost && !older_stripes_remain && rules.older_than_every_snapshot(first.seq) =>
        {
            drop_all(&older, out)
        }
        ValueKind::Put | ValueKind::Blob | ValueKind::Delete => {
            drop_all(&older, out);
            out.kept.push(first);
        }
        ValueKind::Merge => {
            let n_ops = 1 + older.iter().take_while(|e| e.kind == ValueKind::Merge).count();
            let mut all = Vec::with_capacity(older.len() + 1);
            all.push(first);
            all.extend(older);
            let base = all.get(n_ops).cloned();
            let can_fold = base.is_some() || (rules.bottommost && !older_stripes_remain);
            let folded = match (rules.merge_operator, can_fold) {
                (Some(op), true) => fold(user_key, &all[..n_ops], base.as_ref(), op, read_blob)?,
                _ => None,
            };
            match folded {
                Some(value) => {
                    drop_all(&all[n_ops..], out);
                    out.kept.push(Entry { seq: all[0].seq, kind: ValueKind::Put, value });
                }
                None => {
                    // Cannot fold: keep the operands and the base (older entries stay shadowed).
                    let keep = (n_ops + 1).min(all.len());
                    drop_all(&all[keep..], out);
                    all.truncate(keep);
                    out.kept.extend(all);
                }
            }
        }
    }
    Ok(())
}

fn fold(
    user_key: &[u8],
    operands_newest_first: &[Entry],
    base: Option<&Entry>,
    op: &dyn MergeOperator,
    read_blob: &mut dyn FnMut(&[u8]) -> Result<Vec<u8>>,
) -> Result<Option<Vec<u8>>> {
    let base_value = match base {
        Some(e) if e.kind == ValueKind::Put => Some(e.value.clone()),
        Some(e) if e.kind == ValueKind::Blob => Some(read_blob(&e.value)?),
        _ => None,
    };
    let ops: Vec<&[u8]> = operands_newest_first.iter().rev().map(|e| e.value.as_slice()).collect();
    Ok(op.full_merge(user_key, base_value.as_deref(), &ops))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::Uint64AddOperator;

    fn e(seq: SeqNo, kind: ValueKind, v: &[u8]) -> Entry {
        Entry { seq, kind, value: v.to_vec() }
    }

    fn run(versions: Vec<Entry>, snapshots: &[SeqNo], bottommost: bool) -> Outcome {
        let op = Uint64AddOperator;
        let rules = Rules { snapshots, bottommost, merge_operator: Some(&op) };
        retain(b"k", versions, &rules, &mut |_| Ok(5u64.to_le_bytes().to_vec())).unwrap()
    }

    #[test]
    fn keeps_newest_per_stripe() {
        let v = vec![e(9, ValueKind::Put, b"c"), e(5, ValueKind::Put, b"b"), e(2, ValueKind::Put, b"a")];
        assert_eq!(run(v.clone(), &[], false).kept, vec![v[0].clone()]);
        assert_eq!(run(v.clone(), &[6], false).kept, vec![v[0].clone(), v[1].clone()]);
        assert_eq!(run(v.clone(), &[2, 5], false).kept, v);
    }

    #[test]
    fn tombstones_drop_only_at_the_bottom_without_older_stripes() {
        let v = vec![e(9, ValueKind::Delete, b""), e(5, ValueKind::Blob, b"ptr")];
        let o = run(v.clone(), &[], true);
        assert!(o.kept.is_empty());
        assert_eq!(o.dropped_blobs, vec![b"ptr".to_vec()]);
        assert_eq!(run(v.clone(), &[], false).kept, vec![v[0].clone()]);
        assert_eq!(run(v.clone(), &[6], true).kept, v);
        // Newer than a snapshot: kept, so a transaction holding the snapshot sees the delete's
        // sequence number in its commit check; the older version is still dropped.
        assert_eq!(run(v.clone(), &[3], true).kept, vec![v[0].clone()]);
        assert_eq!(run(v.clone(), &[9], true).kept, Vec::<Entry>::new());
    }

    #[test]
    fn merges_fold_onto_a_base_in_the_same_stripe() {
        let one = 1u64.to_le_bytes();
        let v = vec![e(9, ValueKind::Merge, &one), e(8, ValueKind::Merge, &one), e(3, ValueKind::Blob, b"p")];
        let o = run(v, &[], false);
        assert_eq!(o.kept, vec![e(9, ValueKind::Put, &7u64.to_le_bytes())]);
        assert_eq!(o.dropped_blobs, vec![b"p".to_vec()]);

        let lone = vec![e(9, ValueKind::Merge, &one)];
        assert_eq!(run(lone.clone(), &[], false).kept, lone);
        assert_eq!(run(lone, &[], true).kept, vec![e(9, ValueKind::Put, &one)]);
    }
}
