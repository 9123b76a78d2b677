//! What a benchmark cost the machine, measured by this process about itself without
//! `unsafe`: CPU time (`/proc/self/stat` utime + stime, whole process, exited threads
//! included), context switches (`/proc/*/status`, per thread), bytes read from and written to
//! storage (`/proc/self/io`), read requests completed by the disks (`/sys/block/*/stat`, the
//! whole machine's: the seed's r/o column, meaningful on a machine running nothing else), peak
//! RSS (VmHWM) and the database's size (du and apparent).
//!
//! Context switches: Linux keeps them per thread, and getrusage (which sums them over the
//! process, dead threads included) needs `unsafe` through libc. So a phase's figure is the
//! growth of every thread alive at its end (the engine's background threads) plus what each
//! worker thread measured on itself before it exited; a thread that ends inside the phase and
//! is not a worker is missed. Every benchmark's `Summary` line and LinkBench's `Efficiency`
//! lines (seed 002's columns) come from here. Owns measuring and formatting; must not run
//! operations.

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

/// The kernel's USER_HZ, the unit of /proc's CPU times: 100 on every Linux architecture.
const USER_HZ: f64 = 100.0;

/// Process figures at one moment.
pub struct Sample {
    at: Instant,
    cpu_ticks: Option<u64>,
    io: Option<(u64, u64)>,
    disk_reads: Option<u64>,
    threads: HashMap<u64, u64>,
}

impl Sample {
    pub fn take() -> Self {
        Self {
            at: Instant::now(),
            cpu_ticks: cpu_ticks(),
            io: io_bytes(),
            disk_reads: disk_reads(),
            threads: thread_switches(),
        }
    }

    /// Wall seconds since this sample.
    pub fn elapsed(&self) -> f64 {
        self.at.elapsed().as_secs_f64()
    }
}

/// (read_bytes, write_bytes) of /proc/self/io.
fn io_bytes() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    Some((field(&text, "read_bytes:")?, field(&text, "write_bytes:")?))
}

fn field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    line[name.len()..].split_whitespace().next()?.parse().ok()
}

/// Read requests completed by every disk of the machine (field 1 of `/sys/block/*/stat`;
/// loop, RAM and zram devices left out, partitions are not listed there so nothing counts twice).
pub fn disk_reads() -> Option<u64> {
    let mut total = 0;
    for e in std::fs::read_dir("/sys/block").ok()?.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if ["loop", "ram", "zram"].iter().any(|p| name.starts_with(p)) {
            continue;
        }
        let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total)
}

/// utime + stime of the whole process, in clock ticks (fields 14 and 15 of /proc/self/stat).
fn cpu_ticks() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name may hold spaces; the fields after it start past its closing ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state), so field k is fields[k - 3].
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// Voluntary plus involuntary context switches of one thread's status text.
fn switches(text: &str) -> Option<u64> {
    Some(field(text, "voluntary_ctxt_switches:")? + field(text, "nonvoluntary_ctxt_switches:")?)
}

/// The calling thread's context switches so far.
pub fn own_switches() -> Option<u64> {
    switches(&std::fs::read_to_string("/proc/thread-self/status").ok()?)
}

/// Context switches so far of every live thread of the process, by thread id.
fn thread_switches() -> HashMap<u64, u64> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else { return HashMap::new() };
    dir.flatten()
        .filter_map(|e| {
            let tid = e.file_name().to_str()?.parse().ok()?;
            let n = switches(&std::fs::read_to_string(e.path().join("status")).ok()?)?;
            Some((tid, n))
        })
        .collect()
}

/// Peak resident set size in bytes (`VmHWM`).
pub fn peak_rss_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    field(&text, "VmHWM:").map(|kb| kb * 1024)
}

/// Disk usage of a directory tree in bytes, as `du` counts it (allocated blocks).
pub fn disk_usage(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else { return 0 };
    let own = meta.blocks() * 512;
    if !meta.is_dir() {
        return own;
    }
    let children = std::fs::read_dir(path).into_iter().flatten().flatten();
    own + children.map(|e| disk_usage(&e.path())).sum::<u64>()
}

/// Bytes in the unit every "MB" of the benchmark reports is: MiB, as db_bench prints them.
pub fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1_048_576.0
}

/// Apparent size of a directory tree (`du --apparent-size`): the sum of file lengths.
pub fn apparent_size(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else { return 0 };
    if !meta.is_dir() {
        return meta.len();
    }
    let children = std::fs::read_dir(path).into_iter().flatten().flatten();
    children.map(|e| apparent_size(&e.path())).sum()
}

/// What the process used between two samples.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    pub cpu_secs: Option<f64>,
    /// (read_bytes, write_bytes) of `/proc/self/io`.
    pub io: Option<(u64, u64)>,
    /// Read requests completed by the disks (the whole machine's).
    pub disk_reads: Option<u64>,
    /// Context switches of the threads alive at the later sample (the engine's background
    /// threads, and the sampling thread) since the earlier one; worker threads that exited in
    /// between are the caller's to add.
    pub live_thread_switches: u64,
}

impl Sample {
    /// What the process used from `before` to this sample.
    pub fn usage_since(&self, before: &Sample) -> Usage {
        let sub = |a: u64, b: u64| a.saturating_sub(b);
        Usage {
            cpu_secs: self.cpu_ticks.zip(before.cpu_ticks).map(|(a, b)| sub(a, b) as f64 / USER_HZ),
            io: self.io.zip(before.io).map(|((r1, w1), (r0, w0))| (sub(r1, r0), sub(w1, w0))),
            disk_reads: self.disk_reads.zip(before.disk_reads).map(|(a, b)| sub(a, b)),
            live_thread_switches: self
                .threads
                .iter()
                .map(|(tid, n)| sub(*n, before.threads.get(tid).copied().unwrap_or(0)))
                .sum(),
        }
    }
}

impl Usage {
    /// All context switches: `workers`' own (they counted them on themselves, having exited
    /// before the sample) plus the live threads'; None if a worker could not count.
    pub fn switches(&self, workers: Option<u64>) -> Option<u64> {
        workers.map(|w| w + self.live_thread_switches)
    }
}

/// A phase's figures per operation.
pub struct Efficiency {
    pub ops: u64,
    usage: Usage,
    switches: Option<u64>,
    db_du: u64,
    db_apparent: u64,
    peak_rss: Option<u64>,
}

impl Efficiency {
    /// The figures from `before` to now, for `ops` operations; `worker_switches` is what
    /// each worker thread counted on itself (None if any could not).
    pub fn since(before: &Sample, ops: u64, worker_switches: Option<u64>, db: &Path) -> Self {
        let usage = Sample::take().usage_since(before);
        Self {
            ops,
            switches: usage.switches(worker_switches),
            usage,
            db_du: disk_usage(db),
            db_apparent: apparent_size(db),
            peak_rss: peak_rss_bytes(),
        }
    }

    /// `Efficiency PHASE: ...`, the seed's columns: db.gb, r/o (disk reads, and KB), wKB/o,
    /// cs/o, cpu/o.
    pub fn line(&self, phase: &str) -> String {
        let per = |x: f64| x / self.ops.max(1) as f64;
        let na = || "n/a".to_string();
        format!(
            "Efficiency {phase}: ops {} db_size {:.1} MB du / {:.1} MB apparent, disk reads/op {}, \
             rKB/op {}, wKB/op {}, cs/op {}, cpu us/op {}, peak RSS {}\n",
            self.ops,
            mb(self.db_du),
            mb(self.db_apparent),
            self.usage.disk_reads.map_or_else(na, |r| format!("{:.3}", per(r as f64))),
            self.usage.io.map_or_else(na, |(r, _)| format!("{:.3}", per(r as f64 / 1024.0))),
            self.usage.io.map_or_else(na, |(_, w)| format!("{:.3}", per(w as f64 / 1024.0))),
            self.switches.map_or_else(na, |s| format!("{:.2}", per(s as f64))),
            self.usage.cpu_secs.map_or_else(na, |c| format!("{:.1}", per(c * 1e6))),
            self.peak_rss.map_or_else(na, |r| format!("{:.1} MB", mb(r))),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_figures_are_read() {
        let before = Sample::take();
        assert!(before.cpu_ticks.is_some() && !before.threads.is_empty());
        assert!(before.disk_reads.is_some(), "no /sys/block stats");
        assert!(own_switches().is_some());
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), vec![0u8; 5000]).unwrap();
        let e = Efficiency::since(&before, 10, Some(0), dir.path());
        assert_eq!(e.db_apparent, 5000);
        let line = e.line("load");
        assert!(
            line.starts_with("Efficiency load: ops 10 db_size ") && line.contains("cpu us/op "),
            "{line}"
        );
        assert_eq!(switches("voluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t2\n"), Some(7));
        assert_eq!(field("rchar: 5\nwrite_bytes: 4096\n", "write_bytes:"), Some(4096));
        assert_eq!(field("VmHWM:\t  1234 kB\n", "VmHWM:"), Some(1234));
    }
}
