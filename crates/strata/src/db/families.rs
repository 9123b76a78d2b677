//! Creating and dropping column families in an open database, and checking that a batch names
//! only live families. Both changes are logged to the MANIFEST (synced) before any writer can
//! see them, under the leader lock, so that no write group is in flight while the set of
//! families changes. This module must not flush, compact or delete files itself: a drop hands
//! the family's files to the background's obsolete lists.

use std::sync::Arc;

use super::family::{family_options, Family};
use super::{DbInner, SuperVersion};
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::key::ValueKind;
use crate::memtable::MemTable;
use crate::options::Options;
use crate::version::edit::VersionEdit;
use crate::version::set::DEFAULT_FAMILY_NAME;
use crate::version::version::Version;

/// The longest column family name accepted, in bytes.
pub const MAX_FAMILY_NAME_LEN: usize = 255;

/// The error for a read or write through the handle of a dropped family.
pub(crate) fn dropped(family: &Family) -> Error {
    Error::InvalidArgument(format!("column family {:?} was dropped", family.name))
}

fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_FAMILY_NAME_LEN {
        return Err(Error::InvalidArgument(format!(
            "column family name must be 1 to {MAX_FAMILY_NAME_LEN} bytes, got {}",
            name.len()
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(Error::InvalidArgument(format!("column family name {name:?} holds a control character")));
    }
    Ok(())
}

impl DbInner {
    /// Refuses a batch that names a family that does not exist, or merges in a family that has
    /// no merge operator; nothing of it is applied.
    pub(crate) fn check_families(&self, batch: &WriteBatch) -> Result<()> {
        if !batch.has_families() {
            if self.default.opts.merge_operator.is_none() && batch.has_merge() {
                return Err(Error::InvalidArgument("merge needs Options::merge_operator".into()));
            }
            return Ok(());
        }
        let families = self.families.load();
        let mut without_operator = Vec::new();
        for id in batch.family_ids() {
            let family = families.get(id).ok_or_else(|| {
                Error::InvalidArgument(format!("the batch writes to column family {id}, which was dropped"))
            })?;
            if family.opts.merge_operator.is_none() {
                without_operator.push(family);
            }
        }
        if without_operator.is_empty() || !batch.has_merge() {
            return Ok(());
        }
        for rec in batch.records() {
            let (id, kind, _, _) = rec?;
            if let Some(family) =
                without_operator.iter().find(|f| f.id == id).filter(|_| kind == ValueKind::Merge)
            {
                return Err(Error::InvalidArgument(format!(
                    "merge in column family {:?} needs a merge operator in its options",
                    family.name
                )));
            }
        }
        Ok(())
    }

    /// The live family called `name`.
    pub(crate) fn family_by_name(&self, name: &str) -> Option<Arc<Family>> {
        self.families.load().by_name(name).cloned()
    }

    /// Creates the family `name` with `opts` (its own settings; database-wide ones come from
    /// the database's options).
    pub(crate) fn create_family(&self, name: &str, opts: &Options) -> Result<Arc<Family>> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        check_name(name)?;
        let opts = family_options(&self.opts, opts);
        opts.validate()?;
        let leader = self.leader.lock();
        if let Some(e) = self.background_error() {
            return Err(e);
        }
        if self.families.load().by_name(name).is_some() {
            return Err(Error::InvalidArgument(format!("column family {name:?} already exists")));
        }
        let mut versions = self.versions.lock();
        let id = versions.next_family_id();
        let edit = VersionEdit {
            column_family: id,
            add_column_family: Some(name.to_string()),
            max_column_family: Some(id),
            // Nothing of the new family is in any WAL before the current one.
            log_number: Some(leader.wal_number),
            ..VersionEdit::default()
        };
        let version = versions.log_and_apply(edit)?;
        let family = Arc::new(Family::new(
            id,
            name.to_string(),
            opts,
            version,
            self.table_cache.block_cache().cloned(),
        ));
        self.families.store(Arc::new(self.families.load().with(Arc::clone(&family))));
        drop(versions);
        drop(leader);
        self.rewrite_options_file();
        Ok(family)
    }

    /// Drops `family`: logs the drop, then hands its files to the obsolete lists (deleted once
    /// no reader holds them). Its memtables are never flushed. The default family cannot be
    /// dropped.
    pub(crate) fn drop_family(&self, family: &Family) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        if family.name == DEFAULT_FAMILY_NAME {
            return Err(Error::InvalidArgument("the default column family cannot be dropped".into()));
        }
        let leader = self.leader.lock();
        if let Some(e) = self.background_error() {
            return Err(e);
        }
        if family.is_dropped() {
            return Err(dropped(family));
        }
        let mut versions = self.versions.lock();
        let edit =
            VersionEdit { column_family: family.id, drop_column_family: true, ..VersionEdit::default() };
        let last = versions.log_and_apply(edit)?;
        self.table_cache.note_db_bytes(versions.live_bytes());
        family.dropped.store(true, std::sync::atomic::Ordering::Release);
        self.families.store(Arc::new(self.families.load().without(family.id)));
        // Readers that already hold the old view keep it; the handle lets go of the files.
        let empty = SuperVersion {
            mem: Arc::new(MemTable::new()),
            imm: Vec::new(),
            version: Arc::new(Version::default()),
        };
        family.super_version.store(Arc::new(empty));
        let mut bg = self.bg.lock();
        bg.obsolete_tables.extend(last.table_numbers());
        bg.obsolete_blobs.extend(last.blob_files.keys().copied());
        self.bg_cv.notify_all();
        drop(bg);
        drop(versions);
        drop(leader);
        self.iter_pool.clear();
        self.delete_obsolete_files();
        self.rewrite_options_file();
        Ok(())
    }
}

impl DbInner {
    /// The options file's text for the database as it is now: the database-wide options, then
    /// each live family's own (`default` first, then in creation order).
    pub(crate) fn render_options(&self) -> String {
        let families = self.families.load();
        super::options_file::render_families(&self.opts, families.iter().map(|f| (f.name.as_str(), &f.opts)))
    }

    /// Writes a new options file after the set of families changed. The MANIFEST, not this
    /// file, is what recovery trusts, so a failure is logged and the change stands.
    fn rewrite_options_file(&self) {
        if let Err(e) = super::open::write_options_file(self) {
            tracing::warn!(target: "strata", error = %e, "could not rewrite the options file");
        }
    }
}
