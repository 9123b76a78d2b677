//! Decodes arbitrary bytes as a MANIFEST record (one or more version edits, possibly of several
//! column families); decoded edits must re-encode to bytes that decode to the same edits.
#![no_main]
use libfuzzer_sys::fuzz_target;
use strata::internal::version::VersionEdit;

fuzz_target!(|data: &[u8]| {
    if let Ok(edits) = VersionEdit::decode_group(data) {
        let again = VersionEdit::decode_group(&VersionEdit::encode_group(&edits)).expect("re-encoded record decodes");
        assert_eq!(edits, again);
    }
    if let Ok(edit) = VersionEdit::decode(data) {
        let again = VersionEdit::decode(&edit.encode()).expect("re-encoded edit decodes");
        assert_eq!(edit, again);
    }
});
