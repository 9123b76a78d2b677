//! A merge operator that panics inside a flush or a compaction is the application's bug, but it
//! must not hang the database or take the process down: the job's thread survives, the database
//! turns read-only with a `Background` error naming the panic, and it reopens with every
//! acknowledged write (the operator fixed).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata::{Db, Error, MergeOperator, Options, WriteOptions};

/// Appends operands to the base, and panics while `armed` is set.
struct Fragile {
    armed: Arc<AtomicBool>,
}

impl MergeOperator for Fragile {
    fn name(&self) -> &str {
        "fragile-append"
    }
    fn full_merge(&self, _key: &[u8], base: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
        assert!(!self.armed.load(Ordering::Relaxed), "the application's merge operator panicked");
        let mut out = base.unwrap_or_default().to_vec();
        operands.iter().for_each(|op| out.extend_from_slice(op));
        Some(out)
    }
}

fn open(dir: &std::path::Path, armed: &Arc<AtomicBool>) -> Db {
    let opts = Options {
        merge_operator: Some(Arc::new(Fragile { armed: Arc::clone(armed) })),
        ..Options::default()
    };
    Db::open(dir, opts).unwrap()
}

/// The database's table and blob files.
fn files(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sst") || n.ends_with(".blob"))
        .collect();
    names.sort();
    names
}

#[test]
fn a_merge_operator_panicking_in_a_manual_compaction_makes_the_database_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let armed = Arc::new(AtomicBool::new(false));
    let db = open(dir.path(), &armed);
    let w = WriteOptions::default();
    db.put_opt(&w, b"k", b"base").unwrap();
    // Keys before "k", so the compaction has started its output files when the operator panics.
    for i in 0..1000u32 {
        db.put_opt(&w, format!("a{i:04}").as_bytes(), &[7; 100]).unwrap();
    }
    db.flush().unwrap();
    db.merge_opt(&w, b"k", b"+1").unwrap();
    db.flush().unwrap();

    armed.store(true, Ordering::Relaxed);
    let files_before = files(dir.path());
    let err = db.compact_range(None, None).unwrap_err();
    assert!(
        matches!(&err, Error::Background { context, cause: None } if context.contains("panicked")),
        "{err:?}"
    );
    assert_eq!(files(dir.path()), files_before, "the failed compaction's partial outputs are removed");
    assert!(matches!(db.put_opt(&w, b"x", b"y"), Err(Error::Background { .. })));
    assert!(matches!(db.compact_range(None, None), Err(Error::Background { .. })));
    // A panic is not retryable: `resume` returns the error unchanged and writes stay refused.
    assert!(!err.is_retryable());
    let resumed = db.resume().expect_err("resume cleared a merge operator's panic");
    assert_eq!(resumed.to_string(), err.to_string());
    assert!(matches!(db.put_opt(&w, b"x", b"y"), Err(Error::Background { .. })));
    drop(db);

    armed.store(false, Ordering::Relaxed);
    let db = open(dir.path(), &armed);
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"base+1"[..]));
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"base+1"[..]));
    assert_eq!(db.get(b"a0999").unwrap(), Some(vec![7; 100]));
}

#[test]
fn a_merge_operator_panicking_in_a_background_compaction_makes_the_database_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let armed = Arc::new(AtomicBool::new(false));
    let db = open(dir.path(), &armed);
    let w = WriteOptions::default();
    db.put_opt(&w, b"k", b"base").unwrap();
    db.flush().unwrap();
    armed.store(true, Ordering::Relaxed);
    // The last flush brings level 0 to its compaction trigger; that compaction folds the operands.
    let operands = Options::default().level0_compaction_trigger - 1;
    for i in 0..operands {
        db.merge_opt(&w, b"k", format!("+{i}").as_bytes()).unwrap();
        db.flush().unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut acknowledged = false;
    let err = loop {
        match db.put_opt(&w, b"x", b"y") {
            Err(e) => break e,
            Ok(()) => acknowledged = true,
        }
        assert!(Instant::now() < deadline, "the background compaction's panic never reached the writers");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(
        matches!(&err, Error::Background { context, cause: None } if context.contains("panicked")),
        "{err:?}"
    );
    assert!(matches!(db.flush(), Err(Error::Background { .. })));
    drop(db);

    armed.store(false, Ordering::Relaxed);
    let db = open(dir.path(), &armed);
    let want: Vec<u8> = (0..operands).fold(b"base".to_vec(), |mut v, i| {
        v.extend_from_slice(format!("+{i}").as_bytes());
        v
    });
    assert_eq!(db.get(b"k").unwrap(), Some(want));
    assert_eq!(db.get(b"x").unwrap(), acknowledged.then(|| b"y".to_vec()));
}
