//! placeholder: filled in by the version work.
