//! The snapshot file: one file a node builds, sends and installs, holding the snapshot's meta
//! (last applied log id, membership, id) and the state machine's user data as strata table
//! files. A framed format rather than tar: every section carries a CRC32C of its payload, so a
//! file damaged or cut short in transfer is refused before anything is installed (tar checks
//! only its headers), and it needs no new dependency (crc-fast is strata's own).
//!
//! Layout (docs/format.md, "Raft storage", snapshot file version 1): the 8 bytes `STRASNAP`, a
//! u32 LE version, then sections `kind: u8, len: u64 LE, payload, crc32c(payload): u32 LE`:
//! first one META (kind 1, postcard `SnapshotMeta`), then any number of SST (kind 2, a table
//! file written by `SstFileWriter`, in key order), then END (kind 255, empty). This module only
//! writes and reads files; it must not touch the database.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crc_fast::{CrcAlgorithm, Digest};
use openraft::{BasicNode, SnapshotMeta};

use crate::codec;
use crate::error::io;
use crate::types::NodeId;

/// The file's first bytes.
pub const MAGIC: &[u8; 8] = b"STRASNAP";
/// The format version this build writes and reads.
pub const VERSION: u32 = 1;

const META: u8 = 1;
const SST: u8 = 2;
const END: u8 = 255;
/// A meta record is a few hundred bytes; a larger length is damage, not a record to allocate.
const MAX_META_LEN: u64 = 16 << 20;

pub(crate) type Meta = SnapshotMeta<NodeId, BasicNode>;

/// Writes the snapshot file at `path` (durably: synced before returning).
///
/// # Errors
/// `Io` when a file cannot be read or written.
pub(crate) fn write(path: &Path, meta: &Meta, ssts: &[PathBuf]) -> strata::Result<()> {
    let file = File::create(path).map_err(|e| io(path, e))?;
    let mut out = BufWriter::new(file);
    let w = |r: std::io::Result<()>| r.map_err(|e| io(path, e));
    w(out.write_all(MAGIC))?;
    w(out.write_all(&VERSION.to_le_bytes()))?;
    let meta = codec::encode(meta)?;
    w(section(&mut out, META, meta.len() as u64, &mut &meta[..]))?;
    for sst in ssts {
        let mut input = File::open(sst).map_err(|e| io(sst, e))?;
        let len = input.metadata().map_err(|e| io(sst, e))?.len();
        section(&mut out, SST, len, &mut input).map_err(|e| io(sst, e))?;
    }
    w(section(&mut out, END, 0, &mut std::io::empty()))?;
    let file = out.into_inner().map_err(|e| io(path, e.into_error()))?;
    file.sync_all().map_err(|e| io(path, e))
}

fn section(out: &mut impl Write, kind: u8, len: u64, payload: &mut impl Read) -> std::io::Result<()> {
    out.write_all(&[kind])?;
    out.write_all(&len.to_le_bytes())?;
    let crc = copy_exact(payload, out, len)?;
    out.write_all(&crc.to_le_bytes())
}

/// Copies exactly `len` bytes; their CRC32C.
fn copy_exact(from: &mut impl Read, to: &mut impl Write, len: u64) -> std::io::Result<u32> {
    let mut digest = Digest::new(CrcAlgorithm::Crc32Iscsi);
    let mut buf = vec![0u8; 64 << 10];
    let mut left = len;
    while left > 0 {
        let n = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        from.read_exact(&mut buf[..n])?;
        digest.update(&buf[..n]);
        to.write_all(&buf[..n])?;
        left -= n as u64;
    }
    // The digest of a 32-bit CRC fits in 32 bits.
    Ok(digest.finalize() as u32)
}

/// A snapshot file checked whole, its table files written out.
pub(crate) struct Unpacked {
    pub(crate) meta: Meta,
    pub(crate) ssts: Vec<PathBuf>,
}

fn corrupt(path: &Path, what: &str) -> strata::Error {
    strata::Error::Corruption(format!("snapshot file {}: {what}", path.display()))
}

/// Reads the header and the meta section of the file at `path`.
///
/// # Errors
/// `Io` when it cannot be read, `UnsupportedVersion` for a newer format, `Corruption` when it
/// is not a snapshot file or its meta is damaged.
pub(crate) fn read_meta(path: &Path) -> strata::Result<Meta> {
    let mut input = BufReader::new(File::open(path).map_err(|e| io(path, e))?);
    read_head(path, &mut input)
}

fn read_head(path: &Path, input: &mut impl Read) -> strata::Result<Meta> {
    let mut head = [0u8; 12];
    input.read_exact(&mut head).map_err(|_| corrupt(path, "shorter than its header"))?;
    if &head[..8] != MAGIC {
        return Err(corrupt(path, "not a strata snapshot file"));
    }
    let version = u32::from_le_bytes([head[8], head[9], head[10], head[11]]);
    if version > VERSION {
        return Err(strata::Error::UnsupportedVersion {
            what: "Raft snapshot file",
            found: version,
            supported: VERSION,
        });
    }
    if version == 0 {
        return Err(corrupt(path, "format version 0"));
    }
    let (kind, len) = section_head(path, input)?;
    if kind != META || len > MAX_META_LEN {
        return Err(corrupt(path, "no meta section first"));
    }
    let mut meta = Vec::new();
    read_payload(path, input, len, &mut meta)?;
    codec::decode(&meta, "snapshot meta")
}

fn section_head(path: &Path, input: &mut impl Read) -> strata::Result<(u8, u64)> {
    let mut head = [0u8; 9];
    input.read_exact(&mut head).map_err(|_| corrupt(path, "cut short (no END section)"))?;
    let mut len = [0u8; 8];
    len.copy_from_slice(&head[1..]);
    Ok((head[0], u64::from_le_bytes(len)))
}

/// Copies a section's payload to `to` and checks its CRC.
fn read_payload(path: &Path, input: &mut impl Read, len: u64, to: &mut impl Write) -> strata::Result<()> {
    let crc = copy_exact(input, to, len).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => corrupt(path, "cut short inside a section"),
        _ => io(path, e),
    })?;
    let mut stored = [0u8; 4];
    input.read_exact(&mut stored).map_err(|_| corrupt(path, "cut short before a checksum"))?;
    if u32::from_le_bytes(stored) != crc {
        return Err(corrupt(path, "section checksum mismatch"));
    }
    Ok(())
}

/// Checks the whole file at `path` and writes its table files into the directory `into`
/// (created; the caller removes it).
///
/// # Errors
/// As [`read_meta`], and `Corruption` for a damaged or truncated section or an unknown kind.
pub(crate) fn unpack(path: &Path, into: &Path) -> strata::Result<Unpacked> {
    let mut input = BufReader::new(File::open(path).map_err(|e| io(path, e))?);
    let meta = read_head(path, &mut input)?;
    std::fs::create_dir_all(into).map_err(|e| io(into, e))?;
    let mut ssts = Vec::new();
    loop {
        match section_head(path, &mut input)? {
            (END, 0) => {
                read_payload(path, &mut input, 0, &mut std::io::sink())?;
                if input.read(&mut [0u8; 1]).map_err(|e| io(path, e))? != 0 {
                    return Err(corrupt(path, "bytes after the END section"));
                }
                break;
            }
            (SST, len) => {
                let sst = into.join(format!("{:06}.sst", ssts.len()));
                let mut out = BufWriter::new(File::create(&sst).map_err(|e| io(&sst, e))?);
                read_payload(path, &mut input, len, &mut out)?;
                out.flush().map_err(|e| io(&sst, e))?;
                ssts.push(sst);
            }
            (kind, _) => return Err(corrupt(path, &format!("unknown section kind {kind}"))),
        }
    }
    Ok(Unpacked { meta, ssts })
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::{CommittedLeaderId, LogId, StoredMembership};

    fn meta() -> Meta {
        let id = LogId::new(CommittedLeaderId::new(3, 1), 9);
        Meta {
            last_log_id: Some(id),
            last_membership: StoredMembership::default(),
            snapshot_id: "3-9-x".into(),
        }
    }

    /// A snapshot file with two table files of `payloads`.
    fn sample(dir: &Path, payloads: &[&[u8]]) -> PathBuf {
        let ssts: Vec<PathBuf> = payloads
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let path = dir.join(format!("in{i}.sst"));
                std::fs::write(&path, p).unwrap();
                path
            })
            .collect();
        let path = dir.join("snap");
        write(&path, &meta(), &ssts).unwrap();
        path
    }

    #[test]
    fn round_trips_meta_and_tables() {
        let dir = tempfile::tempdir().unwrap();
        let path = sample(dir.path(), &[b"first table", b"second"]);
        assert_eq!(read_meta(&path).unwrap(), meta());
        let out = unpack(&path, &dir.path().join("out")).unwrap();
        assert_eq!(out.meta, meta());
        let read: Vec<Vec<u8>> = out.ssts.iter().map(|p| std::fs::read(p).unwrap()).collect();
        assert_eq!(read, vec![b"first table".to_vec(), b"second".to_vec()]);
    }

    #[test]
    fn every_flipped_bit_and_every_truncation_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = sample(dir.path(), &[b"first table", b"second"]);
        let bytes = std::fs::read(&path).unwrap();
        let damaged = dir.path().join("damaged");
        for i in 0..bytes.len() {
            for variant in [Some(i), None] {
                let content = match variant {
                    Some(i) => {
                        let mut b = bytes.clone();
                        b[i] ^= 0x04;
                        b
                    }
                    None => bytes[..i].to_vec(),
                };
                std::fs::write(&damaged, &content).unwrap();
                let r = unpack(&damaged, &dir.path().join("out"));
                assert!(r.is_err(), "damage at byte {i} ({variant:?}) not detected");
            }
        }
        std::fs::write(&damaged, [&bytes[..], b"x"].concat()).unwrap();
        assert!(unpack(&damaged, &dir.path().join("out")).is_err(), "trailing byte not detected");
    }

    #[test]
    fn other_versions_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = sample(dir.path(), &[]);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[8] = 2;
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            read_meta(&path),
            Err(strata::Error::UnsupportedVersion { found: 2, supported: 1, .. })
        ));
        bytes[8] = 0;
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(read_meta(&path), Err(strata::Error::Corruption(_))));
    }
}
