//! The background threads' roles and priorities: with two or more, one runs flushes at the
//! opening thread's priority and the others run compactions at `compaction_nice`, or under
//! `SCHED_IDLE` with `compaction_sched_idle` (Linux).

#![cfg(target_os = "linux")]

use std::fs;

use strata::{Db, Options};

/// Linux's scheduling policies, as /proc shows them.
const SCHED_OTHER: i64 = 0;
const SCHED_IDLE: i64 = 5;

/// (name, nice, scheduling policy) of every thread of this process, from /proc.
fn threads() -> Vec<(String, i64, i64)> {
    let mut out = Vec::new();
    for task in fs::read_dir("/proc/self/task").unwrap() {
        let dir = task.unwrap().path();
        let (Ok(comm), Ok(stat)) =
            (fs::read_to_string(dir.join("comm")), fs::read_to_string(dir.join("stat")))
        else {
            continue; // the thread exited meanwhile
        };
        // Fields after the parenthesised name: state is field 3, nice field 19, policy field 41.
        let after_name: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        let field = |n: usize| after_name[n - 3].parse().unwrap();
        out.push((comm.trim().to_string(), field(19), field(41)));
    }
    out
}

fn nice_of(name: &str) -> Option<i64> {
    threads().into_iter().find(|(n, ..)| n == name).map(|(_, nice, _)| nice)
}

fn policy_of(name: &str) -> Option<i64> {
    threads().into_iter().find(|(n, ..)| n == name).map(|(.., policy)| policy)
}

/// The thread changes its policy as it starts, so give it a moment.
fn wait_for_policy(name: &str, want: i64) -> Option<i64> {
    wait_for(policy_of, name, want)
}

/// The thread lowers its priority as it starts, so give it a moment.
fn wait_for_nice(name: &str, want: i64) -> Option<i64> {
    wait_for(nice_of, name, want)
}

/// Polls `read(name)` until it is `want` or about a second has passed; returns the last value.
fn wait_for(read: fn(&str) -> Option<i64>, name: &str, want: i64) -> Option<i64> {
    for _ in 0..200 {
        if read(name) == Some(want) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    read(name)
}

/// One test, not two: tests run as threads of one process, and each looks at all its threads.
#[test]
fn compaction_threads_run_at_their_priority_unless_one_thread_does_everything() {
    let own = threads().into_iter().map(|(_, nice, _)| nice).next().unwrap();
    let lowered = own.max(7);
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { max_background_jobs: 3, compaction_nice: 7, ..Options::default() };
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(wait_for_nice("strata-comp-1", lowered), Some(lowered));
    assert_eq!(wait_for_nice("strata-comp-2", lowered), Some(lowered));
    // A new thread names itself as it starts (until then it has its parent's name), so wait
    // for this one as well: under load it may not have run yet.
    assert_eq!(wait_for_nice("strata-flush", own), Some(own));
    drop(db); // joins its threads

    let dir = tempfile::tempdir().unwrap();
    let opts = Options { max_background_jobs: 1, compaction_nice: 19, ..Options::default() };
    let db = Db::open(dir.path(), opts).unwrap();
    // Time for the thread to lower its priority if it (wrongly) would.
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(wait_for_nice("strata-bg", own), Some(own));
    assert_eq!(nice_of("strata-flush"), None);
    assert_eq!(nice_of("strata-comp-1"), None);
    drop(db);

    let dir = tempfile::tempdir().unwrap();
    let opts = Options { max_background_jobs: 2, compaction_sched_idle: true, ..Options::default() };
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(wait_for_policy("strata-comp-1", SCHED_IDLE), Some(SCHED_IDLE));
    assert_eq!(wait_for_nice("strata-flush", own), Some(own));
    assert_eq!(policy_of("strata-flush"), Some(SCHED_OTHER));
    // Compactions still run (and finish) under SCHED_IDLE: give one something to do.
    for i in 0..5_000u32 {
        db.put(i.to_be_bytes(), [7; 100]).unwrap();
        if i % 1_000 == 999 {
            db.flush().unwrap();
        }
    }
    db.compact_range(None, None).unwrap();
    let value = db.get(4_999u32.to_be_bytes()).unwrap();
    assert_eq!(value.as_deref(), Some(&[7u8; 100][..]));
    drop(db);

    // One thread does everything: flushes must not wait behind an idle-policy thread.
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { max_background_jobs: 1, compaction_sched_idle: true, ..Options::default() };
    let db = Db::open(dir.path(), opts).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(wait_for_nice("strata-bg", own), Some(own));
    assert_eq!(policy_of("strata-bg"), Some(SCHED_OTHER));
    drop(db);
}
