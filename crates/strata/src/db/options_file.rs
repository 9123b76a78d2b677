//! The `OPTIONS-NNNNNN` file: the options a database was last opened with, written at every open
//! in RocksDB's INI layout so users and tools can see how a database is configured. Older OPTIONS
//! files are removed once the new one is durable. Reading options back is not done here.

use std::fmt::Write as _;

use crate::options::Options;

/// Version of the OPTIONS file layout.
pub const OPTIONS_FILE_VERSION: u32 = 1;

/// Renders `opts` as an INI document.
pub fn render(opts: &Options) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# strata options file: the options this database was last opened with.");
    let _ = writeln!(
        s,
        "[Version]\n  strata_version={}\n  options_file_version={OPTIONS_FILE_VERSION}\n",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(s, "[DBOptions]");
    let db: [(&str, String); 8] = [
        ("create_if_missing", opts.create_if_missing.to_string()),
        ("error_if_exists", opts.error_if_exists.to_string()),
        ("max_background_jobs", opts.max_background_jobs.to_string()),
        ("max_open_files", opts.max_open_files.to_string()),
        ("skip_corrupted_wal_records", opts.skip_corrupted_wal_records.to_string()),
        ("soft_pending_compaction_bytes", opts.soft_pending_compaction_bytes.to_string()),
        ("hard_pending_compaction_bytes", opts.hard_pending_compaction_bytes.to_string()),
        ("cache_size", opts.cache_size.to_string()),
    ];
    for (k, v) in db {
        let _ = writeln!(s, "  {k}={v}");
    }
    let _ = writeln!(s, "\n[CFOptions \"default\"]");
    let compression: Vec<&str> = opts.compression_per_level.iter().map(|c| c.name()).collect();
    let cf: [(&str, String); 16] = [
        ("write_buffer_size", opts.write_buffer_size.to_string()),
        ("max_write_buffer_number", opts.max_write_buffer_number.to_string()),
        ("compression_per_level", compression.join(":")),
        ("blob_compression", opts.blob_compression.name().to_string()),
        ("min_blob_size", opts.min_blob_size.to_string()),
        ("blob_gc_age_cutoff", opts.blob_gc_age_cutoff.to_string()),
        ("target_file_size", opts.target_file_size.to_string()),
        ("max_bytes_for_level_base", opts.max_bytes_for_level_base.to_string()),
        ("level_size_multiplier", opts.level_size_multiplier.to_string()),
        ("level0_compaction_trigger", opts.level0_compaction_trigger.to_string()),
        ("level0_slowdown_trigger", opts.level0_slowdown_trigger.to_string()),
        ("level0_stop_trigger", opts.level0_stop_trigger.to_string()),
        ("block_size", opts.block_size.to_string()),
        ("block_restart_interval", opts.block_restart_interval.to_string()),
        ("bloom_bits_per_key", opts.bloom_bits_per_key.to_string()),
        (
            "merge_operator",
            opts.merge_operator.as_ref().map_or("nullptr".to_string(), |m| m.name().to_string()),
        ),
    ];
    for (k, v) in cf {
        let _ = writeln!(s, "  {k}={v}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_section_and_the_merge_operator() {
        let opts = Options { merge_operator: crate::merge::builtin("uint64add"), ..Options::default() };
        let text = render(&opts);
        for needle in [
            "[Version]",
            "[DBOptions]",
            "[CFOptions \"default\"]",
            "merge_operator=uint64add",
            "min_blob_size=256",
        ] {
            assert!(text.contains(needle), "{needle} missing from\n{text}");
        }
    }
}
