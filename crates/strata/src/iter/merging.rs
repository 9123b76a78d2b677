//! Merges several sorted internal iterators into one, in both directions (LevelDB's merger):
//! moving forward, the current child is the smallest; moving backward, the largest. When the
//! direction changes, every other child is repositioned around the current key first.
//!
//! A step compares the current child against one other, the runner-up, instead of every child:
//! only the current child moves on `next`/`prev`, so the best of the others stays the best until
//! the current child passes it. Long scans over one level (the common case) then cost one key
//! comparison per entry whatever the number of levels.

use std::cmp::Ordering;

use super::InternalIterator;
use crate::error::{Error, Result};
use crate::key;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// The union of several internal iterators, as one sorted stream.
pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    current: Option<usize>,
    /// The best valid child other than `current` in `direction` as of the last full pick; `None`
    /// when `current` is the only valid child.
    runner_up: Option<usize>,
    /// A copy of `runner_up`'s key as of that pick. The runner-up does not move until the next
    /// pick, and comparing against the copy spares a walk down its iterator stack (level, table,
    /// block) on every step.
    runner_up_key: Vec<u8>,
    direction: Direction,
    /// The first error a child reported before it was repositioned. A child that fails drops
    /// out of the merge (entries were skipped), and its next seek clears its own error
    /// (`TableIterator` starts afresh), so without this a direction change or a re-seek would
    /// leave `status` `Ok` after a scan that silently missed entries.
    err: Option<Error>,
}

impl MergingIterator {
    /// Merges `children`; they must all use the internal-key order.
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        Self {
            children,
            current: None,
            runner_up: None,
            runner_up_key: Vec::new(),
            direction: Direction::Forward,
            err: None,
        }
    }

    /// Keeps the first child error before children are repositioned (see `err`).
    fn keep_child_error(&mut self) {
        if self.err.is_none() {
            self.err = self.children.iter().find_map(|c| c.status().err());
        }
    }

    /// Forgets where it is, as if just created (the children keep their positions; any seek
    /// repositions them all). For reusing a merging iterator over the same children.
    pub fn forget_position(&mut self) {
        self.current = None;
        self.runner_up = None;
        self.runner_up_key.clear();
        self.direction = Direction::Forward;
        self.err = None;
    }

    /// Whether child `a` goes before child `b` in the order `want` asks for (`Less`: forward);
    /// on equal keys the lower index goes first.
    fn before(&self, a: usize, b: usize, want: Ordering) -> bool {
        match key::compare(self.children[a].key(), self.children[b].key()) {
            Ordering::Equal => a < b,
            ord => ord == want,
        }
    }

    /// Scans every child for the best and the runner-up, and has the best read its entry (a
    /// child may report a key it has not read; see `InternalIterator::prepare_value`). A child
    /// whose read fails drops out and the scan runs again.
    fn pick(&mut self, want: Ordering) {
        let (best, second) = loop {
            let (best, second) = self.best_two(want);
            match best {
                Some(b) if !self.children[b].prepare_value() => continue,
                _ => break (best, second),
            }
        };
        self.current = best;
        self.runner_up = second;
        self.runner_up_key.clear();
        if let Some(s) = second {
            self.runner_up_key.extend_from_slice(self.children[s].key());
        }
    }

    /// The best valid child in `want`'s direction and the runner-up.
    fn best_two(&self, want: Ordering) -> (Option<usize>, Option<usize>) {
        let (mut best, mut second): (Option<usize>, Option<usize>) = (None, None);
        for i in 0..self.children.len() {
            if !self.children[i].valid() {
                continue;
            }
            match best {
                Some(b) if !self.before(i, b, want) => {
                    if second.is_none_or(|s| self.before(i, s, want)) {
                        second = Some(i);
                    }
                }
                _ => {
                    second = best;
                    best = Some(i);
                }
            }
        }
        (best, second)
    }

    /// After the current child `cur` stepped in `want`'s direction (and no other child moved):
    /// keeps it current while it still goes before the runner-up, else scans every child.
    fn after_step(&mut self, cur: usize, want: Ordering) {
        if self.children[cur].valid() && self.runner_up.is_none_or(|r| self.before_runner_up(cur, r, want)) {
            return;
        }
        self.pick(want);
    }

    /// `before(cur, r, want)` for the runner-up `r`, against its saved key.
    fn before_runner_up(&self, cur: usize, r: usize, want: Ordering) -> bool {
        match key::compare(self.children[cur].key(), &self.runner_up_key) {
            Ordering::Equal => cur < r,
            ord => ord == want,
        }
    }

    fn find_smallest(&mut self) {
        self.pick(Ordering::Less);
    }

    fn find_largest(&mut self) {
        self.pick(Ordering::Greater);
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn seek_to_first(&mut self) {
        self.keep_child_error();
        self.children.iter_mut().for_each(|c| c.seek_to_first());
        self.direction = Direction::Forward;
        self.find_smallest();
    }

    fn seek_to_last(&mut self) {
        self.keep_child_error();
        self.children.iter_mut().for_each(|c| c.seek_to_last());
        self.direction = Direction::Reverse;
        self.find_largest();
    }

    fn seek(&mut self, target: &[u8]) {
        self.keep_child_error();
        self.children.iter_mut().for_each(|c| c.seek(target));
        self.direction = Direction::Forward;
        self.find_smallest();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.keep_child_error();
        self.children.iter_mut().for_each(|c| c.seek_for_prev(target));
        self.direction = Direction::Reverse;
        self.find_largest();
    }

    fn next(&mut self) {
        let Some(cur) = self.current else { return };
        if self.direction != Direction::Forward {
            self.keep_child_error();
            let target = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i != cur {
                    c.seek(&target);
                    if c.valid() && key::compare(c.key(), &target) == Ordering::Equal {
                        c.next();
                    }
                }
            }
            self.direction = Direction::Forward;
            self.children[cur].next();
            return self.find_smallest();
        }
        self.children[cur].next();
        self.after_step(cur, Ordering::Less);
    }

    fn prev(&mut self) {
        let Some(cur) = self.current else { return };
        if self.direction != Direction::Reverse {
            self.keep_child_error();
            let target = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i != cur {
                    c.seek_for_prev(&target);
                    if c.valid() && key::compare(c.key(), &target) == Ordering::Equal {
                        c.prev();
                    }
                }
            }
            self.direction = Direction::Reverse;
            self.children[cur].prev();
            return self.find_largest();
        }
        self.children[cur].prev();
        self.after_step(cur, Ordering::Greater);
    }

    fn key(&self) -> &[u8] {
        self.current.map_or(&[][..], |c| self.children[c].key())
    }

    fn value(&self) -> &[u8] {
        self.current.map_or(&[][..], |c| self.children[c].value())
    }

    fn status(&self) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(e.duplicate());
        }
        self.children.iter().try_for_each(|c| c.status())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::iter::first_key::KnownFirstKey;
    use crate::key::{make_internal_key, ValueKind};
    use proptest::prelude::*;

    /// A sorted in-memory iterator for tests of the composing iterators.
    pub(crate) struct VecIter {
        entries: Vec<(Vec<u8>, Vec<u8>)>,
        pos: Option<usize>,
    }

    impl VecIter {
        pub(crate) fn new(mut entries: Vec<(Vec<u8>, Vec<u8>)>) -> Self {
            entries.sort_by(|a, b| key::compare(&a.0, &b.0));
            Self { entries, pos: None }
        }

        /// The smallest key (entries are kept sorted).
        pub(crate) fn first_key(&self) -> Option<&[u8]> {
            self.entries.first().map(|e| e.0.as_slice())
        }
    }

    impl InternalIterator for VecIter {
        fn valid(&self) -> bool {
            self.pos.is_some()
        }
        fn seek_to_first(&mut self) {
            self.pos = (!self.entries.is_empty()).then_some(0);
        }
        fn seek_to_last(&mut self) {
            self.pos = self.entries.len().checked_sub(1);
        }
        fn seek(&mut self, t: &[u8]) {
            let i = self.entries.partition_point(|e| key::compare(&e.0, t) == Ordering::Less);
            self.pos = (i < self.entries.len()).then_some(i);
        }
        fn seek_for_prev(&mut self, t: &[u8]) {
            let i = self.entries.partition_point(|e| key::compare(&e.0, t) != Ordering::Greater);
            self.pos = i.checked_sub(1);
        }
        fn next(&mut self) {
            self.pos = self.pos.map(|p| p + 1).filter(|&p| p < self.entries.len());
        }
        fn prev(&mut self) {
            self.pos = self.pos.and_then(|p| p.checked_sub(1));
        }
        fn key(&self) -> &[u8] {
            &self.entries[self.pos.unwrap_or(0)].0
        }
        fn value(&self) -> &[u8] {
            &self.entries[self.pos.unwrap_or(0)].1
        }
        fn status(&self) -> Result<()> {
            Ok(())
        }
    }

    fn entry(k: &str, seq: u64) -> (Vec<u8>, Vec<u8>) {
        (make_internal_key(k.as_bytes(), seq, ValueKind::Put), format!("{k}{seq}").into_bytes())
    }

    #[test]
    fn merges_and_switches_direction() {
        let a = VecIter::new(vec![entry("a", 1), entry("c", 3), entry("e", 5)]);
        let b = VecIter::new(vec![entry("b", 2), entry("c", 9), entry("d", 4)]);
        let mut m = MergingIterator::new(vec![Box::new(a), Box::new(b)]);
        m.seek_to_first();
        let mut seen = Vec::new();
        while m.valid() {
            seen.push(m.value().to_vec());
            m.next();
        }
        let want: Vec<Vec<u8>> =
            ["a1", "b2", "c9", "c3", "d4", "e5"].iter().map(|s| s.as_bytes().to_vec()).collect();
        assert_eq!(seen, want);

        m.seek(&make_internal_key(b"c", 3, ValueKind::Put));
        assert_eq!(m.value(), b"c3");
        m.prev();
        assert_eq!(m.value(), b"c9");
        m.prev();
        assert_eq!(m.value(), b"b2");
        m.next();
        assert_eq!(m.value(), b"c9");
        m.seek_to_last();
        assert_eq!(m.value(), b"e5");
    }

    #[derive(Debug, Clone)]
    enum Op {
        SeekToFirst,
        SeekToLast,
        Seek(u8),
        SeekForPrev(u8),
        Next,
        Prev,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            Just(Op::SeekToFirst),
            Just(Op::SeekToLast),
            any::<u8>().prop_map(Op::Seek),
            any::<u8>().prop_map(Op::SeekForPrev),
            Just(Op::Next),
            Just(Op::Next),
            Just(Op::Next),
            Just(Op::Prev),
            Just(Op::Prev),
        ]
    }

    fn apply(it: &mut dyn InternalIterator, op: &Op) {
        let target = |k: u8| make_internal_key(&[k % 64], 500, ValueKind::Put);
        match op {
            Op::SeekToFirst => it.seek_to_first(),
            Op::SeekToLast => it.seek_to_last(),
            Op::Seek(k) => it.seek(&target(*k)),
            Op::SeekForPrev(k) => it.seek_for_prev(&target(*k)),
            Op::Next => it.next(),
            Op::Prev => it.prev(),
        }
    }

    proptest! {
        /// Any mix of seeks and steps over up to 6 children (keys repeated across children with
        /// distinct sequence numbers) sees exactly what one sorted list of all entries shows.
        #[test]
        fn matches_one_sorted_list(
            children in proptest::collection::vec(
                (proptest::collection::vec(0u8..64, 0..40), any::<bool>()), 0..6),
            ops in proptest::collection::vec(op(), 1..200),
        ) {
            let mut seq = 0u64;
            let mut all = Vec::new();
            let mut iters: Vec<Box<dyn InternalIterator>> = Vec::new();
            for (keys, first_key_known) in &children {
                let mut entries = Vec::new();
                for k in keys {
                    seq += 1;
                    let e = (make_internal_key(&[*k], seq, ValueKind::Put), seq.to_le_bytes().to_vec());
                    entries.push(e.clone());
                    all.push(e);
                }
                let child = VecIter::new(entries);
                // Some children stand for L0 tables that defer reads until they are needed.
                match (first_key_known, child.first_key().map(<[u8]>::to_vec)) {
                    (true, Some(first)) => iters.push(Box::new(KnownFirstKey::new(child, first, 1))),
                    _ => iters.push(Box::new(child)),
                }
            }
            let mut merged = MergingIterator::new(iters);
            let mut model = VecIter::new(all);
            for op in &ops {
                // Stepping an unpositioned iterator is a no-op for both.
                if matches!(op, Op::Next | Op::Prev) && !model.valid() {
                    continue;
                }
                apply(&mut merged, op);
                apply(&mut model, op);
                prop_assert_eq!(merged.valid(), model.valid(), "after {:?}", op);
                if model.valid() {
                    prop_assert_eq!(merged.key(), model.key(), "after {:?}", op);
                    prop_assert_eq!(merged.value(), model.value());
                }
            }
        }
    }
}
