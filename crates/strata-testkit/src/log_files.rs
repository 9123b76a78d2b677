//! Test helpers over log files (WAL and MANIFEST) kept in a [`MemFs`]: where each record lies,
//! and replacing a file's bytes to damage it. They only read or replace whole files; they know
//! nothing of what the records mean.

use std::path::Path;

use strata::fs::FileSystem;
use strata::internal::wal::LogReader;

use crate::MemFs;

/// `(offset, end)` of every record of the log at `path`, read with the strict reader.
pub fn record_extents(fs: &MemFs, path: &Path) -> Vec<(usize, usize)> {
    let mut reader = LogReader::new(fs.open_sequential(path).expect("open the log"), false);
    let mut all = Vec::new();
    while reader.read_record().expect("an undamaged log").is_some() {
        all.push((reader.last_record_offset() as usize, reader.last_record_end() as usize));
    }
    all
}

/// Replaces the contents of `path` with `bytes`, durably (file and directory synced).
pub fn replace_file(fs: &MemFs, path: &Path, bytes: &[u8]) {
    let mut f = fs.create(path).expect("create");
    f.append(bytes).expect("append");
    f.sync_data().expect("sync");
    fs.sync_dir(path.parent().expect("a file in a directory")).expect("sync the directory");
}
