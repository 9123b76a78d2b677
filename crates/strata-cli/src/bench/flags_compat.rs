//! db_bench flags that strata has no flag of its own for, so that db_bench command lines (the
//! seed reports', RocksDB's benchmark scripts) run unchanged: each is either mapped onto a strata
//! option (applied through `--options`, before the user's own `--options`) or ignored, and
//! either way leaves a one-line note saying what strata does instead.
//!
//! Owns: the table of these flags and their notes. Must not: accept a name that is not a
//! db_bench flag (a typo must still fail in flags.rs), print anything (bench/mod.rs prints the
//! notes), or hold the flags strata implements (flags.rs's `FLAGS`).

use std::collections::HashSet;

use super::flags::Flags;

/// What strata does with one db_bench-only flag.
enum Treatment {
    /// Nothing; the text says what strata does instead.
    Ignore(&'static str),
    /// Sets this strata option (a name `Options::set` takes) to the flag's value.
    Map(&'static str),
    /// Handled by [`apply`] itself (`--open_files`, `--min_level_to_compress`).
    Special,
}

use Treatment::{Ignore, Map, Special};

/// db_bench flags (RocksDB's, LevelDB's and WiredTiger's db_bench) strata accepts this way.
static COMPAT: &[(&str, Treatment)] = &[
    ("max_bytes_for_level_base", Map("max_bytes_for_level_base")),
    ("max_bytes_for_level_multiplier", Map("level_size_multiplier")),
    ("level0_slowdown_writes_trigger", Map("level0_slowdown_trigger")),
    ("level0_stop_writes_trigger", Map("level0_stop_trigger")),
    ("soft_pending_compaction_bytes_limit", Map("soft_pending_compaction_bytes")),
    ("hard_pending_compaction_bytes_limit", Map("hard_pending_compaction_bytes")),
    ("max_total_wal_size", Map("max_total_wal_size")),
    ("open_files", Special),
    ("min_level_to_compress", Special),
    ("num_levels", Ignore("strata has 7 levels sized by level_size_multiplier (--max_bytes_for_level_multiplier)")),
    ("disable_seek_compaction", Ignore("strata never compacts because of seeks")),
    ("use_lsm", Ignore("a WiredTiger db_bench choice of LSM or B-tree; strata is always an LSM tree")),
    ("memtablerep", Ignore("strata has one memtable: a key tree over an entry list, with a hash index")),
    ("stats_per_interval", Ignore("strata's --stats_interval_seconds prints each interval's throughput")),
    ("stats_interval", Ignore("counts operations in db_bench; strata's interval is --stats_interval_seconds")),
    ("cache_numshardbits", Ignore("strata's block cache chooses its own shards")),
    ("disable_data_sync", Ignore("strata always syncs the tables and MANIFEST it writes; --sync governs the WAL")),
    ("delete_obsolete_files_period_micros", Ignore("strata deletes an obsolete file once no reader holds it")),
    ("max_grandparent_overlap_factor", Ignore("an old RocksDB compaction limit strata has no equivalent of")),
    ("source_compaction_factor", Ignore("an old RocksDB compaction limit strata has no equivalent of")),
    ("disable_auto_compactions", Ignore("strata always compacts in the background; --benchmarks=compact still compacts everything")),
    ("max_background_compactions", Ignore("strata sizes its own background pool")),
    ("max_background_flushes", Ignore("strata sizes its own background pool")),
    ("max_background_jobs", Ignore("strata sizes its own background pool")),
    ("verify_checksum", Ignore("strata always verifies block checksums")),
    (
        "mmap_read",
        Ignore("strata maps SST and blob files while the database is at most mmap_reads_max_db_size (see --options), pread beyond"),
    ),
    ("use_direct_reads", Ignore("strata reads through the page cache (mapped or pread)")),
    ("use_direct_io_for_flush_and_compaction", Ignore("strata writes through the page cache")),
    ("perf_level", Ignore("strata has no perf context")),
];

fn lookup(name: &str) -> Option<&'static Treatment> {
    COMPAT.iter().find(|(n, _)| *n == name).map(|(_, t)| t)
}

/// True when `name` is one of these flags.
pub fn is_compat(name: &str) -> bool {
    lookup(name).is_some()
}

/// Every name in the table, for the unknown-flag message and `--help`.
pub fn names() -> impl Iterator<Item = &'static str> {
    COMPAT.iter().map(|(n, _)| *n)
}

/// Records `--name=value`: a mapped option, or an ignored flag, and its note.
pub fn apply(f: &mut Flags, name: &str, value: &str) -> Result<(), String> {
    let Some(treatment) = lookup(name) else {
        return Err(format!("--{name} is not a db_bench flag strata knows"));
    };
    match (treatment, name) {
        (Map(option), _) => map(f, name, value, option),
        (Special, "open_files") if value.trim() == "-1" => {
            ignore(f, name, value, "-1 (no limit) keeps strata's max_open_files default");
            Ok(())
        }
        (Special, "open_files") => map(f, name, value, "max_open_files"),
        (Special, _) => {
            let level: i64 = value.parse().map_err(|_| format!("{value:?} is not a valid integer"))?;
            f.min_level_to_compress = Some(level);
            f.notes.push(format!(
                "--{name}={value}: mapped to strata's compression_per_level (levels below {value} \
                 uncompressed, the rest --compression_type)"
            ));
            Ok(())
        }
        (Ignore(why), _) => {
            ignore(f, name, value, why);
            Ok(())
        }
    }
}

fn ignore(f: &mut Flags, name: &str, value: &str, why: &str) {
    f.ignored.push(format!("{name}={value}"));
    f.notes.push(format!("--{name}={value}: ignored; {why}"));
}

/// Checks the value the way the engine will read it, so a bad one fails here naming the flag.
fn map(f: &mut Flags, name: &str, value: &str, option: &str) -> Result<(), String> {
    strata::Options::default().set(option, value).map_err(|e| e.to_string())?;
    f.mapped_options.push((option.to_string(), value.to_string()));
    f.notes.push(format!("--{name}={value}: mapped to strata's option {option}={value} (--engine=strata)"));
    Ok(())
}

/// db_bench's `--min_level_to_compress=N`: levels below N uncompressed, the others with the
/// run's compression, as strata's `compression_per_level` list.
pub fn compression_per_level(min_level: i64, compression: &str) -> String {
    let name = match compression {
        "no" | "nocompression" => "none",
        c => c,
    };
    (0..strata::options::NUM_LEVELS as i64)
        .map(|l| if l < min_level { "none" } else { name })
        .collect::<Vec<_>>()
        .join(":")
}

/// The `--options` text the engine applies: the mapped flags first, then the user's own
/// `--options`. The engine refuses an option set twice, so a mapped flag the user's text also
/// sets is left out (the user's wins), and of a flag given twice the last counts.
pub fn options_text(f: &Flags) -> Option<String> {
    let canonical = |k: &str| {
        strata::options::table::lookup(k.trim()).map_or(k.trim().to_string(), |d| d.name().to_string())
    };
    let user = f.user_options.as_deref().unwrap_or("");
    let mut taken: HashSet<String> =
        user.split(';').filter_map(|p| p.split_once('=')).map(|(k, _)| canonical(k)).collect();
    let mut mapped = f.mapped_options.clone();
    if let Some(level) = f.min_level_to_compress.filter(|&l| l >= 0) {
        let per_level = compression_per_level(level, &f.compression_type);
        mapped.push(("compression_per_level".to_string(), per_level));
    }
    let mut parts: Vec<String> = Vec::new();
    for (k, v) in mapped.iter().rev() {
        if taken.insert(canonical(k)) {
            parts.insert(0, format!("{k}={v}"));
        }
    }
    if !user.is_empty() {
        parts.push(user.to_string());
    }
    (!parts.is_empty()).then(|| parts.join(";"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mapped_option_is_one_the_engine_knows() {
        for (name, t) in COMPAT {
            if let Map(option) = t {
                assert!(strata::options::table::lookup(option).is_some(), "--{name}: {option}");
            }
        }
        assert!(strata::options::table::lookup("max_open_files").is_some());
        assert!(strata::options::table::lookup("compression_per_level").is_some());
    }

    #[test]
    fn min_level_to_compress_leaves_the_upper_levels_uncompressed() {
        assert_eq!(compression_per_level(2, "snappy"), "none:none:snappy:snappy:snappy:snappy:snappy");
        assert_eq!(compression_per_level(0, "nocompression"), "none:none:none:none:none:none:none");
        let opts = strata::Options::default()
            .with_option_string(&format!("compression_per_level={}", compression_per_level(2, "lz4")))
            .unwrap();
        assert_eq!(opts.compression_per_level.len(), 7);
    }

    #[test]
    fn the_users_options_win_over_a_mapped_flag_and_the_last_of_a_repeated_flag_counts() {
        let f = super::super::flags::parse(&[
            "--level0_stop_writes_trigger=30",
            "--open_files=500",
            "--open_files=600",
            "--options=level0_stop_trigger=40",
            "--min_level_to_compress=1",
            "--compression_type=zstd",
        ])
        .unwrap();
        let text = f.options.clone().unwrap();
        assert_eq!(
            text,
            "max_open_files=600;compression_per_level=none:zstd:zstd:zstd:zstd:zstd:zstd;level0_stop_trigger=40"
        );
        let opts = strata::Options::default().with_option_string(&text).unwrap();
        assert_eq!((opts.level0_stop_trigger, opts.max_open_files), (40, 600));
        assert_eq!(f.notes.len(), 4, "{:?}", f.notes);
    }

    #[test]
    fn ignored_and_mapped_flags_say_so_and_typos_still_fail() {
        let f = super::super::flags::parse(&["--num_levels=6", "--nodisable_seek_compaction", "--use_lsm"])
            .unwrap();
        assert_eq!(f.notes[0], "--num_levels=6: ignored; strata has 7 levels sized by level_size_multiplier (--max_bytes_for_level_multiplier)");
        assert!(f.notes[1].starts_with("--disable_seek_compaction=0: ignored;"), "{:?}", f.notes);
        assert_eq!(f.ignored, ["num_levels=6", "disable_seek_compaction=0", "use_lsm=1"]);
        assert_eq!(f.options, None);
        let err = super::super::flags::parse(&["--num_level=6"]).unwrap_err().to_string();
        assert!(err.contains("unknown flag --num_level") && err.contains("--num_levels"), "{err}");
        let err = super::super::flags::parse(&["--max_bytes_for_level_base=lots"]).unwrap_err().to_string();
        assert!(err.starts_with("--max_bytes_for_level_base: "), "{err}");
    }
}
