//! Iterators over tables that fail a read (`FaultFs` fails the Nth `.sst` read, for every N up
//! to where the scan ends): the scan must either return exactly what it returns without the
//! fault, or end with an error in `status()`; and it never returns a key outside its bounds.
//!
//! Found by `strata-stress faults` (seed-independent): a reverse scan with `upper_bound` whose
//! first table read failed returned the upper bound itself and later keys, with `status()` Ok. The
//! failing table dropped out of the merge during `seek(upper)`, came back on the re-seek of the
//! direction change in `prev()` at the last key <= the current one, which can be >= `upper`,
//! and the re-seek cleared its error. The second test shows the cleared error on its own: a
//! forward walk that lost a table to a read error, then stepped back, ended `Ok` having skipped
//! keys.

use std::path::PathBuf;
use std::sync::Arc;

use strata::{Db, Options, ReadOptions, WriteOptions};
use strata_testkit::{FaultFs, MemFs, Op, Rng, Rule, When};

const KEYS: u32 = 8000;

fn key(i: u32) -> Vec<u8> {
    format!("k{i:08}").into_bytes()
}

/// About 20 tables in the last level (incompressible 150-byte values, no block cache, so every
/// block read reaches the filesystem), two L0 tables and a memtable over them.
fn setup() -> (Db, FaultFs) {
    let fs = FaultFs::new(Arc::new(MemFs::new()));
    let opts = Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 64 << 10,
        target_file_size: 64 << 10,
        level0_compaction_trigger: 2,
        cache_size: 0,
        ..Options::default()
    };
    let db = Db::open(PathBuf::from("/db"), opts).unwrap();
    let w = WriteOptions::default();
    for round in 0..4u32 {
        for i in (0..KEYS).filter(|i| i % 4 == round) {
            let mut v = vec![0u8; 150];
            Rng::new(u64::from(i)).fill(&mut v);
            db.put_opt(&w, &key(i), &v).unwrap();
        }
        db.flush().unwrap();
    }
    db.compact_range(None, None).unwrap();
    for i in (0..KEYS).step_by(7) {
        db.put_opt(&w, &key(i), b"l0").unwrap();
    }
    db.flush().unwrap();
    for i in (0..KEYS).step_by(11) {
        db.put_opt(&w, &key(i), b"mem").unwrap();
    }
    (db, fs)
}

/// Runs `walk` without a fault, then with the Nth `.sst` read failing for N in `1..=faults`;
/// returns a description of every run that ended `Ok` with other keys, or that went out of
/// `bounds`.
fn compare_under_faults(
    db: &Db,
    fs: &FaultFs,
    faults: u64,
    bounds: (Vec<u8>, Vec<u8>),
    walk: impl Fn(&Db) -> (Vec<Vec<u8>>, strata::Result<()>),
) -> Vec<String> {
    let (want, status) = walk(db);
    status.unwrap();
    let mut bad = Vec::new();
    for n in 1..=faults {
        fs.add_rule(Rule::new(Op::Read).on_path(".sst").when(When::Nth(n)));
        let (got, status) = walk(db);
        fs.clear();
        let outside = got.iter().find(|k| **k < bounds.0 || **k >= bounds.1);
        if let Some(k) = outside {
            bad.push(format!(
                "fault #{n}: key {} out of bounds (status {status:?})",
                String::from_utf8_lossy(k)
            ));
        } else if status.is_ok() && got != want {
            let i = got.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(got.len().min(want.len()));
            bad.push(format!(
                "fault #{n}: status Ok but other keys from entry {i} ({} vs {} keys)",
                got.len(),
                want.len()
            ));
        }
    }
    bad
}

#[test]
fn a_bounded_scan_with_a_failed_table_read_stays_in_bounds_or_reports_the_error() {
    let (db, fs) = setup();
    let mut bad = Vec::new();
    for reverse in [false, true] {
        for (lo, hi) in [(100u32, 300u32), (700, 702), (1500, 7990)] {
            let walk = |db: &Db| {
                let ro = ReadOptions {
                    lower_bound: Some(key(lo)),
                    upper_bound: Some(key(hi)),
                    ..ReadOptions::new()
                };
                let mut it = db.cursor(&ro).unwrap();
                if reverse {
                    it.seek_to_last()
                } else {
                    it.seek_to_first()
                }
                let mut out = Vec::new();
                while it.valid() && out.len() < 1000 {
                    out.push(it.key().to_vec());
                    if reverse {
                        it.prev()
                    } else {
                        it.next()
                    }
                }
                (out, it.status())
            };
            for b in compare_under_faults(&db, &fs, 60, (key(lo), key(hi)), walk) {
                bad.push(format!("reverse={reverse} {lo}..{hi}: {b}"));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn a_read_error_before_a_change_of_direction_is_not_forgotten() {
    let (db, fs) = setup();
    let mut bad = Vec::new();
    for (start, fwd, back) in [(100u32, 400usize, 300usize), (3000, 50, 100), (5000, 1000, 1000)] {
        let walk = |db: &Db| {
            let mut it = db.cursor(&ReadOptions::new()).unwrap();
            it.seek(&key(start));
            let mut out = Vec::new();
            for i in 0..fwd + back {
                if !it.valid() {
                    break;
                }
                out.push(it.key().to_vec());
                if i < fwd {
                    it.next()
                } else {
                    it.prev()
                }
            }
            (out, it.status())
        };
        for b in compare_under_faults(&db, &fs, 80, (Vec::new(), vec![0xff]), walk) {
            bad.push(format!("from k{start:08}, {fwd} forward then {back} back: {b}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
