//! The seam between the LinkBench driver and a database: [`LinkStore`], LinkBench's own
//! `LinkStore`/`NodeStore` operations, and its strata implementation.
//!
//! Owns: how each operation reads and writes the tables of `layout.rs`, and how it stays
//! atomic. With transactions on, every write operation is one optimistic strata transaction
//! (its count and link index keys read with `get_for_update`), retried from the start on
//! `Error::Busy`; with them off the same reads and writes go out as one plain `WriteBatch`,
//! which is atomic but not isolated, so two concurrent adds to one list can lose a count.
//! Must not: time operations, choose ids or print (mod.rs and workload.rs do). Another engine
//! (RocksDB's TransactionDB, LMDB) is another implementation of the trait.

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{bail, Context, Result};
use strata::txn::Transaction;
use strata::{ColumnFamily, Db, Options, ReadOptions, WriteBatch, WriteOptions};

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
}

/// What a scan hands each (key, value) to.
type EntryFn<'a> = dyn FnMut(&[u8], &[u8]) -> Result<()> + 'a;

/// How many times one operation may meet a conflict before the run stops with an error.
const MAX_RETRIES: u64 = 10_000;

/// LinkBench on strata: the four families of `layout.rs`.
pub struct StrataLinkStore {
    db: Db,
    nodes: ColumnFamily,
    links: ColumnFamily,
    index: ColumnFamily,
    counts: ColumnFamily,
    transactions: bool,
    write_opts: WriteOptions,
    next_node: AtomicU64,
    retries: AtomicU64,
}

impl StrataLinkStore {
    /// Opens (creating as needed) the families in the database at `path`; added nodes get ids
    /// from `first_new_node` on.
    pub fn open(
        path: &std::path::Path,
        opts: Options,
        write_opts: WriteOptions,
        transactions: bool,
        first_new_node: u64,
    ) -> Result<Self> {
        let names = [layout::NODES, layout::LINKS, layout::LINK_INDEX, layout::COUNTS];
        let families = names.map(|n| (n, opts.clone()));
        let db = Db::open_cf(path, opts, families)
            .with_context(|| format!("opening strata at {} for linkbench", path.display()))?;
        let cf = |name: &str| db.cf(name).with_context(|| format!("column family {name} did not open"));
        Ok(Self {
            nodes: cf(layout::NODES)?,
            links: cf(layout::LINKS)?,
            index: cf(layout::LINK_INDEX)?,
            counts: cf(layout::COUNTS)?,
            db,
            transactions,
            write_opts,
            next_node: AtomicU64::new(first_new_node),
            retries: AtomicU64::new(0),
        })
    }

    /// Runs `f` as one atomic write, again from the start after a conflict.
    fn atomically<T>(&self, f: impl Fn(&mut Writer<'_>) -> strata::Result<T>) -> Result<T> {
        for _ in 0..MAX_RETRIES {
            let mut w = if self.transactions {
                Writer::Txn(self.db.begin_transaction(&self.write_opts))
            } else {
                Writer::Batch(&self.db, WriteBatch::new())
            };
            let result = f(&mut w).and_then(|v| w.commit(&self.write_opts).map(|()| v));
            match result {
                Err(strata::Error::Busy(_)) => {
                    self.retries.fetch_add(1, Ordering::Relaxed);
                }
                other => return Ok(other?),
            }
        }
        bail!("linkbench: an operation conflicted {MAX_RETRIES} times in a row")
    }

    /// The add/update body: write `link` visible, moving it if its time changed, and count it
    /// if it was not visible. Returns whether a link with its id2 existed.
    fn upsert_link(&self, w: &mut Writer<'_>, link: &Link) -> strata::Result<bool> {
        let ikey = layout::index_key(link.id1, link.link_type, link.id2);
        let old_time =
            w.read(&self.index, &ikey)?.map(|v| layout::decode_time(&v)).transpose().map_err(corrupt)?;
        let mut was_visible = false;
        if let Some(t) = old_time {
            let old_key = layout::link_key(link.id1, link.link_type, t, link.id2);
            was_visible = w.read(&self.links, &old_key)?.is_some_and(|v| v.first() == Some(&1));
            w.delete(&self.links, &old_key)?;
        }
        let new = Link { visible: true, ..link.clone() };
        w.put(
            &self.links,
            &layout::link_key(link.id1, link.link_type, link.time, link.id2),
            &layout::link_value(&new),
        )?;
        w.put(&self.index, &ikey, &layout::index_value(link.time))?;
        if !was_visible {
            self.add_to_count(w, link.id1, link.link_type, 1, link.time)?;
        }
        Ok(old_time.is_some())
    }

    /// Adds `delta` to the list's count: read (claimed, in a transaction), then written.
    fn add_to_count(
        &self,
        w: &mut Writer<'_>,
        id1: u64,
        link_type: u64,
        delta: i64,
        time: u64,
    ) -> strata::Result<()> {
        let key = layout::list_prefix(id1, link_type);
        let old = match w.read(&self.counts, &key)? {
            Some(v) => layout::decode_count(&v).map_err(corrupt)?,
            None => 0,
        };
        let new = old.saturating_add_signed(delta);
        w.put(&self.counts, &key, &layout::count_value(new, time))
    }
}

/// A record that does not decode, as the engine's error type.
fn corrupt(e: anyhow::Error) -> strata::Error {
    strata::Error::Corruption(format!("{e:#}"))
}

/// One operation's writes: a transaction, or a batch plus the database it reads from.
enum Writer<'a> {
    Txn(Transaction),
    Batch(&'a Db, WriteBatch),
}

impl Writer<'_> {
    /// A read the write depends on: claimed (`get_for_update`) in a transaction, a plain read
    /// of the latest state otherwise.
    fn read(&mut self, cf: &ColumnFamily, key: &[u8]) -> strata::Result<Option<Vec<u8>>> {
        match self {
            Self::Txn(t) => t.get_for_update_cf(cf, &ReadOptions::new(), key),
            Self::Batch(db, _) => db.get_cf(cf, &ReadOptions::new(), key),
        }
    }

    fn put(&mut self, cf: &ColumnFamily, key: &[u8], value: &[u8]) -> strata::Result<()> {
        match self {
            Self::Txn(t) => t.put_cf(cf, key, value),
            Self::Batch(_, b) => {
                b.put_cf(cf, key, value);
                Ok(())
            }
        }
    }

    fn delete(&mut self, cf: &ColumnFamily, key: &[u8]) -> strata::Result<()> {
        match self {
            Self::Txn(t) => t.delete_cf(cf, key),
            Self::Batch(_, b) => {
                b.delete_cf(cf, key);
                Ok(())
            }
        }
    }

    fn commit(self, opts: &WriteOptions) -> strata::Result<()> {
        match self {
            Self::Txn(t) => t.commit(),
            Self::Batch(db, b) => db.write(opts, b),
        }
    }
}

impl LinkStore for StrataLinkStore {
    fn load(&self, node: Option<&Node>, links: &[Link], count: u64) -> Result<()> {
        self.atomically(|w| {
            if let Some(n) = node {
                w.put(&self.nodes, &layout::node_key(n.id), &layout::node_value(n))?;
            }
            for l in links {
                w.put(
                    &self.links,
                    &layout::link_key(l.id1, l.link_type, l.time, l.id2),
                    &layout::link_value(l),
                )?;
                w.put(
                    &self.index,
                    &layout::index_key(l.id1, l.link_type, l.id2),
                    &layout::index_value(l.time),
                )?;
            }
            if let Some(l) = links.last() {
                let time = links.iter().map(|l| l.time).max().unwrap_or(l.time);
                w.put(
                    &self.counts,
                    &layout::list_prefix(l.id1, l.link_type),
                    &layout::count_value(count, time),
                )?;
            }
            Ok(())
        })
    }

    fn add_node(&self, node: &Node) -> Result<u64> {
        let id = self.next_node.fetch_add(1, Ordering::Relaxed);
        let stored = Node { id, ..node.clone() };
        self.db.put_cf(&self.nodes, &self.write_opts, &layout::node_key(id), &layout::node_value(&stored))?;
        Ok(id)
    }

    fn get_node(&self, id: u64) -> Result<Option<Node>> {
        let v = self.db.get_cf(&self.nodes, &ReadOptions::new(), &layout::node_key(id))?;
        v.map(|v| layout::decode_node(id, &v)).transpose()
    }

    fn update_node(&self, node: &Node) -> Result<bool> {
        let key = layout::node_key(node.id);
        self.atomically(|w| {
            if w.read(&self.nodes, &key)?.is_none() {
                return Ok(false);
            }
            w.put(&self.nodes, &key, &layout::node_value(node))?;
            Ok(true)
        })
    }

    fn delete_node(&self, id: u64) -> Result<bool> {
        let key = layout::node_key(id);
        self.atomically(|w| {
            if w.read(&self.nodes, &key)?.is_none() {
                return Ok(false);
            }
            w.delete(&self.nodes, &key)?;
            Ok(true)
        })
    }

    fn add_link(&self, link: &Link) -> Result<bool> {
        self.atomically(|w| self.upsert_link(w, link)).map(|existed| !existed)
    }

    fn update_link(&self, link: &Link) -> Result<bool> {
        self.atomically(|w| self.upsert_link(w, link))
    }

    fn delete_link(&self, id1: u64, link_type: u64, id2: u64) -> Result<bool> {
        let ikey = layout::index_key(id1, link_type, id2);
        self.atomically(|w| {
            let Some(t) = w.read(&self.index, &ikey)? else { return Ok(false) };
            let time = layout::decode_time(&t).map_err(corrupt)?;
            let key = layout::link_key(id1, link_type, time, id2);
            let Some(v) = w.read(&self.links, &key)? else { return Ok(false) };
            let mut link = layout::decode_link(&key, &v).map_err(corrupt)?;
            if !link.visible {
                return Ok(false);
            }
            link.visible = false;
            w.put(&self.links, &key, &layout::link_value(&link))?;
            self.add_to_count(w, id1, link_type, -1, time)?;
            Ok(true)
        })
    }

    fn count_links(&self, id1: u64, link_type: u64) -> Result<u64> {
        let v = self.db.get_cf(&self.counts, &ReadOptions::new(), &layout::list_prefix(id1, link_type))?;
        v.map_or(Ok(0), |v| layout::decode_count(&v))
    }

    fn get_links(&self, id1: u64, link_type: u64, id2s: &[u64]) -> Result<Vec<Link>> {
        // One snapshot for the index and the links, so a link moving meanwhile is not missed.
        let ro = ReadOptions { snapshot: Some(self.db.snapshot()), ..ReadOptions::new() };
        let mut out = Vec::new();
        for &id2 in id2s {
            let Some(t) = self.db.get_cf(&self.index, &ro, &layout::index_key(id1, link_type, id2))? else {
                continue;
            };
            let key = layout::link_key(id1, link_type, layout::decode_time(&t)?, id2);
            if let Some(v) = self.db.get_cf(&self.links, &ro, &key)? {
                out.push(layout::decode_link(&key, &v)?);
            }
        }
        Ok(out)
    }

    fn get_link_list(&self, id1: u64, link_type: u64, limit: usize) -> Result<Vec<Link>> {
        let prefix = layout::list_prefix(id1, link_type);
        let ro = ReadOptions {
            lower_bound: Some(prefix.to_vec()),
            upper_bound: Some(layout::prefix_end(&prefix)),
            ..ReadOptions::new()
        };
        let mut it = self.db.iter_cf(&self.links, &ro)?;
        it.seek(&prefix);
        let mut out = Vec::new();
        while it.valid() && out.len() < limit {
            // Hidden links are skipped, as LinkBench's visibility filter does.
            if it.value().first() == Some(&1) {
                out.push(layout::decode_link(it.key(), it.value())?);
            }
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    fn scan_counts(&self, f: &mut dyn FnMut(u64, u64, u64)) -> Result<()> {
        self.scan(&self.counts, &mut |k, v| {
            let (id1, link_type) = layout::decode_prefix(k)?;
            f(id1, link_type, layout::decode_count(v)?);
            Ok(())
        })
    }

    fn scan_links(&self, f: &mut dyn FnMut(&Link)) -> Result<()> {
        self.scan(&self.links, &mut |k, v| {
            f(&layout::decode_link(k, v)?);
            Ok(())
        })
    }

    fn index_entries(&self) -> Result<u64> {
        let mut n = 0;
        self.scan(&self.index, &mut |_, _| {
            n += 1;
            Ok(())
        })?;
        Ok(n)
    }
}

impl StrataLinkStore {
    /// Hands every entry of `cf` to `f`, in key order, from one consistent view.
    fn scan(&self, cf: &ColumnFamily, f: &mut EntryFn<'_>) -> Result<()> {
        let mut it = self.db.iter_cf(cf, &ReadOptions::new())?;
        it.seek_to_first();
        while it.valid() {
            f(it.key(), it.value())?;
            it.next();
        }
        Ok(it.status()?)
    }
}
