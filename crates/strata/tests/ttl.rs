//! `strata::ttl::TtlDb` on a fake clock: entries are hidden from every read the second they
//! expire, compactions drop them from disk, live entries survive compactions and reopens, and
//! the stored form is the value followed by its 8-byte little-endian write time.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use strata::ttl::{Clock, TtlDb, TtlOptions, TIMESTAMP_LEN};
use strata::{CompactionFilter, Db, Decision, Error, Options, ReadOptions, WriteBatch};

const TTL: Duration = Duration::from_secs(100);
const START: u64 = 1_700_000_000;

struct FakeClock(AtomicU64);

impl FakeClock {
    fn set(&self, secs: u64) {
        self.0.store(secs, Ordering::Relaxed);
    }
}

impl Clock for FakeClock {
    fn now_secs(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

fn options() -> Options {
    Options { write_buffer_size: 64 << 10, min_blob_size: 64, ..Options::default() }
}

fn open(dir: &Path, clock: &Arc<FakeClock>) -> TtlDb {
    TtlDb::open_with(dir, options(), TtlOptions { ttl: TTL, clock: clock.clone() }).unwrap()
}

fn all(db: &TtlDb) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.iter().collect::<Result<_, _>>().unwrap()
}

fn kv(k: &str, v: &str) -> (Vec<u8>, Vec<u8>) {
    (k.as_bytes().to_vec(), v.as_bytes().to_vec())
}

/// Bytes of the table and blob files of the database in `dir`.
fn data_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| {
            e.file_name().to_string_lossy().ends_with(".sst")
                || e.file_name().to_string_lossy().ends_with(".blob")
        })
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

#[test]
fn expired_entries_are_hidden_from_every_read_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(FakeClock(AtomicU64::new(START)));
    let db = open(dir.path(), &clock);
    db.put("a", "old").unwrap();
    db.put("c", "old").unwrap();
    clock.set(START + 50);
    db.put("b", "new").unwrap();
    let mut batch = WriteBatch::new();
    batch.put("d", "batched").delete("c");
    db.write(batch).unwrap();

    clock.set(START + 100); // exactly the TTL: still readable
    assert_eq!(all(&db), [kv("a", "old"), kv("b", "new"), kv("d", "batched")].into());
    clock.set(START + 101);
    let live = BTreeMap::from([kv("b", "new"), kv("d", "batched")]);
    assert_eq!(all(&db), live);
    assert_eq!(db.get("a").unwrap(), None);
    assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"new"[..]));
    let got: Vec<_> = db.multi_get(["a", "b", "c", "d"]).into_iter().map(Result::unwrap).collect();
    assert_eq!(got, [None, Some(b"new".to_vec()), None, Some(b"batched".to_vec())]);
    let reversed: Vec<_> = db.iter().rev().collect::<Result<_, _>>().unwrap();
    assert_eq!(reversed, [kv("d", "batched"), kv("b", "new")]);
    assert_eq!(db.range("a".."c").collect::<Result<Vec<_>, _>>().unwrap(), [kv("b", "new")]);
    assert_eq!(db.prefix("a").count(), 0);

    let mut cursor = db.cursor(&ReadOptions::new()).unwrap();
    cursor.seek_to_first();
    assert_eq!((cursor.key(), cursor.value()), (&b"b"[..], &b"new"[..]));
    cursor.prev();
    assert!(!cursor.valid(), "a is expired");
    cursor.seek_for_prev(b"a");
    assert!(!cursor.valid());
    cursor.seek(b"a");
    assert_eq!(cursor.key(), b"b");
    cursor.next();
    assert_eq!((cursor.key(), cursor.value()), (&b"d"[..], &b"batched"[..]));
    cursor.next();
    assert!(!cursor.valid());
    cursor.seek_to_last();
    assert_eq!(cursor.key(), b"d");
    cursor.status().unwrap();

    // The wrapped database still holds the expired entry until a compaction drops it.
    let stored = db.db().get("a").unwrap().unwrap();
    assert_eq!(stored[..3], *b"old");
    assert_eq!(stored[3..], START.to_le_bytes());
    assert_eq!(stored.len(), 3 + TIMESTAMP_LEN);
}

#[test]
fn compaction_drops_expired_entries_and_keeps_live_ones_across_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(FakeClock(AtomicU64::new(START)));
    let db = open(dir.path(), &clock);
    // Incompressible values, half of them in blob files, so file sizes say what is left.
    let mut seed = 7u64;
    let mut noise = |len: usize| -> Vec<u8> {
        (0..len)
            .map(|_| {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                (seed >> 56) as u8
            })
            .collect()
    };
    for i in 0..400 {
        db.put(format!("old{i:03}"), noise(if i % 2 == 0 { 40 } else { 400 })).unwrap();
    }
    clock.set(START + 90);
    let mut young = BTreeMap::new();
    for i in 0..20 {
        let value = noise(50);
        db.put(format!("young{i:02}"), &value).unwrap();
        young.insert(format!("young{i:02}").into_bytes(), value);
    }
    db.compact_range(None, None).unwrap();
    let before = data_bytes(dir.path());
    assert!(before > 80_000, "{before}");
    assert_eq!(db.iter().count(), 420, "nothing expired yet");

    clock.set(START + 150); // the old entries expired, the young ones did not
    assert_eq!(all(&db), young);
    db.compact_range(None, None).unwrap();
    let after = data_bytes(dir.path());
    assert!(after < 10_000, "{before} -> {after} bytes");
    assert_eq!(db.db().get("old001").unwrap(), None, "gone from the wrapped database too");
    assert_eq!(db.db().iter().count(), 20);
    drop(db);

    let db = open(dir.path(), &clock);
    assert_eq!(all(&db), young);
    clock.set(START + 191);
    assert!(all(&db).is_empty());
    drop(db);
    let ro = TtlDb::open_read_only_with(dir.path(), options(), TtlOptions { ttl: TTL, clock: clock.clone() })
        .unwrap();
    assert!(ro.iter().next().is_none());
    assert_eq!(ro.db().iter().count(), 20, "a read-only open does not compact");
    assert!(matches!(ro.put("k", "v"), Err(Error::ReadOnly)));
}

#[test]
fn a_snapshot_read_judges_expiry_by_the_time_of_the_read() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(FakeClock(AtomicU64::new(START)));
    let db = open(dir.path(), &clock);
    db.put("k", "v").unwrap();
    let at = ReadOptions { snapshot: Some(db.snapshot()), ..ReadOptions::new() };
    assert_eq!(db.get_opt(&at, b"k").unwrap().as_deref(), Some(&b"v"[..]));
    clock.set(START + 101);
    assert_eq!(db.get_opt(&at, b"k").unwrap(), None);
    assert_eq!(db.iter_opt(&at).count(), 0);
}

/// Upper-cases values; the TTL filter runs it on live values without their suffix.
struct Upper;

impl CompactionFilter for Upper {
    fn name(&self) -> &str {
        "upper"
    }
    fn filter(&self, _level: usize, _key: &[u8], value: &[u8]) -> Decision {
        Decision::ChangeValue(value.to_ascii_uppercase())
    }
}

#[test]
fn the_applications_filter_sees_live_values_and_their_write_time_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(FakeClock(AtomicU64::new(START)));
    let opts = Options { compaction_filter: Some(Arc::new(Upper)), ..options() };
    let db = TtlDb::open_with(dir.path(), opts, TtlOptions { ttl: TTL, clock: clock.clone() }).unwrap();
    db.put("k", "value").unwrap();
    clock.set(START + 60);
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"VALUE"[..]));
    clock.set(START + 101); // still expires by its first write time
    assert_eq!(db.get("k").unwrap(), None);
    let text = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("OPTIONS-"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .unwrap();
    assert!(text.contains("compaction_filter=strata.ttl"), "{text}");
}

#[test]
fn bad_arguments_and_foreign_values_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(FakeClock(AtomicU64::new(START)));
    let short = TtlOptions { ttl: Duration::from_millis(900), clock: clock.clone() };
    assert!(matches!(TtlDb::open_with(dir.path(), options(), short), Err(Error::InvalidArgument(_))));
    let merging = Options { merge_operator: strata::merge::builtin("uint64add"), ..options() };
    assert!(matches!(TtlDb::open(dir.path(), merging, TTL), Err(Error::InvalidArgument(_))));

    let db = open(dir.path(), &clock);
    let mut batch = WriteBatch::new();
    batch.put("a", "1").merge("b", "2");
    assert!(matches!(db.write(batch), Err(Error::InvalidArgument(_))));
    assert_eq!(db.get("a").unwrap(), None, "nothing of a refused batch is applied");

    // A value written around the wrapper, too short to carry a write time.
    db.put("good", "v").unwrap();
    db.db().put("raw", "xyz").unwrap();
    assert!(db.get("raw").unwrap_err().is_corruption());
    assert!(db.multi_get(["raw"])[0].as_ref().is_err_and(Error::is_corruption));
    let items: Vec<_> = db.iter().collect();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0].as_ref().unwrap(), &kv("good", "v"));
    assert!(items[1].as_ref().is_err_and(Error::is_corruption));
    let mut cursor = db.cursor(&ReadOptions::new()).unwrap();
    cursor.seek(b"r");
    assert!(!cursor.valid());
    assert!(cursor.status().unwrap_err().is_corruption());
    cursor.seek_to_first();
    assert_eq!(cursor.key(), b"good");
    cursor.status().unwrap();
    // Compaction keeps what it cannot judge.
    db.compact_range(None, None).unwrap();
    assert_eq!(db.db().get("raw").unwrap().as_deref(), Some(&b"xyz"[..]));
    drop((cursor, db));
    let raw = Db::open(dir.path(), options()).unwrap(); // an ordinary database underneath
    assert_eq!(raw.get("good").unwrap().map(|v| v.len()), Some(1 + TIMESTAMP_LEN));
}
