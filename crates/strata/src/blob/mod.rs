//! placeholder: filled in by the blob work.
