//! The entries of external files as the database will hold them: the same user keys, kinds and
//! values, each with the one sequence number the ingestion gives them (the files hold 0). It
//! only re-labels what its inner iterator yields; checking the files is the caller's job.

use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{self, SeqNo};
use crate::util::coding;

/// Yields `inner`'s entries with their sequence number replaced by `seq`.
pub(super) struct Sequenced<I> {
    inner: I,
    seq: SeqNo,
    key: Vec<u8>,
}

impl<I: InternalIterator> Sequenced<I> {
    pub(super) fn new(inner: I, seq: SeqNo) -> Self {
        Self { inner, seq, key: Vec::new() }
    }

    fn relabel(&mut self) {
        self.key.clear();
        if self.inner.valid() {
            let ikey = self.inner.key();
            self.key.extend_from_slice(key::user_key(ikey));
            coding::put_u64(&mut self.key, key::pack_trailer(self.seq, key::trailer(ikey) as u8));
        }
    }

    /// An inner key of `target`'s user key that sorts first (`first`) or last among the
    /// entries of that user key (the inner entries all carry sequence number 0).
    fn inner_key(target: &[u8], first: bool) -> Vec<u8> {
        let mut t = key::user_key(target).to_vec();
        let trailer = if first { key::pack_trailer(key::MAX_SEQ, key::KIND_FOR_SEEK) } else { 0 };
        coding::put_u64(&mut t, trailer);
        t
    }

    /// How the current entry, relabelled, compares with `target`, when it has the target's
    /// user key (`None` otherwise: the inner seek already placed it right).
    fn cmp_same_user_key(&mut self, target: &[u8]) -> Option<std::cmp::Ordering> {
        if !self.inner.valid() || key::user_key(self.inner.key()) != key::user_key(target) {
            return None;
        }
        self.relabel();
        Some(key::compare(&self.key, target))
    }
}

impl<I: InternalIterator> InternalIterator for Sequenced<I> {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn seek_to_first(&mut self) {
        self.inner.seek_to_first();
        self.relabel();
    }
    fn seek_to_last(&mut self) {
        self.inner.seek_to_last();
        self.relabel();
    }
    fn seek(&mut self, target: &[u8]) {
        self.inner.seek(&Self::inner_key(target, true));
        if self.cmp_same_user_key(target).is_some_and(|o| o.is_lt()) {
            self.inner.next();
        }
        self.relabel();
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.inner.seek_for_prev(&Self::inner_key(target, false));
        if self.cmp_same_user_key(target).is_some_and(|o| o.is_gt()) {
            self.inner.prev();
        }
        self.relabel();
    }
    fn next(&mut self) {
        self.inner.next();
        self.relabel();
    }
    fn prev(&mut self) {
        self.inner.prev();
        self.relabel();
    }
    fn key(&self) -> &[u8] {
        &self.key
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn prepare_value(&mut self) -> bool {
        self.inner.prepare_value()
    }
    fn status(&self) -> Result<()> {
        self.inner.status()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::merging::tests::VecIter;
    use crate::key::{make_internal_key, ValueKind};

    fn entries(seq: SeqNo) -> Vec<(Vec<u8>, Vec<u8>)> {
        let kinds = [ValueKind::Put, ValueKind::Delete, ValueKind::Merge, ValueKind::Put];
        ["a", "c", "e", "g"]
            .iter()
            .zip(kinds)
            .map(|(k, kind)| (make_internal_key(k.as_bytes(), seq, kind), k.as_bytes().to_vec()))
            .collect()
    }

    /// Every seek lands where it would on entries written with the new sequence number.
    #[test]
    fn seeks_match_entries_written_with_the_sequence_number() {
        let seq = 100;
        let mut relabelled = Sequenced::new(VecIter::new(entries(0)), seq);
        let mut written = VecIter::new(entries(seq));
        let mut targets = Vec::new();
        for user in ["", "a", "b", "c", "e", "g", "h"] {
            for s in [0, 1, seq - 1, seq, seq + 1, key::MAX_SEQ] {
                targets.push(key::seek_key(user.as_bytes(), s));
            }
        }
        let at = |it: &dyn InternalIterator| it.valid().then(|| it.key().to_vec());
        for t in &targets {
            relabelled.seek(t);
            written.seek(t);
            assert_eq!(at(&relabelled), at(&written), "seek {t:?}");
            relabelled.seek_for_prev(t);
            written.seek_for_prev(t);
            assert_eq!(at(&relabelled), at(&written), "seek_for_prev {t:?}");
        }
        relabelled.seek_to_last();
        relabelled.prev();
        assert_eq!(relabelled.key(), make_internal_key(b"e", seq, ValueKind::Merge));
    }
}
