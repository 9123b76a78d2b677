//! The bytes of LinkBench's three tables in an ordered key-value store, shared by every
//! [`LinkStore`](super::store::LinkStore) built on one:
//! - `nodes`: id → type | version | time | data;
//! - `links`: id1 | link_type | !time | id2 → visibility | version | data, so one node's links
//!   of one type are one key prefix, newest first (time is stored inverted);
//! - `link_index`: id1 | link_type | id2 → time, to find a link by its id2 (LinkBench's
//!   MySQL schema has the same pair: a primary key on id2 and a secondary index by time);
//! - `counts`: id1 | link_type → count | time.
//!
//! Integers are big-endian so byte order is numeric order. Owns encoding and decoding only;
//! must not read or write a store.

use anyhow::{bail, Result};

/// A node (LinkBench's `Node`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub id: u64,
    pub node_type: u32,
    pub version: u64,
    pub time: u64,
    pub data: Vec<u8>,
}

/// A link (LinkBench's `Link`, without `id1_type`/`id2_type`, which it never reads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub id1: u64,
    pub link_type: u64,
    pub id2: u64,
    pub visible: bool,
    pub version: u64,
    pub time: u64,
    pub data: Vec<u8>,
}

/// The family names, in the order a store opens them.
pub const NODES: &str = "nodes";
pub const LINKS: &str = "links";
pub const LINK_INDEX: &str = "link_index";
pub const COUNTS: &str = "counts";

fn be(x: u64) -> [u8; 8] {
    x.to_be_bytes()
}

fn read_u64(b: &[u8], at: usize) -> Result<u64> {
    match b.get(at..at + 8) {
        Some(s) => Ok(u64::from_be_bytes(s.try_into()?)),
        None => bail!("linkbench record too short ({} bytes, wanted {})", b.len(), at + 8),
    }
}

pub fn node_key(id: u64) -> [u8; 8] {
    be(id)
}

pub fn node_value(n: &Node) -> Vec<u8> {
    let mut v = Vec::with_capacity(20 + n.data.len());
    v.extend_from_slice(&n.node_type.to_be_bytes());
    v.extend_from_slice(&be(n.version));
    v.extend_from_slice(&be(n.time));
    v.extend_from_slice(&n.data);
    v
}

pub fn decode_node(id: u64, v: &[u8]) -> Result<Node> {
    let Some(t) = v.get(..4) else { bail!("linkbench node {id}: record too short") };
    let node_type = u32::from_be_bytes(t.try_into()?);
    let (version, time) = (read_u64(v, 4)?, read_u64(v, 12)?);
    Ok(Node { id, node_type, version, time, data: v[20..].to_vec() })
}

/// id1 | link_type: the prefix of a link list and the key of its count.
pub fn list_prefix(id1: u64, link_type: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&be(id1));
    k[8..].copy_from_slice(&be(link_type));
    k
}

/// The first key after every key with `prefix` (an exclusive upper bound).
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return end;
        }
    }
    // All 0xFF: nothing sorts after the prefix but longer keys; no bound fits, use the max.
    vec![u8::MAX; prefix.len() + 1]
}

pub fn link_key(id1: u64, link_type: u64, time: u64, id2: u64) -> [u8; 32] {
    let mut k = [0u8; 32];
    k[..16].copy_from_slice(&list_prefix(id1, link_type));
    k[16..24].copy_from_slice(&be(!time));
    k[24..].copy_from_slice(&be(id2));
    k
}

pub fn link_value(l: &Link) -> Vec<u8> {
    let mut v = Vec::with_capacity(9 + l.data.len());
    v.push(u8::from(l.visible));
    v.extend_from_slice(&be(l.version));
    v.extend_from_slice(&l.data);
    v
}

pub fn decode_link(key: &[u8], value: &[u8]) -> Result<Link> {
    if key.len() != 32 || value.len() < 9 {
        bail!("linkbench link record of {} + {} bytes", key.len(), value.len());
    }
    Ok(Link {
        id1: read_u64(key, 0)?,
        link_type: read_u64(key, 8)?,
        time: !read_u64(key, 16)?,
        id2: read_u64(key, 24)?,
        visible: value[0] != 0,
        version: read_u64(value, 1)?,
        data: value[9..].to_vec(),
    })
}

pub fn index_key(id1: u64, link_type: u64, id2: u64) -> [u8; 24] {
    let mut k = [0u8; 24];
    k[..16].copy_from_slice(&list_prefix(id1, link_type));
    k[16..].copy_from_slice(&be(id2));
    k
}

pub fn index_value(time: u64) -> [u8; 8] {
    be(time)
}

pub fn decode_time(v: &[u8]) -> Result<u64> {
    read_u64(v, 0)
}

pub fn count_value(count: u64, time: u64) -> [u8; 16] {
    let mut v = [0u8; 16];
    v[..8].copy_from_slice(&be(count));
    v[8..].copy_from_slice(&be(time));
    v
}

pub fn decode_count(v: &[u8]) -> Result<u64> {
    read_u64(v, 0)
}

/// (id1, link_type) of a count key or of any key starting with a list prefix.
pub fn decode_prefix(key: &[u8]) -> Result<(u64, u64)> {
    Ok((read_u64(key, 0)?, read_u64(key, 8)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_of_one_list_sort_newest_first_and_round_trip() {
        let a = link_key(5, 7, 100, 9);
        let b = link_key(5, 7, 200, 1);
        assert!(b < a, "the newer link sorts first");
        assert!(a.starts_with(&list_prefix(5, 7)) && link_key(5, 8, 0, 0) > a);
        let l = Link {
            id1: 5,
            link_type: 7,
            id2: 9,
            visible: false,
            version: 3,
            time: 100,
            data: b"xy".to_vec(),
        };
        assert_eq!(decode_link(&a, &link_value(&l)).unwrap(), l);
        let n = Node { id: 4, node_type: 2, version: 1, time: 8, data: vec![1, 2, 3] };
        assert_eq!(decode_node(4, &node_value(&n)).unwrap(), n);
        assert_eq!(decode_count(&count_value(12, 1)).unwrap(), 12);
        assert!(decode_link(&a[..10], b"").is_err() && decode_node(1, b"ab").is_err());
        assert_eq!(prefix_end(&[1, 0xFF]), vec![2]);
    }
}
