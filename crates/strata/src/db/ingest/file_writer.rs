//! `SstFileWriter` (RocksDB's): writes a table file outside any database, from keys given in
//! strictly increasing order, for [`Db::ingest_external_file`](crate::Db::ingest_external_file).
//! It owns the ordering check and the file; it must not touch a database. Every entry is
//! written with sequence number 0: ingestion gives the file's keys their place in a database's
//! history.

use std::path::{Path, PathBuf};

use crate::batch::{MAX_KEY_LEN, MAX_VALUE_LEN};
use crate::error::{Error, Result};
use crate::key::{self, ValueKind};
use crate::options::Options;
use crate::sst::builder::{TableBuilder, TableBuilderOptions};

/// What a finished external file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalFileInfo {
    /// Where the file is.
    pub path: PathBuf,
    /// Its first key.
    pub smallest_key: Vec<u8>,
    /// Its last key.
    pub largest_key: Vec<u8>,
    /// Entries (puts, deletes and merges).
    pub num_entries: u64,
    /// Bytes in the file.
    pub file_size: u64,
}

/// Writes a table of sorted keys to ingest later.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::{Db, IngestOptions, Options, SstFileWriter};
/// let file = dir.path().join("bulk.sst");
/// let mut w = SstFileWriter::create(&file, &Options::default())?;
/// for i in 0..1000u32 {
///     w.put(format!("user:{i:06}"), format!("row {i}"))?;
/// }
/// let info = w.finish()?;
/// assert_eq!(info.num_entries, 1000);
///
/// let db = Db::open(dir.path().join("db"), Options::default())?;
/// db.ingest_external_file(&[&file], &IngestOptions::default())?;
/// assert_eq!(db.get("user:000007")?.as_deref(), Some(&b"row 7"[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SstFileWriter {
    path: PathBuf,
    builder: TableBuilder,
    smallest: Option<Vec<u8>>,
    last: Option<Vec<u8>>,
    entries: u64,
    key_buf: Vec<u8>,
}

impl std::fmt::Debug for SstFileWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SstFileWriter").field("path", &self.path).field("entries", &self.entries).finish()
    }
}

impl SstFileWriter {
    /// Creates `path` (replacing a file there) with the block size, compression of the last
    /// level and bloom filter of `opts`, through `opts.fs`.
    ///
    /// # Errors
    /// `InvalidArgument` for invalid options, `Io` when the file cannot be created.
    pub fn create(path: impl AsRef<Path>, opts: &Options) -> Result<Self> {
        opts.validate()?;
        let path = path.as_ref().to_path_buf();
        let file = opts.fs.create(&path)?;
        let table_opts = TableBuilderOptions {
            block_size: opts.block_size,
            restart_interval: opts.block_restart_interval,
            bloom_bits_per_key: opts.bloom_bits_per_key,
            compression: opts.compression_for_level(crate::options::NUM_LEVELS - 1),
            prefix_extractor: opts.prefix_extractor,
        };
        let builder = TableBuilder::new(file, table_opts);
        Ok(Self { path, builder, smallest: None, last: None, entries: 0, key_buf: Vec::new() })
    }

    /// Adds `key` = `value`.
    ///
    /// # Errors
    /// `InvalidArgument` when `key` is not greater than the previous key or a size is over its
    /// limit; `Io` on a write error.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.add(key.as_ref(), ValueKind::Put, value.as_ref())
    }

    /// Adds a deletion of `key`: once ingested, older values of it are hidden.
    ///
    /// # Errors
    /// As [`SstFileWriter::put`].
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> Result<()> {
        self.add(key.as_ref(), ValueKind::Delete, &[])
    }

    /// Adds a merge operand for `key`, folded at read time by the database's merge operator.
    ///
    /// # Errors
    /// As [`SstFileWriter::put`].
    pub fn merge(&mut self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        self.add(key.as_ref(), ValueKind::Merge, operand.as_ref())
    }

    fn add(&mut self, user_key: &[u8], kind: ValueKind, value: &[u8]) -> Result<()> {
        if user_key.len() > MAX_KEY_LEN || value.len() > MAX_VALUE_LEN {
            return Err(Error::InvalidArgument(format!(
                "key of {} bytes or value of {} bytes over the limit ({MAX_KEY_LEN} / {MAX_VALUE_LEN})",
                user_key.len(),
                value.len()
            )));
        }
        if self.last.as_deref().is_some_and(|last| key::compare_user_keys(user_key, last).is_le()) {
            return Err(Error::InvalidArgument(format!(
                "keys must be added in strictly increasing order: {:?} after {:?}",
                String::from_utf8_lossy(user_key),
                String::from_utf8_lossy(self.last.as_deref().unwrap_or_default())
            )));
        }
        self.key_buf.clear();
        self.key_buf.extend_from_slice(user_key);
        crate::util::coding::put_u64(&mut self.key_buf, key::pack_trailer(0, kind as u8));
        self.builder.add(&self.key_buf, value)?;
        if self.smallest.is_none() {
            self.smallest = Some(user_key.to_vec());
        }
        self.last = Some(user_key.to_vec());
        self.entries += 1;
        Ok(())
    }

    /// Entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.entries
    }

    /// Writes the index and footer and syncs the file.
    ///
    /// # Errors
    /// `InvalidArgument` when nothing was added (an empty table cannot be ingested), `Io` on a
    /// write or sync error.
    pub fn finish(self) -> Result<ExternalFileInfo> {
        let (Some(smallest_key), Some(largest_key)) = (self.smallest, self.last) else {
            return Err(Error::InvalidArgument(format!("{}: no entries were added", self.path.display())));
        };
        let summary = self.builder.finish()?;
        Ok(ExternalFileInfo {
            path: self.path,
            smallest_key,
            largest_key,
            num_entries: self.entries,
            file_size: summary.file_size,
        })
    }
}
