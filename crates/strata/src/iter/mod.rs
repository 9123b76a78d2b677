//! The internal iterator contract shared by memtables, blocks, tables, levels and merges, plus the
//! iterators that compose them. An internal iterator walks internal keys (see `key.rs`) in
//! internal-key order and never hides versions; the user-facing `DbIterator` does that.

pub mod first_key;
pub mod level;
pub mod merging;

/// A cursor over internal entries. Positioning methods may leave it invalid (at the end, or after
/// an error); check [`InternalIterator::status`] once it is invalid to tell the two apart.
/// Requires: `key`, `value`, `next` and `prev` only while `valid()`.
pub trait InternalIterator: Send {
    /// True when positioned at an entry.
    fn valid(&self) -> bool;
    /// Positions at the first entry.
    fn seek_to_first(&mut self);
    /// Positions at the last entry.
    fn seek_to_last(&mut self);
    /// Positions at the first entry whose internal key is `>= target`.
    fn seek(&mut self, target: &[u8]);
    /// Positions at the last entry whose internal key is `<= target`.
    fn seek_for_prev(&mut self, target: &[u8]);
    /// Moves to the next entry.
    fn next(&mut self);
    /// Moves to the previous entry.
    fn prev(&mut self);
    /// The current internal key.
    fn key(&self) -> &[u8];
    /// The current value. After a positioning call, an iterator that can report a key without
    /// reading its entry (`first_key::KnownFirstKey`) needs [`InternalIterator::prepare_value`]
    /// first.
    fn value(&self) -> &[u8];
    /// Reads what `value` needs when a positioning call left the iterator on a key it knew
    /// without reading its entry. Returns `valid()` afterwards: false when that read failed
    /// (see `status`). Iterators that never defer a read keep this default.
    fn prepare_value(&mut self) -> bool {
        self.valid()
    }
    /// The first error met, if any.
    fn status(&self) -> crate::error::Result<()>;
}

/// An iterator with no entries, or one that only reports an error.
pub struct EmptyIterator {
    error: Option<crate::error::Error>,
}

impl EmptyIterator {
    /// An empty iterator with no error.
    pub fn new() -> Self {
        Self { error: None }
    }
}

impl Default for EmptyIterator {
    fn default() -> Self {
        Self::new()
    }
}

impl InternalIterator for EmptyIterator {
    fn valid(&self) -> bool {
        false
    }
    fn seek_to_first(&mut self) {}
    fn seek_to_last(&mut self) {}
    fn seek(&mut self, _: &[u8]) {}
    fn seek_for_prev(&mut self, _: &[u8]) {}
    fn next(&mut self) {}
    fn prev(&mut self) {}
    fn key(&self) -> &[u8] {
        &[]
    }
    fn value(&self) -> &[u8] {
        &[]
    }
    fn status(&self) -> crate::error::Result<()> {
        match &self.error {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}
