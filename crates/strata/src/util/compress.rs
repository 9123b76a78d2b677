//! Block and blob compression codecs behind one pair of functions, keyed by [`Compression`].

use crate::error::{Error, Result};
use crate::options::Compression;

/// Compresses `input` into `out` (cleared first).
pub fn compress(kind: Compression, input: &[u8], out: &mut Vec<u8>) -> Result<()> {
    out.clear();
    match kind {
        Compression::None => out.extend_from_slice(input),
        Compression::Snappy => {
            out.resize(snap::raw::max_compress_len(input.len()), 0);
            let n = snap::raw::Encoder::new()
                .compress(input, out)
                .map_err(|e| Error::InvalidArgument(format!("snappy: {e}")))?;
            out.truncate(n);
        }
        Compression::Lz4 => *out = lz4_flex::block::compress_prepend_size(input),
        Compression::Zstd => {
            #[cfg(feature = "zstd")]
            {
                *out = zstd::bulk::compress(input, 1)?;
            }
            #[cfg(not(feature = "zstd"))]
            return Err(Error::InvalidArgument("zstd support was not compiled in".into()));
        }
    }
    Ok(())
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
        for kind in kinds {
            let mut c = Vec::new();
            compress(kind, &data, &mut c).unwrap();
            assert_eq!(decompress(kind, &c, 1 << 20).unwrap(), data, "{kind:?}");
            if kind != Compression::None {
                assert!(decompress(kind, &[0xff; 16], 1 << 20).is_err(), "{kind:?}");
                assert!(decompress(kind, &c, 100).is_err(), "{kind:?} limit");
            }
        }
    }
}
