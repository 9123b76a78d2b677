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

/// The WAL format version written by this build: 1 is the first with a header record. WALs
/// without one (written before it existed) are read as before, with no predecessor check.
pub const WAL_FORMAT_VERSION: u32 = 1;

/// Where a write batch holds its first sequence number. Sequence numbers are 56 bits, so no
/// batch starts with these bytes.
const MARKER: u64 = u64::MAX;

/// Encoded length of a version-1 header.
pub const HEADER_BYTES: usize = 32;

/// The first record of a WAL file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WalHeader {
    /// The newest earlier WAL that still held write batches appended since its last fdatasync
    /// when this one was created (normally the WAL this one replaced); 0 when there was none.
    pub prev_wal: u64,
    /// The last sequence number appended to `prev_wal` (meaningful only when `prev_wal != 0`).
    pub prev_last_seq: u64,
}

impl WalHeader {
    /// A header that asks nothing of earlier WALs (a WAL created at open, or after a switch
    /// from a WAL whose records were all synced).
    pub fn first() -> Self {
        Self::default()
    }

    /// Appends the encoded header to `dst`.
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        dst.extend_from_slice(&MARKER.to_le_bytes());
        dst.extend_from_slice(&0u32.to_le_bytes());
        dst.extend_from_slice(&WAL_FORMAT_VERSION.to_le_bytes());
        dst.extend_from_slice(&self.prev_wal.to_le_bytes());
        dst.extend_from_slice(&self.prev_last_seq.to_le_bytes());
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
        match r.u32() {
            Some(WAL_FORMAT_VERSION) => {}
            Some(0) | None => {
                return Err(Error::corruption(format!("WAL header of {len} bytes has no version")))
            }
            Some(found) => {
                return Err(Error::UnsupportedVersion { what: "WAL", found, supported: WAL_FORMAT_VERSION })
            }
        }
        let (Some(prev_wal), Some(prev_last_seq)) = (r.u64(), r.u64()) else {
            return Err(Error::corruption(format!("WAL header is {len} bytes, expected {HEADER_BYTES}")));
        };
        if !r.is_empty() {
            return Err(Error::corruption(format!("WAL header is {len} bytes, expected {HEADER_BYTES}")));
        }
        Ok(Self { prev_wal, prev_last_seq })
    }

    /// Whether the WAL this header opens may be replayed after the WALs before it, given the
    /// MANIFEST's log number (WALs below it were flushed: their records are in tables) and the
    /// last sequence number replayed from each earlier WAL that held any record.
    pub fn predecessor_complete(&self, log_number: u64, replayed_upto: impl Fn(u64) -> Option<u64>) -> bool {
        self.prev_wal == 0
            || self.prev_wal < log_number
            || replayed_upto(self.prev_wal).is_some_and(|seq| seq >= self.prev_last_seq)
    }
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
        for h in [WalHeader::first(), WalHeader { prev_wal: 7, prev_last_seq: (1 << 56) - 1 }] {
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
        let good = encoded(WalHeader { prev_wal: 3, prev_last_seq: 9 });
        for cut in 12..good.len() {
            assert!(matches!(WalHeader::decode(&good[..cut]), Some(Err(Error::Corruption(_)))), "cut {cut}");
        }
        let mut long = good.clone();
        long.push(0);
        assert!(matches!(WalHeader::decode(&long), Some(Err(Error::Corruption(_)))));
        let mut newer = good.clone();
        newer[12..16].copy_from_slice(&2u32.to_le_bytes());
        let e = WalHeader::decode(&newer).unwrap().unwrap_err();
        assert!(matches!(e, Error::UnsupportedVersion { what: "WAL", found: 2, supported: 1 }), "{e:?}");
    }

    #[test]
    fn predecessor_rule() {
        let h = WalHeader { prev_wal: 5, prev_last_seq: 100 };
        let replayed = |upto: Option<u64>| move |n: u64| (n == 5).then_some(upto).flatten();
        assert!(WalHeader::first().predecessor_complete(9, replayed(None)));
        assert!(h.predecessor_complete(6, replayed(None)), "flushed predecessor");
        assert!(h.predecessor_complete(5, replayed(Some(100))));
        assert!(h.predecessor_complete(5, replayed(Some(101))));
        assert!(!h.predecessor_complete(5, replayed(Some(99))), "lost tail");
        assert!(!h.predecessor_complete(5, replayed(None)), "lost file or every record");
    }
}
