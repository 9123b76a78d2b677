//! Remembers which records of an immutable, memory-mapped file already passed their checksum,
//! so a re-read can skip it (as a block in a block cache is checked once, on load), together
//! with a few bits the caller learned while checking (a "note"). It only stores offsets and
//! notes; it never reads the file and never decides what a valid record is.

use std::sync::atomic::{AtomicU32, Ordering};

/// One slot per `granule` bytes of the file. A slot holds `offset % granule + 1` of the last
/// verified record starting in its granule (0 = none) in its low bits and that record's note in
/// the rest, so two records sharing a granule only cost a re-verification, and a record is never
/// taken as verified by mistake. Choose the granule no larger than the smallest usual record, so
/// each record has a slot of its own: two neighbours sharing one evict each other on every scan
/// that reads both.
pub struct VerifiedOffsets {
    shift: u32,
    slots: Box<[AtomicU32]>,
}

impl VerifiedOffsets {
    /// Slots for a file whose records start below `len`; `granule` is a power of two from 2 to
    /// 32 KiB (a slot's `offset % granule + 1` takes `log2(granule) + 1` of its 32 bits).
    pub fn new(len: u64, granule: u64) -> Self {
        assert!(granule.is_power_of_two() && (2..=1 << 15).contains(&granule), "bad granule {granule}");
        let shift = granule.trailing_zeros();
        let count = usize::try_from((len >> shift) + 1).unwrap_or(usize::MAX);
        Self { shift, slots: (0..count).map(|_| AtomicU32::new(0)).collect() }
    }

    /// No slots: nothing is ever remembered (files that are read, not mapped).
    pub fn none() -> Self {
        Self { shift: 0, slots: Box::new([]) }
    }

    /// How many bits a note may use: what the tag leaves of a slot (23 for 256-byte granules).
    pub fn note_bits(&self) -> u32 {
        32 - self.tag_bits()
    }

    /// Whether the record at `offset` was marked verified.
    pub fn contains(&self, offset: u64) -> bool {
        self.note(offset).is_some()
    }

    /// The note stored with the record at `offset`, if that record was marked verified.
    pub fn note(&self, offset: u64) -> Option<u32> {
        let (slot, tag) = self.slot(offset)?;
        let value = slot.load(Ordering::Relaxed);
        (value & self.tag_mask() == tag).then(|| value >> self.tag_bits())
    }

    /// Marks the record at `offset` verified (evicting any other record of its granule).
    pub fn insert(&self, offset: u64) {
        self.insert_with_note(offset, 0);
    }

    /// Marks the record at `offset` verified with `note`. A note wider than
    /// [`VerifiedOffsets::note_bits`] is not stored, and neither is the mark: the record is
    /// simply checked again next time.
    pub fn insert_with_note(&self, offset: u64, note: u32) {
        if note >> self.note_bits() != 0 {
            return;
        }
        if let Some((slot, tag)) = self.slot(offset) {
            slot.store(note << self.tag_bits() | tag, Ordering::Relaxed);
        }
    }

    fn tag_bits(&self) -> u32 {
        self.shift + 1
    }

    fn tag_mask(&self) -> u32 {
        (1 << self.tag_bits()) - 1
    }

    fn slot(&self, offset: u64) -> Option<(&AtomicU32, u32)> {
        let slot = self.slots.get(usize::try_from(offset >> self.shift).ok()?)?;
        let within = offset & ((1u64 << self.shift) - 1);
        // `within < granule <= 32 KiB`, so the tag fits its `shift + 1` bits; `+ 1` keeps 0
        // meaning "none".
        Some((slot, within as u32 + 1))
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
    fn notes_come_back_with_their_record_only() {
        let v = VerifiedOffsets::new(4096, 256);
        assert_eq!(v.note_bits(), 23);
        v.insert_with_note(300, (1 << 23) - 1);
        assert_eq!(v.note(300), Some((1 << 23) - 1));
        assert_eq!(v.note(301), None);
        v.insert_with_note(310, 5);
        assert_eq!((v.note(300), v.note(310)), (None, Some(5)));
        v.insert(310);
        assert_eq!(v.note(310), Some(0));
    }

    #[test]
    fn a_note_too_wide_is_neither_stored_nor_marks_the_record() {
        let v = VerifiedOffsets::new(4096, 256);
        v.insert_with_note(300, 1 << 23);
        assert!(!v.contains(300));
        let big = VerifiedOffsets::new(1 << 16, 1 << 15);
        assert_eq!(big.note_bits(), 16);
        big.insert_with_note(7, u32::MAX);
        assert!(!big.contains(7));
        big.insert_with_note(7, u32::from(u16::MAX));
        assert_eq!(big.note(7), Some(u32::from(u16::MAX)));
    }

    #[test]
    fn the_largest_granule_keeps_tags_distinct() {
        let v = VerifiedOffsets::new(1 << 16, 1 << 15);
        v.insert((1 << 15) - 1);
        assert!(v.contains((1 << 15) - 1));
        assert!(!v.contains(0));
    }
}
