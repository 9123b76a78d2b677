//! Deleting what no version needs any more: flushed WALs, old MANIFESTs, and tables and blob
//! files removed by compaction or a dropped family once no reader holds a version that lists
//! them. It must not decide what is obsolete: the version set and the obsolete lists do.

use std::time::Instant;

use crate::db::DbInner;
use crate::filenames;
use crate::util::kill_point::kill_point;

impl DbInner {
    /// Deletes files no version references any more: flushed WALs, old MANIFESTs, and tables
    /// and blob files removed by compaction once no reader holds a version that lists them.
    pub(crate) fn delete_obsolete_files(&self) {
        let start = Instant::now();
        // The live set and the obsolete lists are read under the versions lock: every install
        // adds to the lists while holding it, so no file listed here can have joined a version
        // after the live set was computed (a moved file is live again at its new level).
        let (tables, blobs, log_number, manifest, locked) = {
            let v = self.versions.lock();
            let locked = start.elapsed();
            let (live_tables, live_blobs) = v.live_files();
            let mut bg = self.bg.lock();
            let tables: Vec<u64> = std::mem::take(&mut bg.obsolete_tables);
            let blobs: Vec<u64> = std::mem::take(&mut bg.obsolete_blobs);
            let (dead_t, keep_t): (Vec<u64>, Vec<u64>) =
                tables.into_iter().partition(|n| !live_tables.contains(n));
            let (dead_b, keep_b): (Vec<u64>, Vec<u64>) =
                blobs.into_iter().partition(|n| !live_blobs.contains(n));
            bg.obsolete_tables = keep_t;
            bg.obsolete_blobs = keep_b;
            (dead_t, dead_b, v.log_number(), v.manifest_number(), locked)
        };
        self.drop_flushed_wals(log_number);
        let deleted = (tables.len(), blobs.len());
        for n in tables {
            self.table_cache.evict(n);
            kill_point("obsolete.delete.table");
            self.remove(&filenames::table(&self.dir, n));
        }
        for n in blobs {
            self.table_cache.evict(n);
            kill_point("obsolete.delete.blob");
            self.remove(&filenames::blob(&self.dir, n));
        }
        let Ok(names) = self.fs.list_dir(&self.dir) else { return };
        for name in names {
            match filenames::parse(&name) {
                Some((filenames::FileKind::Wal, n)) if n < log_number => kill_point("obsolete.delete.wal"),
                Some((filenames::FileKind::Manifest, n)) if n < manifest => {
                    kill_point("obsolete.delete.manifest")
                }
                _ => continue,
            }
            self.remove(&self.dir.join(&name));
        }
        self.log_if_slow(
            None,
            "deleting obsolete files",
            start.elapsed(),
            format_args!(
                " ({} tables and {} blob files; {} us waiting for the versions lock)",
                deleted.0,
                deleted.1,
                locked.as_micros()
            ),
        );
    }

    fn remove(&self, path: &std::path::Path) {
        if let Err(e) = self.fs.remove_file(path) {
            tracing::warn!(error = %e, "could not delete an obsolete file");
        }
    }
}
