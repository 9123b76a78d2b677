//! Decodes arbitrary bytes as a MANIFEST version edit; a decoded edit must re-encode to bytes
//! that decode to the same edit.
#![no_main]
use libfuzzer_sys::fuzz_target;
use strata::internal::version::VersionEdit;

fuzz_target!(|data: &[u8]| {
    if let Ok(edit) = VersionEdit::decode(data) {
        let again = VersionEdit::decode(&edit.encode()).expect("re-encoded edit decodes");
        assert_eq!(edit, again);
    }
});
