//! Decodes arbitrary bytes as a table's range-deletion block. Whatever decodes must hold only
//! non-empty ranges in internal-key order, survive a re-encode unchanged, and fragment into
//! disjoint pieces that answer point questions like the raw tombstones do.
#![no_main]
use libfuzzer_sys::fuzz_target;
use strata::internal::range_del::{decode, encode, Fragments};

fuzz_target!(|data: &[u8]| {
    let Ok(tombstones) = decode(data.to_vec()) else { return };
    assert!(tombstones.iter().all(|t| t.begin < t.end));
    let (bytes, count) = encode(&tombstones);
    assert_eq!(count, tombstones.len());
    assert_eq!(decode(bytes).expect("a re-encoded block decodes"), tombstones);
    let fragments = Fragments::new(tombstones.iter().cloned());
    let probes = tombstones.iter().flat_map(|t| [t.begin.clone(), t.end.clone()]).take(64);
    for k in probes {
        let want = tombstones.iter().filter(|t| t.contains(&k)).map(|t| t.seq).max();
        assert_eq!(fragments.newest_covering(&k, u64::MAX), want);
    }
});
