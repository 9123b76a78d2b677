//! Runs one benchmark program as a child process and measures what it alone cost, from outside:
//! the figures of the whole process, from its start to its exit (open and close included).
//!
//! Owns: spawning (optionally into a cgroup: the child joins it before it execs, so everything
//! it does is charged there), collecting stdout and stderr, sampling the size of a directory
//! every second while the child runs (the database's peak size), and reaping the child with
//! `wait4`, whose `rusage` is the child's own (and that of any children it waited for), all its
//! threads included: `ru_maxrss` (KiB), `ru_inblock` and `ru_oublock` (512-byte units; the
//! same counters as `/proc/PID/io` read_bytes and write_bytes: Linux charges a buffered write
//! to the process that dirtied the page, so writes the kernel flushes later still count, and
//! so does whatever the program writes at close), `ru_utime` + `ru_stime`, and `ru_nvcsw` +
//! `ru_nivcsw`. Plus the read requests the machine's disks completed while it ran.
//! Must not: parse the output or decide anything about the benchmark.

use std::ffi::{CStr, CString};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, Result};

use super::resources;

/// What one child run printed and cost.
#[derive(Debug)]
pub struct ChildRun {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    /// Peak resident set size in bytes (`ru_maxrss`).
    pub peak_rss: u64,
    /// Bytes written to storage on the child's behalf (`ru_oublock` x 512).
    pub write_bytes: u64,
    /// Bytes read from storage on the child's behalf (`ru_inblock` x 512).
    pub read_bytes: u64,
    /// CPU seconds of all its threads, user and system (`ru_utime` + `ru_stime`).
    pub cpu_secs: f64,
    /// Voluntary and involuntary context switches of all its threads (`ru_nvcsw` + `ru_nivcsw`).
    pub switches: u64,
    /// Read requests the machine's disks completed from before the start to after the exit
    /// (`/sys/block/*/stat`, as resources.rs counts them); `None` if they could not be read.
    pub disk_reads: Option<u64>,
    /// The largest size (du) of [`Setup::watch`] seen: before the start, every second while the
    /// child ran, and after its exit; `None` without a directory to watch.
    pub peak_dir_bytes: Option<u64>,
}

/// How to run the child, beyond its command line.
#[derive(Debug, Clone, Default)]
pub struct Setup {
    /// A cgroup directory (v1 or v2) the child joins before it execs.
    pub cgroup: Option<PathBuf>,
    /// A directory whose size (du) is sampled every second while the child runs.
    pub watch: Option<PathBuf>,
}

/// Runs `program args...` to completion as `setup` says.
pub fn run_with(program: &Path, args: &[String], setup: &Setup) -> Result<ChildRun> {
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    if let Some(cg) = &setup.cgroup {
        let procs = CString::new(cg.join("cgroup.procs").as_os_str().as_bytes())
            .with_context(|| format!("cgroup path {}", cg.display()))?;
        // SAFETY: the closure runs in the forked child before exec and only makes the
        // async-signal-safe open, write and close calls of join_cgroup, on memory prepared
        // before the fork; it allocates nothing and takes no lock.
        unsafe {
            cmd.pre_exec(move || join_cgroup(&procs));
        }
    }
    let reads_before = resources::disk_reads();
    let mut child = cmd.spawn().with_context(|| match &setup.cgroup {
        Some(cg) => format!("starting {} in cgroup {}", program.display(), cg.display()),
        None => format!("starting {}", program.display()),
    })?;
    let (stop, stopped) = mpsc::channel::<()>();
    let sampler = setup.watch.clone().map(|dir| {
        std::thread::spawn(move || {
            let mut peak = 0;
            loop {
                peak = peak.max(resources::disk_usage(&dir));
                if !matches!(
                    stopped.recv_timeout(Duration::from_secs(1)),
                    Err(mpsc::RecvTimeoutError::Timeout)
                ) {
                    return peak.max(resources::disk_usage(&dir));
                }
            }
        })
    });
    // Both pipes are drained while the child runs, or a chatty child blocks on a full pipe.
    let mut err_pipe = child.stderr.take().context("child stderr")?;
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        err_pipe.read_to_end(&mut buf).map(|_| buf)
    });
    let mut out = Vec::new();
    let read = child.stdout.take().map(|mut p| p.read_to_end(&mut out));
    let err = err_reader.join().map_err(|_| anyhow::anyhow!("stderr reader panicked"))?;
    let pid = libc::pid_t::try_from(child.id()).context("child pid out of range")?;
    // `child` is reaped here, not by std: it must not be waited for again (Child's drop does not).
    // Reaped before a read error is reported, so no zombie is left behind.
    let waited = wait4(pid).with_context(|| format!("waiting for {}", program.display()));
    let reads_after = resources::disk_reads();
    drop(stop);
    let peak_dir_bytes =
        sampler.map(|s| s.join().map_err(|_| anyhow::anyhow!("size sampler panicked"))).transpose()?;
    let (status, usage) = waited?;
    read.context("child stdout")?.context("reading child stdout")?;
    let err = err.context("reading child stderr")?;
    let count = |v: libc::c_long| u64::try_from(v).unwrap_or(0);
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Ok(ChildRun {
        status: ExitStatus::from_raw(status),
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr: String::from_utf8_lossy(&err).into_owned(),
        peak_rss: count(usage.ru_maxrss) * 1024,
        write_bytes: count(usage.ru_oublock) * 512,
        read_bytes: count(usage.ru_inblock) * 512,
        cpu_secs: secs(usage.ru_utime) + secs(usage.ru_stime),
        switches: count(usage.ru_nvcsw) + count(usage.ru_nivcsw),
        disk_reads: reads_after.zip(reads_before).map(|(a, b)| a.saturating_sub(b)),
        peak_dir_bytes,
    })
}

/// Moves the calling process into the cgroup whose `cgroup.procs` file is `procs` (writing
/// "0" means the writer itself, in cgroup v1 and v2). Runs between fork and exec: only
/// async-signal-safe calls, no allocation (an OS error is a plain code).
fn join_cgroup(procs: &CStr) -> std::io::Result<()> {
    // SAFETY: `procs` is a valid NUL-terminated path that outlives the call.
    let fd = unsafe { libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is the descriptor just opened and the buffer is a live one-byte static.
    let n = unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) };
    let err = std::io::Error::last_os_error();
    // SAFETY: `fd` is ours and closed once.
    unsafe { libc::close(fd) };
    if n == 1 {
        Ok(())
    } else {
        Err(err)
    }
}

/// Blocks until `pid` exits; returns its wait status and resource usage.
fn wait4(pid: libc::pid_t) -> std::io::Result<(libc::c_int, libc::rusage)> {
    let mut status: libc::c_int = 0;
    // SAFETY: all-zero bytes are a valid `rusage` (plain integers and timevals).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `usage` are live, writable locals of the types wait4 expects, and
        // `pid` is our own unreaped child, so no other code is waiting for it.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            return Ok((status, usage));
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(program: &Path, args: &[String]) -> Result<ChildRun> {
        run_with(program, args, &Setup::default())
    }

    /// The most a child that writes nothing may be charged: a CI run charged `/bin/true` 4 KiB.
    const NOTHING_WRITTEN: u64 = 64 << 10;

    fn sh(script: &str) -> ChildRun {
        run(Path::new("/bin/sh"), &["-c".to_string(), script.to_string()]).unwrap()
    }

    #[test]
    fn a_child_that_does_nothing_still_has_a_resident_set() {
        let r = run(Path::new("/bin/true"), &[]).unwrap();
        assert!(r.status.success());
        assert!(r.peak_rss > 0, "{r:?}");
        assert!(r.stdout.is_empty() && r.stderr.is_empty());
        // The kernel may charge a page or two of metadata writeback (an atime, a journal block) to
        // whichever process dirtied it, so "nothing" is a few pages, not always zero.
        assert!(r.write_bytes <= NOTHING_WRITTEN, "{r:?}");
        assert_eq!(r.peak_dir_bytes, None);
        assert!(r.disk_reads.is_some(), "/sys/block is readable");
    }

    #[test]
    fn bytes_a_child_writes_are_charged_to_it_and_output_and_status_come_back() {
        let dir = tempfile::tempdir_in("/tmp").unwrap();
        let f = dir.path().join("f");
        // 1 MiB through the page cache, synced so the data is surely on its way to disk.
        let r = sh(&format!(
            "head -c 1048576 /dev/zero > {0} && sync {0} 2>/dev/null || sync; echo out; echo err >&2; exit 3",
            f.display()
        ));
        assert_eq!(r.status.code(), Some(3));
        assert_eq!((r.stdout.as_str(), r.stderr.as_str()), ("out\n", "err\n"));
        assert!(r.write_bytes >= 1 << 20, "1 MiB written, {} bytes charged", r.write_bytes);
        assert!(r.peak_rss > 0);
        // A second child that writes nothing is not charged for the first one's writes.
        assert!(sh("true").write_bytes <= NOTHING_WRITTEN);
    }

    #[test]
    fn cpu_time_and_context_switches_of_all_the_childs_processes() {
        // A fixed amount of work (about 0.4 s of CPU here; counted, not timed, so a busy machine
        // cannot shorten it), then ten sleeps: each sleep is a voluntary switch.
        let r = sh("i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; \
                    for k in 1 2 3 4 5 6 7 8 9 10; do sleep 0.01; done");
        assert!(r.status.success());
        assert!(r.cpu_secs >= 0.1, "200,000 shell loop steps: {} s of CPU", r.cpu_secs);
        assert!(r.switches >= 10, "ten sleeps at least: {}", r.switches);
        let idle = sh("true");
        assert!(idle.cpu_secs < r.cpu_secs && idle.switches < r.switches, "{idle:?}");
    }

    #[test]
    fn a_watched_directory_reports_its_largest_size_not_its_last() {
        let dir = tempfile::tempdir_in("/tmp").unwrap();
        let f = dir.path().join("f");
        // 4 MiB on disk for about two seconds (at least one sample), then deleted.
        let script =
            format!("head -c 4194304 /dev/urandom > {0} && sync && sleep 2.5 && rm {0}", f.display());
        let setup = Setup { watch: Some(dir.path().to_path_buf()), ..Setup::default() };
        let r = run_with(Path::new("/bin/sh"), &["-c".into(), script], &setup).unwrap();
        assert!(r.status.success(), "{}", r.stderr);
        let peak = r.peak_dir_bytes.unwrap();
        assert!(peak >= 4 << 20, "the file was seen: {peak}");
        assert!(resources::disk_usage(dir.path()) < 1 << 20, "and it is gone now");
    }

    /// The memory cgroup this process is in (cgroup v1 or v2), if it has one we can write to.
    fn own_memory_cgroup() -> Option<PathBuf> {
        let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let v2 = Path::new("/sys/fs/cgroup/cgroup.controllers");
        let dir = if v2.is_file() {
            let rel = text.lines().find_map(|l| l.strip_prefix("0::"))?;
            PathBuf::from(format!("/sys/fs/cgroup{rel}"))
        } else {
            let rel = text.lines().find_map(|l| l.split_once(":memory:").map(|(_, p)| p.to_string()))?;
            PathBuf::from(format!("/sys/fs/cgroup/memory{rel}"))
        };
        dir.join("cgroup.procs").is_file().then_some(dir)
    }

    #[test]
    fn a_child_joins_its_cgroup_before_it_runs() {
        let err = run_with(
            Path::new("/bin/true"),
            &[],
            &Setup { cgroup: Some(PathBuf::from("/nonexistent/cgroup")), ..Setup::default() },
        )
        .unwrap_err();
        assert!(format!("{err:#}").contains("in cgroup /nonexistent/cgroup"), "{err:#}");
        // Where this process may make a cgroup (root, a cgroup filesystem), a child goes into it.
        let Some(parent) = own_memory_cgroup() else { return };
        let cg = parent.join(format!("strata-child-test-{}", std::process::id()));
        if std::fs::create_dir(&cg).is_err() {
            return; // not allowed here (not root, or a read-only cgroup filesystem)
        }
        let r = run_with(
            Path::new("/bin/cat"),
            &["/proc/self/cgroup".into()],
            &Setup { cgroup: Some(cg.clone()), ..Setup::default() },
        );
        let removed = std::fs::remove_dir(&cg);
        let r = r.unwrap();
        let name = cg.file_name().unwrap().to_string_lossy().into_owned();
        assert!(r.stdout.contains(&name), "the child's cgroups: {}", r.stdout);
        removed.unwrap();
    }

    #[test]
    fn a_missing_program_is_an_error_naming_it() {
        let err = run(Path::new("/nonexistent/prog"), &[]).unwrap_err();
        assert!(format!("{err:#}").contains("/nonexistent/prog"));
    }
}
