//! Offline verification of a whole database directory (`strata check`): every checksum of every
//! live SST, blob file, WAL and the MANIFEST, and cross-checks between them. It only reads: no
//! lock is taken and nothing in the directory is created, changed or removed, so it can run on a
//! copy, on a damaged database, or beside a running process.

use std::path::Path;
use std::sync::Arc;

use crate::blob::BlobReader;
use crate::db::wal_replay;
use crate::error::{Error, Result};
use crate::filenames::{self, FileKind};
use crate::fs::FileSystem;
use crate::options::WalRecoveryMode;
use crate::sst::Table;
use crate::version::set::{Recovered, VersionSet};
use crate::version::version::Version;

/// One problem found by [`verify_db`], naming the file. See the example on [`verify_db`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file's name inside the database directory.
    pub file: String,
    /// What is wrong.
    pub message: String,
}

/// What [`verify_db`] checked and found: counts of what was read, and every problem. See the
/// example on [`verify_db`].
#[derive(Debug, Default, Clone)]
pub struct VerifyReport {
    /// SST files checked.
    pub tables: usize,
    /// Entries read from SST files.
    pub table_entries: u64,
    /// Blob files checked.
    pub blob_files: usize,
    /// Blob records read.
    pub blob_records: u64,
    /// WAL files checked.
    pub wal_files: usize,
    /// Write batches read from the WALs (each WAL's header record is checked, not counted).
    pub wal_records: u64,
    /// Everything that failed; empty when the database is intact.
    pub problems: Vec<Problem>,
    /// Files in the `lost/` folder (set aside by an open or a repair); not problems.
    pub lost_files: Vec<String>,
}

impl VerifyReport {
    /// True when nothing failed (`problems` is empty). See the example on [`verify_db`].
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }

    fn problem(&mut self, file: String, e: impl std::fmt::Display) {
        self.problems.push(Problem { file, message: e.to_string() });
    }
}

/// Verifies the database at `dir`. Returns `Err` only when the directory cannot be read as a
/// database at all (no CURRENT, unreadable MANIFEST); damage in individual files is reported in
/// the returned report.
///
/// This is what `strata check` runs. Pass [`default_fs`](crate::fs::default_fs) for a database
/// on the local disk.
///
/// # Errors
/// `NotADatabase` when `dir` has no CURRENT file; `Corruption` or `Io` when the MANIFEST cannot be
/// read.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::verify::verify_db;
/// use strata::{fs::default_fs, Db, Options, WriteOptions};
/// let db = Db::open(dir.path(), Options::default())?;
/// for i in 0..100u32 {
///     db.put(&i.to_be_bytes(), b"value")?;
/// }
/// db.flush()?;
/// db.put(b"only-in-the-wal", b"v")?;
///
/// // The database may stay open: verification only reads.
/// let report = verify_db(dir.path(), default_fs())?;
/// assert!(report.is_ok(), "{:?}", report.problems);
/// assert_eq!((report.tables, report.table_entries), (1, 100));
/// assert_eq!(report.wal_records, 1);
/// drop(db);
///
/// // Damage the table: the report names it.
/// let sst = std::fs::read_dir(dir.path())?
///     .map(|e| e.map(|e| e.path()))
///     .collect::<Result<Vec<_>, _>>()?
///     .into_iter()
///     .find(|p| p.extension().is_some_and(|e| e == "sst"))
///     .unwrap();
/// let mut bytes = std::fs::read(&sst)?;
/// bytes[10] ^= 0xff;
/// std::fs::write(&sst, bytes)?;
/// let report = verify_db(dir.path(), default_fs())?;
/// assert!(!report.is_ok());
/// assert!(report.problems[0].file.ends_with(".sst"), "{:?}", report.problems);
///
/// let empty = tempfile::tempdir()?;
/// assert!(matches!(verify_db(empty.path(), default_fs()), Err(strata::Error::NotADatabase(_))));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn verify_db(dir: &Path, fs: Arc<dyn FileSystem>) -> Result<VerifyReport> {
    if fs.is_dir(&dir.join(filenames::CURRENT))?.is_none() {
        return Err(Error::NotADatabase(dir.to_path_buf()));
    }
    let recovered = VersionSet::recover(dir, Arc::clone(&fs))?;
    let mut report = VerifyReport::default();
    for family in recovered.set.families().values() {
        check_version(fs.as_ref(), dir, &family.current, &mut report);
    }
    if let Some((offset, bytes)) = recovered.torn_tail {
        let what = format!("a torn last record at offset {offset} ({bytes} bytes), which recovery drops");
        report.problem(filenames::manifest_name(recovered.manifest_number), what);
    }
    check_wals(fs.as_ref(), dir, recovered.set.log_number(), &mut report)?;
    check_unreferenced(fs.as_ref(), dir, &recovered, &mut report)?;
    Ok(report)
}

/// Reads every table and blob file one family's version lists.
fn check_version(fs: &dyn FileSystem, dir: &Path, version: &Version, report: &mut VerifyReport) {
    for f in version.files.iter().flatten() {
        let name = format!("{:06}.sst", f.number);
        report.tables += 1;
        match check_table(fs, dir, f.number, f.num_entries) {
            Ok(n) => report.table_entries += n,
            Err(e) => report.problem(name, e),
        }
    }
    for b in version.blob_files.values() {
        report.blob_files += 1;
        let name = format!("{:06}.blob", b.meta.number);
        let checked = fs
            .open_random_unmapped(&filenames::blob(dir, b.meta.number))
            .and_then(|file| BlobReader::open(file, b.meta.number))
            .and_then(|r| r.verify());
        match checked {
            Ok(found) if found.total_count != b.meta.total_count => report.problem(
                name,
                format!("{} records, the MANIFEST says {}", found.total_count, b.meta.total_count),
            ),
            Ok(found) => report.blob_records += found.total_count,
            Err(e) => report.problem(name, e),
        }
    }
}

/// Reads every block of one table; returns its entry count.
fn check_table(fs: &dyn FileSystem, dir: &Path, number: u64, expected: u64) -> Result<u64> {
    // Not mapped: this is what one runs on a suspect disk, where a mapped read that fails
    // kills the process instead of naming the file.
    let file = fs.open_random_unmapped(&filenames::table(dir, number))?;
    let table = Table::open(file, number, None)?;
    table.verify_checksums()?;
    let found = table.properties().num_entries;
    if found != expected {
        return Err(Error::corruption(format!("{found} entries, the MANIFEST says {expected}")));
    }
    Ok(found)
}

/// Reads the WALs as recovery would (point-in-time rules, nothing applied): corruption, a torn
/// tail recovery would drop, a WAL it would not replay and a missing predecessor WAL are each a
/// problem.
fn check_wals(fs: &dyn FileSystem, dir: &Path, log_number: u64, report: &mut VerifyReport) -> Result<()> {
    let mut wals: Vec<u64> = fs
        .list_dir(dir)?
        .iter()
        .filter_map(|n| match filenames::parse(n) {
            Some((FileKind::Wal, n)) if n >= log_number => Some(n),
            _ => None,
        })
        .collect();
    wals.sort_unstable();
    report.wal_files = wals.len();
    let mut records = 0;
    let replayed =
        wal_replay::replay(fs, dir, &wals, log_number, WalRecoveryMode::PointInTime, |_, batch| {
            batch.records().try_for_each(|r| r.map(drop))?;
            records += 1;
            Ok(())
        });
    report.wal_records = records;
    match replayed {
        Err(e) => report.problem(wal_named_in(&e).unwrap_or_else(|| "WAL".to_string()), e),
        Ok(r) => {
            for t in r.report.wal_tails {
                let what =
                    format!("recovery would drop {} bytes from offset {}: {}", t.bytes, t.offset, t.reason);
                report.problem(t.file, what);
            }
            for n in r.report.wals_not_replayed {
                report.problem(
                    format!("{n:06}.log"),
                    "recovery would not replay it (it follows a dropped tail)",
                );
            }
        }
    }
    Ok(())
}

/// The `NNNNNN.log` an error message names, if any.
fn wal_named_in(e: &Error) -> Option<String> {
    let text = e.to_string();
    let at = text.find(".log")?;
    let start = text[..at].rfind(|c: char| !c.is_ascii_digit()).map_or(0, |i| i + 1);
    Some(text[start..at + 4].to_string())
}

/// Tables and blob files in the directory that no version of the MANIFEST lists: open would
/// move them to `lost/` (or delete them, if an edit deleted them). WALs below the log number and
/// older MANIFESTs are not reported: the MANIFEST proves them obsolete, and a running database
/// deletes them shortly after they become so.
fn check_unreferenced(
    fs: &dyn FileSystem,
    dir: &Path,
    recovered: &Recovered,
    report: &mut VerifyReport,
) -> Result<()> {
    let (tables, blobs) = recovered.set.live_files();
    for name in fs.list_dir(dir)? {
        let unreferenced = match filenames::parse(&name) {
            Some((FileKind::Table, n)) => !tables.contains(&n) && !recovered.deleted_files.contains(&n),
            Some((FileKind::Blob, n)) => !blobs.contains(&n) && !recovered.deleted_files.contains(&n),
            _ => false,
        };
        if unreferenced {
            report.problem(name, "not referenced by the current MANIFEST");
        }
    }
    if let Ok(lost) = fs.list_dir(&dir.join(filenames::LOST_DIR)) {
        report.lost_files = lost;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Db, Options};

    #[test]
    fn intact_database_passes_and_a_damaged_table_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options { min_blob_size: 64, ..Options::default() };
        {
            let db = Db::open(dir.path(), opts).unwrap();
            for i in 0..2000u32 {
                let v = vec![i as u8; if i % 2 == 0 { 100 } else { 10 }];
                db.put(format!("k{i:05}").as_bytes(), &v).unwrap();
            }
            db.flush().unwrap();
            db.put(b"in-the-wal", b"v").unwrap();
        }
        let before: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
        let report = verify_db(dir.path(), crate::fs::default_fs()).unwrap();
        assert!(report.is_ok(), "{:?}", report.problems);
        assert_eq!((report.tables, report.table_entries, report.blob_records), (1, 2000, 1000));
        assert_eq!(report.wal_records, 1);
        let after: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(before, after, "verification must not change the directory");

        let sst = before.iter().find(|p| p.extension().is_some_and(|e| e == "sst")).unwrap();
        let mut bytes = std::fs::read(sst).unwrap();
        bytes[100] ^= 0x55;
        std::fs::write(sst, bytes).unwrap();
        let report = verify_db(dir.path(), crate::fs::default_fs()).unwrap();
        assert_eq!(report.problems.len(), 1);
        assert!(report.problems[0].file.ends_with(".sst"));
    }

    #[test]
    fn a_directory_without_current_is_not_a_database() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(verify_db(dir.path(), crate::fs::default_fs()), Err(Error::NotADatabase(_))));
    }
}
