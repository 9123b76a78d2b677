//! Kill points (`--features kill-points`): a child process armed at one point must die there by
//! SIGKILL, log the point's name, and leave a database that opens with every acknowledged write.
//! The long randomized version is `strata-stress crash-loop --kill-points`.
//!
//! Run with `cargo test -p strata-kv --features kill-points --test kill_points`.
#![cfg(feature = "kill-points")]

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

use strata::internal::util::kill_point::{parse_log_line, POINTS};
use strata::{Db, Options, ReadOptions, WriteOptions};

fn options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        min_blob_size: 100,
        level0_compaction_trigger: 2,
        max_manifest_file_size: 512,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// Put `i` writes key `i` when even, else one of 64 keys overwritten again and again.
fn key_of(i: u32) -> u32 {
    if i.is_multiple_of(2) {
        i
    } else {
        i % 64
    }
}

fn value(i: u32) -> Vec<u8> {
    format!("{i:08}").repeat(1 + i as usize % 40).into_bytes()
}

/// The child: writes synced keys (overwriting half of them, so compactions make garbage) and
/// prints an acknowledgement after each, flushing and compacting now and then, until a kill
/// point kills it. Runs only when the parent sets STRATA_KILL_TEST_DIR.
#[test]
#[ignore = "run by a_point_kills_the_process_there as a child process"]
fn kill_point_child() {
    let Ok(dir) = std::env::var("STRATA_KILL_TEST_DIR") else { return };
    let db = Db::open(&dir, options()).unwrap();
    let sync = WriteOptions { sync: true, disable_wal: false };
    for i in 0..20_000u32 {
        let k = key_of(i);
        db.put_opt(&sync, &key(k), &value(i)).unwrap();
        println!("<ack {k} {i}>");
        if i % 50 == 49 {
            db.flush().unwrap();
        }
        if i % 400 == 399 {
            db.compact_range(None, None).unwrap();
        }
    }
    println!("<survived>");
}

/// Runs the child armed at `point` with odds 1 (the first time it is reached); returns the
/// last value acknowledged for each key.
fn run_child(dir: &std::path::Path, log: &std::path::Path, point: &str) -> Vec<(u32, u32)> {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(["--ignored", "--exact", "kill_point_child", "--nocapture", "--test-threads", "1"])
        .env("STRATA_KILL_TEST_DIR", dir)
        .env("STRATA_KILL_ODDS", "1")
        .env("STRATA_KILL_POINTS", point)
        .env("STRATA_KILL_POINTS_LOG", log)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut acked = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines().map_while(Result::ok) {
        assert!(!line.contains("<survived>"), "{point}: the child was never killed");
        if let Some(ack) = line.split("<ack ").nth(1) {
            let mut it = ack.trim_end_matches('>').split(' ').map(|n| n.parse::<u32>().unwrap());
            acked.push((it.next().unwrap(), it.next().unwrap()));
        }
    }
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(9), "{point}: the child should die by SIGKILL, got {status:?}");
    acked
}

/// Every key holds its last acknowledged value, except that the one put in flight at the kill
/// (the one after the last acknowledged) may also have landed.
fn check_acked(db: &Db, point: &str, acked: &[(u32, u32)]) {
    let mut last = std::collections::HashMap::new();
    for &(k, i) in acked {
        last.insert(k, i);
    }
    let in_flight = acked.last().map_or(0, |&(_, i)| i + 1);
    let in_flight_key = key_of(in_flight);
    for (k, i) in last {
        let got = db.get(&key(k)).unwrap();
        if k == in_flight_key && got == Some(value(in_flight)) {
            continue;
        }
        assert_eq!(got, Some(value(i)), "{point}: key {k} lost its acknowledged value {i}");
    }
}

#[test]
fn a_point_kills_the_process_there() {
    let points = [
        "wal.sync.before",
        "table.finish.after_sync",
        "manifest.append.after",
        "current.rename.before",
        "obsolete.delete.manifest",
        "blob.relocate",
    ];
    for point in points {
        assert!(POINTS.contains(&point));
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("fired.log");
        let db_dir = dir.path().join("db");
        let acked = run_child(&db_dir, &log, point);
        let text = std::fs::read_to_string(&log).unwrap();
        let (fired, reached) = parse_log_line(text.lines().next().unwrap()).unwrap();
        assert_eq!(fired, point, "{text}");
        assert!(reached.iter().any(|(p, n)| p == point && *n == 1), "{text}");
        assert_eq!(text.lines().count(), 1, "one point fires per process: {text}");

        let db = Db::open(&db_dir, options()).unwrap();
        check_acked(&db, point, &acked);
        db.close().unwrap();
    }
}
