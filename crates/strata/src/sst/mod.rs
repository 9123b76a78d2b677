//! placeholder: filled in by the sst work.
