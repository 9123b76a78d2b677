//! The corruption sweep: every byte flipped, and every 512-byte sector zeroed, of the last record
//! of the MANIFEST and of the last record of each WAL (the final one and a non-final one), in
//! databases whose MANIFEST ends in a flush edit, a compaction edit and an edit adding a blob
//! file. Each damaged copy is opened with the default options and must end in a typed error
//! (`Corruption`, or `UnsupportedVersion` for a flipped version field), or open to a state that is
//! a prefix of the writes at or above the durable floor (every batch acknowledged after a sync),
//! with every table and blob file the MANIFEST listed still in the directory or in `lost/` and
//! anything dropped visible in the recovery report.
//!
//! One outcome below the floor is allowed, and counted: a zeroed sector that reaches past the end
//! of the final WAL's last record leaves zeros from inside the log to its end, exactly what a
//! power cut during the last appends leaves; the records it covers are dropped as a torn tail
//! (and reported). docs/durability.md, "Torn versus corrupt", explains why no reader can tell
//! the two apart.
//!
//! Runs on the in-memory filesystem. `STRATA_SWEEP_STRIDE=n` tests every nth byte (default 1).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::fs::FileSystem;
use strata::internal::version::set::VersionSet;
use strata::{Db, Error, Options, WriteBatch, WriteOptions};
use strata_testkit::{
    dump, record_extents, replace_file, CrashMode, FaultFs, History, MemFs, Mutation, Op, Rule, When,
};

const SYNC: WriteOptions = WriteOptions { sync: true, disable_wal: false };
const NO_SYNC: WriteOptions = WriteOptions { sync: false, disable_wal: false };

fn dir() -> PathBuf {
    PathBuf::from("/db")
}

fn options(fs: Arc<dyn FileSystem>) -> Options {
    Options { fs, min_blob_size: 100, level0_compaction_trigger: 4, info_log: false, ..Options::default() }
}

#[derive(Debug, Clone, Copy)]
enum LastEdit {
    Flush,
    Compaction,
    BlobFile,
}

/// A closed database image and what was written to it.
struct Base {
    mem: MemFs,
    history: History,
    /// Batches acknowledged after a sync: at least this many must survive.
    floor: usize,
    /// Table and blob files the undamaged MANIFEST lists.
    live: BTreeSet<String>,
}

fn batch(i: usize, value_len: usize) -> Vec<Mutation> {
    let value = format!("<{i}>").into_bytes().into_iter().cycle().take(value_len).collect();
    vec![
        Mutation::Put(format!("key{:03}", i % 37).into_bytes(), value),
        Mutation::Delete(format!("gone{i}").into_bytes()),
    ]
}

fn write(db: &Db, h: &mut History, n: usize, value_len: usize, opts: &WriteOptions) {
    for _ in 0..n {
        let i = h.push(batch(h.len(), value_len));
        db.write_opt(opts, h.write_batch(i)).unwrap_or_else(|e| panic!("batch {i}: {e}"));
    }
}

/// Builds the database: the last MANIFEST edit is `edit`; then batches that live only in the
/// WAL, the last one synced or not; with `non_final_wal`, a flush that fails leaves that WAL
/// behind a new, final one.
fn build(edit: LastEdit, non_final_wal: bool, last_synced: bool) -> Base {
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let db = Db::open(dir(), options(Arc::new(fault.clone()))).unwrap();
    let mut h = History::new();
    match edit {
        LastEdit::Flush => {
            write(&db, &mut h, 20, 40, &SYNC);
            db.flush().unwrap();
        }
        LastEdit::BlobFile => {
            write(&db, &mut h, 20, 300, &SYNC);
            db.flush().unwrap();
        }
        LastEdit::Compaction => {
            for _ in 0..4 {
                write(&db, &mut h, 10, 40, &SYNC);
                db.flush().unwrap();
            }
            assert!(db.wait_for_compactions(Some(std::time::Duration::from_secs(30))).unwrap());
        }
    }
    write(&db, &mut h, 9, 60, &SYNC);
    write(&db, &mut h, 1, 60, if last_synced { &SYNC } else { &NO_SYNC });
    if non_final_wal {
        fault.add_rule(Rule::new(Op::Create).on_path(".sst").when(When::Always));
        assert!(db.flush().is_err(), "the flush should fail and leave its WAL");
    }
    drop(db);
    let floor = if last_synced { h.len() } else { h.len() - 1 };
    let image = mem.crash_clone(CrashMode::KeepUnsynced);
    let (tables, blobs) = VersionSet::recover(&dir(), Arc::new(image.clone())).unwrap().set.live_files();
    let live = tables
        .iter()
        .map(|n| format!("{n:06}.sst"))
        .chain(blobs.iter().map(|n| format!("{n:06}.blob")))
        .collect();
    Base { mem: image, history: h, floor, live }
}

/// Table and blob files, wherever they are (the directory or `lost/`).
fn data_files(fs: &MemFs) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for d in [dir(), dir().join("lost")] {
        for n in fs.list_dir(&d).unwrap_or_default() {
            if n.ends_with(".sst") || n.ends_with(".blob") {
                names.insert(n);
            }
        }
    }
    names
}

#[derive(Default, Debug)]
struct Tally {
    cases: usize,
    errors: usize,
    full: usize,
    prefix: usize,
    torn_synced: usize,
}

/// What is being damaged.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Target {
    Manifest,
    NonFinalWal,
    FinalWal,
}

fn target_path(fs: &MemFs, target: Target) -> PathBuf {
    if target == Target::Manifest {
        let current = fs.read_all(&dir().join("CURRENT")).unwrap();
        return dir().join(String::from_utf8(current).unwrap().trim_end());
    }
    let mut wals: Vec<String> =
        fs.list_dir(&dir()).unwrap().into_iter().filter(|n| n.ends_with(".log")).collect();
    wals.sort();
    let name = if target == Target::FinalWal { wals.last() } else { wals.iter().rev().nth(1) };
    dir().join(name.expect("the WAL to damage"))
}

fn sweep(base: &Base, target: Target, tally: &mut Tally, ctx: &str) {
    let path = target_path(&base.mem, target);
    let original = base.mem.contents(&path).unwrap();
    let all = record_extents(&base.mem, &path);
    assert!(!all.is_empty(), "{} holds no record", path.display());
    let (start, end) = *all.last().unwrap();
    let stride = std::env::var("STRATA_SWEEP_STRIDE").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    for at in (start..end).step_by(stride) {
        let mut bytes = original.clone();
        bytes[at] ^= 0xFF;
        let ctx = format!("{ctx}: byte {at} of {start}..{end} flipped");
        check_case(base, &path, &bytes, 0, tally, &ctx);
    }
    for sector in (start / 512..end.div_ceil(512)).map(|s| s * 512) {
        let mut bytes = original.clone();
        let upto = (sector + 512).min(bytes.len());
        bytes[sector..upto].iter_mut().for_each(|b| *b = 0);
        // Zeros from inside the final WAL's records to past its last one are what a power cut
        // leaves of appends that never reached the disk: the records they cover may go.
        let erased_to_the_end = target == Target::FinalWal && upto >= end;
        let tail_records = all.iter().filter(|&&(_, e)| e > sector).count();
        let may_lose = if erased_to_the_end { tail_records } else { 0 };
        let ctx = format!("{ctx}: sector at {sector} of {start}..{end} zeroed");
        check_case(base, &path, &bytes, may_lose, tally, &ctx);
    }
}

fn check_case(base: &Base, path: &Path, bytes: &[u8], may_lose: usize, tally: &mut Tally, ctx: &str) {
    tally.cases += 1;
    let img = base.mem.crash_clone(CrashMode::KeepUnsynced);
    replace_file(&img, path, bytes);
    let before = data_files(&img);
    match Db::open(dir(), options(Arc::new(img.clone()))) {
        Err(Error::Corruption(_) | Error::UnsupportedVersion { .. }) => tally.errors += 1,
        Err(e) => panic!("{ctx}: open failed with an untyped outcome: {e:?}"),
        Ok(db) => {
            let state = dump(&db).unwrap_or_else(|e| panic!("{ctx}: scan failed: {e}"));
            let h = &base.history;
            let k = h.matching_prefix(&state, 0).unwrap_or_else(|e| panic!("{ctx}: {e}"));
            let report = db.recovery_report();
            if k < h.len() {
                assert!(!report.is_clean(), "{ctx}: {} batches lost without a report", h.len() - k);
            }
            if k == h.len() {
                tally.full += 1;
            } else if k >= base.floor {
                tally.prefix += 1;
            } else if k + may_lose >= h.len() && !report.wal_tails.is_empty() {
                tally.torn_synced += 1;
            } else {
                panic!("{ctx}: recovered {k} batches, below the durable floor {}: {report:?}", base.floor);
            }
            drop(db);
        }
    }
    let after = data_files(&img);
    // Only what the undamaged MANIFEST had deleted (compaction inputs not yet removed when the
    // database closed) may go: open removes those as proven obsolete.
    let gone: Vec<&String> = before.difference(&after).filter(|n| base.live.contains(*n)).collect();
    assert!(gone.is_empty(), "{ctx}: deleted live files {gone:?}");
}

#[test]
fn every_damaged_byte_of_a_last_record_is_reported_or_recovered_above_the_floor() {
    let mut tally = Tally::default();
    for edit in [LastEdit::Flush, LastEdit::Compaction, LastEdit::BlobFile] {
        for (non_final, last_synced) in [(false, true), (false, false), (true, true)] {
            let base = build(edit, non_final, last_synced);
            let ctx = format!("{edit:?}, non-final WAL {non_final}, last write synced {last_synced}");
            let targets: &[Target] = if non_final {
                &[Target::NonFinalWal, Target::FinalWal]
            } else {
                &[Target::Manifest, Target::FinalWal]
            };
            for &target in targets {
                sweep(&base, target, &mut tally, &format!("{ctx}, {target:?}"));
            }
        }
    }
    println!("corruption sweep: {tally:?}");
    assert!(tally.errors > 0 && tally.full + tally.prefix > 0, "{tally:?}");
}

/// The MANIFEST record the families sweep ends with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FamilyEdit {
    /// A flush of one family, with the other families' log numbers in the same record.
    Flush,
    /// `create_cf`: the family's id and name tags.
    Create,
    /// `drop_cf`: the drop tag.
    Drop,
}

type FamilyState = BTreeMap<(String, Vec<u8>), Vec<u8>>;

/// A database with families `default`, `a`, `b`, every write synced, where each WAL record is a
/// batch spanning the families, and the MANIFEST ends with `last`. Returns the image and the
/// state every acknowledged write and family change leaves.
fn build_families(last: FamilyEdit) -> (MemFs, FamilyState) {
    let mem = MemFs::new();
    let opts = || options(Arc::new(mem.clone()));
    let db = Db::open_cf(dir(), opts(), [("a", opts()), ("b", opts())]).unwrap();
    let mut expected = FamilyState::new();
    for i in 0..10 {
        write_families(&db, &mut expected, &["default", "a", "b"], i);
    }
    db.flush_cf(&db.cf("a").unwrap()).unwrap();
    match last {
        FamilyEdit::Flush => {
            write_families(&db, &mut expected, &["default", "a", "b"], 10);
            db.flush_cf(&db.cf("b").unwrap()).unwrap();
        }
        FamilyEdit::Create => {
            db.create_cf("c", opts()).unwrap();
        }
        FamilyEdit::Drop => {
            db.drop_cf(&db.cf("b").unwrap()).unwrap();
            expected.retain(|(name, _), _| name != "b");
        }
    }
    let names: &[&str] =
        if last == FamilyEdit::Create { &["default", "a", "b", "c"] } else { &["default", "a"] };
    for i in 11..16 {
        write_families(&db, &mut expected, names, i);
    }
    drop(db);
    (mem.crash_clone(CrashMode::KeepUnsynced), expected)
}

/// One synced batch putting key `i % 7` in each of `names`.
fn write_families(db: &Db, expected: &mut FamilyState, names: &[&str], i: usize) {
    let mut batch = WriteBatch::new();
    for name in names {
        let cf = db.cf(name).unwrap();
        let (key, value) = (format!("k{:02}", i % 7).into_bytes(), format!("{name}.{i}").repeat(1 + i % 30));
        batch.put_cf(&cf, &key, &value);
        expected.insert((name.to_string(), key), value.into_bytes());
    }
    db.write_opt(&SYNC, batch).unwrap();
}

/// Every family's keys and values.
fn family_state(db: &Db) -> strata::Result<FamilyState> {
    let mut state = FamilyState::new();
    for name in db.cf_names() {
        let cf = db.cf(&name).expect("a live family");
        let mut it = db.cursor_cf(&cf, &strata::ReadOptions::new())?;
        it.seek_to_first();
        while it.valid() {
            state.insert((name.clone(), it.key().to_vec()), it.value().to_vec());
            it.next();
        }
        it.status()?;
    }
    Ok(state)
}

/// Column families: every byte of the last MANIFEST record (a one-family flush with the others'
/// log numbers, a family creation, a family drop) and of the last WAL record (a synced batch
/// spanning families) flipped. Every write was synced, so the open must fail with a typed error
/// or recover every family exactly: no family lost, none emptied, none dropped one resurrected.
#[test]
fn damaged_family_records_are_reported_never_a_family_silently_lost() {
    let (mut errors, mut full) = (0, 0);
    for last in [FamilyEdit::Flush, FamilyEdit::Create, FamilyEdit::Drop] {
        let (mem, expected) = build_families(last);
        for target in [Target::Manifest, Target::FinalWal] {
            let path = target_path(&mem, target);
            let original = mem.contents(&path).unwrap();
            let (start, end) = *record_extents(&mem, &path).last().expect("a record");
            for at in start..end {
                let ctx = format!("{last:?}, {target:?}: byte {at} of {start}..{end} flipped");
                let img = mem.crash_clone(CrashMode::KeepUnsynced);
                let mut bytes = original.clone();
                bytes[at] ^= 0xFF;
                replace_file(&img, &path, &bytes);
                // A plain open: it names no family, so it creates none to hide a lost one.
                match Db::open(dir(), options(Arc::new(img))) {
                    Err(Error::Corruption(_) | Error::UnsupportedVersion { .. }) => errors += 1,
                    Err(e) => panic!("{ctx}: open failed with an untyped outcome: {e:?}"),
                    Ok(db) => {
                        let state = family_state(&db).unwrap_or_else(|e| panic!("{ctx}: read failed: {e}"));
                        assert!(state == expected, "{ctx}: opened with a different state: {state:?}");
                        full += 1;
                    }
                }
            }
        }
    }
    println!("corruption sweep with families: errors={errors} recovered_whole={full}");
    assert!(errors > 0, "no damage was reported");
}
