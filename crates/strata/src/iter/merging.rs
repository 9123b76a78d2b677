//! Merges several sorted internal iterators into one, in both directions (LevelDB's merger):
//! moving forward, the current child is the smallest; moving backward, the largest. When the
//! direction changes, every other child is repositioned around the current key first.

use std::cmp::Ordering;

use super::InternalIterator;
use crate::error::Result;
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
    direction: Direction,
}

impl MergingIterator {
    /// Merges `children`; they must all use the internal-key order.
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        Self { children, current: None, direction: Direction::Forward }
    }

    fn pick(&mut self, want: Ordering) {
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate() {
            if !c.valid() {
                continue;
            }
            best = match best {
                Some(b) if key::compare(c.key(), self.children[b].key()) != want => Some(b),
                _ => Some(i),
            };
        }
        self.current = best;
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
        self.children.iter_mut().for_each(|c| c.seek_to_first());
        self.direction = Direction::Forward;
        self.find_smallest();
    }

    fn seek_to_last(&mut self) {
        self.children.iter_mut().for_each(|c| c.seek_to_last());
        self.direction = Direction::Reverse;
        self.find_largest();
    }

    fn seek(&mut self, target: &[u8]) {
        self.children.iter_mut().for_each(|c| c.seek(target));
        self.direction = Direction::Forward;
        self.find_smallest();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.children.iter_mut().for_each(|c| c.seek_for_prev(target));
        self.direction = Direction::Reverse;
        self.find_largest();
    }

    fn next(&mut self) {
        let Some(cur) = self.current else { return };
        if self.direction != Direction::Forward {
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
        }
        self.children[cur].next();
        self.find_smallest();
    }

    fn prev(&mut self) {
        let Some(cur) = self.current else { return };
        if self.direction != Direction::Reverse {
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
        }
        self.children[cur].prev();
        self.find_largest();
    }

    fn key(&self) -> &[u8] {
        self.current.map_or(&[][..], |c| self.children[c].key())
    }

    fn value(&self) -> &[u8] {
        self.current.map_or(&[][..], |c| self.children[c].value())
    }

    fn status(&self) -> Result<()> {
        self.children.iter().try_for_each(|c| c.status())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::key::{make_internal_key, ValueKind};

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
}
