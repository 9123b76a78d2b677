//! Decodes arbitrary bytes as a WAL payload (write batch).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = strata::batch::decode_payload(data);
});
