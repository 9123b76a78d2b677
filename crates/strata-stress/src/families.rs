//! The column families of a stress run (`--column-families N`): their names, how the oracle's
//! slots map to (family, key), the open that names them all, the live handles, and the
//! drop-and-recreate of the last family with its oracle protocol.
//!
//! Slot `g` of the oracle is key `g % keys` of family `g / keys`, so one family's slots are
//! contiguous (one stripe range, one `pwrite` to reset) and a multi-key batch drawn over all
//! slots spans families. With one family everything is as without families: the default family
//! through the plain API.
//!
//! Drop protocol (the dropper holds every stripe lock of the family, so no write or read of it
//! is in flight): phase `Dropping` → `drop_cf` → (unlogged history marker) → phase `Dropped` →
//! slots reset to absent → `create_cf` → phase `Live`. After a crash the verifier accepts, in
//! phase `Dropping`, the family with its acknowledged data if the MANIFEST still lists it and an
//! empty family if not; in phase `Dropped`, only an empty family (see `verify`).
//!
//! This module must not judge the database (`verify`) or draw operations (`worker`).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

use strata::{ColumnFamily, Db, DbIterator, Options, ReadOptions};

use crate::failure::Failure;
use crate::history::History;
use crate::oracle::{DropPhase, Oracle};

/// How the oracle's slots are laid out over families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Number of families, `default` included (1 = no families).
    pub families: usize,
    /// Keys per family.
    pub keys: u64,
}

impl Layout {
    /// All slots: keys times families.
    pub fn total(&self) -> u64 {
        self.keys * self.families as u64
    }

    /// Family and key of slot `g`.
    pub fn split(&self, g: u64) -> (usize, u64) {
        ((g / self.keys) as usize, g % self.keys)
    }

    /// Slot of key `k` of family `f`.
    pub fn slot(&self, f: usize, k: u64) -> u64 {
        f as u64 * self.keys + k
    }

    /// The family dropped and recreated during runs: the last, when there are two or more.
    pub fn dropping(&self) -> Option<usize> {
        (self.families > 1).then_some(self.families - 1)
    }

    /// Slots `lo..hi` of family `f`.
    pub fn range(&self, f: usize) -> (u64, u64) {
        (self.slot(f, 0), self.slot(f, self.keys))
    }

    /// `k00000042` in the default family, `cf2:k00000042` in another; for reports.
    pub fn describe(&self, g: u64) -> String {
        match self.split(g) {
            (0, k) => format!("k{k:08}"),
            (f, k) => format!("{}:k{k:08}", name(f)),
        }
    }
}

/// Name of family `f`.
pub fn name(f: usize) -> String {
    if f == 0 {
        "default".to_string()
    } else {
        format!("cf{f}")
    }
}

/// Opens (creating what is missing) the database with every family of `layout`, each with
/// `opts`. One family: plain [`Db::open`].
pub fn open_db(path: &Path, opts: &Options, layout: Layout) -> strata::Result<Db> {
    if layout.families == 1 {
        return Db::open(path, opts.clone());
    }
    Db::open_cf(path, opts.clone(), (1..layout.families).map(|f| (name(f), opts.clone())))
}

/// Whether the MANIFEST of the database at `path` lists the dropping family (before an open
/// recreates it); false when there is no database yet.
pub fn dropping_listed(path: &Path, opts: &Options, layout: Layout) -> Result<bool, Failure> {
    let Some(f) = layout.dropping() else { return Ok(true) };
    if !path.join("CURRENT").exists() {
        return Ok(false);
    }
    Ok(Db::list_cf(path, opts.clone())?.contains(&name(f)))
}

/// The live handles of an open database's families.
pub struct Families {
    /// Layout of the oracle's slots.
    pub layout: Layout,
    handles: RwLock<Vec<ColumnFamily>>,
    opts: Options,
    /// Drops completed by this process.
    pub drops: AtomicU64,
}

impl Families {
    /// The handles of `db`'s families; each must exist (the open created them).
    pub fn new(db: &Db, layout: Layout, opts: Options) -> Result<Families, Failure> {
        let handles = (0..layout.families)
            .map(|f| {
                db.cf(&name(f))
                    .ok_or_else(|| Failure::Engine(format!("family {} missing after open", name(f))))
            })
            .collect::<Result<_, _>>()?;
        Ok(Families { layout, handles: RwLock::new(handles), opts, drops: AtomicU64::new(0) })
    }

    /// The current handle of family `f`. Stable while the caller holds a stripe lock of `f`.
    pub fn handle(&self, f: usize) -> ColumnFamily {
        self.handles.read().unwrap_or_else(|e| e.into_inner())[f].clone()
    }

    /// False once the family behind `h` was dropped (then reads and flushes through it fail).
    /// Asks the engine: this module's table still holds a dropped handle until the recreation.
    pub fn is_current(db: &Db, h: &ColumnFamily) -> bool {
        db.cf(h.name()).is_some_and(|c| c.id() == h.id())
    }

    /// Drops the dropping family and creates it again, empty, following the oracle protocol of
    /// this module's doc. No-op with one family.
    pub fn drop_and_recreate(
        &self,
        db: &Db,
        oracle: &Oracle,
        history: Option<&History>,
    ) -> Result<(), Failure> {
        let Some(f) = self.layout.dropping() else { return Ok(()) };
        let (lo, hi) = self.layout.range(f);
        let mut locked = oracle.lock_range(lo, hi);
        oracle.set_drop_phase(DropPhase::Dropping)?;
        db.drop_cf(&self.handle(f))?;
        if let Some(h) = history {
            h.append_drop(f as u64)?;
        }
        oracle.set_drop_phase(DropPhase::Dropped)?;
        locked.reset(lo, hi)?;
        let cf = db.create_cf(&name(f), self.opts.clone())?;
        self.handles.write().unwrap_or_else(|e| e.into_inner())[f] = cf;
        oracle.set_drop_phase(DropPhase::Live)?;
        drop(locked);
        self.drops.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// `get` in `cf`, through the plain API for the default family.
pub fn get(db: &Db, cf: &ColumnFamily, ro: &ReadOptions, key: &[u8]) -> strata::Result<Option<Vec<u8>>> {
    if cf.id() == 0 {
        db.get_opt(ro, key)
    } else {
        db.get_cf_opt(cf, ro, key)
    }
}

/// `multi_get` in `cf`, through the plain API for the default family.
pub fn multi_get(
    db: &Db,
    cf: &ColumnFamily,
    ro: &ReadOptions,
    keys: &[&[u8]],
) -> Vec<strata::Result<Option<Vec<u8>>>> {
    if cf.id() == 0 {
        db.multi_get_opt(ro, keys)
    } else {
        db.multi_get_cf_opt(cf, ro, keys)
    }
}

/// An iterator over `cf`, through the plain API for the default family.
pub fn iter(db: &Db, cf: &ColumnFamily, ro: &ReadOptions) -> strata::Result<DbIterator> {
    if cf.id() == 0 {
        db.cursor(ro)
    } else {
        db.cursor_cf(cf, ro)
    }
}
