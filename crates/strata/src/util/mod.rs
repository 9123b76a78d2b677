//! Small shared helpers: integer coding and checksums. Nothing here knows about files or keys.

pub mod coding;
pub mod compress;
pub mod crc;
