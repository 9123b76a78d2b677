//! Inserting a committed group into memtables: into the default family's with slot prefetching,
//! or record by record into the family each record names. It must not decide anything about
//! room or order: the leader has made room and assigned the sequence numbers.

use std::sync::Arc;

use super::GroupMember;
use crate::db::family::{Family, FamilyTable};
use crate::db::SuperVersion;
use crate::error::Result;
use crate::memtable::MemTable;

/// How many records ahead of the one it inserts a group's memtable insert starts loading the
/// hash-index slot (`insert_group`): far enough that a ~100 ns miss is covered by the inserts
/// in between, near enough that the lines are still cached when their turn comes.
const SLOT_PREFETCH_AHEAD: usize = 4;

/// The families `group`'s records go to, each once; a family dropped meanwhile is left out
/// (its records are not applied, as RocksDB ignores writes to a dropped family).
pub(super) fn touched_families<'a, M: GroupMember>(
    families: &'a FamilyTable,
    group: &[M],
) -> Vec<&'a Arc<Family>> {
    let mut ids: Vec<u32> = Vec::new();
    for id in group.iter().flat_map(|w| w.batch().family_ids()) {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids.iter().filter_map(|id| families.get(*id)).collect()
}

/// Adds every record of `group` to `mem`, numbered from `first_seq`; returns the sequence number
/// after the last. With more than one record, each record's hash slot starts loading
/// [`SLOT_PREFETCH_AHEAD`] records before its insert, so that the slot misses of a batch
/// overlap instead of queueing one behind another. A single-key write prefetched its slot
/// before it queued (`Db::put`), so a group of one record goes straight in.
pub(super) fn insert_group<M: GroupMember>(
    mem: &MemTable,
    group: &[M],
    first_seq: u64,
    count: u64,
) -> Result<u64> {
    let mut seq = first_seq;
    let mut ahead = (count > 1).then(|| group.iter().flat_map(|w| w.batch().records()));
    let mut prefetch_next = || {
        // The hint is read again for every prefetch: a big batch may grow the index midway.
        if let Some(Ok((_, _, key, _))) = ahead.as_mut().and_then(Iterator::next) {
            mem.slot_hint().prefetch(key);
        }
    };
    for _ in 0..SLOT_PREFETCH_AHEAD {
        prefetch_next();
    }
    for rec in group.iter().flat_map(|w| w.batch().records()) {
        prefetch_next();
        let (_, kind, key, value) = rec?;
        mem.add(seq, kind, key, value);
        seq += 1;
    }
    Ok(seq)
}

/// Adds every record of a group that names column families to its family's memtable,
/// numbered from `first_seq`; returns the sequence number after the last. A record of a family
/// no longer in `families` (dropped meanwhile) takes its sequence number and is not applied.
/// No slot look-ahead here: tried (2026-11-30), it took the insert benchmark's plain load's
/// `set_newest` from 11% of the samples to none without moving its rows per second, and cost
/// LinkBench, whose groups are a few records each, ~5% of its cached request rate.
pub(super) fn insert_group_families<M: GroupMember>(
    families: &FamilyTable,
    group: &[M],
    first_seq: u64,
) -> Result<u64> {
    let mut seq = first_seq;
    let mut mems: Vec<(u32, Option<arc_swap::Guard<Arc<SuperVersion>>>)> = Vec::new();
    for rec in group.iter().flat_map(|w| w.batch().records()) {
        let (id, kind, key, value) = rec?;
        let at = match mems.iter().position(|(i, _)| *i == id) {
            Some(at) => at,
            None => {
                mems.push((id, families.get(id).map(|f| f.super_version.load())));
                mems.len() - 1
            }
        };
        if let Some(sv) = &mems[at].1 {
            sv.mem.add(seq, kind, key, value);
        }
        seq += 1;
    }
    for (id, sv) in &mems {
        if let (Some(f), Some(sv)) = (families.get(*id), sv) {
            f.slot_hint.publish(sv.mem.slot_hint());
        }
    }
    Ok(seq)
}

#[cfg(test)]
mod tests {
    use super::super::SoloWriter;
    use super::*;
    use crate::batch::WriteBatch;
    use crate::key::ValueKind;
    use crate::options::WriteOptions;

    /// The newest entry of `user_key` in `mem`: (sequence number, kind, value).
    fn newest(mem: &MemTable, user_key: &[u8]) -> Option<(u64, ValueKind, Vec<u8>)> {
        let mut found = None;
        mem.get(&crate::key::seek_key(user_key, crate::key::MAX_SEQ), &mut |ikey, value| {
            let parsed = crate::key::parse(ikey).expect("a well-formed internal key");
            if parsed.user_key == user_key {
                found = Some((parsed.seq, parsed.kind, value.to_vec()));
            }
            false
        });
        found
    }

    #[test]
    fn a_group_goes_in_whole_and_in_order_whatever_the_prefetch_ahead() {
        let opts = WriteOptions::default();
        let mut small = WriteBatch::new();
        small.put(b"a", b"1").delete(b"b").put(b"a", b"2");
        // Enough keys that the hash index grows while this one batch goes in.
        let mut big = WriteBatch::new();
        for i in 0..20_000u32 {
            big.put(format!("key{i:05}").as_bytes(), i.to_le_bytes());
        }
        let mut one = WriteBatch::new();
        one.put(b"z", b"last");
        let group = [
            SoloWriter { batch: &small, opts: &opts },
            SoloWriter { batch: &big, opts: &opts },
            SoloWriter { batch: &one, opts: &opts },
        ];
        let mem = MemTable::with_expected_keys(0);
        let count = 3 + 20_000 + 1;
        assert_eq!(insert_group(&mem, &group, 100, count).unwrap(), 100 + count);
        assert_eq!(mem.num_entries(), count);
        assert_eq!(newest(&mem, b"a"), Some((102, ValueKind::Put, b"2".to_vec())));
        assert_eq!(newest(&mem, b"b"), Some((101, ValueKind::Delete, Vec::new())));
        for i in [0u32, 1, 4, 5, 9_999, 19_999] {
            let want = Some((103 + u64::from(i), ValueKind::Put, i.to_le_bytes().to_vec()));
            assert_eq!(newest(&mem, format!("key{i:05}").as_bytes()), want, "key{i:05}");
        }
        assert_eq!(newest(&mem, b"z"), Some((100 + count - 1, ValueKind::Put, b"last".to_vec())));

        // A group of one record takes the path without the look-ahead.
        let single = MemTable::with_expected_keys(0);
        assert_eq!(insert_group(&single, &group[2..], 7, 1).unwrap(), 8);
        assert_eq!(newest(&single, b"z"), Some((7, ValueKind::Put, b"last".to_vec())));
    }

    #[test]
    fn a_family_group_goes_in_whole_and_skips_dropped_families() {
        use crate::db::family::Family;
        use crate::options::Options;
        use crate::version::version::Version;
        let family = |id: u32| {
            Arc::new(Family::new(
                id,
                format!("f{id}"),
                Options::default(),
                Arc::new(Version::default()),
                None,
            ))
        };
        let families = FamilyTable::default().with(family(1)).with(family(2));
        // Records alternate between families 1 and 2 and family 9, which is not in the table
        // (dropped while the group waited): its records take sequence numbers, nothing more.
        let mut batch = WriteBatch::new();
        for i in 0..3_000u32 {
            let id = [1, 2, 9][i as usize % 3];
            batch.record_in(id, ValueKind::Put, format!("key{i:05}").as_bytes(), Some(&i.to_le_bytes()));
        }
        batch.record_in(2, ValueKind::Delete, b"key00001", None);
        let opts = WriteOptions::default();
        let group = [SoloWriter { batch: &batch, opts: &opts }];
        assert_eq!(insert_group_families(&families, &group, 10).unwrap(), 10 + 3_001);
        let mem = |id: u32| Arc::clone(&families.get(id).unwrap().super_version.load().mem);
        assert_eq!((mem(1).num_entries(), mem(2).num_entries()), (1_000, 1_001));
        for i in [0u32, 1, 2, 3, 2_998, 2_999] {
            let key = format!("key{i:05}");
            let want = match i % 3 {
                2 => None,
                _ => Some((10 + u64::from(i), ValueKind::Put, i.to_le_bytes().to_vec())),
            };
            let (m, other) = if i % 3 == 1 { (mem(2), mem(1)) } else { (mem(1), mem(2)) };
            if i == 1 {
                assert_eq!(newest(&m, key.as_bytes()), Some((10 + 3_000, ValueKind::Delete, Vec::new())));
            } else {
                assert_eq!(newest(&m, key.as_bytes()), want, "{key}");
            }
            assert_eq!(newest(&other, key.as_bytes()), None, "{key} only in its own family");
        }
        // Each family's writers were told where its index now lies.
        assert_eq!(families.get(1).unwrap().slot_hint.load(), mem(1).slot_hint());
    }
}
