//! `Db::checkpoint`: an openable copy of the database as of the call, in another directory of
//! the same filesystem. Table and blob files are immutable, so they are hard-linked (copied
//! where links are impossible); the checkpoint gets a MANIFEST of its own that lists exactly
//! them, an OPTIONS file and CURRENT. It is assembled in `<target>.tmp` and renamed into place,
//! so a crash never leaves a partial checkpoint that looks like a database. This module must
//! not change the source beyond the flush it starts with.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::db::DbInner;
use crate::error::{Error, Result};
use crate::filenames;

/// Staging directories of the checkpoints this process is making: two at once to the same
/// target would share one and mix their files.
fn in_progress() -> &'static Mutex<HashSet<PathBuf>> {
    static SET: OnceLock<Mutex<HashSet<PathBuf>>> = OnceLock::new();
    SET.get_or_init(Default::default)
}

/// Holds a staging directory's entry in [`in_progress`] until dropped.
struct Claim(PathBuf);

impl Claim {
    fn take(tmp: PathBuf) -> Result<Claim> {
        let mut set = in_progress().lock().unwrap_or_else(|e| e.into_inner());
        if !set.insert(tmp.clone()) {
            return Err(Error::InvalidArgument(format!("a checkpoint to {} is in progress", tmp.display())));
        }
        Ok(Claim(tmp))
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        in_progress().lock().unwrap_or_else(|e| e.into_inner()).remove(&self.0);
    }
}

impl DbInner {
    pub(crate) fn checkpoint(&self, target: &Path) -> Result<()> {
        let tmp = staging_dir(target);
        let _claim = Claim::take(tmp.clone())?;
        if self.fs.is_dir(target)?.is_some() {
            return Err(Error::InvalidArgument(format!(
                "checkpoint target {} already exists",
                target.display()
            )));
        }
        let placed = self.fill_checkpoint(&tmp).and_then(|()| self.fs.rename(&tmp, target));
        if let Err(e) = placed {
            self.discard_staging(&tmp);
            return Err(e);
        }
        let parent = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if let Err(e) = self.fs.sync_dir(parent) {
            // Its name may not survive a crash: take it back, so that an error never leaves a
            // target behind.
            if self.fs.rename(target, &tmp).is_ok() {
                self.discard_staging(&tmp);
            }
            return Err(e);
        }
        Ok(())
    }

    fn fill_checkpoint(&self, tmp: &Path) -> Result<()> {
        self.fs.create_dir_all(tmp)?;
        // Files a failed earlier attempt left.
        self.discard_staging(tmp);
        // The version is held until every file it lists is linked: a version someone holds keeps
        // its files from obsolete-file deletion, whatever compactions do meanwhile.
        // Every acknowledged write, logged or not, goes into tables the checkpoint links, and
        // the versions are taken at one point across families (an atomic batch is wholly in
        // the checkpoint or wholly out of it).
        let (families, manifest_number) =
            self.at_flushed_cut(|| self.versions.lock().write_manifest_into(tmp))?;
        for version in families.values().map(|f| &f.current) {
            for number in version.table_numbers() {
                self.fs.link_or_copy(&filenames::table(&self.dir, number), &filenames::table(tmp, number))?;
            }
            for &number in version.blob_files.keys() {
                self.fs.link_or_copy(&filenames::blob(&self.dir, number), &filenames::blob(tmp, number))?;
            }
        }
        let options = self.render_options();
        self.fs.write_atomic(tmp, &filenames::options_name(manifest_number), options.as_bytes())?;
        // Last: until CURRENT names the MANIFEST, the directory is not a database. Its
        // directory fsync also makes every link and file above durable.
        let current = format!("{}\n", filenames::manifest_name(manifest_number));
        self.fs.write_atomic(tmp, filenames::CURRENT, current.as_bytes())
    }

    /// Removes the files of a staging directory (best effort; the directory itself stays, and
    /// the next checkpoint to the same target reuses it).
    fn discard_staging(&self, tmp: &Path) {
        for name in self.fs.list_dir(tmp).unwrap_or_default() {
            if let Err(e) = self.fs.remove_file(&tmp.join(&name)) {
                tracing::warn!(error = %e, "could not remove a checkpoint's staging file");
            }
        }
    }
}

/// `<target>.tmp`, beside the target.
fn staging_dir(target: &Path) -> PathBuf {
    let mut name = target.as_os_str().to_os_string();
    name.push(".tmp");
    PathBuf::from(name)
}
