//! Small shared helpers: integer coding, checksums, compression, prefetch hints and the
//! verified-record map. Nothing here knows about files or keys.

pub mod coding;
pub mod compress;
pub mod crc;
pub mod prefetch;
pub mod verified;
