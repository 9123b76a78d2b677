//! Building snapshots and keeping track of the current one. A build takes a strata checkpoint
//! of the whole database (consistent: `applied` and the effects it covers are written in one
//! batch), opens it read-only, exports the `default` family into table files and packs them with
//! the checkpoint's `applied` log id and membership into one snapshot file
//! (`snapshot_file`), named `snap-<id>.snap` in `<dir>/snapshots/`. The checkpoint is deleted
//! afterwards. Only the newest built or installed snapshot file is kept.
//!
//! It must not change the live database; installing is `install`'s.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use strata::{Db, Options, SstFileWriter};

use crate::codec::{APPLIED_KEY, MEMBERSHIP_KEY, SM_META_CF};
use crate::error::io;
use crate::snapshot_file::{self, Meta};
use crate::store::{unique_path, Shared};

/// A table file of the export is closed after this many bytes of keys and values.
const SST_TARGET_BYTES: usize = 64 << 20;

/// The snapshot directory and its current snapshot.
pub(crate) struct Snapshots {
    dir: PathBuf,
    current: Mutex<Option<(Meta, PathBuf)>>,
    /// Held by an install for its whole run and by a build while it takes its checkpoint:
    /// openraft may build (in a task of its own) while the state machine installs, and a
    /// checkpoint of a half-installed state would pair the old `applied` with new data.
    replacing: Mutex<()>,
}

impl Snapshots {
    pub(crate) fn new(dir: PathBuf) -> Snapshots {
        Snapshots { dir, current: Mutex::new(None), replacing: Mutex::new(()) }
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Excludes installs (for a build's checkpoint) or builds and other installs (for an
    /// install) while the guard lives.
    pub(crate) fn replacing(&self) -> MutexGuard<'_, ()> {
        self.replacing.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The newest snapshot built or installed, and its file.
    pub(crate) fn current(&self) -> Option<(Meta, PathBuf)> {
        self.current.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Makes `path` the current snapshot unless a newer one is, and deletes whichever of the
    /// two files lost: only those, since another may be in the middle of an install. A file
    /// being sent keeps being readable while open (POSIX unlink).
    pub(crate) fn set_current(&self, meta: Meta, path: PathBuf) {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        let newer = current.as_ref().is_none_or(|(m, _)| m.last_log_id <= meta.last_log_id);
        let loser = if newer { current.replace((meta, path)).map(|(_, p)| p) } else { Some(path) };
        if let Some(loser) = loser.filter(|l| current.as_ref().is_none_or(|(_, p)| p != l)) {
            // A file that cannot be removed now is removed at the next open.
            let _ = std::fs::remove_file(loser);
        }
    }

    /// At open, when nothing else runs: deletes every snapshot file but `keep`.
    pub(crate) fn keep_only(&self, keep: Option<&Path>) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return };
        for path in entries.flatten().map(|e| e.path()) {
            if is_snapshot_file(&path) && Some(path.as_path()) != keep {
                let _ = std::fs::remove_file(&path);
            }
        }
    }

    /// A fresh path for the network layer to write a received snapshot into.
    pub(crate) fn receive_path(&self) -> PathBuf {
        unique_path(&self.dir, "recv-", ".part")
    }

    /// Where the snapshot `id` is kept.
    pub(crate) fn path_of(&self, id: &str) -> strata::Result<PathBuf> {
        let ok = !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !ok {
            return Err(strata::Error::InvalidArgument(format!("snapshot id {id:?} is not a file name")));
        }
        Ok(self.dir.join(format!("snap-{id}.snap")))
    }
}

/// Whether `path` names a complete snapshot file (`snap-*.snap`).
pub(crate) fn is_snapshot_file(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.starts_with("snap-") && name.ends_with(".snap")
}

/// Builds a snapshot of the applied state and makes it current.
///
/// # Errors
/// As `Db::checkpoint`, `Db::open_read_only`, `SstFileWriter`; `Io` for the files.
pub(crate) fn build(shared: &Shared) -> strata::Result<(Meta, PathBuf)> {
    let work = unique_path(shared.snapshots.dir(), "build-", ".tmp");
    std::fs::create_dir_all(&work).map_err(|e| io(&work, e))?;
    let result = build_in(shared, &work);
    // A leftover is removed at the next open.
    let _ = std::fs::remove_dir_all(&work);
    let (meta, path) = result?;
    shared.snapshots.set_current(meta.clone(), path.clone());
    Ok((meta, path))
}

fn build_in(shared: &Shared, work: &Path) -> strata::Result<(Meta, PathBuf)> {
    let checkpoint = work.join("checkpoint");
    {
        let _no_install = shared.snapshots.replacing();
        shared.db.checkpoint(&checkpoint)?;
    }
    let db = Db::open_read_only(&checkpoint, Options::default())?;
    let sm = db
        .cf(SM_META_CF)
        .ok_or_else(|| strata::Error::Corruption("checkpoint has no sm_meta family".into()))?;
    let read = |key: &[u8]| db.get_cf(&sm, key);
    let last_log_id = read(APPLIED_KEY)?.map(|b| crate::codec::decode(&b, "applied")).transpose()?;
    let last_membership =
        read(MEMBERSHIP_KEY)?.map(|b| crate::codec::decode(&b, "membership")).transpose()?;
    let meta = Meta {
        last_log_id,
        last_membership: last_membership.unwrap_or_default(),
        snapshot_id: new_id(&last_log_id),
    };
    let ssts = export(&db, &work.join("export"))?;
    drop(db);
    let path = shared.snapshots.path_of(&meta.snapshot_id)?;
    let part = unique_path(shared.snapshots.dir(), "build-", ".part");
    snapshot_file::write(&part, &meta, &ssts)?;
    std::fs::rename(&part, &path).map_err(|e| io(&path, e))?;
    sync_dir(shared.snapshots.dir())?;
    Ok((meta, path))
}

/// A snapshot id: the last log id's term and index, then a part unique to this build.
fn new_id(last: &Option<openraft::LogId<crate::NodeId>>) -> String {
    let (term, index) = last.map_or((0, 0), |id| (id.leader_id.term, id.index));
    format!("{term}-{index}-{}", crate::store::unique_suffix())
}

/// Writes the `default` family of `db` into table files in `dir`, in key order.
fn export(db: &Db, dir: &Path) -> strata::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let mut files = Vec::new();
    let mut writer: Option<(SstFileWriter, usize)> = None;
    for item in db.iter_cf(&db.default_cf()) {
        let (key, value) = item?;
        if writer.is_none() {
            let path = dir.join(format!("{:06}.sst", files.len()));
            writer = Some((SstFileWriter::create(&path, &Options::default())?, 0));
            files.push(path);
        }
        if let Some((w, bytes)) = writer.as_mut() {
            w.put(&key, &value)?;
            *bytes += key.len() + value.len();
            if *bytes >= SST_TARGET_BYTES {
                writer.take().map(|(w, _)| w.finish()).transpose()?;
            }
        }
    }
    writer.map(|(w, _)| w.finish()).transpose()?;
    Ok(files)
}

/// Makes the directory's entries (a renamed file) durable.
pub(crate) fn sync_dir(dir: &Path) -> strata::Result<()> {
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io(dir, e))
}
