//! Installing a snapshot, crash-safely, and finishing an install a crash interrupted.
//!
//! Order: the file is adopted into `<dir>/snapshots/` (renamed or copied, synced) and checked
//! whole; then the marker `sm_meta/installing` = its file name is written with `sync = true`;
//! then the `default` family is cleared (one range deletion), the file's tables ingested, and
//! `applied` + `membership` written with the marker's deletion in one synced batch. Every step
//! after the marker can be redone from the file, so `RaftStore::open` redoes them when it finds
//! the marker. It must not touch the log families.

use std::path::{Path, PathBuf};

use strata::{IngestOptions, WriteBatch, WriteOptions};

use crate::codec::{self, APPLIED_KEY, INSTALLING_KEY, MEMBERSHIP_KEY};
use crate::error::io;
use crate::snapshot::{is_snapshot_file, sync_dir};
use crate::snapshot_file::{self, Meta, Unpacked};
use crate::store::{unique_path, Shared};

const SYNC: WriteOptions = WriteOptions { sync: true, disable_wal: false };

/// Replaces the state machine with the snapshot in the file at `received`, described by `meta`.
///
/// # Errors
/// `Corruption` when the file is damaged or describes another snapshot than `meta`;
/// `InvalidArgument` for a snapshot id that is not a file name; as strata's writes and ingestion.
pub(crate) fn install(shared: &Shared, meta: &Meta, received: &Path) -> strata::Result<()> {
    let _exclusive = shared.snapshots.replacing();
    let path = adopt(shared, received, &meta.snapshot_id)?;
    let work = unique_path(shared.snapshots.dir(), "install-", ".tmp");
    let result = install_from(shared, meta, &path, &work);
    // A leftover is removed at the next open.
    let _ = std::fs::remove_dir_all(&work);
    result?;
    shared.snapshots.set_current(meta.clone(), path);
    Ok(())
}

fn install_from(shared: &Shared, meta: &Meta, path: &Path, work: &Path) -> strata::Result<()> {
    let unpacked = snapshot_file::unpack(path, work)?;
    if unpacked.meta != *meta {
        return Err(strata::Error::Corruption(format!(
            "snapshot file {} holds snapshot {}, not {}",
            path.display(),
            unpacked.meta.snapshot_id,
            meta.snapshot_id
        )));
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    shared.db.put_cf_opt(&shared.sm_cf, &SYNC, INSTALLING_KEY, name.as_bytes())?;
    replace_state(shared, &unpacked)
}

/// Moves or copies the received file to its place in the snapshot directory, durably.
fn adopt(shared: &Shared, received: &Path, id: &str) -> strata::Result<PathBuf> {
    let dir = shared.snapshots.dir();
    let path = shared.snapshots.path_of(id)?;
    if received == path {
        return Ok(path);
    }
    if received.parent() == Some(dir) {
        std::fs::File::open(received).and_then(|f| f.sync_all()).map_err(|e| io(received, e))?;
        std::fs::rename(received, &path).map_err(|e| io(&path, e))?;
    } else {
        // Not ours (a path another store handed over): copy, leaving the original.
        let part = unique_path(dir, "recv-", ".part");
        std::fs::copy(received, &part).map_err(|e| io(received, e))?;
        std::fs::File::open(&part).and_then(|f| f.sync_all()).map_err(|e| io(&part, e))?;
        std::fs::rename(&part, &path).map_err(|e| io(&path, e))?;
    }
    sync_dir(dir)?;
    Ok(path)
}

/// The steps after the marker: clear `default`, ingest, then `applied`, `membership` and the
/// marker's deletion in one synced batch. Idempotent.
fn replace_state(shared: &Shared, unpacked: &Unpacked) -> strata::Result<()> {
    let (db, data) = (&shared.db, &shared.data_cf);
    let first = db.iter_cf(data).next().transpose()?;
    let last = db.iter_cf(data).next_back().transpose()?;
    if let (Some((first, _)), Some((mut end, _))) = (first, last) {
        end.push(0);
        db.delete_range_cf_opt(data, &WriteOptions::default(), &first, &end)?;
    }
    if !unpacked.ssts.is_empty() {
        db.ingest_external_file_cf(data, &unpacked.ssts, &IngestOptions::default())?;
    }
    let mut batch = WriteBatch::new();
    match &unpacked.meta.last_log_id {
        Some(id) => batch.put_cf(&shared.sm_cf, APPLIED_KEY, codec::encode(id)?),
        None => batch.delete_cf(&shared.sm_cf, APPLIED_KEY),
    };
    batch.put_cf(&shared.sm_cf, MEMBERSHIP_KEY, codec::encode(&unpacked.meta.last_membership)?);
    batch.delete_cf(&shared.sm_cf, INSTALLING_KEY);
    db.write_opt(&SYNC, batch)
}

/// At open: finishes an interrupted install, picks the current snapshot (the newest file not
/// newer than the applied state: a received file never installed is dropped) and removes
/// leftovers of builds and transfers.
///
/// # Errors
/// As [`install`] for the interrupted install; `Corruption` for an undecodable `applied`.
pub(crate) fn recover(shared: &Shared) -> strata::Result<()> {
    if let Some(name) = shared.db.get_cf(&shared.sm_cf, INSTALLING_KEY)? {
        let name = String::from_utf8(name)
            .map_err(|_| strata::Error::Corruption("installing marker not UTF-8".into()))?;
        let path = shared.snapshots.dir().join(&name);
        if !is_snapshot_file(&path) {
            return Err(strata::Error::Corruption(format!("installing marker names {name:?}")));
        }
        let work = unique_path(shared.snapshots.dir(), "install-", ".tmp");
        let result = snapshot_file::unpack(&path, &work).and_then(|u| replace_state(shared, &u));
        let _ = std::fs::remove_dir_all(&work);
        result?;
    }
    let applied: Option<openraft::LogId<crate::NodeId>> = shared.read(&shared.sm_cf, APPLIED_KEY)?;
    let mut best: Option<(Meta, PathBuf)> = None;
    let entries = std::fs::read_dir(shared.snapshots.dir()).map_err(|e| io(shared.snapshots.dir(), e))?;
    for path in entries.flatten().map(|e| e.path()) {
        if !is_snapshot_file(&path) {
            // Builds, transfers and installs that a crash cut short.
            let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
            continue;
        }
        let Ok(meta) = snapshot_file::read_meta(&path) else { continue };
        let newer = best.as_ref().is_none_or(|(b, _)| meta.last_log_id > b.last_log_id);
        if meta.last_log_id <= applied && newer {
            best = Some((meta, path));
        }
    }
    shared.snapshots.keep_only(best.as_ref().map(|(_, path)| path.as_path()));
    if let Some((meta, path)) = best {
        shared.snapshots.set_current(meta, path);
    }
    Ok(())
}
