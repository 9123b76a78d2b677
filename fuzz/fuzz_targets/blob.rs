//! Opens arbitrary bytes as a blob file, walks and verifies it, and follows a pointer taken from
//! the input.
#![no_main]
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use strata::blob::{BlobPointer, BlobReader};
use strata::fs::RandomAccessFile;

struct Bytes(Vec<u8>);

impl RandomAccessFile for Bytes {
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

fuzz_target!(|data: &[u8]| {
    let file_number = 7;
    let Ok(reader) = BlobReader::open(Arc::new(Bytes(data.to_vec())), file_number) else { return };
    let _ = reader.verify();
    if let Ok(records) = reader.records() {
        for (key, ptr) in records.iter().take(1000) {
            let _ = reader.get(ptr, key);
        }
    }
    let tail = data.get(data.len().saturating_sub(12)..).unwrap_or_default();
    if let Ok(ptr) = BlobPointer::decode(tail) {
        let _ = reader.get(&BlobPointer { file_number, ..ptr }, b"k");
    }
});
