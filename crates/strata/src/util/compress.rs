//! Block and blob compression codecs behind one pair of functions, keyed by [`Compression`]
//! (which lives here, below `options`, so that util imports nothing of the engine; `options`
//! re-exports it).

use crate::error::{Error, Result};

/// Block compression, chosen per level with
/// [`Options::compression_per_level`](crate::Options::compression_per_level) (and for blob values
/// with [`Options::blob_compression`](crate::Options::blob_compression)). Every codec is always
/// readable; `Zstd` can only be written when the `zstd` feature (on by default) is compiled in.
/// Each block records its codec, so changing the option applies to new files only.
///
/// ```
/// use strata::{Compression, Options};
/// let mut opts = Options::default();
/// opts.compression_per_level = vec![Compression::None, Compression::Lz4, Compression::Zstd];
/// assert_eq!(opts.compression_for_level(0), Compression::None);
/// assert_eq!(opts.compression_for_level(6), Compression::Zstd); // the last entry applies below
/// assert_eq!(Compression::parse("LZ4")?, Compression::Lz4);
/// assert_eq!(Compression::Snappy.name(), "snappy");
/// # Ok::<(), strata::Error>(())
/// ```
// The discriminants are persisted in block trailers: DO NOT CHANGE THEM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Compression {
    /// Stored as is.
    None = 0,
    /// Snappy (the `snap` crate).
    Snappy = 1,
    /// LZ4 block format (the `lz4_flex` crate).
    Lz4 = 2,
    /// Zstandard (the `zstd` crate, feature `zstd`).
    Zstd = 3,
}

impl Compression {
    /// Decodes a persisted compression byte (the `as u8` value); `None` for an unknown byte.
    ///
    /// ```
    /// use strata::Compression;
    /// assert_eq!(Compression::from_u8(Compression::Lz4 as u8), Some(Compression::Lz4));
    /// assert_eq!(Compression::from_u8(9), None);
    /// ```
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            0 => Some(Self::None),
            1 => Some(Self::Snappy),
            2 => Some(Self::Lz4),
            3 => Some(Self::Zstd),
            _ => None,
        }
    }

    /// Parses db_bench's `--compression_type` names (`none`/`no`/`nocompression`, `snappy`,
    /// `lz4`, `zstd`; case-insensitive).
    ///
    /// # Errors
    /// `InvalidArgument` for any other name.
    ///
    /// ```
    /// use strata::Compression;
    /// assert_eq!(Compression::parse("NoCompression")?, Compression::None);
    /// assert!(matches!(Compression::parse("gzip"), Err(strata::Error::InvalidArgument(_))));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn parse(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "none" | "no" | "nocompression" => Ok(Self::None),
            "snappy" => Ok(Self::Snappy),
            "lz4" => Ok(Self::Lz4),
            "zstd" => Ok(Self::Zstd),
            other => Err(Error::InvalidArgument(format!(
                "compression_type: unknown value {other:?} (expected none, snappy, lz4 or zstd)"
            ))),
        }
    }

    /// The name of this compression in OPTIONS files; [`Compression::parse`] reads it back.
    ///
    /// ```
    /// use strata::Compression;
    /// for c in [Compression::None, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
    ///     assert_eq!(Compression::parse(c.name())?, c);
    /// }
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Snappy => "snappy",
            Self::Lz4 => "lz4",
            Self::Zstd => "zstd",
        }
    }
}

/// Compresses one input after another, keeping the codec's state and the output buffer between
/// calls. Flush compresses every blob value on its own (800 bytes in the benchmarks), so a fresh
/// snappy encoder (which zeroes a 2 KiB hash table when built) and a zero-filled output buffer
/// per value would be a fixed cost paid tens of thousands of times per memtable.
pub struct Compressor {
    snappy: snap::raw::Encoder,
    /// Output of the last call; for snappy only its first bytes are meaningful, the rest is
    /// kept (not truncated) so the next call need not zero it again.
    out: Vec<u8>,
}

impl Default for Compressor {
    fn default() -> Self {
        Self::new()
    }
}

impl Compressor {
    /// A compressor with no buffer allocated yet.
    pub fn new() -> Self {
        Self { snappy: snap::raw::Encoder::new(), out: Vec::new() }
    }

    /// Compresses `input` with `kind`; the result is valid until the next call.
    pub fn compress(&mut self, kind: Compression, input: &[u8]) -> Result<&[u8]> {
        match kind {
            Compression::None => {
                self.out.clear();
                self.out.extend_from_slice(input);
                Ok(&self.out)
            }
            Compression::Snappy => {
                let max = snap::raw::max_compress_len(input.len());
                if self.out.len() < max {
                    self.out.resize(max, 0);
                }
                let n = self
                    .snappy
                    .compress(input, &mut self.out)
                    .map_err(|e| Error::InvalidArgument(format!("snappy: {e}")))?;
                Ok(&self.out[..n])
            }
            Compression::Lz4 => {
                self.out = lz4_flex::block::compress_prepend_size(input);
                Ok(&self.out)
            }
            Compression::Zstd => {
                #[cfg(feature = "zstd")]
                {
                    self.out = zstd::bulk::compress(input, 1)?;
                    Ok(&self.out)
                }
                #[cfg(not(feature = "zstd"))]
                Err(Error::InvalidArgument("zstd support was not compiled in".into()))
            }
        }
    }
}

/// Decompresses `input`; any codec failure is `Error::Corruption`. `limit` caps the output size.
pub fn decompress(kind: Compression, input: &[u8], limit: usize) -> Result<Vec<u8>> {
    let bad = |what: &str, e: &dyn std::fmt::Display| {
        Error::corruption(format!("{what} decompression failed: {e}"))
    };
    match kind {
        Compression::None => Ok(input.to_vec()),
        Compression::Snappy => {
            let n = snap::raw::decompress_len(input).map_err(|e| bad("snappy", &e))?;
            if n > limit {
                return Err(Error::corruption(format!("snappy block claims {n} bytes, limit {limit}")));
            }
            snap::raw::Decoder::new().decompress_vec(input).map_err(|e| bad("snappy", &e))
        }
        Compression::Lz4 => {
            let n = crate::util::coding::get_u32(input)
                .ok_or_else(|| Error::corruption("lz4 block too short"))?;
            if n as usize > limit {
                return Err(Error::corruption(format!("lz4 block claims {n} bytes, limit {limit}")));
            }
            lz4_flex::block::decompress_size_prepended(input).map_err(|e| bad("lz4", &e))
        }
        Compression::Zstd => {
            #[cfg(feature = "zstd")]
            {
                // bulk::decompress allocates its whole capacity up front: size it from the frame
                // header (our writers always record it) rather than the caller's cap.
                let capacity = match zstd::zstd_safe::get_frame_content_size(input) {
                    Ok(Some(n)) if n > limit as u64 => {
                        return Err(Error::corruption(format!("zstd block claims {n} bytes, limit {limit}")))
                    }
                    Ok(Some(n)) => n as usize,
                    _ => limit,
                };
                zstd::bulk::decompress(input, capacity).map_err(|e| bad("zstd", &e))
            }
            #[cfg(not(feature = "zstd"))]
            Err(Error::corruption("zstd block found but zstd support was not compiled in"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_round_trips_and_rejects_garbage() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 7) as u8).collect();
        let mut kinds = vec![Compression::None, Compression::Snappy, Compression::Lz4];
        if cfg!(feature = "zstd") {
            kinds.push(Compression::Zstd);
        }
        let mut compressor = Compressor::new();
        for kind in kinds {
            let c = compressor.compress(kind, &data).unwrap().to_vec();
            assert_eq!(decompress(kind, &c, 1 << 20).unwrap(), data, "{kind:?}");
            if kind != Compression::None {
                assert!(decompress(kind, &[0xff; 16], 1 << 20).is_err(), "{kind:?}");
                assert!(decompress(kind, &c, 100).is_err(), "{kind:?} limit");
            }
        }
    }

    #[test]
    fn a_reused_compressor_gives_each_input_exactly_its_own_output() {
        let mut compressor = Compressor::new();
        let inputs: Vec<Vec<u8>> = [5000usize, 10, 800, 0, 3000, 1]
            .iter()
            .enumerate()
            .map(|(i, &n)| (0..n).map(|b| ((b / 3 + i) % 251) as u8).collect())
            .collect();
        for kind in [Compression::Snappy, Compression::Lz4, Compression::None] {
            for input in &inputs {
                let c = compressor.compress(kind, input).unwrap().to_vec();
                let fresh = Compressor::new().compress(kind, input).unwrap().to_vec();
                assert_eq!(c, fresh, "{kind:?}, {} bytes: reuse changed the output", input.len());
                assert_eq!(&decompress(kind, &c, 1 << 20).unwrap(), input, "{kind:?}");
            }
        }
    }
}
