//! Shared helpers of the fuzz targets: in-memory files over the fuzzer's bytes.

use strata::fs::RandomAccessFile;

/// A read-only file over a byte vector. Odd-length inputs also offer themselves as a memory
/// mapping, so both the copying and the zero-copy read paths get fuzzed.
pub struct MemFile(pub Vec<u8>);

impl RandomAccessFile for MemFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> strata::Result<()> {
        let start = usize::try_from(offset).map_err(|_| strata::Error::corruption("offset"))?;
        let src = self.0.get(start..start.saturating_add(buf.len())).ok_or_else(|| strata::Error::corruption("eof"))?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
    fn mapped(&self) -> Option<&[u8]> {
        (self.0.len() % 2 == 1).then_some(&self.0[..])
    }
}
