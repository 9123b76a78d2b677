//! [`VersionEdit`]: one MANIFEST record, a delta to the set of live SST and blob files, and its
//! tag-based codec (after LevelDB's `version_edit.cc`). This module owns the byte format only; it
//! must not interpret edits (applying them is the version set's job) and must never panic while
//! decoding, whatever the bytes.

use crate::error::{Error, Result};
use crate::key::TRAILER_LEN;
use crate::options::NUM_LEVELS;
use crate::util::coding::{self, Reader};

/// Field tags. Persisted: DO NOT CHANGE OR REUSE THE VALUES; a new field gets a new tag.
mod tag {
    pub const COMPARATOR: u64 = 1;
    pub const LOG_NUMBER: u64 = 2;
    pub const NEXT_FILE_NUMBER: u64 = 3;
    pub const LAST_SEQUENCE: u64 = 4;
    pub const COMPACT_CURSOR: u64 = 5;
    pub const DELETED_FILE: u64 = 6;
    pub const NEW_FILE: u64 = 7;
    pub const NEW_BLOB_FILE: u64 = 8;
    pub const BLOB_GARBAGE: u64 = 9;
    pub const DELETED_BLOB_FILE: u64 = 10;
    pub const COLUMN_FAMILY: u64 = 11;
    pub const ADD_COLUMN_FAMILY: u64 = 12;
    pub const DROP_COLUMN_FAMILY: u64 = 13;
    pub const MAX_COLUMN_FAMILY: u64 = 14;
    /// A `NEW_FILE` holding range tombstones: its fields, then their count. Written only for
    /// such a file, so a build without range deletions refuses the MANIFEST (an unknown tag)
    /// instead of reading the file as if it deleted nothing.
    pub const NEW_FILE_WITH_RANGE_DELS: u64 = 15;
}

/// Edits of the default column family carry no `COLUMN_FAMILY` tag.
pub use crate::key::DEFAULT_FAMILY;

/// An SST file as the MANIFEST records it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FileMeta {
    /// File number (names the file).
    pub number: u64,
    /// Size in bytes.
    pub file_size: u64,
    /// Smallest internal key in the file.
    pub smallest: Vec<u8>,
    /// Largest internal key in the file.
    pub largest: Vec<u8>,
    /// Smallest sequence number in the file.
    pub smallest_seq: u64,
    /// Largest sequence number in the file.
    pub largest_seq: u64,
    /// Entries in the file.
    pub num_entries: u64,
    /// Tombstones in the file.
    pub num_deletions: u64,
    /// Range tombstones in the file's range-deletion block (its bounds cover them).
    pub num_range_deletions: u64,
}

/// A blob file as the MANIFEST records it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct BlobFileMeta {
    /// File number (names the file).
    pub number: u64,
    /// Size in bytes, header and footer included.
    pub file_size: u64,
    /// Records in the file.
    pub total_count: u64,
    /// Sum of the record sizes (the `size` of every pointer into the file).
    pub total_bytes: u64,
}

/// The changes from one version of a column family's file set to the next. A MANIFEST record
/// holds one or more edits ([`VersionEdit::encode_group`]), applied together.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct VersionEdit {
    /// The column family the file changes and the log number apply to.
    pub column_family: u32,
    /// Creates `column_family` with this name.
    pub add_column_family: Option<String>,
    /// Drops `column_family`: its files become obsolete.
    pub drop_column_family: bool,
    /// The largest column family id ever handed out (ids are never reused).
    pub max_column_family: Option<u32>,
    /// Name of the comparator the database was created with.
    pub comparator: Option<String>,
    /// WAL files with a smaller number hold nothing of `column_family` that is not in a table.
    pub log_number: Option<u64>,
    /// The next file number to hand out.
    pub next_file_number: Option<u64>,
    /// The last sequence number used.
    pub last_sequence: Option<u64>,
    /// (level, internal key) where the next compaction of that level starts.
    pub compact_cursors: Vec<(u32, Vec<u8>)>,
    /// (level, file number) of SST files removed.
    pub deleted_files: Vec<(u32, u64)>,
    /// (level, file) of SST files added.
    pub new_files: Vec<(u32, FileMeta)>,
    /// Blob files added.
    pub new_blob_files: Vec<BlobFileMeta>,
    /// (blob file, count, bytes) of records that became garbage.
    pub blob_garbage: Vec<(u64, u64, u64)>,
    /// Blob files removed.
    pub deleted_blob_files: Vec<u64>,
}

impl VersionEdit {
    /// Serializes the edit; fields appear in a fixed order, each preceded by its tag.
    pub fn encode(&self) -> Vec<u8> {
        let mut dst = Vec::with_capacity(64 + 64 * self.new_files.len());
        self.encode_to(&mut dst, false);
        dst
    }

    /// Serializes several edits as one record, applied together (`decode_group` reads it).
    pub fn encode_group(edits: &[VersionEdit]) -> Vec<u8> {
        let mut dst = Vec::new();
        for (i, e) in edits.iter().enumerate() {
            // A leading default-family edit with no field would encode to nothing and vanish
            // from the group: it gets its tag too.
            let empty_lead = i == 0 && edits.len() > 1 && *e == VersionEdit::default();
            e.encode_to(&mut dst, i > 0 || empty_lead);
        }
        dst
    }

    /// Appends the edit's fields. Every edit but a leading one of the default family starts
    /// with its `COLUMN_FAMILY` tag: that tag is what separates the edits of a group, and a
    /// default-family edit alone encodes exactly as before column families existed.
    fn encode_to(&self, dst: &mut Vec<u8>, tagged: bool) {
        let dst = &mut *dst;
        if tagged || self.column_family != DEFAULT_FAMILY {
            put_varints(dst, &[tag::COLUMN_FAMILY, u64::from(self.column_family)]);
        }
        if let Some(name) = &self.add_column_family {
            coding::put_varint(dst, tag::ADD_COLUMN_FAMILY);
            coding::put_length_prefixed(dst, name.as_bytes());
        }
        if self.drop_column_family {
            coding::put_varint(dst, tag::DROP_COLUMN_FAMILY);
        }
        if let Some(max) = self.max_column_family {
            put_varints(dst, &[tag::MAX_COLUMN_FAMILY, u64::from(max)]);
        }
        if let Some(name) = &self.comparator {
            coding::put_varint(dst, tag::COMPARATOR);
            coding::put_length_prefixed(dst, name.as_bytes());
        }
        put_opt(dst, tag::LOG_NUMBER, self.log_number);
        put_opt(dst, tag::NEXT_FILE_NUMBER, self.next_file_number);
        put_opt(dst, tag::LAST_SEQUENCE, self.last_sequence);
        for (level, key) in &self.compact_cursors {
            put_varints(dst, &[tag::COMPACT_CURSOR, u64::from(*level)]);
            coding::put_length_prefixed(dst, key);
        }
        for &(level, number) in &self.deleted_files {
            put_varints(dst, &[tag::DELETED_FILE, u64::from(level), number]);
        }
        for (level, f) in &self.new_files {
            encode_new_file(dst, *level, f);
        }
        for b in &self.new_blob_files {
            put_varints(dst, &[tag::NEW_BLOB_FILE, b.number, b.file_size, b.total_count, b.total_bytes]);
        }
        for &(number, count, bytes) in &self.blob_garbage {
            put_varints(dst, &[tag::BLOB_GARBAGE, number, count, bytes]);
        }
        for &number in &self.deleted_blob_files {
            put_varints(dst, &[tag::DELETED_BLOB_FILE, number]);
        }
    }

    /// Parses an edit. Malformed input, an unknown tag, a level out of range or a key too short
    /// to be an internal key is `Error::Corruption`.
    pub fn decode(src: &[u8]) -> Result<VersionEdit> {
        let mut edits = Self::decode_group(src)?;
        match edits.len() {
            1 => Ok(edits.remove(0)),
            n => Err(bad(0, &format!("record holds {n} edits where one was expected"))),
        }
    }

    /// Parses a record of one or more edits ([`VersionEdit::encode_group`]): a `COLUMN_FAMILY`
    /// tag after the first field starts the next edit. Errors as [`VersionEdit::decode`].
    pub fn decode_group(src: &[u8]) -> Result<Vec<VersionEdit>> {
        let mut edits = vec![VersionEdit::default()];
        let mut r = Reader::new(src);
        let mut first_field = true;
        while !r.is_empty() {
            let at = src.len() - r.remaining().len();
            let t = r.varint().ok_or_else(|| bad(at, "truncated tag"))?;
            if t == tag::COLUMN_FAMILY && !first_field {
                edits.push(VersionEdit::default());
            }
            first_field = false;
            let edit = edits.last_mut().ok_or_else(|| bad(at, "no edit"))?;
            edit.decode_field(t, &mut r).map_err(|what| bad(at, &what))?;
        }
        Ok(edits)
    }

    /// Decodes the field of tag `t`; a repeated single-valued field keeps the last value.
    fn decode_field(&mut self, t: u64, r: &mut Reader<'_>) -> std::result::Result<(), String> {
        let short = |field: &str| format!("truncated {field}");
        match t {
            tag::COLUMN_FAMILY => self.column_family = family_id(r)?,
            tag::ADD_COLUMN_FAMILY => {
                let name = r.length_prefixed().ok_or_else(|| short("column family name"))?;
                let name = std::str::from_utf8(name).map_err(|_| "column family name is not UTF-8")?;
                self.add_column_family = Some(name.to_owned());
            }
            tag::DROP_COLUMN_FAMILY => self.drop_column_family = true,
            tag::MAX_COLUMN_FAMILY => self.max_column_family = Some(family_id(r)?),
            tag::COMPARATOR => {
                let name = r.length_prefixed().ok_or_else(|| short("comparator name"))?;
                let name = std::str::from_utf8(name).map_err(|_| "comparator name is not UTF-8")?;
                self.comparator = Some(name.to_owned());
            }
            tag::LOG_NUMBER => self.log_number = Some(r.varint().ok_or_else(|| short("log number"))?),
            tag::NEXT_FILE_NUMBER => {
                self.next_file_number = Some(r.varint().ok_or_else(|| short("next file number"))?)
            }
            tag::LAST_SEQUENCE => {
                self.last_sequence = Some(r.varint().ok_or_else(|| short("last sequence"))?)
            }
            tag::COMPACT_CURSOR => {
                let level = level(r)?;
                let key = r.length_prefixed().ok_or_else(|| short("compact cursor"))?;
                self.compact_cursors.push((level, key.to_vec()));
            }
            tag::DELETED_FILE => {
                let level = level(r)?;
                self.deleted_files.push((level, r.varint().ok_or_else(|| short("deleted file"))?));
            }
            tag::NEW_FILE => {
                let level = level(r)?;
                self.new_files.push((level, decode_new_file(r)?));
            }
            tag::NEW_FILE_WITH_RANGE_DELS => {
                let level = level(r)?;
                let mut f = decode_new_file(r)?;
                f.num_range_deletions = r.varint().ok_or_else(|| short("range deletion count"))?;
                if f.num_range_deletions == 0 {
                    return Err("a file with range deletions counts none".to_string());
                }
                self.new_files.push((level, f));
            }
            tag::NEW_BLOB_FILE => {
                let [number, file_size, total_count, total_bytes] =
                    varints(r).ok_or_else(|| short("new blob file"))?;
                self.new_blob_files.push(BlobFileMeta { number, file_size, total_count, total_bytes });
            }
            tag::BLOB_GARBAGE => {
                let [number, count, bytes] = varints(r).ok_or_else(|| short("blob garbage"))?;
                self.blob_garbage.push((number, count, bytes));
            }
            tag::DELETED_BLOB_FILE => {
                self.deleted_blob_files.push(r.varint().ok_or_else(|| short("deleted blob file"))?)
            }
            other => {
                return Err(format!(
                    "unknown tag {other} (written by a newer version of strata, or corrupted)"
                ))
            }
        }
        Ok(())
    }
}

fn bad(at: usize, what: &str) -> Error {
    Error::corruption(format!("version edit at byte {at}: {what}"))
}

fn put_opt(dst: &mut Vec<u8>, t: u64, v: Option<u64>) {
    if let Some(v) = v {
        put_varints(dst, &[t, v]);
    }
}

fn put_varints(dst: &mut Vec<u8>, vs: &[u64]) {
    for &v in vs {
        coding::put_varint(dst, v);
    }
}

fn varints<const N: usize>(r: &mut Reader<'_>) -> Option<[u64; N]> {
    let mut out = [0u64; N];
    for v in &mut out {
        *v = r.varint()?;
    }
    Some(out)
}

fn family_id(r: &mut Reader<'_>) -> std::result::Result<u32, String> {
    r.varint32().ok_or_else(|| "truncated or oversized column family id".to_string())
}

fn level(r: &mut Reader<'_>) -> std::result::Result<u32, String> {
    let level = r.varint32().ok_or("truncated or oversized level")?;
    if level as usize >= NUM_LEVELS {
        return Err(format!("level {level} out of range (max {})", NUM_LEVELS - 1));
    }
    Ok(level)
}

fn encode_new_file(dst: &mut Vec<u8>, level: u32, f: &FileMeta) {
    let t = if f.num_range_deletions > 0 { tag::NEW_FILE_WITH_RANGE_DELS } else { tag::NEW_FILE };
    put_varints(dst, &[t, u64::from(level), f.number, f.file_size]);
    coding::put_length_prefixed(dst, &f.smallest);
    coding::put_length_prefixed(dst, &f.largest);
    put_varints(dst, &[f.smallest_seq, f.largest_seq, f.num_entries, f.num_deletions]);
    if f.num_range_deletions > 0 {
        coding::put_varint(dst, f.num_range_deletions);
    }
}

fn decode_new_file(r: &mut Reader<'_>) -> std::result::Result<FileMeta, String> {
    let short = || "truncated new file".to_string();
    let [number, file_size] = varints(r).ok_or_else(short)?;
    let smallest = internal_key(r, "smallest")?;
    let largest = internal_key(r, "largest")?;
    let [smallest_seq, largest_seq, num_entries, num_deletions] = varints(r).ok_or_else(short)?;
    Ok(FileMeta {
        number,
        file_size,
        smallest,
        largest,
        smallest_seq,
        largest_seq,
        num_entries,
        num_deletions,
        num_range_deletions: 0,
    })
}

/// Reads a key that must be long enough to carry an internal-key trailer, so later code can
/// split it without checking again.
fn internal_key(r: &mut Reader<'_>, which: &str) -> std::result::Result<Vec<u8>, String> {
    let key = r.length_prefixed().ok_or_else(|| format!("truncated {which} key"))?;
    if key.len() < TRAILER_LEN {
        return Err(format!("{which} key of {} bytes is not an internal key", key.len()));
    }
    Ok(key.to_vec())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn sample() -> VersionEdit {
        VersionEdit {
            column_family: 0,
            add_column_family: None,
            drop_column_family: false,
            max_column_family: Some(3),
            comparator: Some("strata.bytewise".into()),
            log_number: Some(12),
            next_file_number: Some(40),
            last_sequence: Some(1 << 50),
            compact_cursors: vec![(1, b"cursor\x01\0\0\0\0\0\0\0".to_vec())],
            deleted_files: vec![(0, 7), (6, 8)],
            new_files: vec![
                (
                    2,
                    FileMeta {
                        number: 33,
                        file_size: 4 << 20,
                        smallest: b"a\x01\0\0\0\0\0\0\x09".to_vec(),
                        largest: b"z\x01\0\0\0\0\0\0\x10".to_vec(),
                        smallest_seq: 9,
                        largest_seq: 16,
                        num_entries: 1000,
                        num_deletions: 3,
                        num_range_deletions: 0,
                    },
                ),
                (
                    0,
                    FileMeta {
                        number: 35,
                        file_size: 300,
                        smallest: b"b\x04\xff\xff\xff\xff\xff\xff\xff".to_vec(),
                        largest: b"c\x04\xff\xff\xff\xff\xff\xff\xff".to_vec(),
                        smallest_seq: 20,
                        largest_seq: 20,
                        num_entries: 0,
                        num_deletions: 0,
                        num_range_deletions: 1,
                    },
                ),
            ],
            new_blob_files: vec![BlobFileMeta {
                number: 34,
                file_size: 1 << 30,
                total_count: 5,
                total_bytes: 99,
            }],
            blob_garbage: vec![(20, 4, 4096)],
            deleted_blob_files: vec![19, 18],
        }
    }

    #[test]
    fn round_trip_sample_and_empty() {
        for e in [sample(), VersionEdit::default()] {
            assert_eq!(VersionEdit::decode(&e.encode()).unwrap(), e);
        }
        assert!(VersionEdit::default().encode().is_empty());
    }

    #[test]
    fn an_empty_leading_default_edit_keeps_its_place_in_a_group() {
        let group = vec![VersionEdit::default(), VersionEdit { column_family: 11, ..VersionEdit::default() }];
        let bytes = VersionEdit::encode_group(&group);
        assert_eq!(bytes, [11, 0, 11, 11]);
        assert_eq!(VersionEdit::decode_group(&bytes).unwrap(), group);
    }

    #[test]
    fn a_group_round_trips_and_a_default_edit_alone_has_no_family_tag() {
        let mut b = sample();
        b.column_family = 4;
        b.add_column_family = Some("index".into());
        let mut c = VersionEdit { column_family: 2, drop_column_family: true, ..VersionEdit::default() };
        c.log_number = Some(9);
        let group = vec![sample(), b, c, VersionEdit { log_number: Some(1), ..VersionEdit::default() }];
        assert_eq!(VersionEdit::decode_group(&VersionEdit::encode_group(&group)).unwrap(), group);
        assert_eq!(VersionEdit::encode_group(&group[..1]), sample().encode());
        assert!(!sample().encode().starts_with(&[11]), "a default-family edit starts with no family tag");
        assert!(VersionEdit::decode(&VersionEdit::encode_group(&group)).is_err());
    }

    #[test]
    fn unknown_tag_is_corruption_naming_a_newer_writer() {
        let mut bytes = sample().encode();
        coding::put_varint(&mut bytes, 99);
        coding::put_varint(&mut bytes, 1);
        let err = VersionEdit::decode(&bytes).unwrap_err();
        assert!(err.is_corruption());
        assert!(err.to_string().contains("newer version"), "{err}");
    }

    #[test]
    fn level_out_of_range_is_corruption() {
        let mut e = VersionEdit::default();
        e.deleted_files.push((NUM_LEVELS as u32, 1));
        let err = VersionEdit::decode(&e.encode()).unwrap_err();
        assert!(err.to_string().contains("level 7 out of range"), "{err}");
    }

    #[test]
    fn short_internal_key_is_corruption() {
        let mut e = sample();
        e.new_files[0].1.smallest = b"abc".to_vec();
        assert!(VersionEdit::decode(&e.encode()).unwrap_err().is_corruption());
    }

    #[test]
    fn every_truncation_is_corruption_or_a_prefix_edit() {
        let bytes = sample().encode();
        for cut in 0..bytes.len() {
            // A cut on a field boundary is a valid (smaller) edit; anywhere else it must fail.
            if let Ok(e) = VersionEdit::decode(&bytes[..cut]) {
                assert_ne!(e, sample(), "cut {cut}");
            }
        }
    }

    fn ikey() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(any::<u8>(), TRAILER_LEN..40)
    }

    fn file_meta() -> impl Strategy<Value = FileMeta> {
        (any::<[u64; 7]>(), ikey(), ikey()).prop_map(|(n, smallest, largest)| FileMeta {
            number: n[0],
            file_size: n[1],
            smallest,
            largest,
            smallest_seq: n[2],
            largest_seq: n[3],
            num_entries: n[4],
            num_deletions: n[5],
            // Mostly files without range deletions, as in real MANIFESTs.
            num_range_deletions: if n[6] % 3 == 0 { n[6] / 3 } else { 0 },
        })
    }

    fn level_strategy() -> impl Strategy<Value = u32> {
        0..NUM_LEVELS as u32
    }

    fn edit() -> impl Strategy<Value = VersionEdit> {
        use proptest::collection::vec;
        (
            proptest::option::of(".{0,20}"),
            any::<[Option<u64>; 3]>(),
            vec((level_strategy(), vec(any::<u8>(), 0..30)), 0..3),
            vec((level_strategy(), any::<u64>()), 0..4),
            vec((level_strategy(), file_meta()), 0..4),
            vec(any::<[u64; 4]>(), 0..3),
            vec(any::<(u64, u64, u64)>(), 0..3),
            vec(any::<u64>(), 0..3),
        )
            .prop_map(
                |(comparator, nums, cursors, deleted, new_files, blobs, garbage, dead_blobs)| VersionEdit {
                    column_family: (nums[0].unwrap_or(0) % 5) as u32,
                    add_column_family: nums[1].filter(|n| n % 3 == 0).map(|n| format!("cf{n}")),
                    drop_column_family: nums[2].is_some_and(|n| n % 7 == 0),
                    max_column_family: nums[2].map(|n| (n % 9) as u32),
                    comparator,
                    log_number: nums[0],
                    next_file_number: nums[1],
                    last_sequence: nums[2],
                    compact_cursors: cursors,
                    deleted_files: deleted,
                    new_files,
                    new_blob_files: blobs
                        .into_iter()
                        .map(|b| BlobFileMeta {
                            number: b[0],
                            file_size: b[1],
                            total_count: b[2],
                            total_bytes: b[3],
                        })
                        .collect(),
                    blob_garbage: garbage,
                    deleted_blob_files: dead_blobs,
                },
            )
    }

    proptest! {
        #[test]
        fn random_edits_round_trip(e in edit()) {
            prop_assert_eq!(VersionEdit::decode(&e.encode()).unwrap(), e);
        }

        #[test]
        fn decoded_records_round_trip(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            // What the MANIFEST fuzz target checks, on short inputs (it found [11, 0, 11, 11]:
            // an empty leading default-family edit that encoded to nothing).
            if let Ok(g) = VersionEdit::decode_group(&bytes) {
                prop_assert_eq!(VersionEdit::decode_group(&VersionEdit::encode_group(&g)).unwrap(), g);
            }
        }

        #[test]
        fn random_groups_round_trip(g in proptest::collection::vec(edit(), 1..4)) {
            prop_assert_eq!(VersionEdit::decode_group(&VersionEdit::encode_group(&g)).unwrap(), g);
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = VersionEdit::decode(&bytes);
        }

        #[test]
        fn mutated_edits_never_panic(e in edit(), at in any::<usize>(), x in 1..=255u8) {
            let mut bytes = e.encode();
            if !bytes.is_empty() {
                let i = at % bytes.len();
                bytes[i] ^= x;
            }
            let _ = VersionEdit::decode(&bytes);
        }
    }
}
