//! Compaction: choosing what to rewrite (`picker`, a pure function of a version and the options),
//! deciding which versions of each key survive (`retention`), and writing the output tables and
//! blob files (`job`). Flush reuses `retention` and `job` with a memtable as input.

pub mod job;
pub mod picker;
pub(crate) mod range_dels;
pub mod retention;
