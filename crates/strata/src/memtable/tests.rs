//! Tests for the memtable: ordering, point-lookup walks, iterator moves against a sorted model,
//! concurrent readers during writes, and extreme entry sizes.

use std::cmp::Ordering as CmpOrdering;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use proptest::prelude::*;

use super::list::{INLINE_VALUE_MAX, VALUE_PREFETCH_MAX};
use super::*;
use crate::key::{make_internal_key, parse, seek_key, MAX_SEQ};

fn collect(it: &mut MemTableIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    out
}

fn parsed(ikey: &[u8]) -> (Vec<u8>, SeqNo, ValueKind) {
    let p = parse(ikey).expect("valid internal key");
    (p.user_key.to_vec(), p.seq, p.kind)
}

#[test]
fn versions_of_a_key_come_out_newest_first() {
    let mem = Arc::new(MemTable::new());
    mem.add(1, ValueKind::Put, b"b", b"b1");
    mem.add(2, ValueKind::Put, b"a", b"a2");
    mem.add(5, ValueKind::Delete, b"a", b"");
    mem.add(3, ValueKind::Merge, b"a", b"a3");
    mem.add(4, ValueKind::Put, b"", b"empty key");
    let got: Vec<_> = collect(&mut mem.iter()).iter().map(|(k, v)| (parsed(k), v.clone())).collect();
    let want = vec![
        ((b"".to_vec(), 4, ValueKind::Put), b"empty key".to_vec()),
        ((b"a".to_vec(), 5, ValueKind::Delete), b"".to_vec()),
        ((b"a".to_vec(), 3, ValueKind::Merge), b"a3".to_vec()),
        ((b"a".to_vec(), 2, ValueKind::Put), b"a2".to_vec()),
        ((b"b".to_vec(), 1, ValueKind::Put), b"b1".to_vec()),
    ];
    assert_eq!(got, want);
}

#[test]
fn get_on_an_empty_memtable_visits_nothing_and_finds_the_first_entry_once_added() {
    let mem = MemTable::new();
    let mut calls = 0;
    mem.get(&seek_key(b"k", MAX_SEQ), &mut |_, _| {
        calls += 1;
        true
    });
    assert_eq!(calls, 0);
    mem.add(1, ValueKind::Put, b"k", b"v");
    let mut seen = Vec::new();
    mem.get(&seek_key(b"k", MAX_SEQ), &mut |ikey, value| {
        seen.push((parsed(ikey), value.to_vec()));
        false
    });
    assert_eq!(seen, vec![((b"k".to_vec(), 1, ValueKind::Put), b"v".to_vec())]);
}

#[test]
fn get_walks_versions_from_the_snapshot_until_told_to_stop() {
    let mem = MemTable::new();
    for (seq, kind, v) in [(1, ValueKind::Put, "v1"), (3, ValueKind::Merge, "m3"), (5, ValueKind::Delete, "")]
    {
        mem.add(seq, kind, b"k", v.as_bytes());
    }
    mem.add(2, ValueKind::Put, b"kk", b"other");

    let walk = |snapshot: SeqNo| {
        let mut seen = Vec::new();
        mem.get(&seek_key(b"k", snapshot), &mut |ikey, value| {
            let (uk, seq, _) = parsed(ikey);
            if uk != b"k" {
                return false;
            }
            seen.push((seq, value.to_vec()));
            true
        });
        seen
    };
    assert_eq!(walk(MAX_SEQ), vec![(5, vec![]), (3, b"m3".to_vec()), (1, b"v1".to_vec())]);
    assert_eq!(walk(4), vec![(3, b"m3".to_vec()), (1, b"v1".to_vec())]);
    assert_eq!(walk(0), vec![]);

    let mut calls = 0;
    mem.get(&seek_key(b"k", MAX_SEQ), &mut |_, _| {
        calls += 1;
        false
    });
    assert_eq!(calls, 1, "stops as soon as f returns false");

    let mut past_end = 0;
    mem.get(&seek_key(b"z", MAX_SEQ), &mut |_, _| {
        past_end += 1;
        true
    });
    assert_eq!(past_end, 0);
}

#[test]
fn counters_track_what_was_added() {
    let mem = MemTable::new();
    assert!(mem.is_empty());
    assert_eq!((mem.first_seq(), mem.largest_seq(), mem.num_entries()), (0, 0, 0));
    let before = mem.approximate_memory_usage();
    mem.add(7, ValueKind::Put, b"a", b"x");
    mem.add(9, ValueKind::Delete, b"b", b"");
    mem.add(8, ValueKind::Delete, b"c", b"");
    assert!(!mem.is_empty());
    assert_eq!((mem.num_entries(), mem.num_deletes()), (3, 2));
    assert_eq!((mem.first_seq(), mem.largest_seq()), (7, 9));
    assert!(mem.approximate_memory_usage() > before);
    let mem0 = MemTable::default();
    mem0.add(0, ValueKind::Put, b"zero", b"");
    mem0.add(3, ValueKind::Put, b"three", b"");
    assert_eq!((mem0.first_seq(), mem0.largest_seq()), (0, 3));
}

#[test]
fn large_and_empty_values_round_trip() {
    let mem = Arc::new(MemTable::new());
    let big: Vec<u8> = (0..(1 << 20)).map(|i: u32| (i * 31 % 251) as u8).collect();
    let bigger = vec![7u8; 3 << 20];
    mem.add(1, ValueKind::Put, b"big", &big);
    mem.add(2, ValueKind::Put, b"empty", b"");
    mem.add(3, ValueKind::Put, b"bigger", &bigger);
    mem.add(4, ValueKind::Put, &vec![b'k'; 70_000], b"long key");
    assert!(mem.approximate_memory_usage() >= big.len() + bigger.len());
    let got = collect(&mut mem.iter());
    assert_eq!(got.len(), 4);
    assert_eq!(got[0], (make_internal_key(b"big", 1, ValueKind::Put), big));
    assert_eq!(got[1], (make_internal_key(b"bigger", 3, ValueKind::Put), bigger));
    assert_eq!(got[2].1, b"");
    assert_eq!(got[3], (make_internal_key(&vec![b'k'; 70_000], 4, ValueKind::Put), b"long key".to_vec()));
}

#[test]
fn iterator_is_static_send_and_keeps_the_memtable_alive() {
    fn assert_static_send<T: Send + 'static>(_: &T) {}
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<MemTable>();
    let mem = Arc::new(MemTable::new());
    mem.add(1, ValueKind::Put, b"a", b"alive");
    let mut it = mem.iter();
    drop(mem);
    assert_static_send(&it);
    let handle = thread::spawn(move || {
        it.seek_to_last();
        (it.key().to_vec(), it.value().to_vec())
    });
    assert_eq!(handle.join().unwrap().1, b"alive");
}

#[test]
fn empty_memtable_iterator_is_never_valid() {
    let mut it = Arc::new(MemTable::new()).iter();
    it.seek_to_first();
    assert!(!it.valid());
    it.seek_to_last();
    assert!(!it.valid());
    it.seek(&seek_key(b"a", 1));
    assert!(!it.valid());
    it.seek_for_prev(&seek_key(b"a", 1));
    assert!(!it.valid());
    assert!(it.status().is_ok());
}

/// Writer inserts keys in a scrambled order while readers scan: every scan must be sorted, and
/// every value must match its key (a torn node would break either).
#[test]
fn readers_see_sorted_untorn_entries_while_one_writer_inserts() {
    const N: u64 = 200_000;
    let mem = Arc::new(MemTable::new());
    let done = Arc::new(AtomicBool::new(false));
    let value_of = |k: &[u8]| -> Vec<u8> { k.iter().rev().copied().cycle().take(k.len() * 3).collect() };
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (mem, done) = (Arc::clone(&mem), Arc::clone(&done));
            thread::spawn(move || {
                let mut last_len = 0usize;
                loop {
                    let finished = done.load(Ordering::Acquire);
                    let mut it = mem.iter();
                    let mut prev: Option<Vec<u8>> = None;
                    let mut len = 0usize;
                    if r == 0 {
                        it.seek_to_first()
                    } else {
                        it.seek(&seek_key(b"k", MAX_SEQ))
                    }
                    while it.valid() {
                        let k = it.key();
                        assert_eq!(it.value(), value_of(k), "torn entry");
                        if let Some(p) = &prev {
                            assert_eq!(key::compare(p, k), CmpOrdering::Less, "unsorted scan");
                        }
                        prev = Some(k.to_vec());
                        len += 1;
                        it.next();
                    }
                    assert!(len >= last_len, "entries never disappear");
                    last_len = len;
                    if finished {
                        break;
                    }
                }
                last_len
            })
        })
        .collect();
    for i in 0..N {
        let id = i.wrapping_mul(0x9e37_79b1) & 0xff_ffff; // odd multiplier: a bijection mod 2^24
        let uk = format!("k{id:08}");
        let ik = make_internal_key(uk.as_bytes(), i + 1, ValueKind::Put);
        mem.add(i + 1, ValueKind::Put, uk.as_bytes(), &value_of(&ik));
    }
    done.store(true, Ordering::Release);
    for r in readers {
        assert_eq!(r.join().unwrap(), N as usize);
    }
    assert_eq!(mem.num_entries(), N);
}

/// While one writer inserts keys in a scrambled order, every positioning call lands on the
/// right side of its target: `seek` at or after it, `seek_for_prev` at or before it, and a
/// `prev` before the sought position. A node linked in right after the search's last step
/// must not be taken for the one it compared against (a reverse scan then started below keys
/// it should have returned).
#[test]
fn seeks_land_on_the_right_side_of_their_target_while_one_writer_inserts() {
    const N: u64 = 200_000;
    let uk = |id: u64| format!("k{id:08}").into_bytes();
    let scrambled = |i: u64| i.wrapping_mul(0x9e37_79b1) & 0xff_ffff;
    let mem = Arc::new(MemTable::new());
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2u64)
        .map(|r| {
            let (mem, done) = (Arc::clone(&mem), Arc::clone(&done));
            thread::spawn(move || {
                let (mut it, mut i, mut checks) = (mem.iter(), r, 0u64);
                while !done.load(Ordering::Acquire) {
                    i = i.wrapping_add(7919);
                    let target = seek_key(&uk(scrambled(i) + 1), (i % 5) * N / 5);
                    let show = |it: &MemTableIterator| String::from_utf8_lossy(it.key()).into_owned();
                    it.seek(&target);
                    if it.valid() {
                        assert_ne!(
                            key::compare(it.key(), &target),
                            CmpOrdering::Less,
                            "seek landed before: {}",
                            show(&it)
                        );
                        // A node inserted meanwhile may come between `target` and the sought
                        // one; the step back must still go below where the seek landed.
                        let sought = it.key().to_vec();
                        it.prev();
                        if it.valid() {
                            assert_eq!(
                                key::compare(it.key(), &sought),
                                CmpOrdering::Less,
                                "prev after seek: {}",
                                show(&it)
                            );
                        }
                    }
                    it.seek_for_prev(&target);
                    if it.valid() {
                        assert_ne!(
                            key::compare(it.key(), &target),
                            CmpOrdering::Greater,
                            "seek_for_prev: {}",
                            show(&it)
                        );
                    }
                    checks += 1;
                }
                checks
            })
        })
        .collect();
    for i in 0..N {
        mem.add(i + 1, ValueKind::Put, &uk(scrambled(i)), b"v");
    }
    done.store(true, Ordering::Release);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
}

// ---- model-based iterator test ----

#[derive(Debug, Clone)]
enum Op {
    First,
    Last,
    Seek(Vec<u8>),
    SeekForPrev(Vec<u8>),
    Next,
    Prev,
}

fn user_key_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(vec![b'a', b'b', b'c', 0u8, 0xff]), 0..4)
}

fn target_strategy() -> impl Strategy<Value = Vec<u8>> {
    (user_key_strategy(), 0..40u64, prop::sample::select(vec![0u8, 1, 2, 3, key::KIND_FOR_SEEK])).prop_map(
        |(uk, seq, kind)| {
            let mut k = uk;
            k.extend_from_slice(&key::pack_trailer(seq, kind).to_le_bytes());
            k
        },
    )
}

/// Values inline in their node, in the value arena, and longer than a scan prefetches.
fn value_len_strategy() -> impl Strategy<Value = usize> {
    prop_oneof![Just(2usize), (INLINE_VALUE_MAX + 1)..200, Just(VALUE_PREFETCH_MAX + 100)]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => Just(Op::First),
        1 => Just(Op::Last),
        3 => target_strategy().prop_map(Op::Seek),
        3 => target_strategy().prop_map(Op::SeekForPrev),
        4 => Just(Op::Next),
        4 => Just(Op::Prev),
    ]
}

/// Applies `op` to the sorted model; returns the new position.
fn model_step(model: &[(Vec<u8>, Vec<u8>)], pos: Option<usize>, op: &Op) -> Option<usize> {
    let below = |t: &[u8], ord: CmpOrdering| model.partition_point(|(k, _)| key::compare(k, t) < ord);
    match op {
        Op::First => (!model.is_empty()).then_some(0),
        Op::Last => model.len().checked_sub(1),
        Op::Seek(t) => Some(below(t, CmpOrdering::Equal)).filter(|&i| i < model.len()),
        Op::SeekForPrev(t) => below(t, CmpOrdering::Greater).checked_sub(1),
        Op::Next => pos.map(|i| i + 1).filter(|&i| i < model.len()),
        Op::Prev => pos.and_then(|i| i.checked_sub(1)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn iterator_matches_a_sorted_model(
        entries in prop::collection::vec(
            (user_key_strategy(), 0..40u64, 0..4u8, any::<u16>(), value_len_strategy()),
            0..300,
        ),
        ops in prop::collection::vec(op_strategy(), 1..60),
    ) {
        // One entry per (user key, seq), as sequence numbers are unique in the DB; added in the
        // generated order, so versions arrive both newest-last (the index path) and back in
        // time, and new keys land anywhere in the key tree.
        let mut seen = std::collections::HashSet::new();
        let mem = Arc::new(MemTable::new());
        let mut model = Vec::new();
        for (uk, seq, kind, v, len) in entries {
            if !seen.insert((uk.clone(), seq)) {
                continue;
            }
            let kind = ValueKind::from_u8(kind).unwrap();
            let v: Vec<u8> = v.to_le_bytes().iter().copied().cycle().take(len).collect();
            mem.add(seq, kind, &uk, &v);
            model.push((make_internal_key(&uk, seq, kind), v));
        }
        model.sort_by(|a, b| key::compare(&a.0, &b.0));
        prop_assert_eq!(collect(&mut mem.iter()), model.clone());

        let mut it = mem.iter();
        let mut pos = None;
        for op in &ops {
            if matches!(op, Op::Next | Op::Prev) && pos.is_none() {
                continue; // only legal while valid
            }
            pos = model_step(&model, pos, op);
            match op {
                Op::First => it.seek_to_first(),
                Op::Last => it.seek_to_last(),
                Op::Seek(t) => it.seek(t),
                Op::SeekForPrev(t) => it.seek_for_prev(t),
                Op::Next => it.next(),
                Op::Prev => it.prev(),
            }
            prop_assert_eq!(it.valid(), pos.is_some(), "{:?}", op);
            if let Some(i) = pos {
                prop_assert_eq!(it.key(), &model[i].0[..]);
                prop_assert_eq!(it.value(), &model[i].1[..]);
            }
        }
    }
}

/// Adds `(k, seq)` with value `seq` to the memtable and the model.
fn add_put(mem: &MemTable, model: &mut Vec<(Vec<u8>, Vec<u8>)>, k: &[u8], seq: SeqNo) {
    let v = seq.to_le_bytes();
    mem.add(seq, ValueKind::Put, k, &v);
    model.push((make_internal_key(k, seq, ValueKind::Put), v.to_vec()));
}

#[test]
fn ordered_loads_with_updates_read_back_by_scan_seek_and_get() {
    // An ascending load takes the path after the last new key (no probe, no search), a
    // descending one finds every walk short and relies on the hashed sample of tree keys; the
    // updates in between go through the hash index, and an older version arriving late through
    // the search.
    for descending in [false, true] {
        let mem = Arc::new(MemTable::new());
        let mut model = Vec::new();
        let n = 4000u32;
        let order: Vec<u32> = if descending { (0..n).rev().collect() } else { (0..n).collect() };
        let mut seq = 1_000_000;
        for &i in &order {
            let k = i.to_be_bytes();
            add_put(&mem, &mut model, &k, seq);
            seq += 1;
            if i % 7 == 0 {
                add_put(&mem, &mut model, &k, seq);
                seq += 1;
            }
            if i % 11 == 0 {
                add_put(&mem, &mut model, &k, SeqNo::from(i) + 1);
            }
        }
        model.sort_by(|a, b| key::compare(&a.0, &b.0));
        assert_eq!(collect(&mut mem.iter()), model, "descending {descending}");
        let mut it = mem.iter();
        for (i, (ikey, value)) in model.iter().enumerate().step_by(3) {
            it.seek(ikey);
            assert!(it.valid());
            assert_eq!((it.key(), it.value()), (&ikey[..], &value[..]), "seek {i}, descending {descending}");
            let user_key = key::user_key(ikey);
            let mut newest = None;
            mem.get(&seek_key(user_key, MAX_SEQ), &mut |k, v| {
                newest = Some((k.to_vec(), v.to_vec()));
                false
            });
            let first = model.iter().find(|(k, _)| key::user_key(k) == user_key).unwrap();
            assert_eq!(newest.as_ref(), Some(first), "get {i}, descending {descending}");
        }
    }
}

#[test]
fn the_key_tree_indexes_a_sample_of_the_keys() {
    // A slot for every key cost 28 bytes per key (2026-11-30: 16-byte keys, random order), one
    // in two keys 15, one in four 11 (keys whose insert walked far join the sample too); the
    // memtable's footprint decides how often it is flushed.
    let mem = MemTable::new();
    let mut x: u64 = 1;
    let keys = 100_000u64;
    for seq in 1..=keys {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&x.to_be_bytes());
        mem.add(seq, ValueKind::Put, &k, &[7u8; 16]);
    }
    let per_key = mem.list.tree_bytes() as f64 / keys as f64;
    assert!(per_key < 13.0, "the key tree takes {per_key:.1} bytes per key");
}

/// Rough throughput numbers, not a correctness test. Run with
/// `cargo test -p strata-kv --release --no-default-features memtable::tests::bench -- --ignored --nocapture`.
#[test]
#[ignore = "benchmark; run in release"]
fn bench_fill_and_get() {
    const N: u64 = 1_000_000;
    let value = [b'v'; 100];
    for (name, random) in [("fillseq", false), ("fillrandom", true)] {
        let ids =
            (0..N).map(|i| if random { i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % 10u64.pow(16) } else { i });
        let keys: Vec<Vec<u8>> = ids.map(|id| format!("{id:016}").into_bytes()).collect();
        let mem = MemTable::new();
        let start = thread_cpu_ns();
        for (seq, k) in (1..).zip(&keys) {
            mem.add(seq, ValueKind::Put, k, &value);
        }
        let fill = (thread_cpu_ns() - start) as f64 / N as f64;
        let mut found = 0u64;
        let start = thread_cpu_ns();
        for i in 0..N {
            let k = &keys[(i.wrapping_mul(0x2545_f491_4f6c_dd1d) % N) as usize];
            mem.get(&seek_key(k, MAX_SEQ), &mut |ik, _| {
                found += u64::from(key::user_key(ik) == &k[..]);
                false
            });
        }
        let get = (thread_cpu_ns() - start) as f64 / N as f64;
        assert_eq!(found, N);
        println!(
            "{name}: add {fill:.0} ns/op, get {get:.0} ns/op (thread CPU time), {} MiB",
            mem.approximate_memory_usage() >> 20
        );
    }
}

/// This thread's CPU time in ns (Linux), so a busy machine skews the numbers less than wall time.
fn thread_cpu_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    stat.split_whitespace().next().and_then(|t| t.parse().ok()).unwrap_or_else(|| {
        static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        EPOCH.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
    })
}
