//! Small shared helpers: integer coding, checksums, compression, prefetch hints, the
//! verified-record map and catching panics. Nothing here knows about files or keys.

pub mod coding;
pub mod compress;
pub mod crc;
pub mod panics;
pub mod prefetch;
pub mod verified;
