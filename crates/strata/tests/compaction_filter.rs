//! The compaction filter (`Options::compaction_filter`): after a compaction, reads agree with a
//! model to which the filter was applied; snapshots keep what they see; a removal above the
//! bottommost level does not bring older versions back; blob values are filtered and their
//! garbage collected; merge operands, deletions and flushes are left alone; a panicking filter
//! is a typed background error; the OPTIONS file records the filter by name.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use strata::{merge, CompactionFilter, Db, Decision, Error, Options, ReadOptions};

/// Removes the keys of the `drop:` namespace and upper-cases the values of the `up:` one
/// (idempotent, as a compaction may offer a value again).
struct Namespaces;

impl CompactionFilter for Namespaces {
    fn name(&self) -> &str {
        "namespaces"
    }
    fn filter(&self, _level: usize, key: &[u8], value: &[u8]) -> Decision {
        if key.starts_with(b"drop:") {
            Decision::Remove
        } else if key.starts_with(b"up:") {
            Decision::ChangeValue(value.to_ascii_uppercase())
        } else {
            Decision::Keep
        }
    }
}

/// What the model holds once `Namespaces` has seen every value.
fn filtered(model: &BTreeMap<Vec<u8>, Vec<u8>>) -> BTreeMap<Vec<u8>, Vec<u8>> {
    model
        .iter()
        .filter_map(|(k, v)| match Namespaces.filter(1, k, v) {
            Decision::Keep => Some((k.clone(), v.clone())),
            Decision::Remove => None,
            Decision::ChangeValue(new) => Some((k.clone(), new)),
        })
        .collect()
}

/// Small memtables and blobs from 64 bytes, so tests make several tables and blob files.
fn options(filter: Arc<dyn CompactionFilter>) -> Options {
    Options {
        write_buffer_size: 64 << 10,
        min_blob_size: 64,
        compaction_filter: Some(filter),
        ..Options::default()
    }
}

fn contents(db: &Db, opts: &ReadOptions) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.iter_opt(opts).collect::<Result<_, _>>().unwrap()
}

/// Table and blob file names of the database in `dir`.
fn data_files(dir: &Path, suffix: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(suffix))
        .collect();
    names.sort();
    names
}

#[derive(Debug, Clone)]
enum Op {
    /// Namespace, key number, value length (values of 64 bytes and more go to blob files).
    Put(u8, u8, usize),
    Delete(u8, u8),
    Flush,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..3, 0u8..24, prop_oneof![1usize..20, 64usize..200]).prop_map(|(n, k, l)| Op::Put(n, k, l)),
        2 => (0u8..3, 0u8..24).prop_map(|(n, k)| Op::Delete(n, k)),
        1 => Just(Op::Flush),
    ]
}

fn key(namespace: u8, k: u8) -> Vec<u8> {
    let ns = ["drop:", "up:", "keep:"][usize::from(namespace % 3)];
    format!("{ns}{k:02}").into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn reads_after_a_compaction_match_the_filtered_model(ops in prop::collection::vec(op(), 1..120)) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), options(Arc::new(Namespaces))).unwrap();
        let mut model = BTreeMap::new();
        for (i, op) in ops.iter().enumerate() {
            match *op {
                Op::Put(n, k, len) => {
                    let value: Vec<u8> = (0..len).map(|j| b'a' + ((i + j) % 26) as u8).collect();
                    db.put(key(n, k), &value).unwrap();
                    model.insert(key(n, k), value);
                }
                Op::Delete(n, k) => {
                    db.delete(key(n, k)).unwrap();
                    model.remove(&key(n, k));
                }
                Op::Flush => db.flush().unwrap(),
            }
        }
        // Before a compaction rewrites them, the values are as written (flushes do not filter).
        db.flush().unwrap();
        let before = contents(&db, &ReadOptions::new());
        let compacted = db.property("strata.num-files-at-level6").is_some_and(|n| n != "0");
        if !compacted {
            prop_assert_eq!(&before, &model);
        }
        db.compact_range(None, None).unwrap();
        let expected = filtered(&model);
        prop_assert_eq!(contents(&db, &ReadOptions::new()), expected.clone());
        for (n, k) in (0..3).flat_map(|n| (0..24).map(move |k| (n, k))) {
            prop_assert_eq!(db.get(key(n, k)).unwrap(), expected.get(&key(n, k)).cloned());
        }
        let reversed: Vec<_> = db.iter().rev().collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(reversed, expected.clone().into_iter().rev().collect::<Vec<_>>());
        drop(db);
        let db = Db::open(dir.path(), options(Arc::new(Namespaces))).unwrap();
        prop_assert_eq!(contents(&db, &ReadOptions::new()), expected);
    }
}

#[test]
fn a_live_snapshot_keeps_what_it_sees() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(Arc::new(Namespaces))).unwrap();
    db.put("drop:a", "1").unwrap();
    db.put("up:b", "x").unwrap();
    db.put("up:big", vec![b'q'; 300]).unwrap();
    let snapshot = db.snapshot();
    let at_snapshot = ReadOptions { snapshot: Some(snapshot.clone()), ..ReadOptions::new() };
    db.put("up:b", "y").unwrap();
    db.compact_range(None, None).unwrap();

    let seen = contents(&db, &at_snapshot);
    let written: BTreeMap<Vec<u8>, Vec<u8>> = [
        (b"drop:a".to_vec(), b"1".to_vec()),
        (b"up:b".to_vec(), b"x".to_vec()),
        (b"up:big".to_vec(), vec![b'q'; 300]),
    ]
    .into();
    assert_eq!(seen, written, "the snapshot reads what was written before it");
    // The newest values the snapshot also sees stay as they are; the one written after it is
    // filtered.
    assert_eq!(db.get("drop:a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get("up:b").unwrap().as_deref(), Some(&b"Y"[..]));
    assert_eq!(db.get("up:big").unwrap(), Some(vec![b'q'; 300]));

    drop((snapshot, at_snapshot));
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get("drop:a").unwrap(), None);
    assert_eq!(db.get("up:b").unwrap().as_deref(), Some(&b"Y"[..]));
    assert_eq!(db.get("up:big").unwrap(), Some(vec![b'Q'; 300]));
}

/// A call to a filter: level, key, value.
type Call = (usize, Vec<u8>, Vec<u8>);

/// Removes the value `v2` and records every call.
#[derive(Default)]
struct RemoveV2 {
    calls: Mutex<Vec<Call>>,
}

impl CompactionFilter for RemoveV2 {
    fn name(&self) -> &str {
        "remove-v2"
    }
    fn filter(&self, level: usize, key: &[u8], value: &[u8]) -> Decision {
        self.calls.lock().unwrap().push((level, key.to_vec(), value.to_vec()));
        if value == b"v2" {
            Decision::Remove
        } else {
            Decision::Keep
        }
    }
}

#[test]
fn a_removal_above_the_bottommost_level_keeps_older_versions_hidden() {
    let dir = tempfile::tempdir().unwrap();
    let filter = Arc::new(RemoveV2::default());
    let db = Db::open(dir.path(), options(filter.clone())).unwrap();
    db.put("k", "v1").unwrap();
    db.compact_range(None, None).unwrap(); // v1 now sits in the last level
    assert_eq!(db.property("strata.num-files-at-level6").as_deref(), Some("1"));

    // Two level-0 files whose key ranges overlap, so the compaction into level 1 rewrites them
    // (a lone file would be moved, not rewritten) while v1 below makes it not the bottommost.
    db.put("a", "x").unwrap();
    db.put("k", "v2").unwrap();
    db.flush().unwrap();
    db.put("j", "x").unwrap();
    db.put("z", "x").unwrap();
    db.flush().unwrap();
    filter.calls.lock().unwrap().clear();
    db.compact_range(None, None).unwrap();

    let calls = filter.calls.lock().unwrap().clone();
    assert!(calls.contains(&(1, b"k".to_vec(), b"v2".to_vec())), "{calls:?}");
    assert!(!calls.iter().any(|(_, k, v)| k == b"k" && v == b"v1"), "v1 is shadowed: {calls:?}");
    assert_eq!(db.get("k").unwrap(), None, "v1 came back");
    assert_eq!(db.iter().map(|kv| kv.unwrap().0).collect::<Vec<_>>(), [b"a", b"j", b"z"]);
    drop(db);
    let db = Db::open(dir.path(), options(filter)).unwrap();
    assert_eq!(db.get("k").unwrap(), None);
}

#[test]
fn blob_values_are_read_for_the_filter_and_removed_ones_become_garbage() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(Arc::new(Namespaces))).unwrap();
    // Incompressible values, so the blob files' sizes say how many are left.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..50 {
        let noise: Vec<u8> = (0..500)
            .map(|_| {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                (seed >> 56) as u8
            })
            .collect();
        db.put(format!("drop:{i:02}"), noise).unwrap();
    }
    db.flush().unwrap();
    assert!(!data_files(dir.path(), ".blob").is_empty());
    db.put("up:small", "tiny").unwrap();
    db.put("up:large", vec![b'l'; 500]).unwrap();
    db.compact_range(None, None).unwrap();

    assert_eq!(db.get("drop:07").unwrap(), None);
    assert_eq!(db.get("up:small").unwrap().as_deref(), Some(&b"TINY"[..]));
    assert_eq!(db.get("up:large").unwrap(), Some(vec![b'L'; 500]));
    // Only the rewritten large value is left in a blob file: the removed values' file is
    // entirely garbage and deleted.
    let blob_bytes: u64 = data_files(dir.path(), ".blob")
        .iter()
        .map(|n| std::fs::metadata(dir.path().join(n)).unwrap().len())
        .sum();
    assert!(blob_bytes < 5_000, "{blob_bytes} bytes of blob files left (25,000 were written)");
}

/// Records the keys it is offered; keeps everything.
#[derive(Default)]
struct Recorder(Mutex<Vec<Vec<u8>>>);

impl CompactionFilter for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    fn filter(&self, _level: usize, key: &[u8], _value: &[u8]) -> Decision {
        self.0.lock().unwrap().push(key.to_vec());
        Decision::Keep
    }
}

#[test]
fn flushes_merge_operands_and_deletions_are_not_filtered() {
    let dir = tempfile::tempdir().unwrap();
    let recorder = Arc::new(Recorder::default());
    let opts = Options { merge_operator: merge::builtin("uint64add"), ..options(recorder.clone()) };
    let db = Db::open(dir.path(), opts).unwrap();
    db.put("put", "v").unwrap();
    db.put("deleted", "v").unwrap();
    db.delete("deleted").unwrap();
    db.merge("counter", 1u64.to_le_bytes()).unwrap();
    db.merge("counter", 2u64.to_le_bytes()).unwrap();
    db.flush().unwrap();
    assert!(recorder.0.lock().unwrap().is_empty(), "a flush called the filter");
    db.compact_range(None, None).unwrap();
    let mut offered = recorder.0.lock().unwrap().clone();
    offered.dedup();
    assert_eq!(offered, [b"put".to_vec()]);
    assert_eq!(db.get("counter").unwrap(), Some(3u64.to_le_bytes().to_vec()));
}

#[test]
fn ingested_files_and_range_deleted_keys_are_not_offered() {
    let dir = tempfile::tempdir().unwrap();
    let recorder = Arc::new(Recorder::default());
    let db = Db::open(dir.path().join("db"), options(recorder.clone())).unwrap();
    let sst = dir.path().join("bulk.sst");
    let mut writer = strata::SstFileWriter::create(&sst, &Options::default()).unwrap();
    writer.put("bulk:1", "v").unwrap();
    writer.finish().unwrap();
    db.ingest_external_file(&[&sst], &strata::IngestOptions::default()).unwrap();
    assert!(recorder.0.lock().unwrap().is_empty(), "ingestion called the filter");

    for k in ["gone:1", "gone:2", "kept"] {
        db.put(k, "v").unwrap();
    }
    db.delete_range("gone:", "gone;").unwrap();
    db.compact_range(None, None).unwrap();
    let mut offered = recorder.0.lock().unwrap().clone();
    offered.sort();
    offered.dedup();
    assert_eq!(offered, [b"bulk:1".to_vec(), b"kept".to_vec()]);
    assert_eq!(db.iter().count(), 2);
}

/// Removes everything, and panics while `armed` is set.
struct Fragile {
    armed: Arc<AtomicBool>,
}

impl CompactionFilter for Fragile {
    fn name(&self) -> &str {
        "fragile"
    }
    fn filter(&self, _level: usize, _key: &[u8], _value: &[u8]) -> Decision {
        assert!(!self.armed.load(Ordering::Relaxed), "the application's filter panicked");
        Decision::Remove
    }
}

#[test]
fn a_panicking_filter_fails_the_compaction_with_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let armed = Arc::new(AtomicBool::new(true));
    let db = Db::open(dir.path(), options(Arc::new(Fragile { armed: armed.clone() }))).unwrap();
    for i in 0..500u32 {
        db.put(format!("k{i:04}"), [7u8; 100]).unwrap();
    }
    db.flush().unwrap();
    let files_before = (data_files(dir.path(), ".sst"), data_files(dir.path(), ".blob"));

    let err = db.compact_range(None, None).unwrap_err();
    assert!(
        matches!(&err, Error::Background { context, cause: None }
            if context.contains("compaction filter \"fragile\" panicked")
                && context.contains("the application's filter panicked")),
        "{err:?}"
    );
    assert!(!err.is_retryable());
    assert_eq!((data_files(dir.path(), ".sst"), data_files(dir.path(), ".blob")), files_before);
    assert!(matches!(db.put("x", "y"), Err(Error::Background { .. })));
    assert_eq!(db.get("k0001").unwrap(), Some(vec![7u8; 100]), "reads go on");
    drop(db);

    armed.store(false, Ordering::Relaxed);
    let db = Db::open(dir.path(), options(Arc::new(Fragile { armed }))).unwrap();
    assert_eq!(db.iter().count(), 500, "every acknowledged write survives");
    db.compact_range(None, None).unwrap();
    assert_eq!(db.iter().count(), 0);
}

#[test]
fn the_options_file_records_the_filter_by_name() {
    let dir = tempfile::tempdir().unwrap();
    drop(Db::open(dir.path(), options(Arc::new(Namespaces))).unwrap());
    let text = options(Arc::new(Namespaces)).to_ini_string();
    assert!(text.contains("compaction_filter=namespaces"), "{text}");
    assert!(Options::default().to_ini_string().contains("compaction_filter=nullptr"));
    assert!(format!("{:?}", options(Arc::new(Namespaces))).contains("namespaces"));

    // Read back: the filter set in code is kept when the names agree; there are no built-ins.
    let err = Options::load_latest(dir.path()).unwrap_err();
    assert!(err.to_string().contains("no built-in compaction filters"), "{err}");
    let latest = std::fs::read_to_string(
        dir.path().join(data_files(dir.path(), "").into_iter().rfind(|n| n.starts_with("OPTIONS-")).unwrap()),
    )
    .unwrap();
    let kept = options(Arc::new(Namespaces)).with_ini_str(&latest).unwrap();
    assert_eq!(kept.compaction_filter.map(|f| f.name().to_string()).as_deref(), Some("namespaces"));
    let cleared = options(Arc::new(Namespaces)).with_option_string("compaction_filter=nullptr").unwrap();
    assert!(cleared.compaction_filter.is_none());
}
