//! End-to-end tests of the `strata-stress` binary: a short concurrent run followed by
//! `--verify-only`, short crash loops in sync and no-sync modes, and negative tests showing the
//! verifier does fail (exit 3) when the database is changed behind the oracle's back.

use std::path::Path;
use std::process::{Command, Output};

use strata::{Db, Options, ReadOptions};

const EXE: &str = env!("CARGO_BIN_EXE_strata-stress");

fn stress(args: &[&str]) -> Output {
    let out = Command::new(EXE).args(args).output().expect("spawn strata-stress");
    println!("{}", String::from_utf8_lossy(&out.stdout));
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    out
}

fn paths(dir: &Path) -> (String, String) {
    (dir.join("db").display().to_string(), dir.join("expected").display().to_string())
}

/// A short run of `ops` operations on 2 threads over `keys` keys, with `extra` flags.
fn run_with(dir: &Path, ops: &str, keys: &str, mode: &str, extra: &[&str]) -> Output {
    let (db, exp) = paths(dir);
    let mut args =
        vec!["run", "--db", &db, "--expected", &exp, "--threads", "2", "--ops", ops, "--keys", keys, mode];
    args.extend_from_slice(extra);
    stress(&args)
}

/// [`run_with`] without extra flags, which must succeed.
fn short_run(dir: &Path, ops: &str, keys: &str, mode: &str) {
    assert_eq!(run_with(dir, ops, keys, mode, &[]).status.code(), Some(0), "run failed");
}

fn verify_only(dir: &Path, keys: &str) -> Output {
    let (db, exp) = paths(dir);
    stress(&["run", "--db", &db, "--expected", &exp, "--keys", keys, "--verify-only"])
}

#[test]
fn run_then_verify_only() {
    let dir = tempfile::tempdir().unwrap();
    short_run(dir.path(), "3000", "500", "--no-sync");
    short_run(dir.path(), "1000", "500", "--sync");
    let out = verify_only(dir.path(), "500");
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("mismatches=0"));
}

/// With checkpoints frequent, a run takes some, reads each back against the oracle, and leaves
/// none behind; a second run clears what a killed one might have left.
#[test]
fn checkpoints_are_taken_read_back_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let leftover = dir.path().join("expected/checkpoints/t0-0.tmp");
    std::fs::create_dir_all(&leftover).unwrap();
    let out = run_with(dir.path(), "2000", "500", "--no-sync", &["--checkpoints-per-10k", "200"]);
    assert_eq!(out.status.code(), Some(0), "run failed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let taken: u64 = stdout
        .split_whitespace()
        .find_map(|w| w.strip_prefix("checkpoints="))
        .and_then(|n| n.parse().ok())
        .expect("a checkpoints= count in the summary");
    assert!(taken > 0, "{stdout}");
    assert!(stdout.contains("mismatches=0"), "{stdout}");
    let left: Vec<_> = std::fs::read_dir(dir.path().join("expected/checkpoints")).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

fn crash_loop(dir: &Path, mode: &str, extra: &[&str]) {
    let (db, exp) = paths(dir);
    let args =
        ["crash-loop", "--db", &db, "--expected", &exp, "--cycles", "5", "--threads", "2", "--keys", "1000"];
    let out = stress(&[&args[..], &["--min-ms", "150", "--max-ms", "600", mode], extra].concat());
    assert_eq!(out.status.code(), Some(0), "crash loop failed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("crash-loop: cycles=5 ") && stdout.contains("acked_writes_lost=0"), "{stdout}");
}

#[test]
fn crash_loop_sync() {
    crash_loop(tempfile::tempdir().unwrap().path(), "--sync", &[]);
}

/// Also with options of the engine's own: every child and every verification opens with them.
#[test]
fn crash_loop_no_sync() {
    let dir = tempfile::tempdir().unwrap();
    let options = "compaction_sched_idle=true; compression_per_level=none:zstd";
    crash_loop(dir.path(), "--no-sync", &["--options", options]);
    let written = std::fs::read_dir(dir.path().join("db"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("OPTIONS-"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .expect("the database keeps an OPTIONS file");
    for line in ["compaction_sched_idle=true", "compression_per_level=none:zstd", "target_file_size=1048576"]
    {
        assert!(written.contains(line), "{line} missing from\n{written}");
    }
}

#[test]
fn bad_options_are_a_tool_error() {
    let dir = tempfile::tempdir().unwrap();
    let (db, exp) = paths(dir.path());
    let out =
        stress(&["run", "--db", &db, "--expected", &exp, "--ops", "10", "--options", "compaction_nice=40"]);
    assert_eq!(out.status.code(), Some(1), "exit code of a tool error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("compaction_nice"));
}

/// Opens the stress database directly, as a different application would.
fn open_db(dir: &Path) -> Db {
    let opts = Options { merge_operator: strata::merge::builtin("uint64add"), ..Options::default() };
    Db::open(dir.join("db"), opts).unwrap()
}

fn first_key(db: &Db) -> Vec<u8> {
    let mut it = db.cursor(&ReadOptions::new()).unwrap();
    it.seek_to_first();
    assert!(it.valid(), "the run left no keys");
    it.key().to_vec()
}

fn assert_mismatch(dir: &Path) {
    let out = verify_only(dir, "300");
    assert_eq!(out.status.code(), Some(3), "the verifier must report the tampering");
    assert!(String::from_utf8_lossy(&out.stderr).contains("MISMATCH"));
}

#[test]
fn verifier_catches_a_changed_value() {
    let dir = tempfile::tempdir().unwrap();
    short_run(dir.path(), "600", "300", "--no-sync");
    let db = open_db(dir.path());
    db.put(first_key(&db), b"tampered behind the oracle's back").unwrap();
    db.close().unwrap();
    assert_mismatch(dir.path());
}

#[test]
fn verifier_catches_a_lost_write() {
    let dir = tempfile::tempdir().unwrap();
    short_run(dir.path(), "600", "300", "--no-sync");
    let db = open_db(dir.path());
    db.delete(first_key(&db)).unwrap();
    db.close().unwrap();
    assert_mismatch(dir.path());
}

#[test]
fn a_leftover_oracle_beside_a_fresh_database_is_a_tool_error_not_a_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    short_run(dir.path(), "600", "300", "--no-sync");
    let (db, _) = paths(dir.path());
    std::fs::remove_dir_all(&db).unwrap();
    let out = verify_only(dir.path(), "300");
    assert_eq!(out.status.code(), Some(1), "a leftover oracle is the operator's mistake, not data loss");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("records acknowledged writes") && !stderr.contains("MISMATCH"), "{stderr}");
}

/// `crash-test`: every cycle prints the options it drew (and how to draw them again), and a
/// last verification reopens the database with the base options.
#[test]
fn crash_test_draws_and_prints_each_cycles_options() {
    let dir = tempfile::tempdir().unwrap();
    let (db, exp) = paths(dir.path());
    let args =
        ["crash-test", "--db", &db, "--expected", &exp, "--threads", "2", "--keys", "1000", "--seed", "11"];
    let out = stress(&[&args[..], &["--cycles", "4", "--min-ms", "150", "--max-ms", "500"]].concat());
    assert_eq!(out.status.code(), Some(0), "crash test failed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for cycle in 1..=4 {
        let line = format!("cycle {cycle}/4 options: write_buffer_size=");
        assert!(stdout.contains(&line), "{line} missing from\n{stdout}");
        let replay = format!("--seed 11 --first-cycle {} --cycles 1", cycle - 1);
        assert!(stdout.contains(&replay), "{replay} missing from\n{stdout}");
    }
    assert!(stdout.contains("final verify with the base options"), "{stdout}");
    assert!(stdout.contains("crash-test: cycles=4 ") && stdout.contains("acked_writes_lost=0"), "{stdout}");
    // The drawn options (up to the replay hint) of cycle 3, drawn again on their own.
    let drawn = |text: &str, prefix: &str| {
        let line = text.lines().find(|l| l.starts_with(prefix)).expect("an options line").to_string();
        line.split_once(": ").unwrap().1.split(" (these again").next().unwrap().to_string()
    };
    let again = stress(
        &[&args[..], &["--first-cycle", "2", "--cycles", "1", "--min-ms", "150", "--max-ms", "500"]].concat(),
    );
    assert_eq!(again.status.code(), Some(0));
    let replayed = drawn(&String::from_utf8_lossy(&again.stdout), "cycle 3/3 options: ");
    assert_eq!(replayed, drawn(&stdout, "cycle 3/4 options: "));
}

/// `--disable-wal` loops: killed children lose what was not flushed, and the verifier accepts
/// exactly that (any value the key took in the run), counting it.
#[test]
fn crash_loop_without_the_wal_accepts_unflushed_losses() {
    let dir = tempfile::tempdir().unwrap();
    let (db, exp) = paths(dir.path());
    let args =
        ["crash-loop", "--db", &db, "--expected", &exp, "--cycles", "3", "--threads", "2", "--keys", "1000"];
    let out = stress(&[&args[..], &["--min-ms", "200", "--max-ms", "600", "--disable-wal"]].concat());
    assert_eq!(out.status.code(), Some(0), "crash loop failed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("unlogged_cycles=3 unlogged_reverted="), "{stdout}");
    assert!(!dir.path().join("expected/unlogged.history").exists(), "the verifier clears the history");
    let out = verify_only(dir.path(), "1000");
    assert_eq!(out.status.code(), Some(0));
}

#[cfg(not(feature = "kill-points"))]
#[test]
fn kill_points_need_a_build_with_them() {
    let dir = tempfile::tempdir().unwrap();
    let (db, exp) = paths(dir.path());
    let out = stress(&["crash-loop", "--db", &db, "--expected", &exp, "--cycles", "1", "--kill-points"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--features kill-points"));
}

/// With kill points: children kill themselves at the armed points, every cycle verifies, and a
/// loop too short for every point to fire ends with the table and exit code 4.
#[cfg(feature = "kill-points")]
#[test]
fn a_short_kill_point_loop_reports_the_points_that_never_fired() {
    let dir = tempfile::tempdir().unwrap();
    let (db, exp) = paths(dir.path());
    let args =
        ["crash-loop", "--db", &db, "--expected", &exp, "--cycles", "4", "--threads", "2", "--keys", "1000"];
    let extra = ["--kill-points", "--max-ms", "3000", "--sync-percent", "20", "--seed", "5"];
    let out = stress(&[&args[..], &extra, &["--options", "max_manifest_file_size=1024"]].concat());
    assert_eq!(out.status.code(), Some(4), "a point never fired: exit 4");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("killed itself at kill point "), "{stdout}");
    assert!(stdout.contains("acked_writes_lost=0") && stdout.contains("  wal.append.before"), "{stdout}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("NOT COVERED: kill points that never fired"));
}

/// `--column-families 3`: keys and batches spread over three families, the last dropped and
/// recreated during the run; every kill is verified family by family.
#[test]
fn crash_loop_with_column_families_drops_and_recreates_the_last_one() {
    let dir = tempfile::tempdir().unwrap();
    let (db, exp) = paths(dir.path());
    let args =
        ["crash-loop", "--db", &db, "--expected", &exp, "--cycles", "4", "--threads", "2", "--keys", "500"];
    let extra = ["--min-ms", "300", "--max-ms", "900", "--no-sync", "--column-families", "3"];
    let out = stress(&[&args[..], &extra, &["--cf-drops-per-10k", "100", "--seed", "3"]].concat());
    assert_eq!(out.status.code(), Some(0), "crash loop failed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("acked_writes_lost=0 ") && stdout.contains(" families=3 drops>="), "{stdout}");
    let drops: u64 = stdout
        .split_whitespace()
        .find_map(|w| w.strip_prefix("drops>="))
        .and_then(|n| n.parse().ok())
        .expect("a drops count");
    assert!(drops > 0, "{stdout}");
    assert!(
        Db::list_cf(dir.path().join("db"), Options::default()).unwrap() == ["default", "cf1", "cf2"],
        "the dropped family is recreated under its name"
    );
}

/// A three-family run with no drops, leaving data in `cf2` (the family runs drop), closed.
fn families_run(dir: &Path) {
    let out =
        run_with(dir, "1500", "300", "--no-sync", &["--column-families", "3", "--cf-drops-per-10k", "0"]);
    assert_eq!(out.status.code(), Some(0), "run failed");
}

fn open_families(dir: &Path) -> (Db, strata::ColumnFamily) {
    let opts = || Options { merge_operator: strata::merge::builtin("uint64add"), ..Options::default() };
    let db = Db::open_cf(dir.join("db"), opts(), [("cf1", opts()), ("cf2", opts())]).unwrap();
    let cf2 = db.cf("cf2").unwrap();
    let mut it = db.cursor_cf(&cf2, &ReadOptions::new()).unwrap();
    it.seek_to_first();
    assert!(it.valid(), "the run left cf2 empty: the test would prove nothing");
    drop(it);
    (db, cf2)
}

/// Sets the oracle's drop phase (0 live, 1 drop issued, 2 drop acknowledged), as a run killed
/// in the middle of a drop leaves it.
fn set_drop_phase(dir: &Path, phase: u64) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(dir.join("expected/oracle.state")).unwrap();
    f.write_all_at(&phase.to_le_bytes(), 24).unwrap();
}

fn verify_families(dir: &Path) -> Output {
    let (db, exp) = paths(dir);
    stress(&[
        "run",
        "--db",
        &db,
        "--expected",
        &exp,
        "--keys",
        "300",
        "--column-families",
        "3",
        "--verify-only",
    ])
}

/// What a crash in the middle of a drop may leave, and what it may not: the verifier accepts the
/// family gone only once the drop was issued, and its data only before the drop was acknowledged.
#[test]
fn the_verifier_accepts_exactly_the_states_a_crash_during_a_drop_can_leave() {
    // Dropped behind the oracle's back, no drop recorded: acknowledged writes lost.
    let dir = tempfile::tempdir().unwrap();
    families_run(dir.path());
    let (db, cf2) = open_families(dir.path());
    db.drop_cf(&cf2).unwrap();
    db.close().unwrap();
    let out = verify_families(dir.path());
    assert_eq!(out.status.code(), Some(3), "a dropped family without a drop issued is data loss");
    assert!(String::from_utf8_lossy(&out.stderr).contains("cf2:k"), "the report names the family");

    // Drop issued and durable, not yet acknowledged: the family is empty, and the oracle is
    // reset to that, so a second verification is exact.
    let dir = tempfile::tempdir().unwrap();
    families_run(dir.path());
    let (db, cf2) = open_families(dir.path());
    db.drop_cf(&cf2).unwrap();
    db.close().unwrap();
    set_drop_phase(dir.path(), 1);
    let out = verify_families(dir.path());
    assert_eq!(out.status.code(), Some(0), "a drop in flight may have happened");
    assert!(String::from_utf8_lossy(&out.stdout).contains("drop_in_flight=1 drop_applied=1"));
    let out = verify_families(dir.path());
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("drop_in_flight=0 drop_applied=0"));

    // Drop issued but not durable: the family keeps its acknowledged data.
    let dir = tempfile::tempdir().unwrap();
    families_run(dir.path());
    set_drop_phase(dir.path(), 1);
    let out = verify_families(dir.path());
    assert_eq!(out.status.code(), Some(0), "a drop in flight may not have happened");
    assert!(String::from_utf8_lossy(&out.stdout).contains("drop_in_flight=1 drop_applied=0"));

    // Drop acknowledged, yet the family still holds data: a resurrected family.
    let dir = tempfile::tempdir().unwrap();
    families_run(dir.path());
    set_drop_phase(dir.path(), 2);
    let out = verify_families(dir.path());
    assert_eq!(out.status.code(), Some(3), "data of an acknowledged drop came back");
}

/// `bank` in each transaction mode, a second run continuing the first's database, and a run
/// refused (exit 3) once a transfer is made half present behind its back.
#[test]
fn bank_transfers_survive_kills_in_every_mode_and_a_half_transfer_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("bank").display().to_string();
    let bank = |extra: &[&str]| {
        let args =
            ["bank", "--db", &db, "--cycles", "2", "--threads", "3", "--min-ms", "150", "--max-ms", "400"];
        stress(&[&args[..], extra].concat())
    };
    for mode in ["optimistic", "pessimistic", "pessimistic-snapshot"] {
        let out = bank(&["--mode", mode, "--sync-percent", "50"]);
        assert_eq!(out.status.code(), Some(0), "bank --mode {mode} failed");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("bank: cycles=2 ") && stdout.contains("acked_lost=0"), "{stdout}");
        assert!(!stdout.contains(" acked=0 "), "nothing was acknowledged: {stdout}");
    }
    let handle = Db::open_cf(
        &db,
        Options::default(),
        [("accounts", Options::default()), ("journal", Options::default())],
    )
    .unwrap();
    let journal = handle.cf("journal").unwrap();
    let entry = format!("0 1 5 {}", ".".repeat(96));
    handle.put_cf(&journal, b"t999999-000-0000000000", entry.as_bytes()).unwrap();
    handle.close().unwrap();
    let out = bank(&[]);
    assert_eq!(out.status.code(), Some(3), "a journal entry without its balance changes must fail the audit");
    assert!(String::from_utf8_lossy(&out.stderr).contains("half present"));
}
