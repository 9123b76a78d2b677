//! Opens arbitrary bytes as an SST file (footer, index, filter, properties), then reads it.
#![no_main]
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use strata_fuzz::MemFile;
use strata::internal::iter::InternalIterator;
use strata::internal::sst::Table;

fuzz_target!(|data: &[u8]| {
    let Ok(table) = Table::open(Arc::new(MemFile(data.to_vec())), 1, None) else { return };
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
