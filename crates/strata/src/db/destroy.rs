//! `Db::destroy` (RocksDB's `DestroyDB`): deletes a closed database's files. It deletes only the
//! names strata owns (tables, blob files, logs, MANIFESTs, OPTIONS, CURRENT, LOCK, the info LOG
//! and its rotations, temporary files); anything else in the directory, and the `lost/` folder
//! where repair keeps what it set aside, stays, and so does the directory then.

use std::path::Path;
use std::sync::Arc;

use super::info_log::{LOG_NAME, OLD_LOG_PREFIX};
use super::Db;
use crate::error::{Error, Result};
use crate::filenames;
use crate::options::Options;

/// True for the names of files a database directory holds and strata wrote.
fn owned_by_strata(name: &str) -> bool {
    filenames::parse(name).is_some()
        || name == filenames::CURRENT
        || name == LOG_NAME
        || name.starts_with(OLD_LOG_PREFIX)
}

impl Db {
    /// Deletes the database at `path`: every file strata wrote there, then the directory if
    /// nothing else is left in it. A missing directory is not an error (there is nothing to
    /// destroy), as in RocksDB.
    ///
    /// # Errors
    /// `Locked` while the database is open (in this process or another); `NotADatabase` when
    /// the directory holds no file strata wrote (so a mistyped path never loses anyone's files);
    /// `InvalidArgument` when `path` is a file; `Io` when a file cannot be removed (the files
    /// removed before it stay removed).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("db");
    /// use strata::{Db, Error, Options};
    /// let db = Db::open(&path, Options::default())?;
    /// db.put("k", "v")?;
    /// assert!(matches!(Db::destroy(&path, Options::default()), Err(Error::Locked(_))));
    /// db.close()?;
    /// Db::destroy(&path, Options::default())?;
    /// assert!(!path.exists());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn destroy(path: impl AsRef<Path>, opts: Options) -> Result<()> {
        let path = path.as_ref();
        let fs = Arc::clone(&opts.fs);
        match fs.is_dir(path)? {
            None => return Ok(()),
            Some(false) => {
                return Err(Error::InvalidArgument(format!("{} is a file, not a database", path.display())))
            }
            Some(true) => {}
        }
        let names = fs.list_dir(path)?;
        if !names.iter().any(|n| owned_by_strata(n) || n == filenames::LOCK) {
            return Err(Error::NotADatabase(path.to_path_buf()));
        }
        let lock_path = path.join(filenames::LOCK);
        let lock = fs.lock(&lock_path)?;
        for name in names.iter().filter(|n| owned_by_strata(n)) {
            fs.remove_file(&path.join(name))?;
        }
        drop(lock);
        fs.remove_file(&lock_path)?;
        if fs.list_dir(path)?.is_empty() {
            fs.remove_dir(path)?;
        } else {
            fs.sync_dir(path)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owns_only_the_names_strata_writes() {
        for name in ["000012.sst", "000013.log", "000014.blob", "MANIFEST-000002", "OPTIONS-000005"] {
            assert!(owned_by_strata(name), "{name}");
        }
        for name in ["CURRENT", "LOG", "LOG.old.1700000000000000", "CURRENT.dbtmp"] {
            assert!(owned_by_strata(name), "{name}");
        }
        for name in ["notes.txt", "lost", "12.parquet", "MANIFEST", "backup.sst.bak"] {
            assert!(!owned_by_strata(name), "{name}");
        }
    }
}
