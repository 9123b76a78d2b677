//! placeholder: filled in by the wal work.
