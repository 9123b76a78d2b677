//! `RaftStore`: one strata database at `<dir>/db` holding the Raft log (`raft_log`), the log
//! store's state (`raft_meta`), the state machine's state (`sm_meta`) and the user data
//! (`default`), plus built and received snapshot files in `<dir>/snapshots/`.
//!
//! It owns opening (including finishing a snapshot install a crash interrupted) and the reads
//! the server serves from the applied state. It hands out the openraft halves, `LogStore` and
//! `StateMachine`, which share it; it must not implement their logic itself.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::DeserializeOwned;
use strata::{ColumnFamily, Db, Options};

use crate::codec::{self, LOG_CF, META_CF, SM_META_CF};
use crate::log_store::LogStore;
use crate::log_writer::LogWriter;
use crate::snapshot::Snapshots;
use crate::state_machine::StateMachine;

/// The state both openraft halves share.
pub(crate) struct Shared {
    /// Declared first so it drops first: its thread holds a handle on the database.
    pub(crate) writer: LogWriter,
    pub(crate) db: Arc<Db>,
    pub(crate) log_cf: ColumnFamily,
    pub(crate) meta_cf: ColumnFamily,
    pub(crate) sm_cf: ColumnFamily,
    pub(crate) data_cf: ColumnFamily,
    pub(crate) snapshots: Snapshots,
}

impl Shared {
    /// Reads and decodes the record at `key` of `cf`.
    pub(crate) fn read<T: DeserializeOwned>(
        &self,
        cf: &ColumnFamily,
        key: &[u8],
    ) -> strata::Result<Option<T>> {
        match self.db.get_cf(cf, key)? {
            Some(bytes) => codec::decode(&bytes, &String::from_utf8_lossy(key)).map(Some),
            None => Ok(None),
        }
    }
}

/// The storage of one Raft node. Cheap to clone: clones share the database.
#[derive(Clone)]
pub struct RaftStore {
    shared: Arc<Shared>,
}

impl RaftStore {
    /// Opens the store in `dir`, creating it if missing. A snapshot install that a crash
    /// interrupted is finished before this returns.
    ///
    /// # Errors
    /// As `strata::Db::open_cf`; `Io` when a directory or the writer thread cannot be created;
    /// `Corruption` when a stored record or the snapshot being installed does not decode.
    pub fn open(dir: &Path) -> strata::Result<RaftStore> {
        let snapshot_dir = dir.join("snapshots");
        std::fs::create_dir_all(&snapshot_dir).map_err(|e| crate::error::io(&snapshot_dir, e))?;
        let opts = Options { create_if_missing: true, ..Options::default() };
        let families = [LOG_CF, META_CF, SM_META_CF].map(|name| (name, Options::default()));
        let db = Arc::new(Db::open_cf(dir.join("db"), opts, families)?);
        let family = |name: &str| {
            db.cf(name)
                .ok_or_else(|| strata::Error::Corruption(format!("column family {name} missing after open")))
        };
        let (log_cf, meta_cf, sm_cf) = (family(LOG_CF)?, family(META_CF)?, family(SM_META_CF)?);
        let data_cf = db.default_cf();
        let writer = LogWriter::start(db.clone()).map_err(|e| crate::error::io(dir, e))?;
        let snapshots = Snapshots::new(snapshot_dir);
        let shared = Arc::new(Shared { writer, db, log_cf, meta_cf, sm_cf, data_cf, snapshots });
        crate::install::recover(&shared)?;
        Ok(RaftStore { shared })
    }

    /// The log half, for `openraft::Raft::new`.
    pub fn log_store(&self) -> LogStore {
        LogStore::new(self.shared.clone())
    }

    /// The state machine half, for `openraft::Raft::new`.
    pub fn state_machine(&self) -> StateMachine {
        StateMachine::new(self.shared.clone())
    }

    /// The database, for admin commands (stats, properties, compaction).
    pub fn db(&self) -> &Db {
        &self.shared.db
    }

    /// The directory snapshot files are kept in.
    pub fn snapshot_dir(&self) -> &Path {
        self.shared.snapshots.dir()
    }

    /// The applied value of `key` (`None`: absent).
    ///
    /// # Errors
    /// As `strata::Db::get_cf`.
    pub fn get(&self, key: &[u8]) -> strata::Result<Option<Vec<u8>>> {
        self.shared.db.get_cf(&self.shared.data_cf, key)
    }

    /// Up to `limit` applied pairs with `start <= key < end` (`end: None`: to the last key), in
    /// key order.
    ///
    /// # Errors
    /// As a strata iterator.
    pub fn scan(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
    ) -> strata::Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let s = &self.shared;
        let iter = match end {
            Some(end) => s.db.range_cf(&s.data_cf, start..end),
            None => s.db.range_cf(&s.data_cf, start..),
        };
        iter.take(limit).collect()
    }
}

/// A string no earlier call in this process returned, and unlikely in another process.
pub(crate) fn unique_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{nanos:x}-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A fresh, unused file name in `dir` starting with `prefix`.
pub(crate) fn unique_path(dir: &Path, prefix: &str, suffix: &str) -> PathBuf {
    loop {
        let path = dir.join(format!("{prefix}{}{suffix}", unique_suffix()));
        if !path.exists() {
            return path;
        }
    }
}
