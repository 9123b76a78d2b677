//! Small shared helpers: integer coding, checksums, compression, prefetch hints, the
//! verified-record map, catching panics, adaptive spin-waiting and short sleeps without timer
//! slack, the memory limit of the process (machine and cgroups),
//! and the crash tests' kill points (inert unless the `kill-points` feature is on).
//! Nothing here knows about files or keys.

pub mod coding;
pub mod compress;
pub mod crc;
pub mod hash;
pub mod kill_point;
pub mod memory_limit;
pub mod panics;
pub mod prefetch;
pub mod sleep;
pub mod spin;
pub mod verified;
