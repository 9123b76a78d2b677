//! Replacing `CURRENT`, the file that names the live MANIFEST: the same steps as
//! [`FileSystem::write_atomic`] (a temporary `CURRENT.dbtmp`, fdatasync, rename over `CURRENT`,
//! directory fsync), spelled out here so that crash tests can stop the process between them
//! (kill points `current.rename.before` and `current.rename.after`).
//!
//! This module must not decide when a new MANIFEST is written or what CURRENT names; the
//! `VersionSet` does.

use std::path::Path;

use crate::db::filenames;
use crate::error::Result;
use crate::fs::FileSystem;
use crate::util::kill_point::kill_point;

/// Makes `dir/CURRENT` hold `contents` atomically and durably. After a crash it holds either the
/// old or the new contents, and a `CURRENT.dbtmp` may be left behind (open removes it).
pub fn replace(fs: &dyn FileSystem, dir: &Path, contents: &[u8]) -> Result<()> {
    let tmp = dir.join(format!("{}.dbtmp", filenames::CURRENT));
    let mut f = fs.create(&tmp)?;
    f.append(contents)?;
    f.sync_data()?;
    drop(f);
    kill_point("current.rename.before");
    fs.rename(&tmp, &dir.join(filenames::CURRENT))?;
    kill_point("current.rename.after");
    fs.sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_current_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let fs = crate::fs::default_fs();
        replace(fs.as_ref(), dir.path(), b"MANIFEST-000001\n").unwrap();
        replace(fs.as_ref(), dir.path(), b"MANIFEST-000007\n").unwrap();
        assert_eq!(fs.read_all(&dir.path().join("CURRENT")).unwrap(), b"MANIFEST-000007\n");
        assert_eq!(fs.list_dir(dir.path()).unwrap(), ["CURRENT"]);
    }
}
