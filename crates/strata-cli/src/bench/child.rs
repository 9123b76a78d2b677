//! Runs one benchmark program as a child process and measures what it alone cost: its peak
//! resident memory and the bytes it caused to be written to storage.
//!
//! Owns: spawning, collecting stdout and stderr, and reaping the child with `wait4`, whose
//! `rusage` is the child's own (and that of any children it waited for): `ru_maxrss` (KiB) and
//! `ru_oublock` (512-byte units; Linux charges a buffered write to the process that dirtied the
//! page, the same counter as `/proc/PID/io` `write_bytes`, so writes the kernel flushes later
//! still count, and so does whatever the program writes at close).
//! Must not: parse the output or decide anything about the benchmark.

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};

use anyhow::{Context, Result};

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
}

/// Runs `program args...` to completion.
pub fn run(program: &Path, args: &[String]) -> Result<ChildRun> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", program.display()))?;
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
    let (status, usage) = wait4(pid).with_context(|| format!("waiting for {}", program.display()))?;
    read.context("child stdout")?.context("reading child stdout")?;
    let err = err.context("reading child stderr")?;
    Ok(ChildRun {
        status: ExitStatus::from_raw(status),
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr: String::from_utf8_lossy(&err).into_owned(),
        peak_rss: u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024,
        write_bytes: u64::try_from(usage.ru_oublock).unwrap_or(0) * 512,
    })
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

    fn sh(script: &str) -> ChildRun {
        run(Path::new("/bin/sh"), &["-c".to_string(), script.to_string()]).unwrap()
    }

    #[test]
    fn a_child_that_does_nothing_still_has_a_resident_set() {
        let r = run(Path::new("/bin/true"), &[]).unwrap();
        assert!(r.status.success());
        assert!(r.peak_rss > 0, "{r:?}");
        assert!(r.stdout.is_empty() && r.stderr.is_empty());
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
        assert_eq!(sh("true").write_bytes, 0);
    }

    #[test]
    fn a_missing_program_is_an_error_naming_it() {
        let err = run(Path::new("/nonexistent/prog"), &[]).unwrap_err();
        assert!(format!("{err:#}").contains("/nonexistent/prog"));
    }
}
