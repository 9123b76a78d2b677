//! Races between dropping a column family and whole-database operations, found by
//! `strata-stress run --column-families 4`: a checkpoint flushes every family, and one dropped
//! while it ran made the checkpoint fail with "column family was dropped" for a family the
//! caller never named.

use std::sync::atomic::{AtomicBool, Ordering};

use strata::{Db, Options};

#[test]
fn a_checkpoint_is_not_failed_by_a_family_dropped_while_it_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open_cf(dir.path().join("db"), Options::default(), [("a", Options::default())]).unwrap();
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..400u32 {
                let cf = db.create_cf("scratch", Options::default()).unwrap();
                db.put_cf(&cf, i.to_be_bytes(), b"v").unwrap();
                db.drop_cf(&cf).unwrap();
            }
            done.store(true, Ordering::Release);
        });
        let mut n = 0;
        while !done.load(Ordering::Acquire) {
            db.put(b"k", b"v").unwrap();
            let target = dir.path().join(format!("cp{n}"));
            db.checkpoint(&target).unwrap_or_else(|e| panic!("checkpoint {n}: {e}"));
            std::fs::remove_dir_all(&target).unwrap();
            n += 1;
        }
    });
}

/// A manual compaction of a family dropped between two of its levels used to record the
/// refusal as a background error: the whole database went read-only.
#[test]
fn a_family_dropped_during_its_manual_compaction_leaves_the_database_writable() {
    let dir = tempfile::tempdir().unwrap();
    let opts = || Options { write_buffer_size: 64 << 10, ..Options::default() };
    let db = Db::open(dir.path().join("db"), opts()).unwrap();
    for round in 0..60u32 {
        let cf = db.create_cf("scratch", opts()).unwrap();
        for i in 0..400u32 {
            db.put_cf(&cf, i.to_be_bytes(), [round as u8; 200]).unwrap();
        }
        std::thread::scope(|s| {
            s.spawn(|| {
                // Refused once the drop won the race; never anything else.
                if let Err(e) = db.compact_range_cf(&cf, None, None) {
                    assert!(matches!(e, strata::Error::InvalidArgument(_)), "round {round}: {e}");
                }
            });
            std::thread::sleep(std::time::Duration::from_micros(u64::from(round) * 100));
            db.drop_cf(&cf).unwrap();
        });
        db.put(b"k", b"v").unwrap_or_else(|e| panic!("round {round}: {e}"));
    }
}
