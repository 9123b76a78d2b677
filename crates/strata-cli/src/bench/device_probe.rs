//! What the disk under a database delivers on its own: random 4 KiB reads with `O_DIRECT` (past
//! the page cache) over the files of a directory, from N threads for a fixed time. `compare
//! --device_probe=SECS` runs it just before and just after every read step, so that a step's
//! rate can be read against what the device gave at the time. This machine's virtual disk
//! changes by several times within an hour (2026-12-01: 16 threads of such reads ran 6,418 and
//! 9,722 reads/s around a strata step that made 7,263, where LMDB's step in an earlier run had
//! made 56k), and engines measured one after the other meet different devices.
//!
//! Owns the probe only: it opens files read-only and never writes; it must not interpret an
//! engine's results.

use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// Bytes per probe read, and their alignment (`O_DIRECT` wants both aligned to the device's
/// logical block; 4 KiB covers every common one).
const READ_BYTES: usize = 4096;

/// What one probe measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Probe {
    pub threads: usize,
    pub reads_per_sec: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.0} reads/s at {} threads (P50 {:.0} us, P99 {:.0} us, max {:.0} us)",
            self.reads_per_sec, self.threads, self.p50_us, self.p99_us, self.max_us
        )
    }
}

/// The files read, each with its size in whole reads, opened once with `O_DIRECT`.
struct Files {
    files: Vec<(File, u64)>,
    /// Running totals of the files' reads, for a draw uniform over all their bytes.
    ends: Vec<u64>,
}

impl Files {
    fn open(dir: &Path) -> Result<Self> {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
            let path = entry?.path();
            let Ok(meta) = std::fs::metadata(&path) else { continue };
            let reads = meta.len() / READ_BYTES as u64;
            if !meta.is_file() || reads == 0 {
                continue;
            }
            let file = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECT)
                .open(&path)
                .with_context(|| format!("opening {} with O_DIRECT", path.display()))?;
            files.push((file, reads));
        }
        if files.is_empty() {
            bail!("{} holds no file of {READ_BYTES} bytes or more to read", dir.display());
        }
        let ends = files
            .iter()
            .scan(0u64, |total, (_, reads)| {
                *total += reads;
                Some(*total)
            })
            .collect();
        Ok(Self { files, ends })
    }

    /// The file and offset of read number `n` (0 <= n < total) of all the files' reads.
    fn locate(&self, n: u64) -> (&File, u64) {
        let i = self.ends.partition_point(|&end| end <= n);
        let start = i.checked_sub(1).map_or(0, |j| self.ends[j]);
        (&self.files[i].0, (n - start) * READ_BYTES as u64)
    }

    fn total(&self) -> u64 {
        self.ends.last().copied().unwrap_or(0)
    }
}

/// SplitMix64: each thread's own stream of read numbers (no need for a crate's generator here:
/// the draws only have to spread over the files, not resist prediction).
fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One thread's reads until `deadline`: the latency of each, in microseconds.
fn read_until(files: &Files, seed: u64, deadline: Instant) -> Result<Vec<u32>> {
    // O_DIRECT needs an aligned buffer: take the aligned window of one twice its size.
    let mut backing = vec![0u8; 2 * READ_BYTES];
    let skip = backing.as_ptr().align_offset(READ_BYTES);
    let buf = backing.get_mut(skip..skip + READ_BYTES).context("aligning the read buffer")?;
    let mut state = seed;
    let mut latencies = Vec::new();
    while Instant::now() < deadline {
        let (file, offset) = files.locate(next_random(&mut state) % files.total());
        let start = Instant::now();
        file.read_exact_at(buf, offset).context("probe read")?;
        latencies.push(u32::try_from(start.elapsed().as_micros()).unwrap_or(u32::MAX));
    }
    Ok(latencies)
}

/// Reads the files of `dir` at random, 4 KiB at a time with `O_DIRECT`, from `threads` threads
/// for `duration`. Fails when `dir` holds no file to read or its filesystem refuses `O_DIRECT`
/// (tmpfs, for one).
pub fn probe(dir: &Path, threads: usize, duration: Duration) -> Result<Probe> {
    let files = Files::open(dir)?;
    let threads = threads.max(1);
    let deadline = Instant::now() + duration;
    let started = Instant::now();
    let per_thread: Vec<Result<Vec<u32>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let files = &files;
                s.spawn(move || read_until(files, 0x5eed ^ (t as u64) << 32, deadline))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| bail!("a probe thread panicked"))).collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let mut all = Vec::new();
    for latencies in per_thread {
        all.extend(latencies?);
    }
    all.sort_unstable();
    let at = |q: f64| all.get(((all.len() as f64 * q) as usize).min(all.len().saturating_sub(1)));
    let us = |v: Option<&u32>| v.map_or(0.0, |&v| f64::from(v));
    Ok(Probe {
        threads,
        reads_per_sec: all.len() as f64 / elapsed.max(f64::EPSILON),
        p50_us: us(at(0.5)),
        p99_us: us(at(0.99)),
        max_us: us(all.last()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_cover_every_file_in_proportion_to_its_size() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("small"), vec![1u8; 2 * READ_BYTES]).unwrap();
        std::fs::write(dir.path().join("large"), vec![2u8; 6 * READ_BYTES + 100]).unwrap();
        std::fs::write(dir.path().join("tiny"), b"too short to read").unwrap();
        let Ok(files) = Files::open(dir.path()) else {
            return; // this filesystem refuses O_DIRECT (tmpfs): nothing to check here
        };
        assert_eq!(files.total(), 8, "2 + 6 whole reads; the tiny file and the tail are left out");
        let mut offsets: Vec<u64> = (0..8).map(|n| files.locate(n).1).collect();
        offsets.sort_unstable();
        let expected: Vec<u64> = [0, 0, 1, 1, 2, 3, 4, 5].iter().map(|i| i * READ_BYTES as u64).collect();
        assert_eq!(offsets, expected);
    }

    #[test]
    fn a_probe_reads_and_times_the_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("data"), vec![7u8; 64 * READ_BYTES]).unwrap();
        match probe(dir.path(), 2, Duration::from_millis(100)) {
            Ok(p) => {
                assert_eq!(p.threads, 2);
                assert!(p.reads_per_sec > 0.0 && p.p50_us <= p.p99_us && p.p99_us <= p.max_us, "{p}");
            }
            Err(e) => assert!(format!("{e:#}").contains("O_DIRECT"), "{e:#}"),
        }
    }

    #[test]
    fn an_empty_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let e = probe(dir.path(), 1, Duration::from_millis(10)).unwrap_err();
        assert!(format!("{e:#}").contains("no file"), "{e:#}");
    }
}
