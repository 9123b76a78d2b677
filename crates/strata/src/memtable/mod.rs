//! placeholder: filled in by the memtable work.
