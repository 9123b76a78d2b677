//! Remembers which records of an immutable, memory-mapped file already passed their checksum,
//! so a re-read can skip it (as a block in a block cache is checked once, on load). It only
//! stores offsets; it never reads the file and never decides what a valid record is.

use std::sync::atomic::{AtomicU16, Ordering};

/// One slot per `granule` bytes of the file. A slot holds `offset % granule + 1` of the last
/// verified record starting in its granule (0 = none), so two records sharing a granule only
/// cost a re-verification, and a record is never taken as verified by mistake. Choose the
/// granule no larger than the smallest usual record, so each record has a slot of its own: two
/// neighbours sharing one evict each other on every scan that reads both.
pub struct VerifiedOffsets {
    shift: u32,
    slots: Box<[AtomicU16]>,
}

impl VerifiedOffsets {
    /// Slots for a file whose records start below `len`; `granule` is a power of two from 2 to
    /// 32 KiB (a slot's `offset % granule + 1` must fit 16 bits).
    pub fn new(len: u64, granule: u64) -> Self {
        assert!(granule.is_power_of_two() && (2..=1 << 15).contains(&granule), "bad granule {granule}");
        let shift = granule.trailing_zeros();
        let count = usize::try_from((len >> shift) + 1).unwrap_or(usize::MAX);
        Self { shift, slots: (0..count).map(|_| AtomicU16::new(0)).collect() }
    }

    /// No slots: nothing is ever remembered (files that are read, not mapped).
    pub fn none() -> Self {
        Self { shift: 0, slots: Box::new([]) }
    }

    /// Whether the record at `offset` was marked verified.
    pub fn contains(&self, offset: u64) -> bool {
        self.slot(offset).is_some_and(|(s, tag)| s.load(Ordering::Relaxed) == tag)
    }

    /// Marks the record at `offset` verified (evicting any other record of its granule).
    pub fn insert(&self, offset: u64) {
        if let Some((s, tag)) = self.slot(offset) {
            s.store(tag, Ordering::Relaxed);
        }
    }

    fn slot(&self, offset: u64) -> Option<(&AtomicU16, u16)> {
        let slot = self.slots.get(usize::try_from(offset >> self.shift).ok()?)?;
        let within = offset & ((1u64 << self.shift) - 1);
        // `within < granule <= 32 KiB`, so the tag fits; `+ 1` keeps 0 meaning "none".
        Some((slot, within as u16 + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_each_record_of_its_own_granule() {
        let v = VerifiedOffsets::new(4096, 256);
        assert!(!v.contains(0) && !v.contains(300));
        v.insert(0);
        v.insert(300);
        assert!(v.contains(0) && v.contains(300));
        assert!(!v.contains(256) && !v.contains(301) && !v.contains(600));
    }

    #[test]
    fn records_sharing_a_granule_evict_each_other_but_never_alias() {
        let v = VerifiedOffsets::new(4096, 256);
        v.insert(10);
        v.insert(200);
        assert!(v.contains(200));
        assert!(!v.contains(10), "evicted, so it is verified again");
        assert!(!v.contains(200 + 256), "same tag in the next granule is a different record");
    }

    #[test]
    fn offsets_past_the_end_and_unmapped_files_are_never_verified() {
        let v = VerifiedOffsets::new(1000, 256);
        v.insert(1 << 40);
        assert!(!v.contains(1 << 40));
        let none = VerifiedOffsets::none();
        none.insert(0);
        assert!(!none.contains(0));
    }

    #[test]
    fn the_largest_granule_keeps_tags_distinct() {
        let v = VerifiedOffsets::new(1 << 16, 1 << 15);
        v.insert((1 << 15) - 1);
        assert!(v.contains((1 << 15) - 1));
        assert!(!v.contains(0));
    }
}
