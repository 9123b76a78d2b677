//! Opens arbitrary bytes as a blob file, walks and verifies it, and follows a pointer taken from
//! the input.
#![no_main]
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use strata::internal::blob::{BlobPointer, BlobReader};
use strata_fuzz::MemFile;

fuzz_target!(|data: &[u8]| {
    let file_number = 7;
    let Ok(reader) = BlobReader::open(Arc::new(MemFile(data.to_vec())), file_number) else { return };
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
