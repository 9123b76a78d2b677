//! Decodes arbitrary bytes as a data or index block and walks it both ways and by seeks.
#![no_main]
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use strata::internal::iter::InternalIterator;
use strata::internal::sst::Block;

fuzz_target!(|data: &[u8]| {
    let Ok(block) = Block::new(data.to_vec()) else { return };
    let block = Arc::new(block);
    let mut it = block.iter();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() && n < 10_000 {
        let _ = (it.key(), it.value());
        it.next();
        n += 1;
    }
    it.seek_to_last();
    while it.valid() && n < 20_000 {
        it.prev();
        n += 1;
    }
    let target = data.get(..data.len().min(24)).unwrap_or_default();
    it.seek(target);
    it.seek_for_prev(target);
    let _ = it.status();
});
