//! The options of each `crash-test` cycle (db_crashtest.py's per-run parameter draw): write
//! buffer size, compression of tables and blobs, the blob threshold, mmap reads, the level-0
//! triggers, the MANIFEST roll size, background jobs, the share of synced writes, whether the
//! WAL is off, and when the child is killed. Each cycle's draw depends only on the seed and the
//! cycle number, so `--seed S --first-cycle C --cycles 1` draws cycle C's options again.
//!
//! This module only draws; it must not spawn processes or touch the database.

use std::time::Duration;

use crate::crash_loop::ChildSpec;
use crate::worker::WriteMode;

/// One cycle's draw.
pub struct Drawn {
    /// The child's flags with the drawn options in place of the base ones.
    pub spec: ChildSpec,
    /// When the parent kills the child.
    pub delay: Duration,
    /// The drawn values, printed so a failing cycle can be read and replayed.
    pub describe: String,
}

const COMPRESSIONS: [&str; 7] =
    ["none", "snappy", "lz4", "zstd", "none:snappy", "none:none:lz4", "none:zstd"];
const BLOB_COMPRESSIONS: [&str; 4] = ["none", "snappy", "lz4", "zstd"];
/// 0 keeps every value in the tables; 8 moves every value (the model's are 8 or 600 bytes) to blob
/// files; 512 (the default) only the long ones; 4096 none, with separation on.
const MIN_BLOB_SIZES: [usize; 4] = [0, 8, 512, 4096];
const WRITE_BUFFER_SIZES: [usize; 4] = [64 << 10, 128 << 10, 256 << 10, 1 << 20];
/// 1 KiB rolls the MANIFEST every few edits, so rolls and CURRENT renames happen in every cycle.
const MANIFEST_SIZES: [u64; 3] = [1 << 10, 64 << 10, 64 << 20];
const SYNC_PERCENTS: [u32; 6] = [0, 0, 1, 10, 50, 100];

/// Draws cycle `cycle`'s options on top of `base`. Options the user gave with `--options` win:
/// a drawn option they name is left out.
pub fn draw(base: &ChildSpec, seed: u64, cycle: u32, min_ms: u64, max_ms: u64) -> Drawn {
    let mut rng =
        fastrand::Rng::with_seed(seed ^ u64::from(cycle).wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let pick = |rng: &mut fastrand::Rng, n: usize| rng.usize(0..n);
    let trigger = rng.usize(1..=4);
    let slowdown = trigger + rng.usize(2..=8);
    let drawn: Vec<(&str, String)> = vec![
        ("compression_per_level", COMPRESSIONS[pick(&mut rng, COMPRESSIONS.len())].to_string()),
        ("blob_compression", BLOB_COMPRESSIONS[pick(&mut rng, BLOB_COMPRESSIONS.len())].to_string()),
        ("min_blob_size", MIN_BLOB_SIZES[pick(&mut rng, MIN_BLOB_SIZES.len())].to_string()),
        ("use_mmap_reads", rng.bool().to_string()),
        ("level0_compaction_trigger", trigger.to_string()),
        ("level0_slowdown_trigger", slowdown.to_string()),
        ("level0_stop_trigger", (slowdown + rng.usize(0..=8)).to_string()),
        ("max_manifest_file_size", MANIFEST_SIZES[pick(&mut rng, MANIFEST_SIZES.len())].to_string()),
        ("max_background_jobs", rng.usize(1..=3).to_string()),
    ];
    let disable_wal = rng.u32(0..5) == 0;
    let write_mode = WriteMode {
        sync_percent: if disable_wal { 0 } else { SYNC_PERCENTS[pick(&mut rng, 6)] },
        disable_wal,
        ..base.write_mode
    };
    let write_buffer_size = WRITE_BUFFER_SIZES[pick(&mut rng, WRITE_BUFFER_SIZES.len())];
    let delay = Duration::from_millis(rng.u64(min_ms..=max_ms.max(min_ms)));
    let user = base.options.clone().unwrap_or_default();
    let user_keys: Vec<&str> =
        user.split(';').filter_map(|p| p.split_once('=')).map(|(k, _)| k.trim()).collect();
    let mut options: Vec<String> =
        drawn.into_iter().filter(|(k, _)| !user_keys.contains(k)).map(|(k, v)| format!("{k}={v}")).collect();
    if !user.trim().is_empty() {
        options.push(user.trim().to_string());
    }
    let options = options.join(";");
    let describe = format!(
        "write_buffer_size={write_buffer_size} sync={write_mode} kill_after_ms={} options=\"{options}\"",
        delay.as_millis()
    );
    let spec = ChildSpec { write_buffer_size, write_mode, options: Some(options), ..base.clone() };
    Drawn { spec, delay, describe }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(options: Option<&str>) -> ChildSpec {
        ChildSpec {
            db: "/d".into(),
            expected: "/e".into(),
            threads: 4,
            keys: 100,
            write_buffer_size: 256 << 10,
            write_mode: WriteMode { sync_percent: 100, disable_wal: false, cf_drops_per_10k: 5 },
            checkpoints_per_10k: 1,
            oracle_fsync: false,
            options: options.map(String::from),
            families: 1,
        }
    }

    #[test]
    fn a_cycle_draws_the_same_options_again_and_they_are_valid() {
        let b = base(None);
        let mut seen_unlogged = false;
        for cycle in 0..200 {
            let d = draw(&b, 42, cycle, 100, 900);
            assert_eq!(d.describe, draw(&b, 42, cycle, 100, 900).describe, "cycle {cycle} replays");
            let opts = crate::run::db_options(d.spec.write_buffer_size, d.spec.options.as_deref());
            assert!(opts.is_ok(), "cycle {cycle}: {}", d.describe);
            assert!((100..=900).contains(&(d.delay.as_millis() as u64)));
            seen_unlogged |= d.spec.write_mode.disable_wal;
            assert!(!d.spec.write_mode.disable_wal || d.spec.write_mode.sync_percent == 0);
        }
        assert!(seen_unlogged, "some cycles run without the WAL");
        assert_ne!(draw(&b, 42, 0, 100, 900).describe, draw(&b, 43, 0, 100, 900).describe);
    }

    #[test]
    fn the_users_options_win_over_drawn_ones() {
        let d = draw(&base(Some("min_blob_size=100; bloom_bits_per_key=5")), 7, 3, 100, 900);
        let text = d.spec.options.unwrap();
        assert_eq!(text.matches("min_blob_size").count(), 1, "{text}");
        assert!(text.ends_with("min_blob_size=100; bloom_bits_per_key=5"), "{text}");
    }
}
