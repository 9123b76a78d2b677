//! Decodes arbitrary bytes as a WAL payload: the header record that opens each WAL, or a write
//! batch (the `wal` target rarely gets here with chosen bytes, since its records need valid
//! checksums).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match strata::internal::wal_header::WalHeader::decode(data) {
        Some(header) => drop(header),
        None => drop(strata::batch::decode_payload(data)),
    }
});
