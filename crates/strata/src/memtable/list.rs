//! The memtable's ordered list: entries in key order on one linked list whose nodes live in an
//! [`Arena`] and hold their entry inline (LevelDB's `db/skiplist.h` without the upper levels),
//! plus two indexes over it. One writer at a time, any number of lock-free readers. It owns the
//! node layout, the entry encoding and the publication protocol; it must not know about
//! sequence-number visibility or tombstones (that is the memtable's and the read path's
//! business), and nodes are never removed.
//!
//! Node layout (one arena allocation, 8-byte aligned):
//!
//! ```text
//! [next] [varint klen][internal key][varint vlen][value] [pad]
//! ^ a `Node` points here
//! ```
//!
//! `next`, the key length and the start of the key share a cache line. There is no `prev`
//! link: the memtable's bytes count against `write_buffer_size`, so 8 more bytes a node meant
//! about a tenth more flushes of small entries, and as many more compactions of what they
//! wrote (LinkBench, docs/performance.md).
//!
//! Two indexes find nodes without walking the list:
//! - A [`KeyTree`] (a B+-tree over a sample of the user keys) stands in for a skiplist's upper
//!   levels: a search asks it for a node of the largest sampled key below the target and walks
//!   the list from there, one to three steps. Its inner nodes stay in the CPU caches and its
//!   leaves compare 8-byte key prefixes, so a random search of a million keys costs a few
//!   cache misses where a skiplist's costs a dozen. The sample is every key whose hash picks
//!   it (one in four, whatever order keys arrive in) and every key whose insert walked past
//!   [`TREE_WALK_LIMIT`] nodes: a slot for every key cost 28 bytes per key, a fifth of a
//!   small entry's footprint, and the memtable's bytes decide how often it is flushed (one
//!   in two cost ~15 bytes per random key; one in four ~11, for searches of a memtable of a
//!   million keys 2-3% slower).
//! - A [`HashIndex`] maps each user key to the node of its newest version. A point read of a
//!   key starts there instead of searching. A key's next version (a higher sequence number,
//!   the usual case) goes right before that node; the writer finds the node's predecessor with
//!   the same search a new key makes. A search that walked far to an update puts the key it
//!   stepped over last in the tree, naming that key's oldest version, so the versions of a hot
//!   key the sample missed are stepped over once, not on every update after it.
//!
//! A value longer than [`INLINE_VALUE_MAX`] is not stored in the node: `[value]` is then the
//! 8-byte address of the value's bytes in a second arena. Nodes stay packed together (80k
//! nodes of 800-byte values fit in ~4 MiB instead of ~70 MiB), so the nodes a search touches
//! miss the CPU caches and the TLB far less; only the reader of a value pays the one extra hop.
//!
//! Concurrency: a node is fully written (entry and its `next`) before a `Release` store links
//! it in, and it is linked before either index names it; readers load links with `Acquire`, so
//! they never see a half-built node. Entries are immutable once linked, and nodes are freed
//! only when the arena drops.

use std::cmp::Ordering as CmpOrdering;
use std::ptr::{self, NonNull};
use std::slice;
use std::sync::atomic::{AtomicPtr, Ordering};

use parking_lot::Mutex;

use super::arena::Arena;
use super::hash_index::{HashIndex, Nodes, Probe};
use super::key_tree::{KeyTree, TreeWriter};
use super::slot_hint::SlotHint;
use crate::key;
use crate::util::hash::hash64;
use crate::util::prefetch::prefetch_read;

const POINTER: usize = size_of::<AtomicPtr<u8>>();

/// Values up to this many bytes live inside their node; longer ones in the value arena.
pub(super) const INLINE_VALUE_MAX: usize = 64;

/// A scan prefetches at most this many bytes of the next value; the hardware prefetcher follows
/// a longer value once it is being read in order.
pub(super) const VALUE_PREFETCH_MAX: usize = 1024;

/// An insert that walked past this many nodes from where the tree sent it puts its key in the
/// tree whatever its hash says, so that regions the hash left sparse, or that hold many
/// versions, do not make every later search there walk far.
const TREE_WALK_LIMIT: usize = 3;

/// Whether a new key with this hash goes into the tree: one key in four, by two bits the hash
/// index uses for neither its home slot (the low 32) nor its tag (the top 16), so the sample
/// does not depend on the order keys arrive in (a descending load, whose walks are all short,
/// still leaves a tree key every fourth key on average).
#[inline]
fn in_tree_sample(hash: u64) -> bool {
    (hash >> 40) & 3 == 0
}

/// Address of a node of one particular [`EntryList`], pointing at its `next` slot.
///
/// Invariant (module-internal): a `Node` is only obtained from, and only passed back to, the
/// list whose arena holds it; every accessor below relies on that.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Node(NonNull<u8>);

// SAFETY: a `Node` is an address and nothing else; reading through it always goes through
// `&EntryList`, whose lifetime (or an `Arc` owning it) keeps the memory alive, and the memory is
// published with Release/Acquire. Moving or sharing the address itself is harmless.
unsafe impl Send for Node {}
// SAFETY: see the `Send` impl above.
unsafe impl Sync for Node {}

/// A concurrent ordered list of `(internal key, value)` entries by [`key::compare`], indexed.
pub(super) struct EntryList {
    /// Nodes: links, key and short values.
    arena: Arena,
    /// The bytes of values longer than [`INLINE_VALUE_MAX`].
    values: Arena,
    /// Sentinel before the first node, with an empty entry; its key is never compared.
    head: Node,
    /// User key -> a node of one of its versions, in key order.
    tree: KeyTree,
    /// User key -> node of its newest version.
    index: HashIndex,
    /// Writer-only state. The lock is uncontended when callers honour the single-writer
    /// requirement; it exists so that breaking the requirement is slow rather than unsound.
    writer: Mutex<Writer>,
}

/// State only the writer touches.
struct Writer {
    tree: TreeWriter,
    /// The first node of the user key most recently added to the list.
    last_new: Option<Node>,
}

impl EntryList {
    /// An empty list whose index holds `expected_keys` user keys without growing.
    pub(super) fn with_expected_keys(expected_keys: usize) -> EntryList {
        let (arena, values) = (Arena::new(), Arena::new());
        // SAFETY: the arenas are local to this call, so no other `allocate` can run.
        let head = unsafe { build_node(&arena, &[], &[], None) };
        let (tree, tree_writer) = KeyTree::new();
        EntryList {
            arena,
            values,
            head,
            tree,
            index: HashIndex::with_capacity(expected_keys),
            writer: Mutex::new(Writer { tree: tree_writer, last_new: None }),
        }
    }

    /// Distinct user keys in the list.
    pub(super) fn distinct_keys(&self) -> usize {
        self.index.len()
    }

    /// Inserts the entry `(user_key ++ trailer, value)`.
    ///
    /// REQUIRES: at most one thread inserts at a time (the caller serializes writers);
    /// concurrent readers are fine. An internal lock keeps a violation memory-safe, at a cost.
    /// REQUIRES: no entry with an equal internal key is already in the list.
    pub(super) fn insert(&self, user_key: &[u8], trailer: u64, value: &[u8]) {
        let mut w = self.writer.lock();
        let hash = hash64(user_key);
        // Copying a long value gives the index slot's cache miss time to resolve.
        self.index.prefetch(hash);
        // SAFETY: holding `writer` makes this the only `allocate` call on `values`.
        let long = unsafe { store_long_value(&self.values, value) };
        // A key right after the last new key, and before that key's successor, is new to the
        // list: skip the probe's cache miss and the search (sequential loads).
        let after_last_new = self.follows_last_new(&w, user_key);
        let newest = match after_last_new {
            Some(_) => None,
            None => match self.index.find(self, hash, user_key) {
                Probe::Found(n) => Some(Node(n)),
                Probe::Absent | Probe::Unknown => None,
            },
        };
        // SAFETY: holding `writer` makes this the only `allocate` call on either arena.
        let node = unsafe { build_node(&self.arena, &[user_key, &trailer.to_le_bytes()], value, long) };
        // `steps` is `None` when the place came without a search (and the tree was not asked).
        let (prev, succ, start, steps) = match after_last_new {
            Some((prev, succ)) => (prev, succ, self.head, None),
            None => {
                let start = self.tree.locate(&mut w.tree, self, user_key).map_or(self.head, Node);
                // The tree names a node of a smaller user key; this key's newer versions, and
                // the nodes of the keys between, lie between it and the new node's place.
                let (prev, succ, steps) = self.walk(start, self.key(node), CmpOrdering::Equal);
                (prev, succ, start, Some(steps))
            }
        };
        debug_assert!(succ.is_none_or(|n| self.key(n) != self.key(node)), "duplicate key");
        let known = steps.is_some()
            && ((prev != self.head && self.has_user_key(prev, user_key))
                || succ.is_some_and(|n| self.has_user_key(n, user_key)));
        self.link_between(prev, node, succ);
        if !known {
            // A long walk means the tree is sparse here: index this key too, so that the next
            // search near it is short whatever the hash said.
            if steps.is_some_and(|s| s >= TREE_WALK_LIMIT) || in_tree_sample(hash) {
                if steps.is_none() {
                    self.tree.locate(&mut w.tree, self, user_key);
                }
                self.tree.insert(&mut w.tree, user_key, node.0);
            }
            w.last_new = Some(node);
        } else if steps.is_some_and(|s| s >= TREE_WALK_LIMIT) {
            self.index_walked_key(&mut w, start, prev, user_key);
        }
        // A higher trailer sorts first: the new entry is then the key's newest version.
        if newest.is_none_or(|n| trailer > key::trailer(self.key(n))) {
            self.set_newest(hash, user_key, node);
        }
    }

    /// Writer only, after a long walk to a new version of `user_key` from the tree's `start`:
    /// puts the key of `prev` (the node the walk ended on, the oldest version of the key
    /// before `user_key`) in the tree, naming `prev`, unless the tree holds it already (it is
    /// then `start`'s key: the largest tree key below `user_key`). Such walks step over the
    /// versions of a key the tree does not hold, typically a hot one; from its oldest version
    /// on, later searches near it skip them all.
    fn index_walked_key(&self, w: &mut Writer, start: Node, prev: Node, user_key: &[u8]) {
        if prev == self.head || self.has_user_key(prev, user_key) {
            return;
        }
        let prev_key = key::user_key(self.key(prev));
        if start != self.head && self.has_user_key(start, prev_key) {
            return;
        }
        self.tree.locate(&mut w.tree, self, prev_key);
        self.tree.insert(&mut w.tree, prev_key, prev.0);
    }

    /// Writer only: `(prev, succ)` for a new node of `user_key` when the key sorts after the
    /// last new key and before that key's successor, which proves it is not in the list.
    fn follows_last_new(&self, w: &Writer, user_key: &[u8]) -> Option<(Node, Option<Node>)> {
        let last = w.last_new?;
        if key::compare_user_keys(key::user_key(self.key(last)), user_key) != CmpOrdering::Less {
            return None;
        }
        // `last` was the key's first node: its newer versions went before it, so the node
        // after it belongs to a larger key (or to an older version, which fails the test).
        let succ = self.next(last);
        match succ {
            Some(n) if key::compare_user_keys(user_key, key::user_key(self.key(n))) != CmpOrdering::Less => {
                None
            }
            _ => Some((last, succ)),
        }
    }

    /// Writer only: links the unpublished `node` between `prev` and `succ` (adjacent now).
    fn link_between(&self, prev: Node, node: Node, succ: Option<Node>) {
        // Relaxed: `node` is unreachable until the Release store below publishes it.
        self.link(node).store(succ.map_or(ptr::null_mut(), |n| n.0.as_ptr()), Ordering::Relaxed);
        self.link(prev).store(node.0.as_ptr(), Ordering::Release);
    }

    /// Points the index entry of `user_key` (hashing to `hash`) at `node`, already linked.
    fn set_newest(&self, hash: u64, user_key: &[u8], node: Node) {
        self.index.set(self, hash, user_key, node.0);
    }

    /// The first node whose key is `>= lookup` if it has `lookup`'s user key; otherwise `None`
    /// or the first node of a later key. Uses the index: no search when the newest version
    /// of the key is visible at `lookup`'s sequence number, or when the key is absent.
    pub(super) fn seek_versions(&self, lookup: &[u8]) -> Option<Node> {
        let user_key = key::user_key(lookup);
        match self.index.find(self, hash64(user_key), user_key) {
            Probe::Absent => None,
            Probe::Found(n) if key::compare(self.key(Node(n)), lookup) != CmpOrdering::Less => Some(Node(n)),
            Probe::Found(_) | Probe::Unknown => self.seek(lookup),
        }
    }

    /// True when `node`'s internal key has the user key `user_key`.
    fn has_user_key(&self, node: Node, user_key: &[u8]) -> bool {
        key::same_user_key(key::user_key(self.key(node)), user_key)
    }

    /// The node the tree names for the largest user key below `user_key` (or the largest of
    /// all for `None`), else `head`: a search for any key of `user_key` may start there.
    fn start_before(&self, user_key: Option<&[u8]>) -> Node {
        self.tree.floor_before(self, user_key).map_or(self.head, Node)
    }

    /// The last node from `from` on (`from` itself if none follows) whose key compares with
    /// `target` below `limit` (`Equal` finds the last key `< target`, `Greater` the last
    /// `<= target`), the successor the walk compared and stopped at, and how many nodes it
    /// stepped over. Callers that want the first node past `target` must take that successor:
    /// loading the link again could return a node a concurrent insert has just linked in
    /// between, which may sort below `target`.
    /// REQUIRES: `from` is `head` or has a key that compares below `limit`.
    fn walk(&self, from: Node, target: &[u8], limit: CmpOrdering) -> (Node, Option<Node>, usize) {
        let (mut x, mut steps) = (from, 0);
        loop {
            match self.next(x) {
                Some(n) if key::compare(self.key(n), target) < limit => {
                    x = n;
                    steps += 1;
                }
                past => return (x, past, steps),
            }
        }
    }

    /// The first node whose key is `>= target`.
    pub(super) fn seek(&self, target: &[u8]) -> Option<Node> {
        let start = self.start_before(Some(key::user_key(target)));
        self.walk(start, target, CmpOrdering::Equal).1
    }

    /// The last node whose key is `< target`, or `<= target` when `inclusive`.
    pub(super) fn seek_before(&self, target: &[u8], inclusive: bool) -> Option<Node> {
        let limit = if inclusive { CmpOrdering::Greater } else { CmpOrdering::Equal };
        let (x, ..) = self.walk(self.start_before(Some(key::user_key(target))), target, limit);
        (x != self.head).then_some(x)
    }

    /// The first node, if any.
    pub(super) fn first(&self) -> Option<Node> {
        self.next(self.head)
    }

    /// The last node, if any.
    pub(super) fn last(&self) -> Option<Node> {
        let mut x = self.start_before(None);
        while let Some(n) = self.next(x) {
            x = n;
        }
        (x != self.head).then_some(x)
    }

    /// The node after `node`.
    #[inline]
    pub(super) fn successor(&self, node: Node) -> Option<Node> {
        self.next(node)
    }

    /// The node's internal key.
    #[inline]
    pub(super) fn key(&self, node: Node) -> &[u8] {
        self.entry(node).0
    }

    /// The node's value.
    #[inline]
    pub(super) fn value(&self, node: Node) -> &[u8] {
        self.entry(node).1
    }

    /// The node's internal key and value.
    #[inline]
    pub(super) fn entry(&self, node: Node) -> (&[u8], &[u8]) {
        // SAFETY: `node` belongs to this list (module invariant), so it was fully written by
        // `build_node` before a Release store made it reachable, and we reached it through an
        // Acquire load; the entry bytes follow the `next` slot, exactly as `build_node` laid
        // them out, are never written again, and live as long as the arenas, i.e. `&self`. A
        // long value's address was written by `build_node` as a pointer into `self.values`
        // (so it keeps its provenance) to `vlen` initialized bytes, also never written again.
        unsafe {
            let (klen, p) = read_varint(node.0.as_ptr().add(POINTER));
            let key = slice::from_raw_parts(p, klen);
            let (vlen, p) = read_varint(p.add(klen));
            let value = if vlen > INLINE_VALUE_MAX { p.cast::<*const u8>().read_unaligned() } else { p };
            (key, slice::from_raw_parts(value, vlen))
        }
    }

    /// Where the index's probes start (see `slot_hint`).
    pub(super) fn slot_hint(&self) -> SlotHint {
        self.index.slot_hint()
    }

    /// Bytes of the key tree's nodes.
    #[cfg(test)]
    pub(super) fn tree_bytes(&self) -> usize {
        self.tree.memory_usage()
    }

    /// Bytes the list's arenas have handed out, plus its index.
    pub(super) fn memory_usage(&self) -> usize {
        self.arena.memory_usage()
            + self.values.memory_usage()
            + self.index.memory_usage()
            + self.tree.memory_usage()
    }

    /// For a scan that has just stepped to `node` (whose successor's node it asked for one step
    /// earlier): starts loading the value of that successor and the node after it, so each
    /// arrives while the caller works on the current entry.
    #[inline]
    pub(super) fn prefetch_ahead(&self, node: Node) {
        let Some(next) = self.next(node) else { return };
        if let Some(after) = self.next(next) {
            prefetch_read(after.0.as_ptr().cast_const());
        }
        let value = self.value(next);
        for line in (0..value.len().min(VALUE_PREFETCH_MAX)).step_by(64) {
            prefetch_read(value.as_ptr().wrapping_add(line));
        }
    }

    /// The node's successor.
    #[inline]
    fn next(&self, node: Node) -> Option<Node> {
        NonNull::new(self.link(node).load(Ordering::Acquire)).map(Node)
    }

    /// The node's `next` slot.
    #[inline]
    fn link(&self, node: Node) -> &AtomicPtr<u8> {
        // SAFETY: `node` belongs to this list (module invariant), so it points at the 8-byte
        // aligned `next` slot `build_node` initialized, inside an arena allocation that lives
        // as long as `&self`.
        unsafe { &*node.0.as_ptr().cast::<AtomicPtr<u8>>() }
    }
}

impl Nodes for EntryList {
    fn user_key(&self, node: NonNull<u8>) -> &[u8] {
        key::user_key(self.key(Node(node)))
    }

    fn hash(&self, key: &[u8]) -> u64 {
        hash64(key)
    }
}

/// Copies a value longer than [`INLINE_VALUE_MAX`] into `values` and returns its address, for
/// [`build_node`]; `None` for a value that lives inside its node.
///
/// # Safety
/// No other `allocate` may run on `values` concurrently (the caller is the single writer).
unsafe fn store_long_value(values: &Arena, value: &[u8]) -> Option<NonNull<u8>> {
    (value.len() > INLINE_VALUE_MAX).then(|| {
        // SAFETY: the caller guarantees exclusive allocation; the fresh allocation holds
        // `value.len()` bytes and nobody else can see it yet.
        unsafe {
            let bytes = values.allocate(value.len());
            put(bytes.as_ptr(), value);
            bytes
        }
    })
}

/// Allocates a node with a null link and the entry whose internal key is the
/// concatenation of `key_parts` (the head sentinel passes none). A value longer than
/// [`INLINE_VALUE_MAX`] is not copied: `long` is its address from [`store_long_value`], and the
/// node keeps that.
///
/// # Safety
/// No other `allocate` may run on `arena` concurrently (the caller is the single writer), and
/// `long` is `store_long_value(_, value)` of this list's value arena.
unsafe fn build_node(arena: &Arena, key_parts: &[&[u8]], value: &[u8], long: Option<NonNull<u8>>) -> Node {
    let klen: usize = key_parts.iter().map(|p| p.len()).sum();
    let (kvar, kn) = encode_varint(klen);
    let (vvar, vn) = encode_varint(value.len());
    debug_assert_eq!(long.is_some(), value.len() > INLINE_VALUE_MAX);
    let stored = if long.is_some() { POINTER } else { value.len() };
    let size = POINTER + kn + klen + vn + stored;
    // SAFETY: the caller guarantees exclusive allocation.
    let base = unsafe { arena.allocate(size) }.as_ptr();
    // SAFETY: `base..base + size` is a fresh allocation nobody else can see yet, 8-byte aligned,
    // and the writes below stay inside it: the `next` pointer, then exactly the entry bytes
    // (`stored` of them for the value or its address). A long value's address (of `value.len()` bytes in the value arena) is written
    // as a pointer (unaligned: it follows the varints), which keeps its provenance.
    unsafe {
        base.cast::<*mut u8>().write(ptr::null_mut());
        let mut p = put(base.add(POINTER), &kvar[..kn]);
        for part in key_parts {
            p = put(p, part);
        }
        p = put(p, &vvar[..vn]);
        if let Some(bytes) = long {
            p.cast::<*const u8>().write_unaligned(bytes.as_ptr().cast_const());
        } else {
            put(p, value);
        }
        Node(NonNull::new_unchecked(base))
    }
}

/// Copies `bytes` to `dst` and returns the byte after them.
///
/// # Safety
/// `dst` must be valid for `bytes.len()` writes and not overlap `bytes`.
#[inline]
unsafe fn put(dst: *mut u8, bytes: &[u8]) -> *mut u8 {
    // SAFETY: guaranteed by the caller.
    unsafe {
        ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len());
        dst.add(bytes.len())
    }
}

/// LEB128-encodes `v` into a stack buffer; returns it and the length used.
#[inline]
fn encode_varint(mut v: usize) -> ([u8; 10], usize) {
    let mut buf = [0u8; 10];
    let mut n = 0;
    while v >= 0x80 {
        buf[n] = v as u8 | 0x80;
        v >>= 7;
        n += 1;
    }
    buf[n] = v as u8;
    (buf, n + 1)
}

/// Decodes a varint written by [`encode_varint`]; returns it and the byte after it.
///
/// # Safety
/// `p` must point at a complete varint written by `encode_varint`.
#[inline]
unsafe fn read_varint(mut p: *const u8) -> (usize, *const u8) {
    let mut v = 0usize;
    let mut shift = 0;
    loop {
        // SAFETY: the caller guarantees a complete varint, so every byte up to and including
        // the one without the continuation bit is readable.
        let b = unsafe { p.read() };
        // SAFETY: as above; at worst this points one past the varint, inside the entry.
        p = unsafe { p.add(1) };
        v |= usize::from(b & 0x7f) << shift;
        if b < 0x80 {
            return (v, p);
        }
        shift += 7;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, pack_trailer, ValueKind};

    fn keys(list: &EntryList) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut n = list.first();
        while let Some(node) = n {
            out.push(list.key(node).to_vec());
            n = list.successor(node);
        }
        out
    }

    #[test]
    fn in_order_reverse_and_shuffled_inserts_all_come_out_sorted() {
        for order in ["asc", "desc", "shuffled"] {
            let list = EntryList::with_expected_keys(0);
            let mut ids: Vec<u32> = (0..2000).collect();
            match order {
                "desc" => ids.reverse(),
                "shuffled" => ids.sort_by_key(|i| i.wrapping_mul(2_654_435_761)),
                _ => {}
            }
            for i in &ids {
                list.insert(format!("k{i:06}").as_bytes(), pack_trailer(1, 1), &i.to_le_bytes());
            }
            let want: Vec<Vec<u8>> = (0..2000)
                .map(|i| make_internal_key(format!("k{i:06}").as_bytes(), 1, ValueKind::Put))
                .collect();
            assert_eq!(keys(&list), want, "{order}");
            let last = list.last().unwrap();
            assert_eq!(list.value(last), 1999u32.to_le_bytes());
        }
    }

    #[test]
    fn an_update_behind_a_hot_key_puts_that_key_in_the_tree() {
        // A key the hash sample leaves out, and one that sorts right after it.
        let hot =
            (0u32..).map(|i| format!("j{i:04}")).find(|k| !in_tree_sample(hash64(k.as_bytes()))).unwrap();
        let next = format!("{hot}~");
        let list = EntryList::with_expected_keys(0);
        list.insert(next.as_bytes(), pack_trailer(1, 1), b"v");
        for seq in 2..=100 {
            list.insert(hot.as_bytes(), pack_trailer(seq, 1), b"v");
        }
        let before = list.start_before(Some(next.as_bytes()));
        assert!(before == list.head || !list.has_user_key(before, hot.as_bytes()), "not sampled");
        // The update of `next` walks past 99 versions of `hot`; it leaves `hot` in the tree,
        // naming its oldest version, so later searches for `next` start right before it.
        list.insert(next.as_bytes(), pack_trailer(101, 1), b"w");
        let start = list.start_before(Some(next.as_bytes()));
        assert!(list.has_user_key(start, hot.as_bytes()));
        assert_eq!(key::trailer(list.key(start)), pack_trailer(2, 1), "the oldest version");
        let newest = list.next(start).unwrap();
        assert_eq!((key::user_key(list.key(newest)), list.value(newest)), (next.as_bytes(), &b"w"[..]));
        assert_eq!(keys(&list).len(), 101);
    }

    #[test]
    fn long_values_live_outside_the_nodes_and_read_back_intact() {
        let list = EntryList::with_expected_keys(0);
        let sizes = [0usize, 1, INLINE_VALUE_MAX - 1, INLINE_VALUE_MAX, INLINE_VALUE_MAX + 1, 800, 300_000];
        for (i, &n) in sizes.iter().enumerate() {
            let value: Vec<u8> = (0..n).map(|b| (b * 31 + i) as u8).collect();
            list.insert(format!("k{i}").as_bytes(), pack_trailer(1, 1), &value);
        }
        let mut node = list.first();
        for (i, &n) in sizes.iter().enumerate() {
            let got = list.value(node.unwrap());
            assert_eq!(got.len(), n);
            assert!(got.iter().enumerate().all(|(b, &v)| v == (b * 31 + i) as u8), "value {i}");
            node = list.successor(node.unwrap());
        }
        // Only the long values (and nothing else) went to the value arena.
        let long: usize =
            sizes.iter().filter(|&&n| n > INLINE_VALUE_MAX).map(|n| n.next_multiple_of(8)).sum();
        assert_eq!(list.values.memory_usage(), long);
        assert!(list.arena.memory_usage() < 2048, "nodes hold only addresses of long values");
    }

    /// Checks the level-0 order and the index against the list itself.
    fn check_structure(list: &EntryList) {
        let mut prev = list.head;
        let mut newest = std::collections::BTreeMap::new();
        while let Some(node) = list.successor(prev) {
            if prev != list.head {
                assert_eq!(key::compare(list.key(prev), list.key(node)), CmpOrdering::Less, "order");
            }
            newest.entry(key::user_key(list.key(node)).to_vec()).or_insert(node);
            prev = node;
        }
        assert_eq!(list.distinct_keys(), newest.len());
        for (user_key, node) in newest {
            let found = list.index.find(list, hash64(&user_key), &user_key);
            assert_eq!(found, Probe::Found(node.0), "index names the newest version");
        }
    }

    #[test]
    fn updates_through_the_index_keep_order_links_and_index_exact() {
        let list = EntryList::with_expected_keys(0);
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut model = std::collections::BTreeSet::new();
        for seq in 1..=20_000u64 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let user_key = format!("key{:05}", rng % 3000).into_bytes();
            // Mostly rising sequence numbers (the index path); every 16th goes back in time,
            // which must take the search path and leave the index alone.
            let seq = if seq % 16 == 0 { seq / 4 * 3 } else { seq * 2 };
            let trailer = pack_trailer(seq, 1);
            let ikey = [user_key.as_slice(), &trailer.to_le_bytes()].concat();
            if model.insert(ikey) {
                list.insert(&user_key, trailer, &seq.to_le_bytes());
            }
        }
        check_structure(&list);
        let want: Vec<Vec<u8>> = model.iter().cloned().collect();
        let mut sorted_by_compare = want.clone();
        sorted_by_compare.sort_by(|a, b| key::compare(a, b));
        assert_eq!(keys(&list), sorted_by_compare);
        // A point seek through the index lands where a search does, at every snapshot.
        for ikey in want.iter().step_by(7) {
            let user_key = key::user_key(ikey);
            for seq in [0, 1, 5_000, 20_000, 50_000] {
                let lookup = key::seek_key(user_key, seq);
                let searched = list.seek(&lookup).filter(|&n| list.has_user_key(n, user_key));
                let via_index = list.seek_versions(&lookup).filter(|&n| list.has_user_key(n, user_key));
                assert_eq!(via_index, searched, "seq {seq}");
            }
        }
        assert_eq!(list.seek_versions(&key::seek_key(b"absent", 9)), None);
    }

    #[test]
    fn varints_round_trip() {
        for v in [0usize, 1, 127, 128, 300, 1 << 20, usize::MAX] {
            let (buf, n) = encode_varint(v);
            // SAFETY: `buf` holds a complete varint from `encode_varint`.
            let (got, end) = unsafe { read_varint(buf.as_ptr()) };
            assert_eq!(got, v);
            assert_eq!(end as usize - buf.as_ptr() as usize, n);
        }
    }
}
