//! In-memory files for the unit tests of the file readers (sst, fs): a shared writable buffer
//! and read-only byte vectors, with and without a memory mapping. Test-only; no real IO.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::fs::{RandomAccessFile, WritableFile};

/// A writable file whose bytes stay readable through the shared handle.
#[derive(Clone, Default)]
pub struct MemWritable(pub Arc<Mutex<Vec<u8>>>);

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.0.lock().extend_from_slice(data);
        Ok(())
    }
    fn sync_data(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.lock().len() as u64
    }
}

/// A read-only file over a byte vector.
pub struct MemRandom(pub Vec<u8>);

impl RandomAccessFile for MemRandom {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let start = usize::try_from(offset).map_err(|_| Error::InvalidArgument("offset".into()))?;
        let src = self.0.get(start..start.saturating_add(buf.len())).ok_or_else(|| {
            Error::from(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "read past end"))
        })?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
}

/// A read-only file over a byte vector that also offers itself as a memory mapping, so the
/// table's zero-copy path runs.
pub struct MappedMemRandom(pub MemRandom);

impl RandomAccessFile for MappedMemRandom {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.0.read_exact_at(offset, buf)
    }
    fn size(&self) -> u64 {
        self.0.size()
    }
    fn mapped(&self) -> Option<&[u8]> {
        Some(&self.0 .0)
    }
}
