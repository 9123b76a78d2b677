//! `WriteBatch`: an ordered group of puts, deletes and merges applied atomically. Its byte form is
//! exactly the WAL record payload (docs/format.md, "Write batch"):
//!
//! ```text
//! sequence: u64 LE | count: u32 LE | record*
//! record := kind: u8 | [family: varint, when kind has FAMILY_FLAG] | key: varint length + bytes
//!           | value: varint length + bytes (not for Delete)
//! ```
//!
//! A range deletion (kind 4, `RangeDelete`) stores its begin as the key and its end as the value.
//!
//! A record of the default column family has no family field, so a batch that names no other
//! family is byte for byte what strata wrote before column families existed.
//!
//! The batch owns encoding and decoding of that payload and nothing else; it never touches files.

use crate::error::{Error, Result};
use crate::key::{SeqNo, ValueKind, DEFAULT_FAMILY};
use crate::util::coding::{self, Reader};

/// The longest key accepted (64 KiB); a longer (or empty) key makes the write fail with
/// [`Error::InvalidArgument`].
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::{batch::MAX_KEY_LEN, Db, Error, Options, WriteOptions};
/// let db = Db::open(dir.path(), Options::default())?;
/// db.put(&vec![b'k'; MAX_KEY_LEN], b"v")?;
/// let too_long = db.put(&vec![b'k'; MAX_KEY_LEN + 1], b"v");
/// assert!(matches!(too_long, Err(Error::InvalidArgument(_))));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MAX_KEY_LEN: usize = 64 << 10;
/// The longest value accepted (1 GiB); a longer value makes the write fail with
/// [`Error::InvalidArgument`]. Large values are stored in blob files (see
/// `Options::min_blob_size`).
///
/// ```
/// assert_eq!(strata::batch::MAX_VALUE_LEN, 1 << 30);
/// ```
pub const MAX_VALUE_LEN: usize = 1 << 30;

pub(crate) const HEADER_LEN: usize = 12;

/// Set in a record's kind byte when a column family id follows it (docs/format.md, "Write
/// batch"). A build without column families reads such a kind as a malformed record.
pub(crate) const FAMILY_FLAG: u8 = 0x10;

/// A batch of writes (puts, deletes, range deletes, merges) applied atomically by [`Db::write`](crate::Db::write): after a crash either
/// all of it or none of it is present, and readers never see half of it. Operations apply in the
/// order they were added, so a later put of the same key wins.
///
/// Building a batch never fails: an empty or oversized key or value is remembered and
/// `Db::write` then returns [`Error::InvalidArgument`] without applying anything.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::{Db, Error, Options, ReadOptions, WriteBatch, WriteOptions};
/// let db = Db::open(dir.path(), Options::default())?;
/// db.put(b"b", b"old")?;
///
/// let mut batch = WriteBatch::new();
/// batch.put(b"a", b"1").put(b"a", b"2").delete(b"b");
/// assert_eq!(batch.len(), 3);
/// db.write(batch)?;
/// assert_eq!(db.get(b"a")?, Some(b"2".to_vec())); // the later put wins
/// assert_eq!(db.get(b"b")?, None);
///
/// let mut bad = WriteBatch::new();
/// bad.put(b"c", b"3").put(vec![b'k'; strata::batch::MAX_KEY_LEN + 1], b"key too long");
/// assert!(matches!(db.write(bad), Err(Error::InvalidArgument(_))));
/// assert_eq!(db.get(b"c")?, None); // nothing was applied
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct WriteBatch {
    rep: Vec<u8>,
    count: u32,
    error: Option<String>,
    /// The column families the records name, each once, in first-use order; empty while
    /// every record is the default family's (the write path's fast case).
    families: Vec<u32>,
    /// Some record is the default family's (only tracked once `families` is not empty).
    default_records: bool,
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatch").field("count", &self.count).field("bytes", &self.rep.len()).finish()
    }
}

fn check_key(key: &[u8]) -> Option<String> {
    // An empty key is a key (the smallest one), as in LevelDB and RocksDB.
    if key.len() > MAX_KEY_LEN {
        Some(format!("key is {} bytes, the limit is {MAX_KEY_LEN}", key.len()))
    } else {
        None
    }
}

fn check_value(value: &[u8]) -> Option<String> {
    (value.len() > MAX_VALUE_LEN)
        .then(|| format!("value is {} bytes, the limit is {MAX_VALUE_LEN}", value.len()))
}

impl WriteBatch {
    /// An empty batch (same as `WriteBatch::default()`).
    ///
    /// ```
    /// let batch = strata::WriteBatch::new();
    /// assert!(batch.is_empty());
    /// ```
    pub fn new() -> Self {
        Self { rep: vec![0; HEADER_LEN], count: 0, error: None, families: Vec::new(), default_records: false }
    }

    /// An empty batch with room for one record of a `key_len`-byte key and a `value_len`-byte
    /// value, so that a single put, merge or delete allocates once.
    pub(crate) fn for_one_record(key_len: usize, value_len: usize) -> Self {
        // Kind byte and two length varints of at most 5 bytes each (both lengths fit in u32).
        let mut rep = Vec::with_capacity(HEADER_LEN + 11 + key_len + value_len);
        rep.resize(HEADER_LEN, 0);
        Self { rep, count: 0, error: None, families: Vec::new(), default_records: false }
    }

    fn record(&mut self, kind: ValueKind, key: &[u8], value: Option<&[u8]>) {
        self.record_in(DEFAULT_FAMILY, kind, key, value);
    }

    /// Adds a record for column family `family` (the handle methods in `db::family` call this).
    pub(crate) fn record_in(&mut self, family: u32, kind: ValueKind, key: &[u8], value: Option<&[u8]>) {
        if self.error.is_none() {
            self.error = check_key(key).or_else(|| value.and_then(check_value));
        }
        if family == DEFAULT_FAMILY {
            self.rep.push(kind as u8);
            self.default_records = true;
        } else {
            self.rep.push(kind as u8 | FAMILY_FLAG);
            coding::put_varint(&mut self.rep, u64::from(family));
            if !self.families.contains(&family) {
                self.families.push(family);
            }
        }
        coding::put_length_prefixed(&mut self.rep, key);
        if let Some(v) = value {
            coding::put_length_prefixed(&mut self.rep, v);
        }
        self.count += 1;
    }

    /// Adds a put of `key` to `value`; returns `self` so calls chain.
    ///
    /// ```
    /// let mut batch = strata::WriteBatch::new();
    /// batch.put(b"user:1", b"ada").put("user:2", "grace");
    /// assert_eq!(batch.len(), 2);
    /// ```
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> &mut Self {
        self.record(ValueKind::Put, key.as_ref(), Some(value.as_ref()));
        self
    }

    /// Adds a delete of `key` (a no-op at write time if the key is absent); returns `self`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, ReadOptions, WriteBatch, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// let mut batch = WriteBatch::new();
    /// batch.put(b"k", b"v").delete(b"k");
    /// db.write(batch)?;
    /// assert_eq!(db.get(b"k")?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> &mut Self {
        self.record(ValueKind::Delete, key.as_ref(), None);
        self
    }

    /// Adds a deletion of every key `k` with `begin <= k < end` (RocksDB's `DeleteRange`);
    /// returns `self`. A range with `begin >= end` deletes nothing and adds no record; a key
    /// longer than [`MAX_KEY_LEN`] makes the write fail with [`Error::InvalidArgument`]. Keys
    /// written after the delete (later in the batch, or by later writes) are visible again, and
    /// a snapshot taken before it still sees the deleted keys.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, WriteBatch};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// let mut batch = WriteBatch::new();
    /// batch.put(b"a", b"1").put(b"b", b"2").put(b"c", b"3").delete_range(b"a", b"c").put(b"a", b"4");
    /// db.write(batch)?;
    /// assert_eq!(db.get(b"a")?, Some(b"4".to_vec())); // written after the delete
    /// assert_eq!(db.get(b"b")?, None);
    /// assert_eq!(db.get(b"c")?, Some(b"3".to_vec())); // the end is exclusive
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete_range(&mut self, begin: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> &mut Self {
        self.range_in(DEFAULT_FAMILY, begin.as_ref(), end.as_ref());
        self
    }

    /// Adds a range deletion for column family `family` (see [`WriteBatch::delete_range`]).
    pub(crate) fn range_in(&mut self, family: u32, begin: &[u8], end: &[u8]) {
        if self.error.is_none() {
            self.error = check_key(begin).or_else(|| check_key(end));
        }
        if begin < end {
            self.record_in(family, ValueKind::RangeDelete, begin, Some(end));
        }
    }

    /// Adds a merge operand for `key`; returns `self`. Writing a batch with merges fails with
    /// [`Error::InvalidArgument`] unless `Options::merge_operator` is set.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{merge, Db, Options, ReadOptions, WriteBatch, WriteOptions};
    /// let opts = Options { merge_operator: merge::builtin("stringappend"), ..Options::default() };
    /// let db = Db::open(dir.path(), opts)?;
    /// let mut batch = WriteBatch::new();
    /// batch.put(b"tags", b"red").merge(b"tags", b"green").merge(b"tags", b"blue");
    /// db.write(batch)?;
    /// assert_eq!(db.get(b"tags")?, Some(b"red,green,blue".to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn merge(&mut self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> &mut Self {
        self.record(ValueKind::Merge, key.as_ref(), Some(operand.as_ref()));
        self
    }

    /// Number of operations in the batch. See the example on [`WriteBatch::clear`].
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// True when the batch holds no operations. See the example on [`WriteBatch::clear`].
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Removes every operation (and any remembered invalid key), so the batch can be reused.
    ///
    /// ```
    /// let mut batch = strata::WriteBatch::new();
    /// let empty_size = batch.size_in_bytes();
    /// batch.put(b"k", b"v").delete(b"k");
    /// assert_eq!((batch.len(), batch.is_empty()), (2, false));
    /// assert!(batch.size_in_bytes() > empty_size);
    /// batch.clear();
    /// assert_eq!((batch.len(), batch.is_empty()), (0, true));
    /// assert_eq!(batch.size_in_bytes(), empty_size);
    /// ```
    pub fn clear(&mut self) {
        self.rep.truncate(HEADER_LEN);
        self.count = 0;
        self.error = None;
        self.families.clear();
        self.default_records = false;
    }

    /// Encoded size in bytes: the 12-byte header plus every record (kind, length-prefixed key
    /// and value), which is what the write adds to the WAL. Useful to cap batches by size. See the
    /// example on [`WriteBatch::clear`].
    pub fn size_in_bytes(&self) -> usize {
        self.rep.len()
    }

    pub(crate) fn validate(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(Error::InvalidArgument(e.clone())),
            None => Ok(()),
        }
    }

    pub(crate) fn has_merge(&self) -> bool {
        self.records().any(|r| matches!(r, Ok((_, ValueKind::Merge, _, _))))
    }

    /// Whether a record names a column family other than the default one.
    pub(crate) fn has_families(&self) -> bool {
        !self.families.is_empty()
    }

    /// The column families the records name, each once (only meaningful when
    /// [`has_families`](Self::has_families); the default family is `DEFAULT_FAMILY`).
    pub(crate) fn family_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.default_records.then_some(DEFAULT_FAMILY).into_iter().chain(self.families.iter().copied())
    }

    /// Stamps the first sequence number and count into the header; returns the encoded payload.
    #[cfg(test)]
    pub(crate) fn seal(&mut self, first_seq: SeqNo) -> &[u8] {
        self.rep[..8].copy_from_slice(&first_seq.to_le_bytes());
        self.rep[8..12].copy_from_slice(&self.count.to_le_bytes());
        &self.rep
    }

    /// The records after the header, for concatenating batches into one group payload.
    pub(crate) fn body(&self) -> &[u8] {
        &self.rep[HEADER_LEN..]
    }

    pub(crate) fn records(&self) -> RecordIter<'_> {
        RecordIter { r: Reader::new(self.body()), left: self.count }
    }
}

/// A decoded WAL payload: first sequence number and the records.
pub(crate) struct DecodedBatch<'a> {
    pub first_seq: SeqNo,
    pub count: u32,
    pub body: &'a [u8],
}

impl<'a> DecodedBatch<'a> {
    pub fn decode(payload: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(payload);
        let (Some(first_seq), Some(count)) = (r.u64(), r.u32()) else {
            return Err(Error::corruption(format!("write batch too short ({} bytes)", payload.len())));
        };
        if first_seq.saturating_add(u64::from(count)) > crate::key::MAX_SEQ {
            return Err(Error::corruption(format!(
                "write batch sequence {first_seq} (+{count}) is past the largest"
            )));
        }
        Ok(Self { first_seq, count, body: r.remaining() })
    }

    pub fn records(&self) -> RecordIter<'a> {
        RecordIter { r: Reader::new(self.body), left: self.count }
    }
}

/// One decoded batch record: column family, kind, key, value (empty for deletes).
// Public only for strata's own tools (wal-dump) and fuzzers; no stability promise.
#[doc(hidden)]
pub type OwnedRecord = (u32, ValueKind, Vec<u8>, Vec<u8>);

/// Decodes a WAL payload into its first sequence number and `(family, kind, key, value)` records; used by
/// tools and fuzzing. Errors are `Corruption`, never panics.
// Public only for strata's own tools (wal-dump) and fuzzers; no stability promise.
#[doc(hidden)]
pub fn decode_payload(payload: &[u8]) -> Result<(SeqNo, Vec<OwnedRecord>)> {
    let batch = DecodedBatch::decode(payload)?;
    let records = batch
        .records()
        .map(|r| r.map(|(family, kind, k, v)| (family, kind, k.to_vec(), v.to_vec())))
        .collect::<Result<Vec<_>>>()?;
    Ok((batch.first_seq, records))
}

/// Iterates `(family, kind, key, value)` records; a malformed record yields one `Err` and stops.
pub(crate) struct RecordIter<'a> {
    r: Reader<'a>,
    left: u32,
}

impl<'a> Iterator for RecordIter<'a> {
    type Item = Result<(u32, ValueKind, &'a [u8], &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return (!self.r.is_empty()).then(|| {
                self.r = Reader::new(&[]);
                Err(Error::corruption("write batch has bytes after its last record"))
            });
        }
        self.left -= 1;
        let rec = (|| {
            let byte = self.r.u8()?;
            let family = if byte & FAMILY_FLAG != 0 { self.r.varint32()? } else { DEFAULT_FAMILY };
            let kind = ValueKind::from_u8(byte & !FAMILY_FLAG)?;
            let key = self.r.length_prefixed()?;
            let value = match kind {
                ValueKind::Delete => &[][..],
                ValueKind::Blob => return None,
                // A range deletion's value is its end; an empty range is never written.
                ValueKind::RangeDelete => Some(self.r.length_prefixed()?).filter(|end| key < *end)?,
                _ => self.r.length_prefixed()?,
            };
            Some((family, kind, key, value))
        })();
        match rec {
            Some(rec) => Some(Ok(rec)),
            None => {
                self.left = 0;
                self.r = Reader::new(&[]);
                Some(Err(Error::corruption("malformed write batch record")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_the_payload() {
        let mut b = WriteBatch::new();
        b.put(b"a", b"1").delete(b"b").merge(b"c", b"2");
        let payload = b.seal(42).to_vec();
        let d = DecodedBatch::decode(&payload).unwrap();
        assert_eq!((d.first_seq, d.count), (42, 3));
        let recs: Vec<_> = d.records().map(|r| r.unwrap()).collect();
        assert_eq!(recs[0], (0, ValueKind::Put, &b"a"[..], &b"1"[..]));
        assert_eq!(recs[1], (0, ValueKind::Delete, &b"b"[..], &b""[..]));
        assert_eq!(recs[2], (0, ValueKind::Merge, &b"c"[..], &b"2"[..]));
    }

    #[test]
    fn family_records_carry_their_id_and_default_ones_stay_as_before() {
        let mut b = WriteBatch::new();
        b.put(b"a", b"1");
        let plain = b.seal(7).to_vec();
        assert!(!b.has_families());
        b.record_in(300, ValueKind::Delete, b"k", None);
        b.record_in(2, ValueKind::Merge, b"m", Some(b"+1"));
        assert!(b.has_families());
        let payload = b.seal(7).to_vec();
        assert_eq!(&payload[HEADER_LEN..plain.len()], &plain[HEADER_LEN..]);
        let d = DecodedBatch::decode(&payload).unwrap();
        let recs: Vec<_> = d.records().map(|r| r.unwrap()).collect();
        assert_eq!(recs[1], (300, ValueKind::Delete, &b"k"[..], &b""[..]));
        assert_eq!(recs[2], (2, ValueKind::Merge, &b"m"[..], &b"+1"[..]));
        assert_eq!(payload[plain.len()], ValueKind::Delete as u8 | FAMILY_FLAG);
    }

    #[test]
    fn range_deletes_round_trip_and_empty_ranges_add_nothing() {
        let mut b = WriteBatch::new();
        b.delete_range(b"a", b"m").delete_range(b"z", b"b").delete_range(b"q", b"q");
        b.range_in(3, b"", b"k");
        assert_eq!(b.len(), 2);
        let payload = b.seal(5).to_vec();
        let recs: Vec<_> = DecodedBatch::decode(&payload).unwrap().records().map(|r| r.unwrap()).collect();
        assert_eq!(recs[0], (0, ValueKind::RangeDelete, &b"a"[..], &b"m"[..]));
        assert_eq!(recs[1], (3, ValueKind::RangeDelete, &b""[..], &b"k"[..]));
        let mut long = WriteBatch::new();
        long.delete_range(b"b", vec![1u8; MAX_KEY_LEN + 1]);
        assert!(matches!(long.validate(), Err(Error::InvalidArgument(_))));
        let mut reversed_but_long = WriteBatch::new();
        reversed_but_long.delete_range(vec![9u8; MAX_KEY_LEN + 1], b"a");
        assert!(reversed_but_long.validate().is_err());
    }

    #[test]
    fn a_stored_empty_range_is_a_malformed_record() {
        let mut b = WriteBatch::new();
        b.record_in(0, ValueKind::RangeDelete, b"m", Some(b"a"));
        let payload = b.seal(1).to_vec();
        assert!(DecodedBatch::decode(&payload).unwrap().records().any(|r| r.is_err()));
    }

    #[test]
    fn oversized_keys_are_reported_at_validate() {
        let mut b = WriteBatch::new();
        b.put(b"", b"v").put(vec![1u8; MAX_KEY_LEN], b"v");
        assert!(b.validate().is_ok(), "the empty key and a key at the limit are keys");
        let mut b = WriteBatch::new();
        b.put(vec![1u8; MAX_KEY_LEN + 1], b"v");
        assert!(matches!(b.validate(), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn truncated_payloads_are_corruption_not_panics() {
        let mut b = WriteBatch::new();
        b.put(b"key", b"value");
        let payload = b.seal(1).to_vec();
        for cut in 0..payload.len() {
            if let Ok(d) = DecodedBatch::decode(&payload[..cut]) {
                assert!(d.records().any(|r| r.is_err()));
            }
        }
    }
}
