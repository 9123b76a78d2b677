//! The memtable's ordered index: a B+-tree with one slot per indexed user key (the list decides
//! which keys; a sample of them), naming a list node that holds a version of that key. It
//! replaces a skiplist's upper levels: a search asks the tree for the node of the largest
//! indexed key *below* its target and walks the list's level 0 from there (a few steps). It
//! owns the tree's node layout, its search and its splits; it must not know the list's node
//! layout (callers implement [`Nodes`]), and it never removes a key. One writer at a time (the
//! list's), any number of lock-free readers.
//!
//! Why: a random insert into a skiplist of a million nodes is a dozen dependent cache misses,
//! one or more per level. Here the inner nodes of a million keys (~1 MiB) stay in the CPU
//! caches, and a leaf's 8-byte key prefixes, sorted in four cache lines that are prefetched
//! together with the rest of the node, settle nearly every comparison without touching a list node.
//!
//! Slots hold `(prefix, node)`: `prefix` is the user key's first 8 bytes, big-endian, zero
//! padded, so prefixes order like keys and only equal prefixes need the key itself. In an inner
//! node, slot `i` holds the smallest key under child `i` when the child was linked (slot 0 is
//! never compared, so the leftmost path's may go stale).
//!
//! Readers and the writer: every tree node has a version, odd while the writer changes it
//! (a seqlock). A reader reads a node's slots between two loads of the version and retries the
//! node when they differ. Readers need no more than that, because of what a search returns:
//! any list node of a user key below the target is a correct starting point for the level-0
//! walk, and a reader that raced a split still gets one (a node keeps its smallest key for
//! good, a split first links the new right half into the parent and only then shrinks the left
//! half, and a new root is published after both halves are complete). Racing costs a longer
//! walk, never a wrong answer. Tree nodes are freed only when the tree drops.

use std::cmp::Ordering as CmpOrdering;
use std::hint;
use std::ptr::{self, NonNull};
use std::sync::atomic::{fence, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use super::arena::Arena;
use super::hash_index::Nodes;
use crate::key;
use crate::util::prefetch::prefetch_read;

/// Slots per tree node.
const FANOUT: usize = 32;
/// Deepest tree the writer's path can describe: 16^11 keys, far past any memtable.
const MAX_DEPTH: usize = 12;
/// Spins on a node the writer is changing before a reader yields its core.
const SPINS_BEFORE_YIELD: u32 = 64;

/// What every tree node starts with.
#[repr(C)]
struct Header {
    /// Seqlock: odd while the writer changes the node.
    version: AtomicU64,
    /// Slots in use.
    len: AtomicUsize,
    /// 0 for a leaf; an inner node's children are one level lower. Never changes.
    level: usize,
    prefix: [AtomicU64; FANOUT],
    /// The list node of each slot's key.
    node: [AtomicPtr<u8>; FANOUT],
}

/// A leaf: slots name list nodes, in key order.
#[repr(C, align(64))]
struct Leaf {
    head: Header,
}

/// An inner node: slot `i` is the smallest key under `child[i]` (see the module docs).
#[repr(C, align(64))]
struct Inner {
    head: Header,
    /// `Leaf`s when `level == 1`, `Inner`s above; each starts with its `Header`.
    child: [AtomicPtr<Header>; FANOUT],
}

impl Header {
    fn new(level: usize) -> Header {
        Header {
            version: AtomicU64::new(0),
            len: AtomicUsize::new(0),
            level,
            prefix: [const { AtomicU64::new(0) }; FANOUT],
            node: [const { AtomicPtr::new(ptr::null_mut()) }; FANOUT],
        }
    }

    /// Slots in use, never more than fit (a reader may see a length mid-change).
    fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed).min(FANOUT)
    }

    /// How slot `i`'s key compares with the key `(prefix, key)`.
    fn compare(&self, nodes: &impl Nodes, i: usize, prefix: u64, key: &[u8]) -> CmpOrdering {
        match self.prefix[i].load(Ordering::Relaxed).cmp(&prefix) {
            CmpOrdering::Equal => {
                let node = self.node[i].load(Ordering::Acquire);
                // A reader mid-race may see an empty slot; any order is then fine (the
                // seqlock discards what it read).
                NonNull::new(node)
                    .map_or(CmpOrdering::Less, |n| key::compare_user_keys(nodes.user_key(n), key))
            }
            o => o,
        }
    }

    /// The first slot in `from..len` whose key is `>= key`, or `len`.
    fn lower_bound(&self, nodes: &impl Nodes, from: usize, prefix: u64, key: &[u8]) -> usize {
        let (mut lo, mut hi) = (from, self.len().max(from));
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.compare(nodes, mid, prefix, key) == CmpOrdering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Marks the start of a change: readers retry until [`Header::end_write`].
    fn begin_write(&self) {
        self.version.store(self.version.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        fence(Ordering::Release);
    }

    fn end_write(&self) {
        self.version.store(self.version.load(Ordering::Relaxed) + 1, Ordering::Release);
    }

    /// Writer only: slot `i` (of `self` or a fresh copy) takes `(prefix, node)`.
    fn set_slot(&self, i: usize, prefix: u64, node: *mut u8) {
        self.prefix[i].store(prefix, Ordering::Relaxed);
        self.node[i].store(node, Ordering::Release);
    }
}

/// Where the writer's last search ended: the path from the root and the slot in the leaf.
struct Path {
    /// `(inner node, child index)` from the root down, then the leaf in `leaf`.
    steps: [(*const Inner, usize); MAX_DEPTH],
    depth: usize,
    leaf: *const Leaf,
    /// Index in `leaf` the searched key would take.
    pos: usize,
    /// The list node of the smallest key known to be above `leaf`'s range, if any.
    upper: *mut u8,
}

/// The writer's state: the last search.
pub(super) struct TreeWriter {
    path: Path,
    /// The last insert went to `path.pos - 1` of `path.leaf`, and the path is still exact.
    hint: bool,
}

/// The tree. See the module docs.
pub(super) struct KeyTree {
    root: AtomicPtr<Header>,
    /// Holds every tree node; only multiples of 64 bytes are allocated from it.
    nodes: Arena,
}

// SAFETY: the pointers in `TreeWriter` name nodes of the tree it belongs to, reached through
// atomics only and used by the single writer alone.
unsafe impl Send for TreeWriter {}

/// The 8-byte order-preserving prefix of a user key.
#[inline]
fn prefix_of(key: &[u8]) -> u64 {
    match key.first_chunk::<8>() {
        Some(bytes) => u64::from_be_bytes(*bytes),
        None => {
            let mut bytes = [0u8; 8];
            bytes[..key.len()].copy_from_slice(key);
            u64::from_be_bytes(bytes)
        }
    }
}

impl KeyTree {
    /// An empty tree (one empty leaf) and its writer state.
    pub(super) fn new() -> (KeyTree, TreeWriter) {
        let tree = KeyTree { root: AtomicPtr::new(ptr::null_mut()), nodes: Arena::new() };
        let leaf = tree.alloc_leaf();
        tree.root.store(leaf.cast::<Header>(), Ordering::Relaxed);
        let path =
            Path { steps: [(ptr::null(), 0); MAX_DEPTH], depth: 0, leaf, pos: 0, upper: ptr::null_mut() };
        (tree, TreeWriter { path, hint: false })
    }

    /// Bytes of tree nodes.
    pub(super) fn memory_usage(&self) -> usize {
        self.nodes.memory_usage()
    }

    /// The list node of the largest key in the tree below `key` (`None` when there is none, or
    /// for `key == None`, of the largest key). May be a smaller key's node when racing the
    /// writer. Safe from any thread.
    pub(super) fn floor_before(&self, nodes: &impl Nodes, key: Option<&[u8]>) -> Option<NonNull<u8>> {
        let prefix = key.map_or(0, prefix_of);
        let mut at = self.root.load(Ordering::Acquire).cast_const();
        loop {
            prefetch_node(at);
            // SAFETY: `at` came from `root` or a child slot, loaded with Acquire; tree nodes
            // are fully built before they are published and live as long as `self`.
            let head = unsafe { &*at };
            let mut spins = 0;
            let found = loop {
                let v = head.version.load(Ordering::Acquire);
                if v & 1 == 1 {
                    backoff(&mut spins);
                    continue;
                }
                let len = head.len();
                let from = usize::from(head.level > 0);
                let pos = key.map_or(len, |k| head.lower_bound(nodes, from, prefix, k));
                let found = if head.level == 0 {
                    pos.checked_sub(1).map_or(ptr::null_mut(), |i| head.node[i].load(Ordering::Acquire))
                } else {
                    // SAFETY: an inner node's `Header` is the first field of an `Inner`.
                    let inner = unsafe { &*at.cast::<Inner>() };
                    inner.child[pos.max(1) - 1].load(Ordering::Acquire).cast::<u8>()
                };
                fence(Ordering::Acquire);
                if head.version.load(Ordering::Relaxed) == v {
                    break found;
                }
            };
            if head.level == 0 {
                return NonNull::new(found);
            }
            if found.is_null() {
                // An inner node seen before its first child was set cannot happen (nodes are
                // published complete); stay correct anyway.
                return None;
            }
            at = found.cast::<Header>().cast_const();
        }
    }

    /// Writer only: like [`KeyTree::floor_before`], remembering where `key` would go for a
    /// following [`KeyTree::insert`]. Uses the previous insert's position when `key` sorts
    /// right after it (sequential loads then skip the descent).
    pub(super) fn locate(&self, w: &mut TreeWriter, nodes: &impl Nodes, key: &[u8]) -> Option<NonNull<u8>> {
        let prefix = prefix_of(key);
        if w.hint && self.follows_last_insert(&w.path, nodes, prefix, key) {
            // SAFETY: `path.leaf` is a live leaf of this tree, and `hint` says `pos >= 1`.
            let leaf = unsafe { &(*w.path.leaf).head };
            return NonNull::new(leaf.node[w.path.pos - 1].load(Ordering::Relaxed));
        }
        w.hint = false;
        let path = &mut w.path;
        path.depth = 0;
        path.upper = ptr::null_mut();
        let mut at = self.root.load(Ordering::Relaxed).cast_const();
        loop {
            prefetch_node(at);
            // SAFETY: as in `floor_before`; the writer sees its own writes without a seqlock.
            let head = unsafe { &*at };
            if head.level == 0 {
                let pos = head.lower_bound(nodes, 0, prefix, key);
                path.leaf = at.cast::<Leaf>();
                path.pos = pos;
                // The caller reads the node before the new key's place and the one after it.
                if pos < head.len() {
                    prefetch_read(head.node[pos].load(Ordering::Relaxed).cast_const());
                }
                return pos.checked_sub(1).and_then(|i| NonNull::new(head.node[i].load(Ordering::Relaxed)));
            }
            let i = head.lower_bound(nodes, 1, prefix, key) - 1;
            if i + 1 < head.len() {
                path.upper = head.node[i + 1].load(Ordering::Relaxed);
            }
            let inner = at.cast::<Inner>();
            assert!(path.depth < MAX_DEPTH, "key tree deeper than {MAX_DEPTH}");
            path.steps[path.depth] = (inner, i);
            path.depth += 1;
            // SAFETY: an inner node's `Header` is the first field of an `Inner`.
            at = unsafe { &*inner }.child[i].load(Ordering::Relaxed).cast_const();
        }
    }

    /// Whether `key` sorts right after the key the last insert put at `path.pos - 1`, inside
    /// that leaf's range.
    fn follows_last_insert(&self, path: &Path, nodes: &impl Nodes, prefix: u64, key: &[u8]) -> bool {
        // SAFETY: `path.leaf` is a live leaf of this tree.
        let leaf = unsafe { &(*path.leaf).head };
        let len = leaf.len();
        if leaf.compare(nodes, path.pos - 1, prefix, key) != CmpOrdering::Less {
            return false;
        }
        if path.pos < len {
            return leaf.compare(nodes, path.pos, prefix, key) == CmpOrdering::Greater;
        }
        NonNull::new(path.upper)
            .is_none_or(|upper| key::compare_user_keys(key, nodes.user_key(upper)) == CmpOrdering::Less)
    }

    /// Writer only: adds `key -> node` where the last [`KeyTree::locate`] (of this `key`) said.
    ///
    /// REQUIRES: `key` is not in the tree, and nothing was inserted since that `locate`.
    pub(super) fn insert(&self, w: &mut TreeWriter, key: &[u8], node: NonNull<u8>) {
        let prefix = prefix_of(key);
        let (leaf, pos) = (w.path.leaf, w.path.pos);
        // SAFETY: `leaf` is a live leaf of this tree.
        let head = unsafe { &(*leaf).head };
        if head.len() < FANOUT {
            head.begin_write();
            insert_slot(head, pos, prefix, node.as_ptr());
            head.end_write();
            w.path.pos = pos + 1;
            w.hint = true;
            return;
        }
        let right = self.alloc_leaf();
        // SAFETY: `right` was just allocated and is not published yet.
        let right_head = unsafe { &(*right).head };
        let mid = split_point(pos);
        move_upper_half(head, right_head, mid, |_, _| {});
        if pos >= mid {
            insert_slot(right_head, pos - mid, prefix, node.as_ptr());
        }
        self.link_right_sibling(w, w.path.depth, at_slot(right_head, 0), right.cast::<Header>());
        head.begin_write();
        head.len.store(mid, Ordering::Relaxed);
        if pos < mid {
            insert_slot(head, pos, prefix, node.as_ptr());
        }
        head.end_write();
        w.hint = false;
    }

    /// Links `right`, the new right half of the node at `depth` of the path (the leaf when
    /// `depth` is the path's length), into its parent, splitting upward as needed.
    fn link_right_sibling(&self, w: &mut TreeWriter, depth: usize, min: (u64, *mut u8), right: *mut Header) {
        let Some(parent_depth) = depth.checked_sub(1) else {
            return self.grow_root(min, right);
        };
        let (parent, i) = w.path.steps[parent_depth];
        // SAFETY: path entries are live inner nodes of this tree.
        let parent = unsafe { &*parent };
        let head = &parent.head;
        let pos = i + 1;
        if head.len() < FANOUT {
            head.begin_write();
            insert_child(parent, pos, min, right);
            head.end_write();
            return;
        }
        let sibling = self.alloc_inner(head.level);
        // SAFETY: `sibling` was just allocated and is not published yet.
        let sibling = unsafe { &*sibling };
        let mid = split_point(pos);
        move_upper_half(head, &sibling.head, mid, |from, to| {
            sibling.child[to].store(parent.child[from].load(Ordering::Relaxed), Ordering::Relaxed);
        });
        if pos >= mid {
            insert_child(sibling, pos - mid, min, right);
        }
        let sibling_ptr = ptr::from_ref(sibling).cast_mut().cast::<Header>();
        self.link_right_sibling(w, parent_depth, at_slot(&sibling.head, 0), sibling_ptr);
        head.begin_write();
        head.len.store(mid, Ordering::Relaxed);
        if pos < mid {
            insert_child(parent, pos, min, right);
        }
        head.end_write();
    }

    /// Publishes a new root over the old one and `right`, its new right half.
    fn grow_root(&self, min: (u64, *mut u8), right: *mut Header) {
        let old = self.root.load(Ordering::Relaxed);
        // SAFETY: the root is a live tree node.
        let level = unsafe { (*old).level } + 1;
        let root = self.alloc_inner(level);
        // SAFETY: `root` was just allocated and is not published yet.
        let root_ref = unsafe { &*root };
        // SAFETY: as above for `old`.
        let old_min = at_slot(unsafe { &*old }, 0);
        insert_child(root_ref, 0, old_min, old);
        insert_child(root_ref, 1, min, right);
        self.root.store(root.cast::<Header>(), Ordering::Release);
    }

    /// A new empty leaf. Writer only (or the constructor).
    fn alloc_leaf(&self) -> *mut Leaf {
        // SAFETY: the writer is the only thread allocating tree nodes.
        unsafe { self.alloc(Leaf { head: Header::new(0) }) }
    }

    /// A new empty inner node at `level`. Writer only.
    fn alloc_inner(&self, level: usize) -> *mut Inner {
        let child = [const { AtomicPtr::new(ptr::null_mut()) }; FANOUT];
        // SAFETY: the writer is the only thread allocating tree nodes.
        unsafe { self.alloc(Inner { head: Header::new(level), child }) }
    }

    /// Moves `node` into the node arena.
    ///
    /// # Safety
    /// No other allocation from `self.nodes` may run concurrently.
    unsafe fn alloc<T>(&self, node: T) -> *mut T {
        const { assert!(size_of::<T>().is_multiple_of(64) && align_of::<T>() == 64) };
        // SAFETY: the caller guarantees exclusive allocation. The arena's chunks start on a
        // cache line and it only ever hands out multiples of 64 bytes (the assertion above),
        // so the piece is aligned for `T`, and it is `size_of::<T>()` fresh bytes.
        unsafe {
            let p = self.nodes.allocate(size_of::<T>()).as_ptr().cast::<T>();
            debug_assert!(p.is_aligned());
            p.write(node);
            p
        }
    }
}

/// Where a full node splits when `pos` is the slot a new key takes: an append keeps the left
/// node full (sequential loads leave full leaves), anything else splits in the middle.
fn split_point(pos: usize) -> usize {
    if pos == FANOUT {
        FANOUT
    } else {
        FANOUT / 2
    }
}

/// Slot `i` of `head` as `(prefix, node)`.
fn at_slot(head: &Header, i: usize) -> (u64, *mut u8) {
    (head.prefix[i].load(Ordering::Relaxed), head.node[i].load(Ordering::Relaxed))
}

/// Copies slots `mid..len` of `from` into the empty, unpublished `to`; `also(i, j)` copies
/// whatever else belongs to slot `i` into slot `j`. Leaves `from`'s length alone.
fn move_upper_half(from: &Header, to: &Header, mid: usize, mut also: impl FnMut(usize, usize)) {
    let len = from.len();
    for i in mid..len {
        let (prefix, node) = at_slot(from, i);
        to.set_slot(i - mid, prefix, node);
        also(i, i - mid);
    }
    to.len.store(len - mid, Ordering::Relaxed);
}

/// Shifts slots `pos..len` right by one and puts `(prefix, node)` at `pos`. The caller holds
/// the node's seqlock, or the node is not published yet.
fn insert_slot(head: &Header, pos: usize, prefix: u64, node: *mut u8) {
    let len = head.len();
    debug_assert!(len < FANOUT && pos <= len);
    for i in (pos..len).rev() {
        let (p, n) = at_slot(head, i);
        head.set_slot(i + 1, p, n);
    }
    head.set_slot(pos, prefix, node);
    head.len.store(len + 1, Ordering::Relaxed);
}

/// [`insert_slot`] for an inner node, moving the children along.
fn insert_child(inner: &Inner, pos: usize, min: (u64, *mut u8), child: *mut Header) {
    let len = inner.head.len();
    for i in (pos..len).rev() {
        inner.child[i + 1].store(inner.child[i].load(Ordering::Relaxed), Ordering::Release);
    }
    inner.child[pos].store(child, Ordering::Release);
    insert_slot(&inner.head, pos, min.0, min.1);
}

/// Starts loading every line of the tree node at `at` (a leaf's or an inner node's size), so
/// that a search's level check, binary search over the prefixes and read of the slot it picks
/// wait for one memory access together rather than one after another. A node's lines missed
/// the caches one at a time before: the load of each new node's level was a fifth of a random
/// insert's time (`perf annotate` of mergerandom), and the leaf's search and slot two more.
fn prefetch_node(at: *const Header) {
    let base = at.cast::<u8>();
    for line in 0..size_of::<Inner>().div_ceil(64) {
        prefetch_read(base.wrapping_add(line * 64));
    }
}

/// Waits for the writer to finish changing a node.
fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins < SPINS_BEFORE_YIELD {
        hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use super::*;

    /// Test keys: each "list node" is a boxed key, leaked for the test's lifetime.
    struct Keys;

    impl Nodes for Keys {
        fn user_key(&self, node: NonNull<u8>) -> &[u8] {
            // SAFETY: every node the tests hand the tree is a leaked `Box<Vec<u8>>`.
            unsafe { node.cast::<Vec<u8>>().as_ref() }
        }

        fn hash(&self, _: &[u8]) -> u64 {
            0
        }
    }

    fn node_of(key: &[u8]) -> NonNull<u8> {
        NonNull::from(Box::leak(Box::new(key.to_vec()))).cast()
    }

    fn key_of(node: Option<NonNull<u8>>) -> Option<Vec<u8>> {
        node.map(|n| Keys.user_key(n).to_vec())
    }

    fn insert(tree: &KeyTree, w: &mut TreeWriter, key: &[u8]) {
        tree.locate(w, &Keys, key);
        tree.insert(w, key, node_of(key));
    }

    /// Checks key order across all leaves and that every inner slot (but the first) is the
    /// smallest key of its child.
    fn check_structure(tree: &KeyTree) -> Vec<Vec<u8>> {
        fn walk(at: *const Header, out: &mut Vec<Vec<u8>>) -> Option<Vec<u8>> {
            // SAFETY: nodes of a live tree, single-threaded here.
            let head = unsafe { &*at };
            let mut min = None;
            for i in 0..head.len() {
                let key = if head.level == 0 {
                    let key = key_of(NonNull::new(head.node[i].load(Ordering::Relaxed))).unwrap();
                    assert_eq!(head.prefix[i].load(Ordering::Relaxed), prefix_of(&key), "prefix");
                    out.push(key.clone());
                    Some(key)
                } else {
                    // SAFETY: an inner node's `Header` is the first field of an `Inner`.
                    let child = unsafe { &*at.cast::<Inner>() }.child[i].load(Ordering::Relaxed);
                    let child_min = walk(child, out);
                    if i > 0 {
                        assert_eq!(key_of(NonNull::new(head.node[i].load(Ordering::Relaxed))), child_min);
                    }
                    child_min
                };
                min = min.or(key);
            }
            min
        }
        let mut keys = Vec::new();
        walk(tree.root.load(Ordering::Relaxed), &mut keys);
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "keys out of order");
        keys
    }

    #[test]
    fn floors_match_a_model_for_every_insert_order() {
        for order in ["asc", "desc", "shuffled", "short"] {
            let (tree, mut w) = KeyTree::new();
            let mut model = BTreeSet::new();
            let mut ids: Vec<u64> = (0..20_000).collect();
            match order {
                "desc" => ids.reverse(),
                "shuffled" | "short" => ids.sort_by_key(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                _ => {}
            }
            for &i in &ids {
                // "short" keys share 8-byte prefixes and differ in length, so prefix ties
                // and zero padding both get exercised.
                let key = match order {
                    "short" => format!("{:x}", i % 4096).repeat(1 + (i / 4096) as usize).into_bytes(),
                    _ => i.to_be_bytes().to_vec(),
                };
                if model.insert(key.clone()) {
                    insert(&tree, &mut w, &key);
                }
            }
            assert_eq!(check_structure(&tree), model.iter().cloned().collect::<Vec<_>>(), "{order}");
            for probe in (0..21_000u64).step_by(7) {
                for key in [probe.to_be_bytes().to_vec(), format!("{probe:x}").into_bytes(), vec![]] {
                    let want = model.range(..key.clone()).next_back().cloned();
                    assert_eq!(key_of(tree.floor_before(&Keys, Some(&key))), want, "{order} {key:?}");
                }
            }
            assert_eq!(key_of(tree.floor_before(&Keys, None)), model.last().cloned());
        }
    }

    #[test]
    fn locate_after_the_last_insert_takes_the_fast_path_only_when_exact() {
        let (tree, mut w) = KeyTree::new();
        let mut model = BTreeSet::new();
        // Ascending, then keys going back into earlier leaves, then sequential from there.
        let keys = (0..1000u64).map(|i| i * 10).chain((0..100).map(|i| i * 100 + 5)).chain(501..600);
        for i in keys {
            if model.insert(i) {
                insert(&tree, &mut w, &i.to_be_bytes());
            }
        }
        let want: Vec<Vec<u8>> = model.iter().map(|i| i.to_be_bytes().to_vec()).collect();
        assert_eq!(check_structure(&tree), want);
    }

    #[test]
    fn sequential_loads_leave_full_leaves() {
        let (tree, mut w) = KeyTree::new();
        for i in 0..FANOUT as u64 * 100 {
            insert(&tree, &mut w, &i.to_be_bytes());
        }
        check_structure(&tree);
        let leaves = 100;
        let inners = 4 + 1; // 100 leaves under 4 level-1 nodes and a root
        assert_eq!(tree.memory_usage(), leaves * size_of::<Leaf>() + inners * size_of::<Inner>());
    }

    #[test]
    fn readers_racing_the_writer_always_get_a_smaller_key() {
        let (tree, mut w) = KeyTree::new();
        let tree = Arc::new(tree);
        // Even keys go in first and are stable; readers probe odd keys while the writer adds
        // the odd keys in random order, splitting leaves and inner nodes all the while.
        let n = 60_000u64;
        for i in (0..n).step_by(2) {
            insert(&tree, &mut w, &i.to_be_bytes());
        }
        let done = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..2u64)
            .map(|r| {
                let (tree, done) = (Arc::clone(&tree), Arc::clone(&done));
                std::thread::spawn(move || {
                    let mut x = 0x2545_f491_4f6c_dd1du64 + r;
                    let mut probes = 0u64;
                    while !done.load(Ordering::Relaxed) || probes < 10_000 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let target = (x % (n / 2)) * 2 + 1;
                        let got = key_of(tree.floor_before(&Keys, Some(&target.to_be_bytes())));
                        let got = u64::from_be_bytes(got.expect("key 0 is always below").try_into().unwrap());
                        // Exactness is for a quiet tree (checked below): a reader that raced
                        // splits may land further down, which only lengthens its list walk.
                        assert!(got < target, "{got} >= {target}");
                        probes += 1;
                    }
                    probes
                })
            })
            .collect();
        let mut odd: Vec<u64> = (1..n).step_by(2).collect();
        odd.sort_by_key(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        for i in odd {
            insert(&tree, &mut w, &i.to_be_bytes());
        }
        done.store(true, Ordering::Relaxed);
        for reader in readers {
            assert!(reader.join().unwrap() >= 10_000);
        }
        assert_eq!(check_structure(&tree).len(), n as usize);
        for target in (1..n).step_by(97) {
            let got = key_of(tree.floor_before(&Keys, Some(&target.to_be_bytes())));
            assert_eq!(got, Some((target - 1).to_be_bytes().to_vec()));
        }
    }

    #[test]
    fn prefixes_order_like_keys() {
        let keys: [&[u8]; 7] = [b"", b"\0", b"a", b"a\0", b"abcdefgh", b"abcdefgh\0", b"abcdefgi"];
        for w in keys.windows(2) {
            assert!(prefix_of(w[0]) <= prefix_of(w[1]), "{w:?}");
        }
    }
}
