//! File names in a database directory, following RocksDB's so users and their tools feel at home:
//! `NNNNNN.sst`, `NNNNNN.log`, `NNNNNN.blob`, `MANIFEST-NNNNNN`, `CURRENT`, `LOCK`, `OPTIONS-NNNNNN`.
//!
//! This module owns the names only: it builds and parses them and must not do IO. It sits low in
//! the crate (beside `fs`, importing nothing of the engine) because the version set, compaction,
//! verification and the database itself all name files.

use std::path::{Path, PathBuf};

/// The kinds of files strata keeps in a database directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A write-ahead log.
    Wal,
    /// A sorted table.
    Table,
    /// A blob file.
    Blob,
    /// A MANIFEST.
    Manifest,
    /// An OPTIONS file.
    Options,
    /// A temporary file from an interrupted atomic write.
    Temp,
}

/// `dir/NNNNNN.log`
pub fn wal(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.log"))
}
/// `dir/NNNNNN.sst`
pub fn table(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.sst"))
}
/// `dir/NNNNNN.blob`
pub fn blob(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.blob"))
}
/// `MANIFEST-NNNNNN`
pub fn manifest_name(n: u64) -> String {
    format!("MANIFEST-{n:06}")
}
/// `OPTIONS-NNNNNN`
pub fn options_name(n: u64) -> String {
    format!("OPTIONS-{n:06}")
}
/// The file naming the current MANIFEST.
pub const CURRENT: &str = "CURRENT";
/// The lock file.
pub const LOCK: &str = "LOCK";

/// The folder where open and repair put files they could not use and would not delete.
pub const LOST_DIR: &str = "lost";

/// Parses a directory entry name; `None` for names strata does not own.
pub fn parse(name: &str) -> Option<(FileKind, u64)> {
    if name.ends_with(".dbtmp") {
        return Some((FileKind::Temp, 0));
    }
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return Some((FileKind::Manifest, n.parse().ok()?));
    }
    if let Some(n) = name.strip_prefix("OPTIONS-") {
        return Some((FileKind::Options, n.parse().ok()?));
    }
    let (stem, ext) = name.split_once('.')?;
    let n: u64 = stem.parse().ok()?;
    let kind = match ext {
        "log" => FileKind::Wal,
        "sst" => FileKind::Table,
        "blob" => FileKind::Blob,
        _ => return None,
    };
    Some((kind, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let d = Path::new("/db");
        assert_eq!(parse(wal(d, 7).file_name().unwrap().to_str().unwrap()), Some((FileKind::Wal, 7)));
        assert_eq!(parse("000012.sst"), Some((FileKind::Table, 12)));
        assert_eq!(parse("000012.blob"), Some((FileKind::Blob, 12)));
        assert_eq!(parse(&manifest_name(3)), Some((FileKind::Manifest, 3)));
        assert_eq!(parse("LOCK"), None);
        assert_eq!(parse("x.sst"), None);
    }
}
