//! Power loss with column families: one writer over four families sharing one WAL, a few
//! synced writes, one family flushed at a time, then the power cut at page granularity
//! (`CrashMode::Pages`). The recovered state across all families must be the state after one
//! prefix of the write order that includes every synced write. Split from `power_loss.rs`,
//! whose multi-threaded oracle it does not need.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use strata::{Db, Options, ReadOptions, WriteOptions};
use strata_testkit::{background_panics, watch_background_panics, CrashMode, MemFs, Rng};

fn dir() -> PathBuf {
    PathBuf::from("/db")
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|s| s.trim().parse().ok())
}

/// Column families over one shared WAL, power lost at page granularity. One thread writes to
/// four families (default, `a`, `b`, `c`) in an order fixed by the seed, a few writes with
/// `sync=true`, and now and then flushes ONE family, so each WAL holds writes of families
/// flushed at different times. Then the power is cut (`CrashMode::Pages`) and the image
/// reopened. Write `i` has a value unique to it, so the recovered state names the writes that
/// survived; it must equal the state after a prefix `p` of the write order, across all
/// families, with `p` at least one past the last synced write.
///
/// This is what "a flush of one family syncs the closed WALs before its MANIFEST edit"
/// (`idle_family_edits`) protects: without that sync, a flushed family's table holds writes
/// newer than other families' writes still only in an unsynced closed WAL, and a power loss
/// keeps the first and loses the second, a state no prefix explains.
#[test]
fn power_loss_with_column_families_recovers_one_prefix_across_families() {
    watch_background_panics();
    let seeds = env_u64("STRATA_POWER_LOSS_SEEDS").unwrap_or(200);
    let mut failures = Vec::new();
    let mut flushes = 0;
    for seed in 0..seeds {
        match families_seed(seed) {
            Ok(n) => flushes += n,
            Err(e) => failures.push(format!("seed {seed}: {e}")),
        }
    }
    assert_eq!(background_panics(), 0, "a strata background thread panicked (see the output above)");
    println!(
        "power loss with families: {seeds} seeds, {flushes} single-family flushes, {} failures",
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

const FAMILIES: [&str; 4] = ["default", "a", "b", "c"];

/// One write of the families test: `None` value = delete.
struct CfWrite {
    family: usize,
    key: Vec<u8>,
    value: Option<Vec<u8>>,
    sync: bool,
}

fn cf_plan(rng: &mut Rng) -> Vec<CfWrite> {
    let n = 200 + rng.up_to(400);
    (0..n)
        .map(|i| {
            let family = rng.below(FAMILIES.len() as u64) as usize;
            let key = format!("k{}", rng.below(8)).into_bytes();
            let value = (rng.below(100) >= 15).then(|| {
                let len = 20 + rng.up_to(1500);
                format!("w{i}.").into_bytes().into_iter().cycle().take(len).collect()
            });
            CfWrite { family, key, value, sync: rng.percent(3) }
        })
        .collect()
}

fn cf_open(fs: &MemFs, write_buffer_size: usize) -> strata::Result<(Db, Vec<strata::ColumnFamily>)> {
    let opts =
        || Options { fs: Arc::new(fs.clone()), write_buffer_size, min_blob_size: 600, ..Options::default() };
    let db = Db::open_cf(dir(), opts(), FAMILIES[1..].iter().map(|n| (*n, opts())))?;
    let handles = FAMILIES.iter().map(|n| db.cf(n).expect("family just opened")).collect();
    Ok((db, handles))
}

/// Runs one seed; returns the number of single-family flushes, or what is wrong.
fn families_seed(seed: u64) -> Result<usize, String> {
    let mut rng = Rng::new(seed ^ 0xcf);
    let writes = cf_plan(&mut rng);
    let mem = MemFs::new();
    let (db, cfs) = cf_open(&mem, 64 << 10).map_err(|e| format!("first open: {e}"))?;
    let mut flushes = 0;
    for w in &writes {
        let opts = WriteOptions { sync: w.sync, disable_wal: false };
        let cf = &cfs[w.family];
        match &w.value {
            Some(v) => db.put_cf_opt(cf, &opts, &w.key, v),
            None => db.delete_cf_opt(cf, &opts, &w.key),
        }
        .map_err(|e| format!("write: {e}"))?;
        if rng.percent(4) {
            db.flush_cf(&cfs[rng.below(FAMILIES.len() as u64) as usize])
                .map_err(|e| format!("flush: {e}"))?;
            flushes += 1;
        }
    }
    let image = mem.crash_clone(CrashMode::Pages(seed));
    drop(db);
    let (db, cfs) = cf_open(&image, 64 << 10).map_err(|e| format!("reopen after the power loss: {e}"))?;
    let mut recovered = BTreeMap::new();
    for (f, cf) in cfs.iter().enumerate() {
        let mut it = db.cursor_cf(cf, &ReadOptions::new()).map_err(|e| e.to_string())?;
        it.seek_to_first();
        while it.valid() {
            recovered.insert((f, it.key().to_vec()), it.value().to_vec());
            it.next();
        }
        it.status().map_err(|e| e.to_string())?;
    }
    let floor = writes.iter().rposition(|w| w.sync).map_or(0, |i| i + 1);
    check_families_prefix(&writes, &recovered, floor)?;
    Ok(flushes)
}

/// The recovered state must be the state after some prefix `p >= floor` of `writes`.
fn check_families_prefix(
    writes: &[CfWrite],
    recovered: &BTreeMap<(usize, Vec<u8>), Vec<u8>>,
    floor: usize,
) -> Result<(), String> {
    let mut state: BTreeMap<(usize, Vec<u8>), Vec<u8>> = BTreeMap::new();
    let mut matches = Vec::new();
    for p in 0..=writes.len() {
        if &state == recovered {
            matches.push(p);
        }
        if let Some(w) = writes.get(p) {
            match &w.value {
                Some(v) => state.insert((w.family, w.key.clone()), v.clone()),
                None => state.remove(&(w.family, w.key.clone())),
            };
        }
    }
    if matches.iter().any(|&p| p >= floor) {
        return Ok(());
    }
    // Name the newest surviving write per family, to show which family ran ahead.
    let newest: Vec<String> = (0..FAMILIES.len())
        .map(|f| {
            let i = writes
                .iter()
                .enumerate()
                .rev()
                .find(|(_, w)| {
                    w.family == f
                        && w.value.as_ref().is_some_and(|v| recovered.get(&(f, w.key.clone())) == Some(v))
                })
                .map(|(i, _)| i.to_string());
            format!("{}: {}", FAMILIES[f], i.unwrap_or_else(|| "-".into()))
        })
        .collect();
    Err(match matches.last() {
        Some(p) => format!("acknowledged synced write lost: state is prefix {p}, floor {floor} of {}", writes.len()),
        None => format!(
            "recovered state is no prefix of the write order (floor {floor} of {}; newest surviving write per family: {})",
            writes.len(),
            newest.join(", ")
        ),
    })
}

#[test]
fn the_families_prefix_check_rejects_a_family_ahead_of_a_lost_write() {
    let put = |family, key: &[u8], value: &[u8], sync| CfWrite {
        family,
        key: key.to_vec(),
        value: Some(value.to_vec()),
        sync,
    };
    let writes = [put(0, b"x", b"1", false), put(1, b"y", b"2", true), put(2, b"z", b"3", false)];
    let state = |items: &[(usize, &[u8], &[u8])]| -> BTreeMap<(usize, Vec<u8>), Vec<u8>> {
        items.iter().map(|&(f, k, v)| ((f, k.to_vec()), v.to_vec())).collect()
    };
    assert!(check_families_prefix(&writes, &state(&[(0, b"x", b"1"), (1, b"y", b"2")]), 2).is_ok());
    let ahead = state(&[(0, b"x", b"1"), (2, b"z", b"3")]);
    assert!(
        check_families_prefix(&writes, &ahead, 0).unwrap_err().contains("no prefix"),
        "write 1 lost, 2 kept"
    );
    let lost_sync = state(&[(0, b"x", b"1")]);
    assert!(check_families_prefix(&writes, &lost_sync, 2).unwrap_err().contains("synced write lost"));
}
