//! Little-endian fixed-width and LEB128 varint coding. Every persisted integer goes through here,
//! so byte order is decided in one place. Decoders never panic: they return `None` on short input.

/// Appends `v` as 4 little-endian bytes.
pub fn put_u32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as 8 little-endian bytes.
pub fn put_u64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Reads 4 little-endian bytes at the start of `src`.
pub fn get_u32(src: &[u8]) -> Option<u32> {
    let b: [u8; 4] = src.get(..4)?.try_into().ok()?;
    Some(u32::from_le_bytes(b))
}

/// Reads 8 little-endian bytes at the start of `src`.
pub fn get_u64(src: &[u8]) -> Option<u64> {
    let b: [u8; 8] = src.get(..8)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

/// Appends `v` as a LEB128 varint (1 to 10 bytes).
pub fn put_varint(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Decodes a varint from the start of `src`; returns the value and the bytes consumed.
#[inline]
pub fn get_varint(src: &[u8]) -> Option<(u64, usize)> {
    // Most varints in blocks and pointers are single bytes: no loop, no call.
    match src.first() {
        Some(&b) if b < 0x80 => Some((u64::from(b), 1)),
        _ => get_multibyte_varint(src),
    }
}

fn get_multibyte_varint(src: &[u8]) -> Option<(u64, usize)> {
    // Bytes 0..=8 carry 63 bits: only a tenth byte can overflow, so the loop checks nothing
    // but the continuation bit (blob pointers decode two multi-byte varints per entry read).
    let mut v: u64 = 0;
    for (i, &b) in src.iter().take(9).enumerate() {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Some((v, i + 1));
        }
    }
    match src.get(9) {
        Some(&b) if b <= 1 => Some((v | u64::from(b) << 63, 10)),
        _ => None, // truncated, or would overflow 64 bits
    }
}

/// Appends a varint length followed by the bytes.
pub fn put_length_prefixed(dst: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(dst, bytes.len() as u64);
    dst.extend_from_slice(bytes);
}

/// A cursor over a byte slice for decoders: each getter advances or returns `None`.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Starts reading at the beginning of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }
    /// Bytes not yet consumed.
    pub fn remaining(&self) -> &'a [u8] {
        self.buf
    }
    /// True when everything was consumed.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    /// Reads one byte.
    pub fn u8(&mut self) -> Option<u8> {
        let (&b, rest) = self.buf.split_first()?;
        self.buf = rest;
        Some(b)
    }
    /// Reads a fixed 4-byte integer.
    pub fn u32(&mut self) -> Option<u32> {
        let v = get_u32(self.buf)?;
        self.buf = &self.buf[4..];
        Some(v)
    }
    /// Reads a fixed 8-byte integer.
    pub fn u64(&mut self) -> Option<u64> {
        let v = get_u64(self.buf)?;
        self.buf = &self.buf[8..];
        Some(v)
    }
    /// Reads a varint.
    #[inline]
    pub fn varint(&mut self) -> Option<u64> {
        let (v, n) = get_varint(self.buf)?;
        self.buf = &self.buf[n..];
        Some(v)
    }
    /// Reads a varint that fits in u32.
    #[inline]
    pub fn varint32(&mut self) -> Option<u32> {
        u32::try_from(self.varint()?).ok()
    }
    /// Reads `n` raw bytes.
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.buf.len() < n {
            return None;
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Some(head)
    }
    /// Reads a varint length and that many bytes.
    pub fn length_prefixed(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.varint()?).ok()?;
        self.bytes(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Number of bytes `put_varint` should write for `v`: one per started 7 bits.
    fn varint_len(mut v: u64) -> usize {
        let mut n = 1;
        while v >= 0x80 {
            v >>= 7;
            n += 1;
        }
        n
    }

    #[test]
    fn varint_round_trip_and_lengths() {
        for v in [0u64, 1, 127, 128, 300, 1 << 35, u64::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(b.len(), varint_len(v));
            assert_eq!(get_varint(&b), Some((v, b.len())));
        }
    }

    #[test]
    fn truncated_and_overlong_varints_are_rejected() {
        assert_eq!(get_varint(&[0x80]), None);
        assert_eq!(get_varint(&[0xff; 11]), None);
    }

    proptest::proptest! {
        /// The decoder agrees with a plain one (no fast paths) on any bytes.
        #[test]
        fn get_varint_matches_a_plain_decoder(src in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..12)) {
            let plain = || {
                let mut v: u64 = 0;
                for (i, &b) in src.iter().enumerate().take(10) {
                    if i == 9 && b > 1 {
                        return None;
                    }
                    v |= u64::from(b & 0x7f) << (7 * i);
                    if b < 0x80 {
                        return Some((v, i + 1));
                    }
                }
                None
            };
            proptest::prop_assert_eq!(get_varint(&src), plain());
        }
    }

    #[test]
    fn reader_stops_on_short_input() {
        let mut r = Reader::new(&[1, 2, 3]);
        assert_eq!(r.u32(), None);
        assert_eq!(r.u8(), Some(1));
        assert_eq!(r.bytes(5), None);
        assert_eq!(r.bytes(2), Some(&[2u8, 3][..]));
        assert!(r.is_empty());
    }
}
