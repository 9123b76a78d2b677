//! Compaction: choosing what to rewrite (`picker`, a pure function of a version and the options),
//! deciding which versions of each key survive (`retention`), writing the output tables and
//! blob files (`job`), and which separated values the last level moves so scans read few places
//! (`scan_locality`). Flush reuses `retention` and `job` with a memtable as input.

pub mod job;
pub mod picker;
pub(crate) mod range_dels;
pub mod retention;
pub(crate) mod scan_locality;
