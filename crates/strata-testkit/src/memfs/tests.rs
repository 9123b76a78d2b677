//! Tests for `MemFs`: durability of data and directory entries across each crash mode, locks
//! and handles across crashes, and the page model's surviving subsets, holes and hard links.

use std::collections::HashSet;

use super::*;

fn write(fs: &MemFs, path: &Path, data: &[u8], sync: bool) {
    let mut f = fs.create(path).unwrap();
    f.append(data).unwrap();
    if sync {
        f.sync_data().unwrap();
    }
}

fn setup() -> (MemFs, PathBuf) {
    let fs = MemFs::new();
    let dir = PathBuf::from("/db");
    fs.create_dir_all(&dir).unwrap();
    (fs, dir)
}

#[test]
fn appends_into_preallocated_space_are_durable_only_after_a_sync() {
    let (fs, dir) = setup();
    let path = dir.join("wal");
    let mut f = fs.create(&path).unwrap();
    f.append(b"head").unwrap();
    f.preallocate(16).unwrap();
    assert_eq!(f.len(), 4);
    f.sync_data().unwrap();
    fs.sync_dir(&dir).unwrap();
    f.append(b"-synced").unwrap();
    f.sync_data().unwrap();
    f.append(b"-lost").unwrap();
    assert_eq!(f.len(), 16);
    assert_eq!(fs.contents(&path).unwrap(), b"head-synced-lost");
    let zeros_then = |n: usize| [b"head-synced".as_slice(), &vec![0u8; n]].concat();
    let after = fs.crash_clone(CrashMode::DropUnsynced);
    assert_eq!(after.contents(&path).unwrap(), zeros_then(5));
    assert_eq!(fs.crash_clone(CrashMode::KeepUnsynced).contents(&path).unwrap(), b"head-synced-lost");
    for seed in 0..64 {
        let got = fs.crash_clone(CrashMode::Seeded(seed)).contents(&path).unwrap();
        assert!(got.len() >= 16 && got.starts_with(b"head-synced"), "seed {seed}: {got:?}");
    }
    // A second handle sees appends at the logical end, not after the zeros.
    let mut g = after.create(&dir.join("other")).unwrap();
    g.preallocate(8).unwrap();
    g.append(b"ab").unwrap();
    assert_eq!(after.contents(&dir.join("other")).unwrap(), b"ab\0\0\0\0\0\0");
}

#[test]
fn unsynced_data_is_dropped_and_synced_data_kept() {
    let (fs, dir) = setup();
    let path = dir.join("a");
    let mut f = fs.create(&path).unwrap();
    f.append(b"durable").unwrap();
    f.sync_data().unwrap();
    f.append(b"-volatile").unwrap();
    fs.sync_dir(&dir).unwrap();
    assert_eq!(fs.contents(&path).unwrap(), b"durable-volatile");
    let after = fs.crash_clone(CrashMode::DropUnsynced);
    assert_eq!(after.contents(&path).unwrap(), b"durable");
    assert_eq!(after.read_all(&path).unwrap(), b"durable");
    // A process crash keeps everything that reached the filesystem.
    let killed = fs.crash_clone(CrashMode::KeepUnsynced);
    assert_eq!(killed.contents(&path).unwrap(), b"durable-volatile");
}

#[test]
fn unsynced_directory_entries_are_dropped_even_if_the_file_was_synced() {
    let (fs, dir) = setup();
    write(&fs, &dir.join("old"), b"x", true);
    fs.sync_dir(&dir).unwrap();
    write(&fs, &dir.join("new"), b"synced data, unsynced entry", true);
    fs.remove_file(&dir.join("old")).unwrap();
    assert_eq!(fs.list_dir(&dir).unwrap(), vec!["new".to_string()]);
    fs.crash();
    assert_eq!(fs.list_dir(&dir).unwrap(), vec!["old".to_string()]);
    assert_eq!(fs.contents(&dir.join("old")).unwrap(), b"x");
    assert!(fs.open_sequential(&dir.join("new")).is_err());
}

#[test]
fn rename_is_durable_only_after_sync_dir() {
    let (fs, dir) = setup();
    write(&fs, &dir.join("CURRENT"), b"one", true);
    fs.sync_dir(&dir).unwrap();
    write(&fs, &dir.join("CURRENT.tmp"), b"two", true);
    fs.rename(&dir.join("CURRENT.tmp"), &dir.join("CURRENT")).unwrap();
    assert_eq!(fs.read_all(&dir.join("CURRENT")).unwrap(), b"two");
    let before_sync = fs.crash_clone(CrashMode::DropUnsynced);
    assert_eq!(before_sync.read_all(&dir.join("CURRENT")).unwrap(), b"one");
    assert_eq!(before_sync.durable_names(&dir), vec!["CURRENT".to_string()]);
    fs.sync_dir(&dir).unwrap();
    let after_sync = fs.crash_clone(CrashMode::DropUnsynced);
    assert_eq!(after_sync.read_all(&dir.join("CURRENT")).unwrap(), b"two");
    assert_eq!(after_sync.list_dir(&dir).unwrap(), vec!["CURRENT".to_string()]);
}

#[test]
fn seeded_crashes_keep_synced_bytes_and_vary_the_tail() {
    let (fs, dir) = setup();
    let path = dir.join("wal");
    let mut f = fs.create(&path).unwrap();
    f.append(&[7u8; 100]).unwrap();
    f.sync_data().unwrap();
    f.append(&[9u8; 1000]).unwrap();
    fs.sync_dir(&dir).unwrap();
    let mut lengths = HashSet::new();
    for seed in 0..64 {
        let data = fs.crash_clone(CrashMode::Seeded(seed)).contents(&path).unwrap();
        assert!(data.len() <= 1100);
        assert_eq!(&data[..100], &[7u8; 100][..], "seed {seed} damaged synced bytes");
        lengths.insert(data.len());
    }
    assert!(lengths.len() > 10, "seeded crashes should produce varied tails: {lengths:?}");
}

#[test]
fn a_crash_releases_locks_and_old_guards_do_not_release_new_ones() {
    let (fs, dir) = setup();
    let path = dir.join("LOCK");
    let guard = fs.lock(&path).unwrap();
    assert!(matches!(fs.lock(&path), Err(Error::Locked(_))));
    fs.crash();
    let new_guard = fs.lock(&path).unwrap();
    drop(guard);
    assert!(matches!(fs.lock(&path), Err(Error::Locked(_))));
    drop(new_guard);
    fs.lock(&path).unwrap();
}

#[test]
fn handles_from_before_a_crash_do_not_change_the_crashed_image() {
    let (fs, dir) = setup();
    let path = dir.join("f");
    let mut f = fs.create(&path).unwrap();
    f.append(b"abc").unwrap();
    f.sync_data().unwrap();
    fs.sync_dir(&dir).unwrap();
    fs.crash();
    f.append(b"late").unwrap();
    f.sync_data().unwrap();
    assert_eq!(fs.contents(&path).unwrap(), b"abc");
}

#[test]
fn reads_past_the_end_fail_and_missing_files_are_not_found() {
    let (fs, dir) = setup();
    write(&fs, &dir.join("f"), b"0123456789", true);
    let r = fs.open_random(&dir.join("f")).unwrap();
    let mut buf = [0u8; 4];
    r.read_exact_at(6, &mut buf).unwrap();
    assert_eq!(&buf, b"6789");
    assert!(r.read_exact_at(7, &mut buf).is_err());
    assert!(r.read_exact_at(u64::MAX, &mut buf).is_err());
    assert!(fs.open_random(&dir.join("nope")).is_err());
    assert_eq!(fs.is_dir(&dir).unwrap(), Some(true));
    assert_eq!(fs.is_dir(&dir.join("f")).unwrap(), Some(false));
    assert_eq!(fs.is_dir(&dir.join("nope")).unwrap(), None);
    assert!(fs.create(Path::new("/missing/dir/f")).is_err());
}

// -----------------------------------------------------------------------------------------
// The page model (`CrashMode::Pages`)

const P: usize = PAGE_SIZE;

/// `n` bytes that say which page they are in, so a test can tell pages apart.
fn paged(n: usize, tag: u8) -> Vec<u8> {
    (0..n).map(|i| tag.wrapping_add((i / P) as u8 + 1)).collect()
}

/// Which of the three live pages of `got` survived; panics on anything the model forbids:
/// a page that is neither its live bytes nor zeros, or a file that does not end at a page
/// it kept.
fn kept_of_three(got: &[u8], live: &[u8], seed: u64) -> [bool; 3] {
    let mut kept = [false; 3];
    for (page, k) in kept.iter_mut().enumerate() {
        let range = page * P..live.len().min((page + 1) * P);
        let Some(bytes) = got.get(range.clone()) else { continue };
        *k = bytes == &live[range];
        assert!(*k || bytes.iter().all(|&b| b == 0), "seed {seed}: page {page} is torn");
    }
    let last_kept = kept.iter().rposition(|&k| k);
    let expected_len = last_kept.map_or(0, |p| live.len().min((p + 1) * P));
    assert_eq!(got.len(), expected_len, "seed {seed}: the file must end at its last kept page");
    kept
}

#[test]
fn any_subset_of_unsynced_pages_survives_with_holes_for_dropped_ones() {
    let (fs, dir) = setup();
    let path = dir.join("f");
    let mut f = fs.create(&path).unwrap();
    fs.sync_dir(&dir).unwrap();
    // Three pages, the last one partial, none synced.
    let live = paged(2 * P + 100, 10);
    f.append(&live[..1000]).unwrap();
    f.append(&live[1000..]).unwrap();
    let mut subsets = HashSet::new();
    for seed in 0..400 {
        let got = fs.crash_clone(CrashMode::Pages(seed)).contents(&path).unwrap();
        subsets.insert(kept_of_three(&got, &live, seed));
    }
    assert_eq!(subsets.len(), 8, "every subset of the three pages should come up: {subsets:?}");
    // Pages 1 and 3 without page 2: a zero hole in the middle.
    let seed = (0..400)
        .find(|&s| {
            let got = fs.crash_clone(CrashMode::Pages(s)).contents(&path).unwrap();
            kept_of_three(&got, &live, s) == [true, false, true]
        })
        .unwrap();
    let got = fs.crash_clone(CrashMode::Pages(seed)).contents(&path).unwrap();
    assert_eq!(got.len(), 2 * P + 100);
    assert_eq!(&got[..P], &live[..P]);
    assert!(got[P..2 * P].iter().all(|&b| b == 0));
    assert_eq!(&got[2 * P..], &live[2 * P..]);
    // The same seed gives the same image.
    assert_eq!(fs.crash_clone(CrashMode::Pages(seed)).contents(&path).unwrap(), got);
}

#[test]
fn dropped_pages_revert_to_the_durable_image() {
    let (fs, dir) = setup();
    let path = dir.join("wal");
    let mut f = fs.create(&path).unwrap();
    // Durable: 5000 bytes of data, then zeros preallocated up to 4 pages, all synced.
    let head = paged(5000, 50);
    f.append(&head).unwrap();
    f.preallocate(4 * P as u64).unwrap();
    f.sync_data().unwrap();
    fs.sync_dir(&dir).unwrap();
    // Unsynced: appends into the durable zeros (pages 1..3) and growth to a fifth page.
    let tail = paged(4 * P + 200 - 5000, 90);
    f.append(&tail).unwrap();
    let live = fs.contents(&path).unwrap();
    let durable = [head.clone(), vec![0u8; 4 * P - 5000]].concat();
    let mut lengths = HashSet::new();
    for seed in 0..300 {
        let got = fs.crash_clone(CrashMode::Pages(seed)).contents(&path).unwrap();
        assert_eq!(&got[..5000], &head[..], "seed {seed}: synced bytes changed");
        assert!(got.len() == 4 * P || got.len() == live.len(), "seed {seed}: length {}", got.len());
        for page in 1..5 {
            let range = page * P..got.len().min((page + 1) * P);
            let was = if page * P < 4 * P { &durable[range.clone()] } else { &[][..] };
            let ok = got[range.clone()] == live[range.clone()] || got[range.clone()] == *was;
            assert!(ok, "seed {seed}: page {page} is neither live nor durable");
        }
        // Page 1 straddles the durable length: dropped, it keeps the durable head bytes.
        let page1 = &got[P..2 * P];
        assert!(page1 == &live[P..2 * P] || page1 == &durable[P..2 * P], "seed {seed}");
        lengths.insert(got.len());
    }
    assert_eq!(lengths.len(), 2, "the fifth page should be kept by some seeds and not others");
}

#[test]
fn a_kept_page_beyond_the_durable_length_leaves_zero_holes_below_it() {
    let (fs, dir) = setup();
    let path = dir.join("f");
    let mut f = fs.create(&path).unwrap();
    f.append(&paged(100, 1)).unwrap();
    f.sync_data().unwrap();
    fs.sync_dir(&dir).unwrap();
    let live = paged(3 * P, 1);
    f.append(&live[100..]).unwrap();
    let hole = (0..400).find_map(|seed| {
        let got = fs.crash_clone(CrashMode::Pages(seed)).contents(&path).unwrap();
        let kept = [got.get(..P) == Some(&live[..P]), got.get(P..2 * P) == Some(&live[P..2 * P])];
        (got.len() == 3 * P && kept == [false, false]).then_some(got)
    });
    let got = hole.expect("some seed keeps only the last page");
    assert_eq!(&got[..100], &live[..100], "durable bytes of a dropped page stay");
    assert!(got[100..2 * P].iter().all(|&b| b == 0));
    assert_eq!(&got[2 * P..], &live[2 * P..]);
}

#[test]
fn any_subset_of_unsynced_directory_changes_survives_and_renames_stay_atomic() {
    let (fs, dir) = setup();
    write(&fs, &dir.join("CURRENT"), b"one", true);
    write(&fs, &dir.join("gone"), b"x", true);
    fs.sync_dir(&dir).unwrap();
    write(&fs, &dir.join("new"), b"n", true);
    fs.remove_file(&dir.join("gone")).unwrap();
    write(&fs, &dir.join("CURRENT.tmp"), b"two", true);
    fs.rename(&dir.join("CURRENT.tmp"), &dir.join("CURRENT")).unwrap();
    let mut outcomes = HashSet::new();
    for seed in 0..400 {
        let after = fs.crash_clone(CrashMode::Pages(seed));
        let current = after.read_all(&dir.join("CURRENT")).unwrap();
        let tmp = after.contents(&dir.join("CURRENT.tmp"));
        assert!(current == b"one" || current == b"two", "seed {seed}: CURRENT is {current:?}");
        // The temporary name can only be left if the rename did not survive.
        assert!(tmp.is_none() || current == b"one", "seed {seed}: rename not atomic");
        let new = after.contents(&dir.join("new")).is_some();
        let gone = after.contents(&dir.join("gone")).is_some();
        outcomes.insert((new, gone, current, tmp.is_some()));
    }
    // 2 (new) x 2 (gone) x 3 (no rename nor create / create only / rename).
    assert_eq!(outcomes.len(), 12, "{outcomes:?}");
}

#[test]
fn page_crashes_keep_synced_state_and_hard_links_shared() {
    let (fs, dir) = setup();
    let mut f = fs.create(&dir.join("a")).unwrap();
    f.append(&paged(3 * P, 7)).unwrap();
    f.sync_data().unwrap();
    fs.link_or_copy(&dir.join("a"), &dir.join("b")).unwrap();
    fs.sync_dir(&dir).unwrap();
    f.append(&paged(2 * P, 9)).unwrap();
    for seed in 0..64 {
        let after = fs.crash_clone(CrashMode::Pages(seed));
        let (a, b) = (after.contents(&dir.join("a")).unwrap(), after.contents(&dir.join("b")).unwrap());
        assert_eq!(a, b, "seed {seed}: two names of one file differ");
        assert_eq!(&a[..3 * P], &paged(3 * P, 7)[..]);
        let mut w = after.create(&dir.join("c")).unwrap();
        w.append(b"later").unwrap();
        assert_eq!(after.contents(&dir.join("a")).unwrap(), a, "a crashed image is durable");
    }
    // Fully synced state is all a crash can find.
    let mut g = fs.create(&dir.join("d")).unwrap();
    g.append(b"d").unwrap();
    g.sync_data().unwrap();
    f.sync_data().unwrap();
    fs.sync_dir(&dir).unwrap();
    for seed in 0..16 {
        let after = fs.crash_clone(CrashMode::Pages(seed));
        assert_eq!(after.contents(&dir.join("a")), fs.contents(&dir.join("a")));
        assert_eq!(after.contents(&dir.join("d")).unwrap(), b"d");
    }
}
