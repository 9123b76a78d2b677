//! Writes one blob file front to back: header, records, footer, then fdatasync. The file is not
//! durable (and must not be referenced by any MANIFEST record) until [`BlobWriter::finish`]
//! returns. This module must not rewrite or reopen files; after any error the half-written file
//! is garbage for the caller to delete.

use super::format::{self, BlobPointer, Footer, FLAG_COMPRESSED};
use crate::error::Result;
use crate::fs::{BufferedWriter, WritableFile};
use crate::util::compress::Compression;
use crate::util::compress::Compressor;
use crate::util::kill_point::kill_point;
use crate::version::edit::BlobFileMeta;

/// Appends records to a new blob file.
pub struct BlobWriter {
    out: BufferedWriter,
    file_number: u64,
    compression: Compression,
    footer: Footer,
    /// Reused record head (checksum, flags, lengths, key).
    head: Vec<u8>,
    /// Reused compressor and its output.
    compressor: Compressor,
}

impl BlobWriter {
    /// Starts blob file `file_number` on a freshly created file by writing its header.
    pub fn new(file: Box<dyn WritableFile>, file_number: u64, compression: Compression) -> Result<Self> {
        let mut out = BufferedWriter::new(file);
        out.write(&format::encode_header(file_number, compression))?;
        Ok(Self {
            out,
            file_number,
            compression,
            footer: Footer::default(),
            head: Vec::new(),
            compressor: Compressor::new(),
        })
    }

    /// Appends one record and returns the pointer the tree stores in place of the value.
    pub fn add(&mut self, user_key: &[u8], value: &[u8]) -> Result<BlobPointer> {
        let (flags, stored) = match try_compress(&mut self.compressor, self.compression, value)? {
            Some(compressed) => (FLAG_COMPRESSED, compressed),
            None => (0, value),
        };
        self.head.clear();
        format::encode_record_head(&mut self.head, flags, user_key, value.len(), stored.len());
        let sum = format::record_checksum(self.head.get(4..).unwrap_or_default(), stored);
        // The head always starts with its 4-byte checksum slot.
        self.head[..4].copy_from_slice(&sum.to_le_bytes());
        let offset = self.out.offset();
        self.out.write(&self.head)?;
        self.out.write(stored)?;
        let size = (self.head.len() + stored.len()) as u64;
        self.footer.record_count += 1;
        self.footer.record_bytes += size;
        self.footer.value_bytes += value.len() as u64;
        Ok(BlobPointer { file_number: self.file_number, offset, size })
    }

    /// Bytes written so far, buffered or not.
    pub fn file_size(&self) -> u64 {
        self.out.offset()
    }

    /// Writes the footer and fdatasyncs the file.
    pub fn finish(mut self) -> Result<BlobFileMeta> {
        self.out.write(&self.footer.encode())?;
        kill_point("blob.finish.before_sync");
        let file_size = self.out.finish()?;
        kill_point("blob.finish.after_sync");
        Ok(BlobFileMeta {
            number: self.file_number,
            file_size,
            total_count: self.footer.record_count,
            total_bytes: self.footer.record_bytes,
        })
    }
}

/// The compressed `value`, or None when the record should be stored raw because compression is
/// off or saved less than 12.5% (not worth the decompression on every read).
fn try_compress<'c>(
    compressor: &'c mut Compressor,
    compression: Compression,
    value: &[u8],
) -> Result<Option<&'c [u8]>> {
    if compression == Compression::None || value.is_empty() {
        return Ok(None);
    }
    let compressed = compressor.compress(compression, value)?;
    Ok((compressed.len() <= value.len() - value.len() / 8).then_some(compressed))
}
