//! CRC32C checksums, masked the way LevelDB masks them so a checksum stored inside checksummed
//! data does not checksum to a fixed point.

use crc_fast::{CrcAlgorithm, Digest};

const MASK_DELTA: u32 = 0xa282_ead8;

/// CRC32C of `data`.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc_fast::crc32_iscsi(data)
}

/// Extends a running CRC32C with more data: `extend(crc32c(a), b) == crc32c(a ++ b)`.
pub fn extend(crc: u32, data: &[u8]) -> u32 {
    // A finished CRC32C is its register xor 0xffffffff; the digest continues from the register.
    let mut digest = Digest::new_with_init_state(CrcAlgorithm::Crc32Iscsi, u64::from(!crc));
    digest.update(data);
    digest.finalize() as u32
}

/// Masks a CRC for storage.
pub fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverts [`mask`].
pub fn unmask(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn matches_the_standard_check_value() {
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c(b""), 0);
    }

    proptest! {
        #[test]
        fn matches_the_reference_implementation(
            a in proptest::collection::vec(any::<u8>(), 0..3000),
            b in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            prop_assert_eq!(crc32c(&a), crc32c::crc32c(&a));
            prop_assert_eq!(extend(crc32c(&a), &b), crc32c::crc32c_append(crc32c::crc32c(&a), &b));
        }
    }

    #[test]
    fn mask_round_trips_and_changes_value() {
        let c = crc32c(b"hello");
        assert_ne!(mask(c), c);
        assert_eq!(unmask(mask(c)), c);
        assert_eq!(extend(crc32c(b"hel"), b"lo"), c);
    }
}
