//! Every internal entry of one column family, for the admin tool's `idump` (ldb's `idump`): each
//! version of each key, tombstones and merge operands included, from the memtables and the
//! tables of the current version, in internal-key order.
//!
//! Owns: walking one pinned super version's internal iterators. Must not: write anything, hide
//! or resolve versions (that is `DbIterator`'s job), or read blob values behind pointers.

use super::db_iter::children;
use super::family::{ColumnFamily, Family};
use super::Db;
use crate::error::Result;
use crate::iter::merging::MergingIterator;
use crate::iter::InternalIterator;
use crate::key;

/// Calls `f(internal_key, value)` for every internal entry of family `cf` (the default family
/// when `None`) whose user key is `>= from`, in internal-key order (user key ascending, then
/// newest first), until `f` returns `Ok(false)` or the entries end. The entries are those of the
/// memtables and tables at the moment of the call; values of blob entries are their pointers.
/// Reads through the block cache without filling it.
///
/// For strata's own tools (`strata idump`), through `strata::internal::db`.
///
/// # Errors
/// `Io` or `Corruption` from a table read, or the first error `f` returns.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::internal::{db::for_each_internal_entry, key};
/// use strata::{Db, Options};
/// let db = Db::open(dir.path(), Options::default())?;
/// db.put("a", "1")?;
/// db.flush()?;
/// db.put("a", "2")?;
/// db.delete("b")?;
/// let mut seen = Vec::new();
/// for_each_internal_entry(&db, None, None, &mut |ikey: &[u8], value: &[u8]| {
///     let p = key::parse(ikey).expect("an internal key");
///     seen.push((p.user_key.to_vec(), p.seq, p.kind, value.to_vec()));
///     Ok(true)
/// })?;
/// assert_eq!(seen.len(), 3); // both versions of "a" (memtable and table) and the tombstone
/// assert_eq!((seen[0].1, seen[1].1), (2, 1), "newest first");
/// assert_eq!(seen[2].2, key::ValueKind::Delete);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn for_each_internal_entry(
    db: &Db,
    cf: Option<&ColumnFamily>,
    from: Option<&[u8]>,
    mut f: impl FnMut(&[u8], &[u8]) -> Result<bool>,
) -> Result<()> {
    let family: &Family = match cf {
        Some(cf) => super::family_api::live(cf)?,
        None => &db.inner.default,
    };
    // Pinned for the whole walk, so no flush or compaction removes a file it reads.
    let sv = family.super_version.load_full();
    let mut it = MergingIterator::new(children(&db.inner, &sv, false, None)?);
    match from {
        Some(k) => it.seek(&key::seek_key(k, key::MAX_SEQ)),
        None => it.seek_to_first(),
    }
    while it.valid() {
        if !f(it.key(), it.value())? {
            return Ok(());
        }
        it.next();
    }
    it.status()
}
