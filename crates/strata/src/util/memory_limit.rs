//! How much memory this process may use: the smaller of the machine's physical memory and the
//! limits of every memory cgroup (v1 or v2) it sits in, up to the root. The read path uses it to
//! decide whether mapping the database's files is safe (docs/tuning.md, `mmap_reads_max_db_size`).
//! Owns reading `/proc` and `/sys/fs/cgroup`; it must not decide anything with the figure.
//!
//! Hand-written rather than from a crate: the crates that know cgroups (`sysinfo`, `cgroups-rs`)
//! bring whole system-inspection libraries for what is three small files here.

use std::path::{Path, PathBuf};

/// The memory limit of this process in bytes, or `None` where it cannot be read (not Linux, or
/// no `/proc/meminfo`).
pub fn memory_limit() -> Option<u64> {
    let physical = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| mem_total(&s))?;
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let limit = cgroup_limits(&cgroups, Path::new("/sys/fs/cgroup")).into_iter().min();
    Some(limit.map_or(physical, |l| l.min(physical)))
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The limits set on the memory cgroups named by a `/proc/self/cgroup` text and on their
/// ancestors, under the cgroup filesystem mounted at `root`. An unlimited level (`max`, or v1's
/// huge "no limit" value) adds nothing.
fn cgroup_limits(proc_self_cgroup: &str, root: &Path) -> Vec<u64> {
    let mut limits = Vec::new();
    for line in proc_self_cgroup.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        let (base, file) = if controllers.is_empty() {
            (root.to_path_buf(), "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            (root.join("memory"), "memory.limit_in_bytes")
        } else {
            continue;
        };
        for dir in ancestors(&base, path) {
            if let Some(limit) = read_limit(&dir.join(file)) {
                limits.push(limit);
            }
        }
    }
    limits
}

/// `base/path` and each of its parents down to `base`.
fn ancestors(base: &Path, path: &str) -> Vec<PathBuf> {
    let mut dir = base.to_path_buf();
    let mut out = vec![dir.clone()];
    for part in path.split('/').filter(|p| !p.is_empty()) {
        dir.push(part);
        out.push(dir.clone());
    }
    out
}

/// A limit file's value; `None` for no limit or a file that cannot be read.
fn read_limit(file: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let value: u64 = text.trim().parse().ok()?;
    // cgroup v1 writes "no limit" as the largest page-aligned i64.
    (value < (1 << 62)).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mem_total() {
        let text = "MemTotal:       24576000 kB\nMemFree:  100 kB\n";
        assert_eq!(mem_total(text), Some(24_576_000 * 1024));
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
    }

    #[test]
    fn finds_v2_and_v1_limits_on_the_path_and_its_ancestors() {
        let root = tempfile::tempdir().unwrap();
        let v2 = root.path().join("a/b");
        std::fs::create_dir_all(&v2).unwrap();
        std::fs::write(root.path().join("a/memory.max"), "1073741824\n").unwrap();
        std::fs::write(v2.join("memory.max"), "max\n").unwrap();
        assert_eq!(cgroup_limits("0::/a/b\n", root.path()), vec![1 << 30]);

        let v1 = root.path().join("memory/x");
        std::fs::create_dir_all(&v1).unwrap();
        std::fs::write(root.path().join("memory/memory.limit_in_bytes"), "9223372036854771712\n").unwrap();
        std::fs::write(v1.join("memory.limit_in_bytes"), "603979776\n").unwrap();
        let text = "5:cpu,cpuacct:/x\n4:memory:/x\n";
        assert_eq!(cgroup_limits(text, root.path()), vec![603_979_776]);
    }

    #[test]
    fn this_process_has_a_limit_no_larger_than_its_machine() {
        if let Some(limit) = memory_limit() {
            let physical = mem_total(&std::fs::read_to_string("/proc/meminfo").unwrap()).unwrap();
            assert!(limit > 0 && limit <= physical);
        }
    }
}
