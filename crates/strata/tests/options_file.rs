//! Configuration as data and observability: options files (round trip, strict errors), presets,
//! the info LOG (creation, rotation, never on read-only opens), latency histograms and the
//! Prometheus exposition.

use std::path::Path;

use proptest::prelude::*;
use strata::{Compression, Db, Error, Options, Preset, WriteOptions};

fn invalid(r: strata::Result<Options>) -> String {
    match r {
        Err(Error::InvalidArgument(m)) => m,
        Err(other) => panic!("expected InvalidArgument, got {other:?}"),
        Ok(o) => panic!("expected an error, got {o:?}"),
    }
}

fn non_default() -> Options {
    Options {
        create_if_missing: false,
        error_if_exists: true,
        write_buffer_size: 3 << 20,
        max_write_buffer_number: 5,
        block_size: 16 << 10,
        block_restart_interval: 8,
        bloom_bits_per_key: 12,
        cache_size: 7 << 20,
        compression_per_level: vec![Compression::None, Compression::Lz4, Compression::Snappy],
        blob_compression: Compression::Lz4,
        min_blob_size: 1024,
        blob_gc_age_cutoff: 0.125,
        blob_gc_min_garbage_ratio: 0.5,
        blob_scan_runs: 2,
        target_file_size: 32 << 20,
        max_bytes_for_level_base: 128 << 20,
        level_size_multiplier: 8,
        level0_compaction_trigger: 3,
        level0_slowdown_trigger: 10,
        level0_stop_trigger: 12,
        soft_pending_compaction_bytes: 1 << 30,
        hard_pending_compaction_bytes: 2 << 30,
        max_background_jobs: 3,
        compaction_nice: 7,
        compaction_sched_idle: true,
        sync_gather_micros: 250,
        write_spin_micros: 30,
        max_open_files: 500,
        use_mmap_reads: false,
        skip_corrupted_wal_records: true,
        info_log: false,
        max_log_file_size: 1 << 20,
        keep_log_file_num: 3,
        max_manifest_file_size: 1 << 10,
        merge_operator: strata::merge::builtin("uint64add"),
        ..Options::default()
    }
}

#[test]
fn render_parse_render_is_identical() {
    for opts in [Options::default(), non_default()].into_iter().chain(Preset::ALL.iter().map(|p| p.options()))
    {
        let text = opts.to_ini_string();
        let parsed = Options::from_ini_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(parsed.to_ini_string(), text);
    }
    let parsed = Options::from_ini_str(&non_default().to_ini_string()).unwrap();
    assert_eq!(parsed.write_buffer_size, 3 << 20);
    assert_eq!(parsed.merge_operator.as_ref().map(|m| m.name().to_string()).as_deref(), Some("uint64add"));
    assert!(!parsed.info_log);
}

#[test]
fn a_partial_hand_written_file_keeps_defaults_and_accepts_suffixes() {
    let text = "# tuned for the ingest box\n[CFOptions \"default\"]\n  write_buffer_size = 128M\n\n\
                [DBOptions]\n  cache_size=1G\n  info_log=false\n";
    let o = Options::from_ini_str(text).unwrap();
    assert_eq!(o.write_buffer_size, 128 << 20);
    assert_eq!(o.cache_size, 1 << 30);
    assert!(!o.info_log);
    assert_eq!(o.block_size, Options::default().block_size);
}

#[test]
fn unknown_option_names_the_line_and_option() {
    let mut text = Options::default().to_ini_string();
    text = text.replace("write_buffer_size=", "write_bufer_size=");
    let line = text.lines().position(|l| l.contains("write_bufer_size")).unwrap() + 1;
    let msg = invalid(Options::from_ini_str(&text));
    assert!(msg.contains(&format!("line {line}: unknown option 'write_bufer_size'")), "{msg}");
    assert!(msg.contains("did you mean 'write_buffer_size'"), "{msg}");
}

#[test]
fn bad_values_name_the_line_and_option() {
    let msg = invalid(Options::from_ini_str("[CFOptions \"default\"]\nblock_size=big\n"));
    assert!(msg.starts_with("line 2: block_size:"), "{msg}");
    let msg = invalid(Options::from_ini_str("[DBOptions]\n\ninfo_log=maybe\n"));
    assert!(msg.starts_with("line 3: info_log:"), "{msg}");
    let msg = invalid(Options::from_ini_str("[CFOptions \"default\"]\ncompression_per_level=none:gzip\n"));
    assert!(msg.starts_with("line 2: compression_per_level:"), "{msg}");
    let msg = invalid(Options::from_ini_str("[CFOptions \"default\"]\nmerge_operator=mine\n"));
    assert!(msg.starts_with("line 2: merge_operator:"), "{msg}");
    // Parses, but validate() rejects it: still reported at its line.
    let msg = invalid(Options::from_ini_str("[CFOptions \"default\"]\n\nwrite_buffer_size=1024\n"));
    assert!(msg.starts_with("line 3: write_buffer_size:"), "{msg}");
    let msg =
        invalid(Options::from_ini_str("[CFOptions \"default\"]\nwrite_buffer_size=99999999999999999999\n"));
    assert!(msg.contains("line 2: write_buffer_size:"), "{msg}");
}

#[test]
fn structural_errors_are_reported() {
    let msg = invalid(Options::from_ini_str(
        "[DBOptions]\ncache_size=1\n[TableOptions/BlockBasedTable \"default\"]\n",
    ));
    assert!(msg.starts_with("line 3: unknown section [TableOptions/BlockBasedTable \"default\"]"), "{msg}");
    let msg = invalid(Options::from_ini_str("[DBOptions]\n[CFOptions users]\n"));
    assert!(msg.contains("line 2: malformed section [CFOptions users]"), "{msg}");
    let msg = invalid(Options::from_ini_str("[CFOptions \"\"]\n"));
    assert!(msg.contains("line 1: malformed section"), "{msg}");
    let msg = invalid(Options::from_ini_str("cache_size=1\n"));
    assert!(msg.starts_with("line 1:"), "{msg}");
    let msg = invalid(Options::from_ini_str("[DBOptions]\nwrite_buffer_size=1M\n"));
    assert!(msg.contains("line 2: option 'write_buffer_size' belongs in [CFOptions \"default\"]"), "{msg}");
    let msg = invalid(Options::from_ini_str("[DBOptions]\ncache_size=1\ncache_size=2\n"));
    assert!(msg.contains("line 3: option 'cache_size' is set twice (first on line 2)"), "{msg}");
    let msg = invalid(Options::from_ini_str("[DBOptions]\njust words\n"));
    assert!(msg.starts_with("line 2: expected key=value"), "{msg}");
    assert!(matches!(
        Options::from_ini_str("[Version]\noptions_file_version=99\n"),
        Err(Error::UnsupportedVersion { found: 99, .. })
    ));
}

#[test]
fn load_and_load_latest_read_files() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tuned.ini");
    std::fs::write(&file, "[CFOptions \"default\"]\nwrite_buffer_size=2M\n").unwrap();
    assert_eq!(Options::load(&file).unwrap().write_buffer_size, 2 << 20);
    std::fs::write(&file, "[CFOptions \"default\"]\nwrite_bufer_size=2M\n").unwrap();
    let msg = invalid(Options::load(&file));
    assert!(msg.contains("tuned.ini: line 2: unknown option"), "{msg}");

    let db_dir = dir.path().join("db");
    assert!(Options::load_latest(&db_dir).is_err());
    let opts = Options { write_buffer_size: 5 << 20, bloom_bits_per_key: 7, ..Options::default() };
    Db::open(&db_dir, opts.clone()).unwrap().close().unwrap();
    let reopened = Options { write_buffer_size: 6 << 20, ..opts };
    Db::open(&db_dir, reopened.clone()).unwrap().close().unwrap();
    let latest = Options::load_latest(&db_dir).unwrap();
    assert_eq!(latest.to_ini_string(), reopened.to_ini_string());
    assert_eq!(latest.write_buffer_size, 6 << 20);
}

#[test]
fn with_ini_str_keeps_a_custom_merge_operator_of_the_same_name() {
    let base = Options { merge_operator: strata::merge::builtin("stringappend"), ..Options::default() };
    let name = base.merge_operator.as_ref().unwrap().name().to_string();
    let text = format!("[CFOptions \"default\"]\nmerge_operator={name}\n");
    let o = base.clone().with_ini_str(&text).unwrap();
    assert!(std::sync::Arc::ptr_eq(
        o.merge_operator.as_ref().unwrap(),
        base.merge_operator.as_ref().unwrap()
    ));
}

#[test]
fn presets_validate_and_differ() {
    for p in Preset::ALL {
        let o = Options::preset(p.name()).unwrap();
        o.validate().unwrap_or_else(|e| panic!("{p}: {e}"));
        assert_eq!(o.to_ini_string(), p.options().to_ini_string());
    }
    assert_eq!(Options::preset("balanced").unwrap().to_ini_string(), Options::default().to_ini_string());
    let bulk = Options::preset("bulk_load").unwrap();
    assert!(bulk.max_write_buffer_number > Options::default().max_write_buffer_number);
    assert!(bulk.level0_compaction_trigger > Options::default().level0_compaction_trigger);
    let read = Options::preset("read-heavy").unwrap();
    assert!(read.cache_size > Options::default().cache_size && read.bloom_bits_per_key > 10);
    let low = Options::preset("LowMemory").unwrap();
    assert_eq!(low.max_background_jobs, 1);
    assert!(matches!(Options::preset("turbo"), Err(Error::InvalidArgument(_))));
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn fill_and_flush(db: &Db, round: u32) {
    let w = WriteOptions::default();
    for i in 0..50u32 {
        db.put_opt(&w, format!("k{round:03}-{i:03}").as_bytes(), b"value").unwrap();
    }
    db.flush().unwrap();
}

#[test]
fn log_file_records_flushes_and_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for round in 0..3 {
        fill_and_flush(&db, round);
    }
    db.compact_range(None, None).unwrap();
    let log = std::fs::read_to_string(dir.path().join("LOG")).unwrap();
    assert!(log.contains("[INFO] Options.write_buffer_size: "), "{log}");
    for event in
        ["\"event\":\"flush_started\"", "\"event\":\"flush_finished\"", "\"event\":\"compaction_finished\""]
    {
        assert!(log.contains(event), "{event} missing:\n{log}");
    }
    // RocksDB-like line prefix: 2026/11/22-03:04:05.123456 [INFO]
    for line in log.lines() {
        let (time, rest) = line.split_at(26);
        assert_eq!(time.as_bytes()[4], b'/', "{line}");
        assert_eq!(time.as_bytes()[10], b'-', "{line}");
        assert_eq!(time.as_bytes()[19], b'.', "{line}");
        assert!(
            rest.starts_with(" [INFO] ") || rest.starts_with(" [WARN] ") || rest.starts_with(" [ERROR] ")
        );
    }
    let flush = log.lines().find(|l| l.contains("flush_finished")).unwrap();
    let json = &flush[flush.find("EVENT_LOG_v1 ").unwrap() + 13..];
    assert!(json.starts_with("{\"time_micros\":") && json.ends_with('}'), "{json}");
    assert!(json.contains("\"lsm_state\":["), "{json}");
    db.close().unwrap();

    // Reopening rotates the previous LOG away.
    Db::open(dir.path(), Options::default()).unwrap().close().unwrap();
    assert_eq!(names(dir.path()).iter().filter(|n| n.starts_with("LOG.old.")).count(), 1);
}

#[test]
fn log_events_name_their_column_family_and_its_lsm_state() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let links = db.create_cf("links", Options::default()).unwrap();
    for round in 0..2 {
        db.put_cf(&links, format!("link-{round}"), b"v").unwrap();
        db.flush_cf(&links).unwrap();
    }
    // A flush's finished event is logged after the flush is installed, which is what
    // `flush_cf` waits for: close the database so that every event is in the LOG.
    drop(links);
    db.close().unwrap();
    let log = std::fs::read_to_string(dir.path().join("LOG")).unwrap();
    let flushes: Vec<&str> = log.lines().filter(|l| l.contains("\"event\":\"flush_finished\"")).collect();
    assert_eq!(flushes.len(), 2, "{log}");
    for l in &flushes {
        assert!(l.contains("\"cf_name\":\"links\""), "{l}");
    }
    // The second flush left two L0 files in `links`, while the default family has none.
    assert!(flushes[1].contains("\"lsm_state\":[2,0,0,0,0,0,0]"), "{}", flushes[1]);
    let started = log.lines().find(|l| l.contains("\"event\":\"flush_started\"")).unwrap();
    assert!(started.contains("\"cf_name\":\"links\""), "{started}");
}

#[test]
fn log_rotates_at_the_size_limit_and_keeps_a_bounded_number() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { max_log_file_size: 1024, keep_log_file_num: 2, ..Options::default() };
    let db = Db::open(dir.path(), opts).unwrap();
    for round in 0..12 {
        fill_and_flush(&db, round);
    }
    db.close().unwrap();
    let all = names(dir.path());
    let old: Vec<&String> = all.iter().filter(|n| n.starts_with("LOG.old.")).collect();
    assert_eq!(old.len(), 2, "{all:?}");
    for name in old.iter().map(|n| dir.path().join(n)).chain([dir.path().join("LOG")]) {
        let len = std::fs::metadata(&name).unwrap().len();
        // A single line longer than the limit may exceed it; ours are shorter than 1 KiB.
        assert!(len <= 1024, "{} is {len} bytes", name.display());
    }
}

fn current_manifest(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("CURRENT")).unwrap().trim_end().to_string()
}

/// A tiny `max_manifest_file_size` (256 bytes: a flush edit is ~100) rolls the MANIFEST every few edits (each roll replaces
/// CURRENT and the old MANIFEST is deleted); the default never rolls in a small run.
#[test]
fn the_manifest_rolls_at_max_manifest_file_size() {
    for (max, expect_rolls) in [(256, true), (Options::default().max_manifest_file_size, false)] {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options { max_manifest_file_size: max, ..Options::default() };
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        let mut seen = vec![current_manifest(dir.path())];
        for round in 0..12 {
            fill_and_flush(&db, round);
            let now = current_manifest(dir.path());
            if seen.last() != Some(&now) {
                seen.push(now);
            }
        }
        if expect_rolls {
            assert!(seen.len() >= 4, "max {max}: CURRENT named only {seen:?}");
        } else {
            assert_eq!(seen.len(), 1, "max {max}: {seen:?}");
        }
        db.close().unwrap();
        let manifests: Vec<String> =
            names(dir.path()).into_iter().filter(|n| n.starts_with("MANIFEST-")).collect();
        assert_eq!(manifests, [current_manifest(dir.path())], "old MANIFESTs are deleted");
        let db = Db::open(dir.path(), opts).unwrap();
        for round in 0..12u32 {
            let key = format!("k{round:03}-049");
            assert_eq!(db.get(key.as_bytes()).unwrap().as_deref(), Some(&b"value"[..]));
        }
    }
}

#[test]
fn info_log_off_and_read_only_opens_write_no_log() {
    let dir = tempfile::tempdir().unwrap();
    let off = Options { info_log: false, ..Options::default() };
    let db = Db::open(dir.path(), off).unwrap();
    fill_and_flush(&db, 0);
    db.close().unwrap();
    assert!(!names(dir.path()).iter().any(|n| n.starts_with("LOG")), "{:?}", names(dir.path()));

    let before = names(dir.path());
    let ro = Db::open_read_only(dir.path(), Options::default()).unwrap();
    assert_eq!(ro.get(b"k000-001").unwrap().as_deref(), Some(&b"value"[..]));
    assert!(ro.property("strata.prometheus").unwrap().contains("strata_gets_total 1"));
    ro.close().unwrap();
    assert_eq!(names(dir.path()), before);
}

#[test]
fn histograms_count_operations_and_prometheus_names_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options { latency_histograms: true, ..Options::default() }).unwrap();
    let w = WriteOptions::default();
    for i in 0..37u32 {
        db.put_opt(&w, &i.to_be_bytes(), b"v").unwrap();
    }
    let mut batch = strata::WriteBatch::new();
    batch.put(b"a", b"1");
    batch.delete(b"b");
    db.write_opt(&w, batch).unwrap();
    for i in 0..21u32 {
        db.get(i.to_be_bytes()).unwrap();
    }
    db.get(b"missing").unwrap();

    let stats = db.stats();
    assert_eq!(stats.write_latency.snapshot().count(), 38);
    assert_eq!(stats.get_latency.snapshot().count(), 22);

    let hist = db.property("strata.histograms").unwrap();
    assert!(hist.contains("strata.db.get.micros P50 : "), "{hist}");
    assert!(hist.contains("COUNT : 22"), "{hist}");
    assert!(hist.contains("strata.db.write.micros") && hist.contains("COUNT : 38"), "{hist}");

    let prom = db.property("strata.prometheus").unwrap();
    for needle in [
        "# TYPE strata_keys_written_total counter",
        "strata_keys_written_total 39",
        "strata_gets_total 22",
        "# TYPE strata_get_latency_seconds histogram",
        "strata_get_latency_seconds_bucket{le=\"0.000001\"} ",
        "strata_get_latency_seconds_bucket{le=\"+Inf\"} 22",
        "strata_get_latency_seconds_count 22",
        "strata_write_latency_seconds_count 38",
        "strata_write_stall_seconds_total{kind=\"stop\"} ",
        "strata_level_files{level=\"0\"} ",
        "strata_background_error 0",
    ] {
        assert!(prom.contains(needle), "{needle} missing:\n{prom}");
    }
    // Every sample line is `name{labels} value` with a numeric value; buckets are cumulative.
    let mut last = 0u64;
    for line in prom.lines().filter(|l| !l.starts_with('#')) {
        let value = line.rsplit(' ').next().unwrap();
        assert!(value.parse::<f64>().is_ok(), "{line}");
        if line.starts_with("strata_get_latency_seconds_bucket") {
            let v: u64 = value.parse().unwrap();
            assert!(v >= last, "{line}");
            last = v;
        }
    }
}

#[test]
fn latency_histograms_are_off_by_default_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put(b"k", b"v").unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    let _ = db.multi_get([&b"k"[..], b"missing"]);

    let stats = db.stats();
    assert_eq!(stats.write_latency.snapshot().count(), 0);
    assert_eq!(stats.get_latency.snapshot().count(), 0);
    // The counters are kept either way.
    assert_eq!(stats.gets.load(std::sync::atomic::Ordering::Relaxed), 3);
    let hist = db.property("strata.histograms").unwrap();
    assert!(hist.contains("latency histograms: off"), "{hist}");
    assert!(db.property("strata.stats").unwrap().contains("latency histograms: off"));
    let prom = db.property("strata.prometheus").unwrap();
    assert!(prom.contains("strata_gets_total 3"), "{prom}");
    assert!(!prom.contains("latency_seconds"), "{prom}");
    db.close().unwrap();

    // The option string and the OPTIONS file carry it.
    let on = Options::default().with_option_string("latency_histograms=true").unwrap();
    let db = Db::open(dir.path(), on).unwrap();
    db.get(b"k").unwrap();
    assert_eq!(db.stats().get_latency.snapshot().count(), 1);
}

#[test]
fn a_failing_log_never_fails_user_operations() {
    use std::sync::Arc;
    use strata_testkit::{FaultFs, MemFs, Op, Rule, When};
    let fault = Arc::new(FaultFs::new(Arc::new(MemFs::new())));
    // Every append to the LOG fails.
    fault.add_rule(Rule::new(Op::Write).when(When::Always).on_path("/db/LOG"));
    let opts = Options { fs: fault.clone(), ..Options::default() };
    let db = Db::open("/db", opts.clone()).unwrap();
    for round in 0..3 {
        fill_and_flush(&db, round);
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get(b"k002-049").unwrap().as_deref(), Some(&b"value"[..]));
    db.close().unwrap();
    assert!(!fault.injected().is_empty());
    // Now the LOG cannot even be rotated or created.
    for op in [Op::Create, Op::Rename] {
        fault.add_rule(Rule::new(op).when(When::Always).on_path("/db/LOG"));
    }
    let injected = fault.injected().len();
    let db = Db::open("/db", opts).unwrap();
    fill_and_flush(&db, 9);
    db.close().unwrap();
    assert!(fault.injected().len() > injected);
}

/// The text of the newest OPTIONS file in `dir`.
fn latest_options_text(dir: &Path) -> String {
    let name = names(dir).into_iter().filter(|n| n.starts_with("OPTIONS-")).max().unwrap();
    std::fs::read_to_string(dir.join(name)).unwrap()
}

fn family(write_buffer_size: usize, bloom_bits_per_key: u32) -> Options {
    Options { write_buffer_size, bloom_bits_per_key, ..Options::default() }
}

#[test]
fn a_database_writes_a_section_per_live_family_and_reads_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { cache_size: 3 << 20, ..family(5 << 20, 7) };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    db.create_cf("users", family(8 << 20, 16)).unwrap();
    let logs = db.create_cf("logs", family(2 << 20, 0)).unwrap();

    let text = latest_options_text(dir.path());
    let at = |h: &str| text.find(h).unwrap_or_else(|| panic!("{h} missing from\n{text}"));
    assert!(at("[DBOptions]") < at("[CFOptions \"default\"]"));
    assert!(at("[CFOptions \"default\"]") < at("[CFOptions \"users\"]"));
    assert!(at("[CFOptions \"users\"]") < at("[CFOptions \"logs\"]"));
    let users_section = &text[at("[CFOptions \"users\"]")..at("[CFOptions \"logs\"]")];
    assert!(users_section.contains("write_buffer_size=8388608"), "{users_section}");
    assert!(users_section.contains("bloom_bits_per_key=16"), "{users_section}");
    assert!(!users_section.contains("cache_size"), "database options stay in [DBOptions]");

    // load_latest still reads it: the database's options and the default family's.
    let latest = Options::load_latest(dir.path()).unwrap();
    assert_eq!(
        (latest.write_buffer_size, latest.bloom_bits_per_key, latest.cache_size),
        (5 << 20, 7, 3 << 20)
    );
    let (default, families) = Options::load_latest_with_families(dir.path()).unwrap();
    assert_eq!(default.to_ini_string(), latest.to_ini_string());
    let got: Vec<_> = families
        .iter()
        .map(|(n, o)| (n.as_str(), o.write_buffer_size, o.bloom_bits_per_key, o.cache_size))
        .collect();
    assert_eq!(got, [("users", 8 << 20, 16, 3 << 20), ("logs", 2 << 20, 0, 3 << 20)]);

    // A dropped family's section goes with it, and a checkpoint carries the sections too.
    db.drop_cf(&logs).unwrap();
    let text = latest_options_text(dir.path());
    assert!(text.contains("[CFOptions \"users\"]") && !text.contains("[CFOptions \"logs\"]"), "{text}");
    let snap = dir.path().join("checkpoint");
    db.checkpoint(&snap).unwrap();
    assert!(latest_options_text(&snap).contains("[CFOptions \"users\"]"));
    db.close().unwrap();

    // What was read back opens the database as it was.
    let (opts, families) = Options::load_latest_with_families(dir.path()).unwrap();
    let db = Db::open_cf(dir.path(), opts, families).unwrap();
    assert_eq!(db.cf_names(), ["default", "users"]);
    db.close().unwrap();
    let (_, families) = Options::load_latest_with_families(dir.path()).unwrap();
    assert_eq!(families[0].1.bloom_bits_per_key, 16, "the family kept its options across the reopen");
}

#[test]
fn family_sections_apply_to_the_database_options_only() {
    let text = "[DBOptions]\n  cache_size=1G\n[CFOptions \"default\"]\n  write_buffer_size=32M\n\
                [CFOptions \"a\"]\n  write_buffer_size=4M\n[CFOptions \"b\"]\n[CFOptions \"a\"]\n  block_size=8K\n";
    let (default, families) = Options::families_from_ini_str(text).unwrap();
    assert_eq!(default.write_buffer_size, 32 << 20);
    let [(a, a_opts), (b, b_opts)] = &families[..] else { panic!("{families:?}") };
    assert_eq!((a.as_str(), b.as_str()), ("a", "b"));
    assert_eq!((a_opts.write_buffer_size, a_opts.block_size, a_opts.cache_size), (4 << 20, 8 << 10, 1 << 30));
    // Not from the default family's section: the defaults.
    assert_eq!(b_opts.write_buffer_size, Options::default().write_buffer_size);
    // The same option in two families is not a repeat.
    assert!(Options::families_from_ini_str(
        "[CFOptions \"a\"]\nblock_size=8K\n[CFOptions \"b\"]\nblock_size=8K\n"
    )
    .is_ok());
}

#[test]
fn errors_in_a_family_section_name_the_line_and_the_family() {
    let text = "[DBOptions]\ncache_size=1M\n[CFOptions \"users\"]\nwrite_buffer_size=lots\n";
    let msg = invalid(Options::families_from_ini_str(text).map(|(o, _)| o));
    assert!(msg.starts_with("line 4: in [CFOptions \"users\"]: write_buffer_size:"), "{msg}");
    assert!(msg.contains("\"lots\""), "{msg}");
    // Checked the same by the readers that return only the default family.
    assert_eq!(invalid(Options::from_ini_str(text)), msg);

    let msg = invalid(Options::from_ini_str("[CFOptions \"users\"]\n\nwrite_buffer_size=1024\n"));
    assert!(msg.starts_with("line 3: in [CFOptions \"users\"]: write_buffer_size:"), "{msg}");
    let msg = invalid(Options::from_ini_str("[CFOptions \"users\"]\ncache_size=1M\n"));
    assert!(
        msg.contains("line 2: option 'cache_size' belongs in [DBOptions], not [CFOptions \"users\"]"),
        "{msg}"
    );
    let msg = invalid(Options::from_ini_str("[CFOptions \"users\"]\nblock_sise=4K\n"));
    assert!(msg.contains("unknown option 'block_sise' in [CFOptions \"users\"] (did you mean"), "{msg}");
    let msg = invalid(Options::from_ini_str(
        "[CFOptions \"u\"]\nblock_size=4K\n[CFOptions \"u\"]\nblock_size=8K\n",
    ));
    assert!(msg.contains("line 4: option 'block_size' is set twice (first on line 2)"), "{msg}");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tuned.ini");
    std::fs::write(&file, text).unwrap();
    let msg = invalid(Options::load_with_families(&file).map(|(o, _)| o));
    assert!(msg.contains("tuned.ini: line 4: in [CFOptions \"users\"]"), "{msg}");
}

#[test]
fn a_family_name_with_quotes_and_backslashes_survives_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let name = "we\"ird\\name] #1";
    db.create_cf(name, family(1 << 20, 3)).unwrap();
    db.close().unwrap();
    let (_, families) = Options::load_latest_with_families(dir.path()).unwrap();
    assert_eq!(families.len(), 1);
    assert_eq!((families[0].0.as_str(), families[0].1.bloom_bits_per_key), (name, 3));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn families_round_trip_through_the_text(
        specs in proptest::collection::btree_map("[^\\p{Cc}]{1,12}", (64u32..4096, 0u32..20), 0..5),
    ) {
        let families: Vec<(String, Options)> = specs
            .iter()
            .filter(|(name, _)| name.as_str() != "default")
            .map(|(name, &(kib, bits))| (name.clone(), family(kib as usize * 1024, bits)))
            .collect();
        let text = Options::default().to_ini_string_with_families(&families);
        let (_, back) = Options::families_from_ini_str(&text).unwrap();
        prop_assert_eq!(back.len(), families.len());
        for ((name, opts), (got_name, got)) in families.iter().zip(&back) {
            prop_assert_eq!(name, got_name);
            prop_assert_eq!(opts.to_ini_string(), got.to_ini_string());
        }
    }
}
