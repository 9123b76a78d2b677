//! The header record that opens every WAL file (docs/format.md, "WAL header record"): the WAL
//! format version, and which records of the previous WAL must have survived for this one to be
//! replayed (docs/durability.md, "WAL switches").
//!
//! A memtable switch does not fdatasync the WAL it closes, so after a power loss the old WAL may
//! have lost an unsynced tail while the new one kept records written after it. Replaying the new
//! one would then leave a hole instead of losing a suffix. The header names the old WAL and the
//! last sequence number appended to it; recovery stops before a WAL whose predecessor did not
//! reach it. This module owns the bytes of the header and that rule; it never touches files.

use crate::error::{Error, Result};
use crate::util::coding::Reader;

/// The WAL format version written by this build. 1 was the first with a header record; 2 names
/// the predecessor WAL in every header and carries durability flags in every write batch's
/// record (see [`RecordFlags`]). WALs without a header (written before it existed) are read as
/// before, with no checks.
pub const WAL_FORMAT_VERSION: u32 = 2;

/// Where a write batch holds its first sequence number. Sequence numbers are 56 bits, so no
/// batch starts with these bytes.
const MARKER: u64 = u64::MAX;

/// Encoded length of a version-2 header.
pub const HEADER_BYTES: usize = 48;

/// Encoded length of a version-1 header.
const V1_HEADER_BYTES: usize = 32;

/// The first record of a WAL file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WalHeader {
    /// The format version the WAL was written with (1 or 2).
    pub version: u32,
    /// The WAL this one replaced at a memtable switch (0: none to check, as for the WAL created
    /// at open, whose predecessors were all flushed, and for version-1 WALs).
    pub prev_wal: u64,
    /// The last sequence number appended to `prev_wal` (0: it held no write batch).
    pub prev_last_seq: u64,
    /// The newest earlier WAL that still held write batches appended since its last fdatasync
    /// when this one was created (normally `prev_wal`); 0 when there was none.
    pub unsynced_wal: u64,
    /// The last sequence number appended to `unsynced_wal`.
    pub unsynced_last_seq: u64,
}

/// What a version-2 WAL says, in each write batch's record, about what was durable when the
/// record was appended. Recovery uses it to tell a torn unsynced tail (droppable) from damage to
/// bytes that an acknowledged sync had made durable (corruption): docs/durability.md.
///
/// Stored in the top byte of the batch's first sequence number (sequence numbers are 56 bits),
/// so it costs no space; [`RecordFlags::take`] clears it before the batch is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecordFlags(u8);

impl RecordFlags {
    /// Every earlier WAL's records and directory entry were durable (no closed WAL held
    /// unsynced records).
    const EARLIER_WALS_DURABLE: u8 = 1;
    /// Every earlier record of this WAL, and its directory entry, were durable.
    const PREFIX_DURABLE: u8 = 2;

    /// The flags of a record appended when the given parts were durable.
    pub fn new(earlier_wals_durable: bool, prefix_durable: bool) -> Self {
        let mut bits = 0;
        if earlier_wals_durable {
            bits |= Self::EARLIER_WALS_DURABLE;
        }
        if prefix_durable {
            bits |= Self::PREFIX_DURABLE;
        }
        Self(bits)
    }

    /// Stores the flags into an encoded batch (`batch[7]`, the top byte of its sequence).
    pub fn store(self, batch: &mut [u8]) {
        if let Some(b) = batch.get_mut(7) {
            *b = self.0;
        }
    }

    /// Takes the flags out of a batch record read from a WAL of `version`, leaving the plain
    /// batch encoding. Records of WALs before version 2 carry no flags.
    pub fn take(version: u32, batch: &mut [u8]) -> Self {
        match batch.get_mut(7) {
            Some(b) if version >= 2 => Self(std::mem::take(b)),
            _ => Self(0),
        }
    }

    /// True when every earlier WAL was durable when this record was appended.
    pub fn earlier_wals_durable(self) -> bool {
        self.0 & Self::EARLIER_WALS_DURABLE != 0
    }

    /// True when every earlier record of this WAL was durable when this record was appended.
    pub fn prefix_durable(self) -> bool {
        self.0 & Self::PREFIX_DURABLE != 0
    }
}

impl WalHeader {
    /// A header that asks nothing of earlier WALs (the WAL created at open).
    pub fn first() -> Self {
        Self { version: WAL_FORMAT_VERSION, ..Self::default() }
    }

    /// Appends the encoded header to `dst` (always the current version).
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        dst.extend_from_slice(&MARKER.to_le_bytes());
        dst.extend_from_slice(&0u32.to_le_bytes());
        dst.extend_from_slice(&WAL_FORMAT_VERSION.to_le_bytes());
        for field in [self.prev_wal, self.prev_last_seq, self.unsynced_wal, self.unsynced_last_seq] {
            dst.extend_from_slice(&field.to_le_bytes());
        }
    }

    /// `None` if `payload` is not a header (it is a write batch); otherwise the header, or
    /// `Corruption` for a damaged one and `UnsupportedVersion` for one from a newer strata.
    pub fn decode(payload: &[u8]) -> Option<Result<Self>> {
        let mut r = Reader::new(payload);
        if r.u64() != Some(MARKER) || r.u32() != Some(0) {
            return None;
        }
        Some(Self::decode_body(&mut r, payload.len()))
    }

    fn decode_body(r: &mut Reader<'_>, len: usize) -> Result<Self> {
        let version = match r.u32() {
            Some(v @ 1..=WAL_FORMAT_VERSION) => v,
            Some(0) | None => {
                return Err(Error::corruption(format!("WAL header of {len} bytes has no version")))
            }
            Some(found) => {
                return Err(Error::UnsupportedVersion { what: "WAL", found, supported: WAL_FORMAT_VERSION })
            }
        };
        let expected = if version == 1 { V1_HEADER_BYTES } else { HEADER_BYTES };
        let fields: Vec<u64> = std::iter::from_fn(|| r.u64()).take(4).collect();
        if len != expected || !r.is_empty() {
            return Err(Error::corruption(format!("WAL header is {len} bytes, expected {expected}")));
        }
        Ok(match (version, fields.as_slice()) {
            (1, &[unsynced_wal, unsynced_last_seq]) => {
                Self { version, prev_wal: 0, prev_last_seq: 0, unsynced_wal, unsynced_last_seq }
            }
            (_, &[prev_wal, prev_last_seq, unsynced_wal, unsynced_last_seq]) => {
                Self { version, prev_wal, prev_last_seq, unsynced_wal, unsynced_last_seq }
            }
            _ => return Err(Error::corruption(format!("WAL header is {len} bytes, expected {expected}"))),
        })
    }

    /// Why the WAL this header opens may not be replayed after the WALs before it, or `None`
    /// when it may. `log_number` is the MANIFEST's (WALs below it were flushed: their records
    /// are in tables), `present` says whether a WAL file exists, and `replayed_upto` gives the
    /// last sequence number replayed from an earlier WAL that held any record.
    pub fn chain_break(
        &self,
        log_number: u64,
        present: impl Fn(u64) -> bool,
        replayed_upto: impl Fn(u64) -> Option<u64>,
    ) -> Option<ChainBreak> {
        let needed = |wal: u64, seq: u64| wal != 0 && wal >= log_number && seq > 0;
        // The predecessor held no unsynced batch when this WAL was created: all of it was
        // durable, so a shortfall is damage, not a power cut.
        let prev_durable = self.unsynced_wal != self.prev_wal;
        if needed(self.prev_wal, self.prev_last_seq) {
            if !present(self.prev_wal) {
                let reason = format!(
                    "its predecessor WAL {:06}.log is missing (it held records up to sequence {})",
                    self.prev_wal, self.prev_last_seq
                );
                return Some(ChainBreak { reason, predecessor_was_durable: prev_durable });
            }
            let reached = replayed_upto(self.prev_wal).unwrap_or(0);
            if reached < self.prev_last_seq {
                let reason = format!(
                    "its predecessor WAL {:06}.log ends at sequence {reached}, not at {}",
                    self.prev_wal, self.prev_last_seq
                );
                return Some(ChainBreak { reason, predecessor_was_durable: prev_durable });
            }
        }
        if needed(self.unsynced_wal, self.unsynced_last_seq) {
            let reached = replayed_upto(self.unsynced_wal).unwrap_or(0);
            if reached < self.unsynced_last_seq {
                let reason = format!(
                    "WAL {:06}.log ends at sequence {reached}, not at {} (its unsynced tail was lost)",
                    self.unsynced_wal, self.unsynced_last_seq
                );
                return Some(ChainBreak { reason, predecessor_was_durable: false });
            }
        }
        None
    }

    /// True when this header proves every record of WAL `wal` was durable: `wal` is this WAL's
    /// predecessor or older, and no WAL held unsynced records when this one was created.
    pub fn proves_durable(&self, wal: u64) -> bool {
        self.version >= 2 && self.unsynced_wal == 0 && self.prev_wal >= wal && self.prev_last_seq > 0
    }
}

/// Why a WAL may not be replayed after the ones before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainBreak {
    /// What is missing.
    pub reason: String,
    /// The missing part had been made durable (so losing it is corruption, not a power cut).
    pub predecessor_was_durable: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::WriteBatch;

    fn encoded(h: WalHeader) -> Vec<u8> {
        let mut v = Vec::new();
        h.encode_to(&mut v);
        v
    }

    #[test]
    fn round_trips_and_has_the_documented_length() {
        let full = WalHeader {
            version: 2,
            prev_wal: 7,
            prev_last_seq: (1 << 56) - 1,
            unsynced_wal: 6,
            unsynced_last_seq: 5,
        };
        for h in [WalHeader::first(), full] {
            let bytes = encoded(h);
            assert_eq!(bytes.len(), HEADER_BYTES);
            assert_eq!(WalHeader::decode(&bytes).unwrap().unwrap(), h);
        }
    }

    #[test]
    fn a_write_batch_is_not_a_header() {
        let mut b = WriteBatch::new();
        b.put(b"k", b"v");
        let mut payload = vec![0u8; 12];
        payload[..8].copy_from_slice(&((1u64 << 56) - 1).to_le_bytes());
        payload.extend_from_slice(b.body());
        assert!(WalHeader::decode(&payload).is_none());
        assert!(WalHeader::decode(&[]).is_none());
        assert!(WalHeader::decode(&[0xFF; 11]).is_none());
    }

    #[test]
    fn damaged_or_newer_headers_are_typed_errors() {
        let good = encoded(WalHeader { version: 2, prev_wal: 3, prev_last_seq: 9, ..WalHeader::default() });
        for cut in 12..good.len() {
            assert!(matches!(WalHeader::decode(&good[..cut]), Some(Err(Error::Corruption(_)))), "cut {cut}");
        }
        let mut long = good.clone();
        long.push(0);
        assert!(matches!(WalHeader::decode(&long), Some(Err(Error::Corruption(_)))));
        let mut newer = good.clone();
        newer[12..16].copy_from_slice(&3u32.to_le_bytes());
        let e = WalHeader::decode(&newer).unwrap().unwrap_err();
        assert!(matches!(e, Error::UnsupportedVersion { what: "WAL", found: 3, supported: 2 }), "{e:?}");
    }

    #[test]
    fn version_1_headers_still_read() {
        let mut v1 = Vec::new();
        v1.extend_from_slice(&MARKER.to_le_bytes());
        v1.extend_from_slice(&0u32.to_le_bytes());
        v1.extend_from_slice(&1u32.to_le_bytes());
        v1.extend_from_slice(&5u64.to_le_bytes());
        v1.extend_from_slice(&100u64.to_le_bytes());
        let h = WalHeader::decode(&v1).unwrap().unwrap();
        assert_eq!(
            h,
            WalHeader { version: 1, prev_wal: 0, prev_last_seq: 0, unsynced_wal: 5, unsynced_last_seq: 100 }
        );
    }

    #[test]
    fn record_flags_round_trip_and_only_in_version_2() {
        let mut b = vec![0u8; 12];
        b[..8].copy_from_slice(&((1u64 << 56) - 1).to_le_bytes());
        let f = RecordFlags::new(true, false);
        f.store(&mut b);
        let mut v1 = b.clone();
        assert_eq!(RecordFlags::take(1, &mut v1), RecordFlags::default());
        assert_eq!(RecordFlags::take(2, &mut b), f);
        assert!(f.earlier_wals_durable() && !f.prefix_durable());
        assert_eq!(u64::from_le_bytes(b[..8].try_into().unwrap()), (1u64 << 56) - 1);
    }

    #[test]
    fn chain_rule() {
        let h = WalHeader { version: 2, prev_wal: 5, prev_last_seq: 100, ..WalHeader::default() };
        let present = |n: u64| n == 5;
        let replayed = |upto: Option<u64>| move |n: u64| (n == 5).then_some(upto).flatten();
        assert!(WalHeader::first().chain_break(9, present, replayed(None)).is_none());
        assert!(h.chain_break(6, |_| false, replayed(None)).is_none(), "flushed predecessor");
        assert!(h.chain_break(5, present, replayed(Some(100))).is_none());
        assert!(h.chain_break(5, present, replayed(Some(101))).is_none());
        let short = h.chain_break(5, present, replayed(Some(99))).unwrap();
        assert!(short.reason.contains("ends at sequence 99") && short.predecessor_was_durable);
        assert!(h.chain_break(5, |_| false, replayed(None)).unwrap().reason.contains("missing"));
        let unsynced_prev = WalHeader { unsynced_wal: 5, unsynced_last_seq: 100, ..h };
        assert!(!unsynced_prev.chain_break(5, present, replayed(Some(99))).unwrap().predecessor_was_durable);
        assert!(h.proves_durable(5) && h.proves_durable(4) && !h.proves_durable(6));
        assert!(!unsynced_prev.proves_durable(5));
        let empty_prev = WalHeader { prev_last_seq: 0, ..h };
        assert!(empty_prev.chain_break(5, |_| false, replayed(None)).is_none(), "an empty WAL lost nothing");
        let unsynced =
            WalHeader { version: 2, unsynced_wal: 4, unsynced_last_seq: 10, ..WalHeader::default() };
        assert!(unsynced.chain_break(4, present, |_| Some(9)).unwrap().reason.contains("unsynced"));
    }
}
