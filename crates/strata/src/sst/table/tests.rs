//! Tests for the table reader: round trips under every compression, point reads across block
//! boundaries and filters, damaged and foreign files, mapped versus copied reads, read-ahead
//! hints, and point reads and iterator moves against a sorted model.

use super::*;
use crate::fs::testfs::{MappedMemRandom, MemRandom, MemWritable};
use crate::fs::RecordsHints;
use crate::key::{make_internal_key, seek_key, ValueKind};
use crate::sst::builder::{TableBuilder, TableBuilderOptions, TableSummary};
use crate::util::compress::Compression;
use proptest::prelude::*;

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn build(entries: &Entries, opts: TableBuilderOptions) -> (Vec<u8>, TableSummary) {
    let file = MemWritable::default();
    let mut b = TableBuilder::new(Box::new(file.clone()), opts);
    for (k, v) in entries {
        b.add(k, v).unwrap();
    }
    let summary = b.finish().unwrap();
    let bytes = file.0.lock().clone();
    assert_eq!(summary.file_size, bytes.len() as u64);
    (bytes, summary)
}

fn open(bytes: Vec<u8>, cache: Option<Arc<BlockCache>>) -> Result<Arc<Table>> {
    Table::open(Arc::new(MemRandom(bytes)), 7, cache).map(Arc::new)
}

fn open_mapped(bytes: Vec<u8>) -> Result<Arc<Table>> {
    Table::open(Arc::new(MappedMemRandom(MemRandom(bytes))), 7, None).map(Arc::new)
}

#[test]
fn a_long_scan_of_a_mapped_table_asks_for_read_ahead_and_point_reads_do_not() {
    let entries = sample(40_000);
    let (bytes, _) = build(&entries, TableBuilderOptions::default());
    let file = Arc::new(RecordsHints::new(MappedMemRandom(MemRandom(bytes))));
    let t = Arc::new(Table::open(Arc::clone(&file) as Arc<dyn RandomAccessFile>, 7, None).unwrap());
    // Opening reads the metadata blocks at the end after one hint for all of them.
    let at_open = file.hints();
    file.clear();
    assert_eq!(at_open.len(), 1, "{at_open:?}");
    assert_eq!(at_open[0].0, t.data_end);
    assert_eq!(at_open[0].0 + at_open[0].1, t.file_size - crate::sst::format::FOOTER_LEN as u64);
    for i in (0..40_000u32).step_by(7) {
        let uk = format!("k{:08}", i * 2);
        t.get(&seek_key(uk.as_bytes(), u64::MAX >> 8), true, &mut |_, _| false).unwrap();
    }
    assert!(file.hints().is_empty(), "point reads hinted {:?}", file.hints());
    let mut it = t.iter(false);
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    assert_eq!(n, entries.len());
    let hints = file.hints();
    assert!(!hints.is_empty(), "a scan of {} bytes gave no hint", t.file_size);
    assert!(hints.iter().all(|&(o, l)| o + l <= t.data_end), "{hints:?} past {}", t.data_end);
    // A compaction's iterator hints from its first block.
    file.clear();
    let mut it = t.iter_whole_file();
    it.seek_to_first();
    assert_eq!(file.hints().first().map(|h| h.0), Some(0));
}

#[test]
fn an_unmapped_table_is_read_forward_only_by_long_scans_and_compactions() {
    let entries = sample(40_000);
    let (bytes, _) = build(&entries, TableBuilderOptions::default());
    let file = Arc::new(RecordsHints::new(MemRandom(bytes)));
    let t = Arc::new(Table::open(Arc::clone(&file) as Arc<dyn RandomAccessFile>, 7, None).unwrap());
    file.clear();
    for i in (0..40_000u32).step_by(7) {
        let uk = format!("k{:08}", i * 2);
        t.get(&seek_key(uk.as_bytes(), u64::MAX >> 8), false, &mut |_, _| false).unwrap();
    }
    assert_eq!(file.reads().1, 0, "point reads");
    // A short scan (seek + 20 next) stays random; a long one turns forward after its first run.
    let mut it = t.iter(false);
    it.seek(&seek_key(b"k00020000", u64::MAX >> 8));
    for _ in 0..20 {
        it.next();
    }
    assert_eq!(file.reads().1, 0, "a short scan");
    file.clear();
    it.seek_to_first();
    while it.valid() {
        it.next();
    }
    let (random, forward) = file.reads();
    assert!(forward > 0 && forward > 4 * random, "a long scan: {random} random, {forward} forward");
    file.clear();
    let mut it = t.iter_whole_file();
    it.seek_to_first();
    while it.valid() {
        it.next();
    }
    assert_eq!(file.reads().0, 0, "a compaction's input");
}

/// Keys `k00000000`, `k00000002`, ... with a few versions each; odd numbers are absent.
fn sample(n: u32) -> Entries {
    let mut out = Vec::new();
    for i in 0..n {
        let uk = format!("k{:08}", i * 2);
        let versions = 1 + (i % 3) as u64;
        for s in (0..versions).rev() {
            let kind = if (i + s as u32).is_multiple_of(5) { ValueKind::Delete } else { ValueKind::Put };
            let seq = u64::from(i) * 4 + s + 1;
            let v = if kind == ValueKind::Delete {
                Vec::new()
            } else {
                format!("value-{i}-{s}").repeat(3).into_bytes()
            };
            out.push((make_internal_key(uk.as_bytes(), seq, kind), v));
        }
    }
    out
}

fn forward(it: &mut TableIterator) -> Entries {
    let mut got = Vec::new();
    it.seek_to_first();
    while it.valid() {
        got.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    got
}

fn backward(it: &mut TableIterator) -> Entries {
    let mut got = Vec::new();
    it.seek_to_last();
    while it.valid() {
        got.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    got.reverse();
    got
}

fn get_all(t: &Table, lookup: &[u8], limit: usize) -> Result<Entries> {
    let mut got = Vec::new();
    t.get(lookup, true, &mut |k, v| {
        got.push((k.to_vec(), v.to_vec()));
        got.len() < limit
    })?;
    Ok(got)
}

fn compressions() -> Vec<Compression> {
    let mut c = vec![Compression::None, Compression::Snappy, Compression::Lz4];
    if cfg!(feature = "zstd") {
        c.push(Compression::Zstd);
    }
    c
}

#[test]
fn round_trip_with_every_compression() {
    let entries = sample(6000);
    assert!(entries.len() > 10_000);
    for compression in compressions() {
        let opts = TableBuilderOptions { compression, ..Default::default() };
        let (bytes, summary) = build(&entries, opts);
        assert_eq!(summary.num_entries, entries.len() as u64);
        assert_eq!(summary.smallest, entries[0].0);
        assert_eq!(summary.largest, entries[entries.len() - 1].0);
        let cache = Arc::new(BlockCache::new(1 << 20));
        let t = open(bytes, Some(cache.clone())).unwrap();
        let p = t.properties();
        assert_eq!((p.num_entries, p.num_deletions), (summary.num_entries, summary.num_deletions));
        assert_eq!((p.smallest_seq, p.largest_seq), (summary.smallest_seq, summary.largest_seq));
        assert_eq!(p.compression, compression);
        assert!(p.num_data_blocks > 10);
        t.verify_checksums().unwrap();
        let mut it = t.iter(true);
        assert_eq!(forward(&mut it), entries, "{compression:?}");
        assert_eq!(backward(&mut it), entries, "{compression:?}");
        assert!(it.status().is_ok());
        assert!(cache.usage() > 0, "{compression:?}: nothing cached");
        assert!(cache.usage() < 1 << 20);
        check_point_reads(&t, &mut it, &entries);
    }
}

fn check_point_reads(t: &Arc<Table>, it: &mut TableIterator, entries: &Entries) {
    for (i, (k, v)) in entries.iter().enumerate().step_by(7) {
        it.seek(k);
        assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
        it.seek_for_prev(k);
        assert_eq!(it.key(), &k[..]);
        let got = get_all(t, k, 2).unwrap();
        assert_eq!(got[..], entries[i..(i + 2).min(entries.len())]);
        let uk = key::user_key(k);
        assert!(t.may_contain(uk));
        // The newest visible version via a seek key.
        let first = entries.iter().position(|(e, _)| key::user_key(e) == uk).unwrap();
        assert_eq!(get_all(t, &seek_key(uk, key::MAX_SEQ), 1).unwrap()[0], entries[first]);
    }
    let absent = seek_key(b"k00000003", key::MAX_SEQ);
    let got = get_all(t, &absent, 1).unwrap();
    assert!(got.is_empty() || key::user_key(&got[0].0) == b"k00000004");
    it.seek(&seek_key(b"zzz", key::MAX_SEQ));
    assert!(!it.valid());
    it.seek_for_prev(&seek_key(b"zzz", key::MAX_SEQ));
    assert_eq!(it.key(), &entries[entries.len() - 1].0[..]);
    it.seek_for_prev(&seek_key(b"a", key::MAX_SEQ));
    assert!(!it.valid() && it.status().is_ok());
    let mut last = 0;
    for (k, _) in entries.iter().step_by(101) {
        let off = t.approximate_offset_of(k);
        assert!(off >= last && off < t.file_size());
        last = off;
    }
}

#[test]
fn get_crosses_block_boundaries_and_skips_filtered_keys() {
    let uk = b"many-versions";
    let entries: Entries = (1..=500u64)
        .rev()
        .map(|s| (make_internal_key(uk, s, ValueKind::Put), s.to_le_bytes().to_vec()))
        .collect();
    let opts = TableBuilderOptions { block_size: 256, ..Default::default() };
    let t = open(build(&entries, opts).0, None).unwrap();
    assert!(t.properties().num_data_blocks > 5);
    assert_eq!(get_all(&t, &seek_key(uk, 300), usize::MAX).unwrap(), entries[200..]);
    let mut calls = 0;
    t.get(&seek_key(b"absent", 9), true, &mut |_, _| {
        calls += 1;
        true
    })
    .unwrap();
    assert_eq!(calls, 0, "filter should rule out the key (or it sorts before all entries)");
    assert!(!t.may_contain(b"absent"));
}

#[test]
fn tables_without_filter_or_entries() {
    let entries = sample(50);
    let opts = TableBuilderOptions { bloom_bits_per_key: 0, ..Default::default() };
    let t = open(build(&entries, opts).0, None).unwrap();
    assert!(t.may_contain(b"anything"));
    assert_eq!(forward(&mut t.iter(false)), entries);
    let empty = TableBuilder::new(Box::new(MemWritable::default()), TableBuilderOptions::default());
    assert!(matches!(empty.finish(), Err(Error::InvalidArgument(_))));
}

#[test]
fn short_or_foreign_files_are_rejected() {
    let (bytes, _) = build(&sample(10), TableBuilderOptions::default());
    assert!(open(bytes[..10].to_vec(), None).unwrap_err().is_corruption());
    assert!(open(bytes[..bytes.len() - 1].to_vec(), None).unwrap_err().is_corruption());
    assert!(open(vec![0u8; 200], None).unwrap_err().is_corruption());
}

/// Flips each byte of the data-block region and checks every read either fails with
/// `Corruption` or returns exactly the right data.
#[test]
fn flipped_data_bytes_are_detected_never_misread() {
    let entries = sample(60);
    for compression in [Compression::None, Compression::Snappy] {
        let opts = TableBuilderOptions { block_size: 512, compression, ..Default::default() };
        let (bytes, _) = build(&entries, opts);
        let data_end = open(bytes.clone(), None).unwrap().data_end as usize;
        for pos in 0..data_end {
            let mut bad = bytes.clone();
            bad[pos] ^= 0x41;
            let t = open(bad.clone(), None).expect("meta blocks are intact");
            check_reads_after_damage(&t, &entries, pos);
            let t = open_mapped(bad).expect("meta blocks are intact");
            check_reads_after_damage(&t, &entries, pos);
        }
    }
}

fn check_reads_after_damage(t: &Arc<Table>, entries: &Entries, pos: usize) {
    assert!(t.verify_checksums().unwrap_err().is_corruption(), "byte {pos} not detected");
    let mut it = t.iter(false);
    let got = forward(&mut it);
    assert_eq!(got[..], entries[..got.len()], "byte {pos}");
    assert!(got.len() < entries.len() && it.status().unwrap_err().is_corruption());
    let got = backward(&mut it);
    assert_eq!(got[..], entries[entries.len() - got.len()..], "byte {pos}");
    assert!(it.status().unwrap_err().is_corruption());
    for (i, (k, _)) in entries.iter().enumerate() {
        match get_all(t, k, 1) {
            Ok(got) => assert_eq!(got[..], entries[i..=i], "byte {pos}"),
            Err(e) => assert!(e.is_corruption(), "byte {pos}: {e}"),
        }
    }
}

#[test]
fn mapped_tables_read_the_same_as_copied_ones() {
    let entries = sample(3000);
    for compression in [Compression::None, Compression::Snappy] {
        let opts = TableBuilderOptions { block_size: 1024, compression, ..Default::default() };
        let (bytes, _) = build(&entries, opts);
        let t = open_mapped(bytes).unwrap();
        for _ in 0..2 {
            // The second pass reads blocks whose checksums were already verified.
            let mut it = t.iter(false);
            assert_eq!(forward(&mut it), entries);
            assert_eq!(backward(&mut it), entries);
            for (i, (k, _)) in entries.iter().enumerate().step_by(7) {
                assert_eq!(get_all(&t, k, 1).unwrap()[..], entries[i..=i]);
            }
        }
    }
}

/// A cursor over the sorted model, mirroring `InternalIterator` semantics.
fn model_seek(model: &Entries, target: &[u8]) -> Option<usize> {
    let i = model.partition_point(|(k, _)| key::compare(k, target) == std::cmp::Ordering::Less);
    (i < model.len()).then_some(i)
}

fn model_seek_for_prev(model: &Entries, target: &[u8]) -> Option<usize> {
    let i = model.partition_point(|(k, _)| key::compare(k, target) != std::cmp::Ordering::Greater);
    i.checked_sub(1)
}

#[derive(Debug, Clone)]
enum Op {
    Seek(Vec<u8>, u64),
    SeekForPrev(Vec<u8>, u64),
    First,
    Last,
    Next,
    Prev,
}

fn op() -> impl Strategy<Value = Op> {
    let uk = || proptest::collection::vec(0u8..4, 0..4);
    prop_oneof![
        (uk(), 0u64..20).prop_map(|(k, s)| Op::Seek(k, s)),
        (uk(), 0u64..20).prop_map(|(k, s)| Op::SeekForPrev(k, s)),
        Just(Op::First),
        Just(Op::Last),
        Just(Op::Next),
        Just(Op::Next),
        Just(Op::Prev),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Point lookups, whether the prefix array decides the block alone (lookups whose first
    /// 8 bytes no index entry shares) or the index block is searched, return the model's
    /// entries from the first one `>= lookup` on.
    #[test]
    fn get_matches_sorted_model(
        keys in proptest::collection::btree_set((proptest::collection::vec(prop_oneof![Just(0u8), Just(7), Just(255)], 0..11), 0u64..4), 1..300),
        lookups in proptest::collection::vec((proptest::collection::vec(prop_oneof![Just(0u8), Just(7), Just(9), Just(255)], 0..11), 0u64..5), 1..40),
        block_size in 64usize..600,
        mapped in any::<bool>(),
    ) {
        let mut model: Entries = keys
            .iter()
            .map(|(uk, s)| (make_internal_key(uk, *s, ValueKind::Put), format!("{uk:?}@{s}").into_bytes()))
            .collect();
        model.sort_by(|a, b| key::compare(&a.0, &b.0));
        let opts = TableBuilderOptions { block_size, ..Default::default() };
        let bytes = build(&model, opts).0;
        let t = if mapped { open_mapped(bytes) } else { open(bytes, None) }.unwrap();
        prop_assert!(t.index_handles.is_some());
        for (uk, s) in lookups {
            let tg = seek_key(&uk, s);
            let from = model_seek(&model, &tg).unwrap_or(model.len());
            let expected = &model[from..(from + 3).min(model.len())];
            // A filtered-out key may return nothing; anything returned must be the model's.
            let got = get_all(&t, &tg, 3).unwrap();
            if t.may_contain(&uk) {
                prop_assert_eq!(&got[..], expected);
            } else {
                prop_assert!(got.is_empty());
            }
        }
    }

    #[test]
    fn iterator_matches_sorted_model(
        keys in proptest::collection::btree_set((proptest::collection::vec(0u8..4, 0..4), 0u64..20), 1..300),
        ops in proptest::collection::vec(op(), 1..60),
        block_size in 64usize..600,
        restart_interval in 1usize..8,
    ) {
        let mut model: Entries = keys
            .iter()
            .map(|(uk, s)| (make_internal_key(uk, *s, ValueKind::Put), format!("{uk:?}@{s}").into_bytes()))
            .collect();
        model.sort_by(|a, b| key::compare(&a.0, &b.0));
        let opts = TableBuilderOptions { block_size, restart_interval, compression: Compression::Lz4, ..Default::default() };
        let t = open(build(&model, opts).0, Some(Arc::new(BlockCache::new(1 << 16)))).unwrap();
        let mut it = t.iter(true);
        let mut pos: Option<usize> = None;
        for op in ops {
            pos = match op {
                Op::Seek(k, s) => { let tg = seek_key(&k, s); it.seek(&tg); model_seek(&model, &tg) }
                Op::SeekForPrev(k, s) => { let tg = seek_key(&k, s); it.seek_for_prev(&tg); model_seek_for_prev(&model, &tg) }
                Op::First => { it.seek_to_first(); Some(0) }
                Op::Last => { it.seek_to_last(); Some(model.len() - 1) }
                Op::Next => match pos { Some(p) => { it.next(); (p + 1 < model.len()).then_some(p + 1) } None => None },
                Op::Prev => match pos { Some(p) => { it.prev(); p.checked_sub(1) } None => None },
            };
            prop_assert_eq!(it.valid(), pos.is_some());
            if let Some(p) = pos {
                prop_assert_eq!(it.key(), &model[p].0[..]);
                prop_assert_eq!(it.value(), &model[p].1[..]);
            }
            prop_assert!(it.status().is_ok());
        }
    }
}
