//! Constants and the checksum rule of the log format, shared by the writer and the reader so the
//! two can never disagree. Nothing here does IO.

use crate::util::crc;

/// Size of one block; physical records never cross a block boundary.
pub const BLOCK_SIZE: usize = 32 * 1024;

/// `masked crc32c u32 | length u16 | type u8`.
pub const HEADER_SIZE: usize = 7;

/// The largest payload one physical record can carry.
pub const MAX_FRAGMENT: usize = BLOCK_SIZE - HEADER_SIZE;

/// The type byte of a physical record. Persisted: DO NOT CHANGE THE VALUES. Zero is reserved so
/// that zero-filled space (a preallocated or torn tail) never parses as a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum RecordType {
    /// A whole logical record.
    Full = 1,
    /// The first fragment of a logical record.
    First = 2,
    /// An inner fragment.
    Middle = 3,
    /// The final fragment.
    Last = 4,
}

impl RecordType {
    /// Decodes a persisted type byte; `None` for zero and unknown values.
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            1 => Some(Self::Full),
            2 => Some(Self::First),
            3 => Some(Self::Middle),
            4 => Some(Self::Last),
            _ => None,
        }
    }

    /// The type of a fragment given whether it starts and/or ends its logical record.
    pub fn for_fragment(is_first: bool, is_last: bool) -> Self {
        match (is_first, is_last) {
            (true, true) => Self::Full,
            (true, false) => Self::First,
            (false, false) => Self::Middle,
            (false, true) => Self::Last,
        }
    }

    /// True for the types that begin a logical record.
    pub fn starts_record(self) -> bool {
        matches!(self, Self::Full | Self::First)
    }
}

/// The stored checksum of a physical record: masked crc32c over the type byte then the payload,
/// so a record whose type byte flipped fails its checksum.
pub fn record_checksum(kind: u8, payload: &[u8]) -> u32 {
    crc::mask(crc::extend(crc::crc32c(&[kind]), payload))
}
