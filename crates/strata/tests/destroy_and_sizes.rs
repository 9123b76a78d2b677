//! `Db::destroy` and `Db::approximate_sizes`: destroy removes what strata wrote and nothing
//! else, refuses an open database and a directory that is not one; sizes follow the data.

use strata::{Db, Error, Options};

/// Bytes compression cannot shrink (xorshift), so sizes on disk follow the value sizes.
fn noise(seed: u32, len: usize) -> Vec<u8> {
    let mut x = u64::from(seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn filled(path: &std::path::Path, n: u32, value_len: usize) -> Db {
    let db = Db::open(path, Options::default()).unwrap();
    for i in 0..n {
        db.put(format!("k{i:06}"), noise(i, value_len)).unwrap();
    }
    db.flush().unwrap();
    db
}

#[test]
fn destroy_removes_the_database_and_keeps_foreign_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = filled(&path, 1000, 100);
    assert!(matches!(Db::destroy(&path, Options::default()), Err(Error::Locked(_))));
    assert_eq!(db.get("k000001").unwrap(), Some(noise(1, 100)), "a refused destroy removes nothing");
    db.close().unwrap();

    std::fs::write(path.join("notes.txt"), b"mine").unwrap();
    Db::destroy(&path, Options::default()).unwrap();
    let left: Vec<String> =
        std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert_eq!(left, ["notes.txt"]);
    std::fs::remove_file(path.join("notes.txt")).unwrap();

    // Nothing strata wrote is left: a fresh open finds no database.
    let existing_only = Options { create_if_missing: false, ..Options::default() };
    assert!(matches!(Db::open(&path, existing_only), Err(Error::NotADatabase(_))));
}

#[test]
fn destroy_refuses_what_is_not_a_database_and_accepts_what_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("photo.jpg"), b"not a database").unwrap();
    assert!(matches!(Db::destroy(dir.path(), Options::default()), Err(Error::NotADatabase(_))));
    assert!(dir.path().join("photo.jpg").exists());
    assert!(matches!(
        Db::destroy(dir.path().join("photo.jpg"), Options::default()),
        Err(Error::InvalidArgument(_))
    ));
    Db::destroy(dir.path().join("never-created"), Options::default()).unwrap();
}

#[test]
fn approximate_sizes_follow_the_data() {
    let dir = tempfile::tempdir().unwrap();
    // Small values stay in the tables; 2,000 of 100 bytes is about 200 KB of table.
    let db = filled(dir.path(), 2000, 100);
    let [all, half, none, empty] = db
        .approximate_sizes(&[
            b"k".as_slice()..b"l".as_slice(),
            b"k000000".as_slice()..b"k001000".as_slice(),
            b"m".as_slice()..b"n".as_slice(),
            b"k5".as_slice()..b"k0".as_slice(),
        ])
        .unwrap()[..]
    else {
        panic!("one size per range")
    };
    assert!(all > 150_000, "all keys: {all}");
    assert!(half > all / 4 && half < all * 3 / 4, "half the keys: {half} of {all}");
    assert_eq!((none, empty), (0, 0));

    // Values over the blob threshold live in blob files; their share is counted too.
    let dir = tempfile::tempdir().unwrap();
    let db = filled(dir.path(), 500, 4096);
    let big = db.approximate_sizes(&[b"k".as_slice()..b"l".as_slice()]).unwrap()[0];
    assert!(big > 1_500_000, "500 values of 4 KiB: {big}");

    let cf = db.create_cf("other", Options::default()).unwrap();
    assert_eq!(db.approximate_sizes_cf(&cf, &[b"k".as_slice()..b"l".as_slice()]).unwrap(), [0]);
}
