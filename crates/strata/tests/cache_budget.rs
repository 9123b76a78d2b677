//! The block cache's capacity bounds the open tables' index and filter memory together with
//! the cached data blocks: `strata.block-cache-pinned-usage` reports the tables' share, the
//! blocks are evicted to fit beside it, and the charge goes when the tables do.

use strata::{Db, Options};

const KEYS: u32 = 60_000;
const CACHE: usize = 1 << 20;

fn property(db: &Db, name: &str) -> usize {
    db.property(name).unwrap_or_else(|| panic!("{name} is a property")).trim().parse().unwrap()
}

fn key(i: u32) -> Vec<u8> {
    format!("key{:08}", i.wrapping_mul(2_654_435_761) % 100_000_000).into_bytes()
}

fn options(cache_size: usize) -> Options {
    // Mapped reads off: with a pread the index and filter are heap memory the charge counts.
    Options { cache_size, write_buffer_size: 256 << 10, use_mmap_reads: false, ..Options::default() }
}

fn filled(dir: &std::path::Path, cache_size: usize) -> Db {
    let db = Db::open(dir, options(cache_size)).unwrap();
    for i in 0..KEYS {
        db.put(key(i), [i as u8; 100]).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db
}

#[test]
fn open_tables_index_and_filter_are_charged_to_the_block_cache() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled(dir.path(), CACHE);
    // 60,000 keys at 10 bits each are 75,000 bytes of filter alone, beside the index blocks.
    let pinned = property(&db, "strata.block-cache-pinned-usage");
    assert!(pinned > 75_000, "pinned {pinned}");
    for i in 0..KEYS {
        assert!(db.get(key(i)).unwrap().is_some());
    }
    let usage = property(&db, "strata.block-cache-usage");
    assert!(usage > 0, "reads went through the cache");
    assert!(usage + pinned <= CACHE, "blocks {usage} + pinned {pinned} > capacity {CACHE}");

    for i in 0..KEYS {
        db.delete(key(i)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let after = property(&db, "strata.block-cache-pinned-usage");
    assert!(after < pinned / 10, "the charge leaves with the tables: {after} of {pinned}");
}

#[test]
fn a_disabled_cache_charges_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled(dir.path(), 0);
    assert_eq!(property(&db, "strata.block-cache-pinned-usage"), 0);
    assert_eq!(db.get(key(7)).unwrap(), Some(vec![7u8; 100]));
}
