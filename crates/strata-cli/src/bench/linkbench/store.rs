//! The seam between the LinkBench driver and a database: [`LinkStore`] (LinkBench's own
//! `LinkStore`/`NodeStore` operations) and [`Graph`], its one implementation, written once
//! over [`Tables`]: four ordered tables with atomic, isolated transactions, which each engine
//! provides (`store_strata.rs`, `store_rocksdb.rs`, `store_lmdb.rs`).
//!
//! Owns: how each operation reads and writes the tables of `layout.rs`, and how it stays
//! atomic: every write operation is one transaction whose dependent reads are claimed
//! ([`TxnOps::read`]) and which is begun again from the start when the engine reports a
//! conflict. Must not: time operations, choose ids or print (mod.rs and workload.rs do), or
//! name an engine.

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{bail, Result};

use super::layout::{self, Link, Node};

/// LinkBench's operations on one database, shared by every loader and requester thread.
pub trait LinkStore: Send + Sync {
    /// The loader's write: `node` (if given), then `links` (new, visible, all of one list)
    /// and that list's count set to `count`, in one atomic write.
    fn load(&self, node: Option<&Node>, links: &[Link], count: u64) -> Result<()>;
    /// Stores `node` under a fresh id (past every loaded one) and returns the id.
    fn add_node(&self, node: &Node) -> Result<u64>;
    fn get_node(&self, id: u64) -> Result<Option<Node>>;
    /// Replaces an existing node; false when there is none.
    fn update_node(&self, node: &Node) -> Result<bool>;
    fn delete_node(&self, id: u64) -> Result<bool>;
    /// Adds `link`, or overwrites the link with its (id1, type, id2) and makes it visible;
    /// a link that becomes visible adds one to the list's count. True when the link was not
    /// there before (LinkBench's addLink result).
    fn add_link(&self, link: &Link) -> Result<bool>;
    /// As add_link; true when the link was there before (LinkBench's updateLink result).
    fn update_link(&self, link: &Link) -> Result<bool>;
    /// Hides a visible link (LinkBench's delete without expunge) and takes one off its count;
    /// false when there was no visible link.
    fn delete_link(&self, id1: u64, link_type: u64, id2: u64) -> Result<bool>;
    fn count_links(&self, id1: u64, link_type: u64) -> Result<u64>;
    /// The links of the list with these id2s (LinkBench's multiget), visible or not.
    fn get_links(&self, id1: u64, link_type: u64, id2s: &[u64]) -> Result<Vec<Link>>;
    /// Up to `limit` visible links of the list, newest first.
    fn get_link_list(&self, id1: u64, link_type: u64, limit: usize) -> Result<Vec<Link>>;
    /// Transactions begun again after a conflict, since open.
    fn retries(&self) -> u64;
    /// Every count, in (id1, link_type) order: f(id1, link_type, count).
    fn scan_counts(&self, f: &mut dyn FnMut(u64, u64, u64)) -> Result<()>;
    /// Every stored link in key order, hidden ones included.
    fn scan_links(&self, f: &mut dyn FnMut(&Link)) -> Result<()>;
    /// Entries of the id2 index (each stored link has exactly one).
    fn index_entries(&self) -> Result<u64>;
    /// One line on the engine and how its writes are made atomic, for the report's header.
    fn describe(&self) -> String;
}

/// The four tables of `layout.rs`: a column family each on an LSM, a named database on LMDB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    Nodes,
    Links,
    Index,
    Counts,
}

impl Table {
    pub const ALL: [Self; 4] = [Self::Nodes, Self::Links, Self::Index, Self::Counts];

    pub fn name(self) -> &'static str {
        match self {
            Self::Nodes => layout::NODES,
            Self::Links => layout::LINKS,
            Self::Index => layout::LINK_INDEX,
            Self::Counts => layout::COUNTS,
        }
    }

    /// The position of this table in [`Table::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One transaction's reads and writes; a read sees the transaction's own writes.
pub trait TxnOps {
    /// A read the transaction's writes depend on, claimed against concurrent writers
    /// (`get_for_update` on an LSM; LMDB's single writer claims everything).
    fn read(&mut self, t: Table, key: &[u8]) -> Result<Option<Vec<u8>>>;
    fn put(&mut self, t: Table, key: &[u8], value: &[u8]) -> Result<()>;
    fn delete(&mut self, t: Table, key: &[u8]) -> Result<()>;
}

/// Point reads from one consistent view of every table.
pub trait View {
    fn get(&self, t: Table, key: &[u8]) -> Result<Option<Vec<u8>>>;
}

/// What a transaction runs: its reads and writes, and the operation's result.
pub type TxnBody<'a> = dyn FnMut(&mut dyn TxnOps) -> Result<bool> + 'a;

/// What a scan hands each (key, value) to; false stops the scan.
pub type ScanFn<'a> = dyn FnMut(&[u8], &[u8]) -> Result<bool> + 'a;

/// What a whole-table scan hands each (key, value) to.
type EntryFn<'a> = dyn FnMut(&[u8], &[u8]) -> Result<()> + 'a;

/// An engine's four tables, as [`Graph`] uses them.
pub trait Tables: Send + Sync {
    /// Runs `body` once as one transaction and commits it (or applies its writes as one plain
    /// atomic batch, on an engine run without transactions). An error from `body` or from the
    /// commit leaves nothing written.
    fn transaction(&self, body: &mut TxnBody<'_>) -> Result<bool>;
    /// Whether `e`, returned by [`Tables::transaction`], is a conflict (or lock timeout) after
    /// which the same transaction begun again may succeed.
    fn is_conflict(&self, e: &anyhow::Error) -> bool;
    /// A single write outside any transaction.
    fn put(&self, t: Table, key: &[u8], value: &[u8]) -> Result<()>;
    /// The latest committed value.
    fn get(&self, t: Table, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Runs `body` over one consistent view (a snapshot or a read transaction).
    fn with_view(&self, body: &mut dyn FnMut(&dyn View) -> Result<()>) -> Result<()>;
    /// Entries with `lower <= key < upper` (no upper bound when `None`) in key order, from one
    /// consistent view, until `f` returns false.
    fn scan(&self, t: Table, lower: &[u8], upper: Option<&[u8]>, f: &mut ScanFn<'_>) -> Result<()>;
    /// The engine and how its writes are made atomic, for the report's header.
    fn describe(&self) -> String;
}

/// How many times one operation may meet a conflict before the run stops with an error.
const MAX_RETRIES: u64 = 10_000;

/// LinkBench's graph on an engine's tables.
pub struct Graph<T> {
    tables: T,
    next_node: AtomicU64,
    retries: AtomicU64,
}

impl<T: Tables> Graph<T> {
    /// Added nodes get ids from `first_new_node` on.
    pub fn new(tables: T, first_new_node: u64) -> Self {
        Self { tables, next_node: AtomicU64::new(first_new_node), retries: AtomicU64::new(0) }
    }

    /// Runs `body` as one transaction, again from the start after a conflict.
    fn atomically(&self, body: &mut TxnBody<'_>) -> Result<bool> {
        for _ in 0..MAX_RETRIES {
            match self.tables.transaction(body) {
                Err(e) if self.tables.is_conflict(&e) => {
                    self.retries.fetch_add(1, Ordering::Relaxed);
                }
                other => return other,
            }
        }
        bail!("linkbench: an operation conflicted {MAX_RETRIES} times in a row")
    }

    /// Hands every entry of `t` to `f`, in key order, from one consistent view.
    fn scan_all(&self, t: Table, f: &mut EntryFn<'_>) -> Result<()> {
        self.tables.scan(t, &[], None, &mut |k, v| f(k, v).map(|()| true))
    }
}

/// The add/update body: write `link` visible, moving it if its time changed, and count it if
/// it was not visible. Returns whether a link with its id2 existed.
fn upsert_link(w: &mut dyn TxnOps, link: &Link) -> Result<bool> {
    let ikey = layout::index_key(link.id1, link.link_type, link.id2);
    let old_time = w.read(Table::Index, &ikey)?.map(|v| layout::decode_time(&v)).transpose()?;
    let mut was_visible = false;
    if let Some(t) = old_time {
        let old_key = layout::link_key(link.id1, link.link_type, t, link.id2);
        was_visible = w.read(Table::Links, &old_key)?.is_some_and(|v| v.first() == Some(&1));
        w.delete(Table::Links, &old_key)?;
    }
    let new = Link { visible: true, ..link.clone() };
    let key = layout::link_key(link.id1, link.link_type, link.time, link.id2);
    w.put(Table::Links, &key, &layout::link_value(&new))?;
    w.put(Table::Index, &ikey, &layout::index_value(link.time))?;
    if !was_visible {
        add_to_count(w, link.id1, link.link_type, 1, link.time)?;
    }
    Ok(old_time.is_some())
}

/// Adds `delta` to the list's count: read (claimed), then written.
fn add_to_count(w: &mut dyn TxnOps, id1: u64, link_type: u64, delta: i64, time: u64) -> Result<()> {
    let key = layout::list_prefix(id1, link_type);
    let old = match w.read(Table::Counts, &key)? {
        Some(v) => layout::decode_count(&v)?,
        None => 0,
    };
    let new = old.saturating_add_signed(delta);
    w.put(Table::Counts, &key, &layout::count_value(new, time))
}

impl<T: Tables> LinkStore for Graph<T> {
    fn load(&self, node: Option<&Node>, links: &[Link], count: u64) -> Result<()> {
        self.atomically(&mut |w| {
            if let Some(n) = node {
                w.put(Table::Nodes, &layout::node_key(n.id), &layout::node_value(n))?;
            }
            for l in links {
                let key = layout::link_key(l.id1, l.link_type, l.time, l.id2);
                w.put(Table::Links, &key, &layout::link_value(l))?;
                let ikey = layout::index_key(l.id1, l.link_type, l.id2);
                w.put(Table::Index, &ikey, &layout::index_value(l.time))?;
            }
            if let Some(l) = links.last() {
                let time = links.iter().map(|l| l.time).max().unwrap_or(l.time);
                let key = layout::list_prefix(l.id1, l.link_type);
                w.put(Table::Counts, &key, &layout::count_value(count, time))?;
            }
            Ok(true)
        })
        .map(drop)
    }

    fn add_node(&self, node: &Node) -> Result<u64> {
        let id = self.next_node.fetch_add(1, Ordering::Relaxed);
        let stored = Node { id, ..node.clone() };
        self.tables.put(Table::Nodes, &layout::node_key(id), &layout::node_value(&stored))?;
        Ok(id)
    }

    fn get_node(&self, id: u64) -> Result<Option<Node>> {
        let v = self.tables.get(Table::Nodes, &layout::node_key(id))?;
        v.map(|v| layout::decode_node(id, &v)).transpose()
    }

    fn update_node(&self, node: &Node) -> Result<bool> {
        let key = layout::node_key(node.id);
        self.atomically(&mut |w| {
            if w.read(Table::Nodes, &key)?.is_none() {
                return Ok(false);
            }
            w.put(Table::Nodes, &key, &layout::node_value(node))?;
            Ok(true)
        })
    }

    fn delete_node(&self, id: u64) -> Result<bool> {
        let key = layout::node_key(id);
        self.atomically(&mut |w| {
            if w.read(Table::Nodes, &key)?.is_none() {
                return Ok(false);
            }
            w.delete(Table::Nodes, &key)?;
            Ok(true)
        })
    }

    fn add_link(&self, link: &Link) -> Result<bool> {
        self.atomically(&mut |w| upsert_link(w, link)).map(|existed| !existed)
    }

    fn update_link(&self, link: &Link) -> Result<bool> {
        self.atomically(&mut |w| upsert_link(w, link))
    }

    fn delete_link(&self, id1: u64, link_type: u64, id2: u64) -> Result<bool> {
        let ikey = layout::index_key(id1, link_type, id2);
        self.atomically(&mut |w| {
            let Some(t) = w.read(Table::Index, &ikey)? else { return Ok(false) };
            let time = layout::decode_time(&t)?;
            let key = layout::link_key(id1, link_type, time, id2);
            let Some(v) = w.read(Table::Links, &key)? else { return Ok(false) };
            let mut link = layout::decode_link(&key, &v)?;
            if !link.visible {
                return Ok(false);
            }
            link.visible = false;
            w.put(Table::Links, &key, &layout::link_value(&link))?;
            add_to_count(w, id1, link_type, -1, time)?;
            Ok(true)
        })
    }

    fn count_links(&self, id1: u64, link_type: u64) -> Result<u64> {
        let v = self.tables.get(Table::Counts, &layout::list_prefix(id1, link_type))?;
        v.map_or(Ok(0), |v| layout::decode_count(&v))
    }

    fn get_links(&self, id1: u64, link_type: u64, id2s: &[u64]) -> Result<Vec<Link>> {
        // One view for the index and the links, so a link moving meanwhile is not missed.
        let mut out = Vec::new();
        self.tables.with_view(&mut |view| {
            for &id2 in id2s {
                let Some(t) = view.get(Table::Index, &layout::index_key(id1, link_type, id2))? else {
                    continue;
                };
                let key = layout::link_key(id1, link_type, layout::decode_time(&t)?, id2);
                if let Some(v) = view.get(Table::Links, &key)? {
                    out.push(layout::decode_link(&key, &v)?);
                }
            }
            Ok(())
        })?;
        Ok(out)
    }

    fn get_link_list(&self, id1: u64, link_type: u64, limit: usize) -> Result<Vec<Link>> {
        let prefix = layout::list_prefix(id1, link_type);
        let end = layout::prefix_end(&prefix);
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        self.tables.scan(Table::Links, &prefix, Some(&end), &mut |k, v| {
            // Hidden links are skipped, as LinkBench's visibility filter does.
            if v.first() == Some(&1) {
                out.push(layout::decode_link(k, v)?);
            }
            Ok(out.len() < limit)
        })?;
        Ok(out)
    }

    fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    fn scan_counts(&self, f: &mut dyn FnMut(u64, u64, u64)) -> Result<()> {
        self.scan_all(Table::Counts, &mut |k, v| {
            let (id1, link_type) = layout::decode_prefix(k)?;
            f(id1, link_type, layout::decode_count(v)?);
            Ok(())
        })
    }

    fn scan_links(&self, f: &mut dyn FnMut(&Link)) -> Result<()> {
        self.scan_all(Table::Links, &mut |k, v| {
            f(&layout::decode_link(k, v)?);
            Ok(())
        })
    }

    fn index_entries(&self) -> Result<u64> {
        let mut n = 0;
        self.scan_all(Table::Index, &mut |_, _| {
            n += 1;
            Ok(())
        })?;
        Ok(n)
    }

    fn describe(&self) -> String {
        self.tables.describe()
    }
}
