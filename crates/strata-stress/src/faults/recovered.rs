//! Checks of a database just recovered from a crash (a crash image opened in a separate `Db`,
//! or the running database reopened after a non-retryable error): its recovery report is
//! consistent, point reads and full scans agree, and the values pass `judge`. For images also:
//! it takes a write, and a second open finds the same state with a clean report.
//!
//! Report rules (docs/durability.md, "Recovery modes" and "Open never destroys evidence"):
//! default options never skip damage (`wal_skipped` empty); every WAL with a dropped tail, every
//! WAL not replayed after one, and a MANIFEST whose torn tail was dropped are in
//! `moved_to_lost`; every file there is in `lost/` and no longer in the database directory; the
//! `strata.recovery` property renders the same report; a second open has nothing to report.
//!
//! With `--tolerate-short-append`, an open that fails on the known short-append corruption
//! (`short_append`) is repeated in salvage mode, which may skip that record.
//!
//! This module must not change the expected state; it returns what it found.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::fs::FileSystem;
use strata::{Db, Error, Options, ReadOptions, RecoveryReport, WalRecoveryMode, WriteOptions};
use strata_testkit::MemFs;

use crate::model::{describe, key_bytes, parse_key, Value};

use super::judge::{judge, Cut, Verdict};
use super::state::History;

/// Where every database of the command lives, inside its `MemFs`.
pub fn db_dir() -> PathBuf {
    PathBuf::from("/db")
}

/// Written to a crash image after it was checked; outside the key space.
const PROBE_KEY: &[u8] = b"zz-probe";

/// What a checked recovery found.
pub struct Found {
    /// The value of every key.
    pub values: Vec<Value>,
    /// What the judgement saw.
    pub verdict: Verdict,
    /// The open's report.
    pub report: RecoveryReport,
}

/// Default options, except the filesystem and the merge operator the data needs.
pub fn image_options(fs: MemFs) -> Options {
    Options { fs: Arc::new(fs), merge_operator: strata::merge::builtin("uint64add"), ..Options::default() }
}

/// WAL block size (docs/format.md).
const BLOCK: usize = 32 << 10;

/// The engine issue `--tolerate-short-append` accepts: an append that failed part way, fewer
/// than 16 bytes short, into a WAL's preallocated zeros leaves a record whose checksum fails
/// with too few trailing zeros for the reader to call it torn (`has_zero_suffix` in
/// `wal/reader.rs`), so open reports `Corruption` although nothing acknowledged was damaged.
/// Returns a description when `e` is that error and the WAL's bytes in `mem` show it.
pub fn short_append(mem: &MemFs, e: &Error) -> Option<String> {
    let Error::Corruption(msg) = e else { return None };
    let (name, rest) = msg.strip_prefix("WAL ")?.split_once(" at offset ")?;
    let (offset, rest) = rest.split_once(':')?;
    if !rest.contains("checksum mismatch") {
        return None;
    }
    let data = mem.contents(&db_dir().join(name))?;
    let (at, len, zeros) = short_fragment(&data, offset.parse().ok()?)?;
    Some(format!("{name}: the record at offset {offset} has a {len}-byte fragment at {at} ending in {zeros} zero bytes, then only zeros"))
}

/// Follows the fragments of the logical record at `off` to the one the append stopped in: the
/// first FULL or LAST fragment, or a FIRST or MIDDLE one with no fragment header after it. Its
/// position, length and trailing zeros, if it ends in 1 to 15 zeros (fewer than its length)
/// with only zeros after it in its block.
fn short_fragment(data: &[u8], mut off: usize) -> Option<(usize, usize, usize)> {
    const FIRST: u8 = 2;
    const MIDDLE: u8 = 3;
    loop {
        let header = data.get(off..off + 7)?;
        let len = usize::from(u16::from_le_bytes([header[4], header[5]]));
        let end = off + 7 + len;
        let block_end = ((off / BLOCK + 1) * BLOCK).min(data.len());
        let next_header = data.get(block_end..block_end + 7).filter(|h| h.iter().any(|&b| b != 0));
        if matches!(header[6], FIRST | MIDDLE) && next_header.is_some() {
            off = block_end;
            continue;
        }
        let zeros = data.get(off + 7..end)?.iter().rev().take_while(|&&b| b == 0).count();
        let rest_zero = data.get(end..block_end)?.iter().all(|&b| b == 0);
        return (zeros > 0 && zeros < 16.min(len) && rest_zero).then_some((off, len, zeros));
    }
}

/// Opens a recovered database with `options(mode)`, in the default mode; if that fails with the
/// short-append corruption and `tolerate` is set, in salvage mode. Returns the database and
/// the description of the tolerated corruption, if any.
pub fn open(
    mem: &MemFs,
    tolerate: bool,
    options: impl Fn(WalRecoveryMode) -> Options,
) -> Result<(Db, Option<String>), Error> {
    match Db::open(db_dir(), options(WalRecoveryMode::default())) {
        Ok(db) => Ok((db, None)),
        Err(e) => match short_append(mem, &e).filter(|_| tolerate) {
            Some(what) => {
                let db = Db::open(db_dir(), options(WalRecoveryMode::SkipAnyCorruptedRecords))?;
                Ok((db, Some(format!("{what} ({e})"))))
            }
            None => Err(e),
        },
    }
}

/// Checks `db`, just opened on `fs` after a crash described by `cut`, against `hists`.
/// `salvaged`: it was opened in salvage mode (`open`), which may skip damage.
pub fn check(
    db: &Db,
    fs: &dyn FileSystem,
    hists: &[History],
    cut: &Cut,
    salvaged: bool,
) -> Result<Found, String> {
    let report = check_report(db, fs, salvaged)?;
    let found = read_all(db, hists.len() as u64)?;
    let (values, verdict) = judge(hists, cut, &found)
        .map_err(|e| format!("{e}\n    recovery report: {}", report.render().trim_end()))?;
    Ok(Found { values, verdict, report })
}

/// The whole check of a crash image: open, `check`, a synced write, close, and a second open
/// that must report nothing and read the same.
pub fn check_image(
    img: &MemFs,
    hists: &[History],
    cut: &Cut,
    tolerate: bool,
) -> Result<(Found, Option<String>), String> {
    let with_mode = |mode| Options { wal_recovery_mode: mode, ..image_options(img.clone()) };
    let (db, salvaged) =
        open(img, tolerate, with_mode).map_err(|e| format!("open of the crash image failed: {e}"))?;
    let found = check(&db, img, hists, cut, salvaged.is_some())?;
    let sync = WriteOptions { sync: true, disable_wal: false };
    db.put_opt(&sync, PROBE_KEY, b"after recovery")
        .map_err(|e| format!("write after recovery failed: {e}"))?;
    db.close().map_err(|e| format!("close after recovery failed: {e}"))?;
    let again =
        Db::open(db_dir(), image_options(img.clone())).map_err(|e| format!("second open failed: {e}"))?;
    if !again.recovery_report().is_clean() {
        return Err(format!("second open after a clean close reports: {}", again.recovery_report().render()));
    }
    let values = read_all(&again, hists.len() as u64)?;
    for (k, (v, want)) in values.iter().zip(&found.values).enumerate() {
        if v.as_deref() != want.bytes(k as u64).as_deref() {
            return Err(format!(
                "second open: k{k:08} reads {}, the first open read {want}",
                describe(v.as_deref())
            ));
        }
    }
    let probe = again.get(PROBE_KEY).map_err(|e| format!("second open: {e}"))?;
    if probe.as_deref() != Some(&b"after recovery"[..]) {
        return Err("second open lost the synced write made after recovery".to_string());
    }
    again.close().map_err(|e| format!("close after the second open failed: {e}"))?;
    Ok((found, salvaged))
}

/// The report rules of the module doc.
fn check_report(db: &Db, fs: &dyn FileSystem, salvaged: bool) -> Result<RecoveryReport, String> {
    let rep = db.recovery_report();
    let bad = |why: String| {
        Err(format!("recovery report inconsistent: {why}; report: {}", rep.render().trim_end()))
    };
    if !salvaged && !rep.wal_skipped.is_empty() {
        return bad("damage skipped under the default (point-in-time) recovery mode".into());
    }
    let mut must_move: Vec<String> = rep.wal_tails.iter().map(|t| t.file.clone()).collect();
    must_move.extend(rep.wals_not_replayed.iter().map(|n| format!("{n:06}.log")));
    must_move.extend(rep.manifest_tail.iter().map(|t| t.file.clone()));
    must_move.extend(rep.wal_skipped.iter().map(|t| t.file.clone()));
    if let Some(f) = must_move.iter().find(|f| !rep.moved_to_lost.contains(f)) {
        return bad(format!("{f} was not (fully) used but is not in moved_to_lost"));
    }
    let dir = db_dir();
    let live = fs.list_dir(&dir).map_err(|e| format!("listing {}: {e}", dir.display()))?;
    let lost = lost_files(fs, &dir.join("lost"));
    for f in &rep.moved_to_lost {
        if !lost.contains(f) || live.contains(f) {
            return bad(format!("{f} is in moved_to_lost but not (only) in lost/"));
        }
    }
    let rendered = db.property("strata.recovery");
    if rendered.as_deref() != Some(rep.render().as_str()) {
        return bad(format!("the strata.recovery property says {rendered:?}"));
    }
    Ok(rep)
}

fn lost_files(fs: &dyn FileSystem, lost: &Path) -> Vec<String> {
    match fs.is_dir(lost) {
        Ok(Some(true)) => fs.list_dir(lost).unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Point reads of every key, checked against a forward and a backward full scan.
pub fn read_all(db: &Db, keys: u64) -> Result<Vec<Option<Vec<u8>>>, String> {
    let r = ReadOptions::new();
    let found = (0..keys)
        .map(|k| db.get_opt(&r, &key_bytes(k)).map_err(|e| format!("get k{k:08} after recovery: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    for reverse in [false, true] {
        check_scan(db, &found, reverse)?;
    }
    Ok(found)
}

fn check_scan(db: &Db, found: &[Option<Vec<u8>>], reverse: bool) -> Result<(), String> {
    let dir = if reverse { "backward" } else { "forward" };
    let mut it = db.cursor(&ReadOptions::new()).map_err(|e| format!("{dir} scan: {e}"))?;
    if reverse {
        it.seek_to_last()
    } else {
        it.seek_to_first()
    }
    let (mut seen, mut last) = (0u64, None::<u64>);
    while it.valid() {
        if it.key() != PROBE_KEY {
            let k = parse_key(it.key()).filter(|&k| k < found.len() as u64).ok_or_else(|| {
                format!("{dir} scan: unexpected key {:?}", String::from_utf8_lossy(it.key()))
            })?;
            let ordered = last.is_none_or(|l| if reverse { k < l } else { k > l });
            if !ordered || found[k as usize].as_deref() != Some(it.value()) {
                return Err(format!(
                    "{dir} scan: k{k:08} = {} but the point read gave {}{}",
                    describe(Some(it.value())),
                    describe(found[k as usize].as_deref()),
                    if ordered { "" } else { " (out of order)" }
                ));
            }
            seen += 1;
            last = Some(k);
        }
        if reverse {
            it.prev()
        } else {
            it.next()
        }
    }
    it.status().map_err(|e| format!("{dir} scan: {e}"))?;
    let expected = found.iter().filter(|v| v.is_some()).count() as u64;
    if seen != expected {
        return Err(format!("{dir} scan returned {seen} keys, point reads found {expected}"));
    }
    Ok(())
}

/// Writes the database directory of `img` (and its `lost/`) to `target` with `note` in
/// `FAILURE.txt`, so a failing image can be opened again with `strata` or a later engine.
pub fn dump(img: &MemFs, target: &Path, note: &str) -> std::io::Result<()> {
    let dir = db_dir();
    for (from, to) in [(dir.clone(), target.to_path_buf()), (dir.join("lost"), target.join("lost"))] {
        let Ok(names) = img.list_dir(&from) else { continue };
        std::fs::create_dir_all(&to)?;
        for name in names {
            if let Some(bytes) = img.contents(&from.join(&name)) {
                std::fs::write(to.join(&name), bytes)?;
            }
        }
    }
    std::fs::write(target.join("FAILURE.txt"), note)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A WAL holding one 23-byte FULL record whose last `lost` payload bytes read as zeros,
    /// then zeros to the end of the block.
    fn wal_with_short_record(lost: usize) -> MemFs {
        let mem = MemFs::new();
        mem.create_dir_all(&db_dir()).unwrap();
        let mut f = mem.create(&db_dir().join("000007.log")).unwrap();
        let mut bytes = vec![0xaa, 0xbb, 0xcc, 0xdd, 23, 0, 1];
        bytes.extend((0..23).map(|i| if i >= 23 - lost { 0 } else { 0x11 }));
        bytes.resize(BLOCK, 0);
        f.append(&bytes).unwrap();
        mem
    }

    #[test]
    fn the_signature_is_found_in_the_last_fragment_of_a_record_across_blocks() {
        // A FIRST fragment filling block 0 from offset 100, its LAST fragment in block 1 one
        // byte short.
        let mut data = vec![0u8; 2 * BLOCK];
        let first_len = BLOCK - 100 - 7;
        data[100..107].copy_from_slice(&[1, 2, 3, 4, first_len as u8, (first_len >> 8) as u8, 2]);
        data[107..BLOCK].fill(0x22);
        data[BLOCK..BLOCK + 7].copy_from_slice(&[5, 6, 7, 8, 40, 0, 4]);
        data[BLOCK + 7..BLOCK + 46].fill(0x33);
        assert_eq!(short_fragment(&data, 100), Some((BLOCK, 40, 1)));
        data[BLOCK + 46] = 0x33;
        assert_eq!(short_fragment(&data, 100), None, "complete: not this issue");
    }

    #[test]
    fn the_short_append_signature_is_recognised_and_nothing_else() {
        let e = Error::corruption("WAL 000007.log at offset 0: checksum mismatch (a complete record ...)");
        assert!(short_append(&wal_with_short_record(1), &e).is_some());
        assert!(short_append(&wal_with_short_record(15), &e).is_some());
        assert!(short_append(&wal_with_short_record(16), &e).is_none(), "16 zeros: the reader calls it torn");
        assert!(short_append(&wal_with_short_record(0), &e).is_none(), "no zeros: a flipped byte");
        let other = Error::corruption("WAL 000007.log at offset 0: bad record type");
        assert!(short_append(&wal_with_short_record(1), &other).is_none());
    }
}
