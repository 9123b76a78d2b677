//! Opens arbitrary bytes as an SST file (footer, index, filter, properties), then reads it.
#![no_main]
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use strata::fs::RandomAccessFile;
use strata::iter::InternalIterator;
use strata::sst::Table;

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
        // Exercise the zero-copy path on odd lengths, the copying path on even ones.
        (self.0.len() % 2 == 1).then_some(&self.0[..])
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(table) = Table::open(Arc::new(Bytes(data.to_vec())), 1, None) else { return };
    let table = Arc::new(table);
    let _ = table.verify_checksums();
    let mut it = table.iter(false);
    it.seek_to_first();
    let mut n = 0;
    while it.valid() && n < 10_000 {
        it.next();
        n += 1;
    }
    it.seek_to_last();
    if it.valid() {
        it.prev();
    }
    let probe = data.get(..data.len().min(16)).unwrap_or_default();
    let _ = table.get(probe, false, &mut |_, _| true);
    let _ = table.may_contain(probe);
});
