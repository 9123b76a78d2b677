//! The WAL's life: a memtable switch starts a new WAL (its header naming the newest earlier WAL
//! that may have lost unsynced records) and hands the family's full memtable to the flush
//! queue; WALs closed with unsynced records are kept open to be synced by the next synced
//! write, a flush that needs them durable, or close; a failed WAL is sealed and abandoned
//! (docs/durability.md, "WAL switches"). It must not flush memtables or edit the MANIFEST.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::LeaderState;
use crate::db::family::{Family, FamilyTable};
use crate::db::{DbInner, SuperVersion};
use crate::error::Result;
use crate::filenames;
use crate::fs::WritableFile;
use crate::memtable::MemTable;
use crate::wal::LogWriter;
use crate::wal_header::WalHeader;

/// How far ahead of a synced WAL's records its file is zero-filled: an fdatasync that only
/// overwrites allocated blocks costs about half of one that grows the file, and the first sync
/// after each extension also writes the new zeros, so the chunk bounds that write's latency.
/// The measurements are in docs/performance.md ("Write-path choices, as measured").
pub(crate) const WAL_PREALLOCATION_BYTES: u64 = 128 << 10;

/// A WAL closed by a memtable switch while it held unsynced write batches.
pub(crate) struct ClosedWal {
    pub number: u64,
    /// The last sequence number appended to it.
    last_seq: u64,
    wal: LogWriter,
}

impl DbInner {
    /// Turns the mutable memtable into an immutable one with a fresh WAL, and schedules a flush.
    ///
    /// The old WAL is not synced here: that would stall the writer for as long as the kernel
    /// takes to write a whole memtable's worth of log (~40 ms for 64 MiB on this project's
    /// machine). It is kept open in `closed_wals` instead, so that a later `sync=true` write
    /// syncs it before its own fdatasync, and the new WAL's header names it with its last
    /// sequence number, so that recovery stops before the new WAL if a power loss dropped part
    /// of the old one's tail (a lost suffix, never a hole; docs/durability.md).
    ///
    /// The caller has counted the new memtable in `memtable_budget`; a failed switch uncounts it.
    pub(crate) fn switch_memtable(&self, leader: &mut LeaderState, family: &Family) -> Result<()> {
        let switched = self.switch_wal(leader, true).map(|number| self.retire_memtable(family, number));
        if let Err(e) = &switched {
            family.memtable_budget.remove_memtable();
            leader.wal_failed = true;
            self.set_background_error(e, "creating a WAL");
        }
        switched
    }

    /// For `Db::resume` after a failed WAL append, sync or creation (`LeaderState::wal_failed`):
    /// switches the memtable, even an empty one, to a new WAL and drops the old WAL's writer
    /// without syncing it (nor any WAL in `closed_wals`). The old file stays on disk, never
    /// written again, until the flush of the memtables switched out makes it obsolete: the
    /// flush, not the old WAL, then holds its writes, and recovery no longer replays it, so no
    /// record of a failed write that reached it (a group whose sync failed) can come back beside
    /// the writes that reuse its sequence numbers. No write may go in until that flush is done
    /// (`resume` holds the leader lock throughout).
    pub(crate) fn abandon_wal(&self, leader: &mut LeaderState) -> Result<()> {
        let number = self.switch_wal(leader, false)?;
        for family in self.families.load().iter() {
            // The default family's memtable is switched even when empty, as it always was.
            if family.id == self.default.id || !family.super_version.load().mem.is_empty() {
                // Counted as a flush's switch is: taken even with every memtable slot in use.
                family.memtable_budget.add_memtable(true);
                self.retire_memtable(family, number);
            }
        }
        // The closed WALs' writes are in memtables the same flush covers, and one of them may
        // be the WAL whose fsync failed: none is synced again. (Left listed, one could be until
        // the flush thread drops it, after `resume` has returned.)
        self.closed_wals.lock().clear();
        leader.wal_failed = false;
        Ok(())
    }

    /// Starts a new WAL and returns its number. With `keep_old_wal` a WAL with unsynced
    /// records goes to `closed_wals`, to be synced later; without, it is just closed.
    fn switch_wal(&self, leader: &mut LeaderState, keep_old_wal: bool) -> Result<u64> {
        // The newest WAL that may have lost records in a power loss: this one, or (if it holds
        // no unsynced batch, e.g. only unlogged writes filled its memtable) an older one.
        let (unsynced_wal, unsynced_last_seq) = if leader.wal_unsynced {
            (leader.wal_number, leader.wal_last_seq)
        } else {
            self.closed_wals.lock().last().map_or((0, 0), |w| (w.number, w.last_seq))
        };
        let header = WalHeader {
            prev_wal: leader.wal_number,
            prev_last_seq: leader.wal_last_seq,
            unsynced_wal,
            unsynced_last_seq,
            ..WalHeader::first()
        };
        let number = self.versions.lock().new_file_number();
        let wal = self.create_wal(number, &header)?;
        let old_wal = std::mem::replace(&mut leader.wal, wal);
        leader.closed_wal_bytes.push_back((leader.wal_number, old_wal.file_size()));
        if leader.wal_unsynced && keep_old_wal {
            let closed = ClosedWal { number: leader.wal_number, last_seq: leader.wal_last_seq, wal: old_wal };
            self.closed_wals.lock().push(closed);
        }
        leader.wal_number = number;
        leader.wal_unsynced = false;
        leader.wal_last_seq = 0;
        leader.wal_dir_synced = false;
        self.current_wal.store(number, Ordering::Release);
        Ok(number)
    }

    /// With several families: once the WALs some family still needs hold more than
    /// `Options::max_total_wal_size`, switches the memtables of the families that keep the
    /// oldest of them (a family written rarely would otherwise keep every WAL since its last
    /// flush), so their flushes let those WALs go.
    pub(super) fn limit_live_wals(&self, leader: &mut LeaderState, families: &FamilyTable) -> Result<()> {
        let limit = self.max_total_wal_bytes(families);
        let live = |leader: &LeaderState| {
            leader.closed_wal_bytes.iter().map(|&(_, bytes)| bytes).sum::<u64>() + leader.wal.file_size()
        };
        if live(leader) <= limit {
            return Ok(());
        }
        let (floor, oldest): (u64, Vec<u32>) = {
            let versions = self.versions.lock();
            let floor = versions.log_number();
            let ids = versions.families().iter().filter(|(_, f)| f.log_number <= floor).map(|(&id, _)| id);
            (floor, ids.collect())
        };
        leader.closed_wal_bytes.retain(|&(number, _)| number >= floor);
        if live(leader) <= limit {
            return Ok(());
        }
        // A family whose memtable is empty already has its flush queued (or holds nothing and
        // moves up at the next flush of any family).
        let to_flush: Vec<&Arc<Family>> = oldest
            .iter()
            .filter_map(|&id| families.get(id))
            .filter(|f| !f.super_version.load().mem.is_empty())
            .collect();
        if to_flush.is_empty() {
            return Ok(());
        }
        let number = self.switch_wal(leader, true).inspect_err(|e| {
            leader.wal_failed = true;
            self.set_background_error(e, "creating a WAL");
        })?;
        for family in to_flush {
            family.memtable_budget.add_memtable(true);
            self.retire_memtable(family, number);
        }
        Ok(())
    }

    /// `Options::max_total_wal_size`, or when 0, four times what every family's memtables may
    /// hold.
    fn max_total_wal_bytes(&self, families: &FamilyTable) -> u64 {
        if self.opts.max_total_wal_size > 0 {
            return self.opts.max_total_wal_size;
        }
        let memtables =
            families.iter().map(|f| (f.opts.write_buffer_size * f.opts.max_write_buffer_number) as u64);
        4 * memtables.sum::<u64>()
    }

    /// Turns `family`'s mutable memtable into an immutable one waiting for flush, whose writes
    /// are all in WALs before `next_log`, and schedules the flush. Under the leader lock.
    fn retire_memtable(&self, family: &Family, next_log: u64) {
        let mut bg = self.bg.lock();
        let sv = family.super_version.load();
        // Sized for as many keys as the full one held: workloads are steady, and a growing
        // index would pause the writer to rehash.
        let mem = Arc::new(MemTable::with_expected_keys(sv.mem.distinct_keys()));
        let old_mem = Arc::clone(&sv.mem);
        let entry_family = self.families.load().get(family.id).cloned();
        if let Some(f) = entry_family {
            bg.imm_queue.push_back(crate::db::background::ImmEntry {
                family: f,
                mem: Arc::clone(&old_mem),
                next_log,
            });
        }
        let mut imm = Vec::with_capacity(sv.imm.len() + 1);
        imm.push(old_mem);
        imm.extend(sv.imm.iter().cloned());
        family.super_version.store(Arc::new(SuperVersion { mem, imm, version: Arc::clone(&sv.version) }));
        self.bg_cv.notify_all();
        drop(bg);
        self.iter_pool.clear();
    }

    /// After a failed WAL append or sync: starts a successor WAL whose header records the last
    /// sequence number acknowledged in the failed one, so that recovery can tell the partial
    /// record a failed append may have left (beyond that point) from damage to acknowledged
    /// records (docs/durability.md, "Torn versus corrupt"). Best effort: if this fails too, the
    /// next open reports such a partial record as corruption, and repair or salvage recovers.
    /// The failed WAL is never written or synced again; `Db::resume` switches away from the
    /// successor as from any WAL.
    pub(super) fn seal_failed_wal(&self, leader: &mut LeaderState) {
        let header = WalHeader {
            prev_wal: leader.wal_number,
            prev_last_seq: leader.wal_last_seq,
            // Whatever the failed WAL held may not be durable: recovery must not take this
            // header as proof that it was.
            unsynced_wal: leader.wal_number,
            unsynced_last_seq: leader.wal_last_seq,
            ..WalHeader::first()
        };
        let number = self.versions.lock().new_file_number();
        let sealed = self.create_wal(number, &header).and_then(|mut wal| {
            wal.sync()?;
            self.fs.sync_dir(&self.dir)?;
            Ok(wal)
        });
        match sealed {
            Ok(wal) => {
                leader.wal = wal;
                leader.wal_number = number;
                leader.wal_last_seq = 0;
                leader.wal_unsynced = true;
                leader.wal_dir_synced = true;
            }
            Err(e) => {
                tracing::warn!(target: "strata", error = %e, "could not start a WAL after a failed WAL write")
            }
        }
    }

    /// Creates WAL `number` starting with `header`. Its directory entry is made durable later,
    /// by the first `sync=true` write in it (`append_wal`) or at close. A WAL that could not be
    /// started (no space for its header) is removed again if it can be: nothing refers to it,
    /// and a retried switch (`Db::resume`) creates another.
    fn create_wal(&self, number: u64, header: &WalHeader) -> Result<LogWriter> {
        let path = filenames::wal(&self.dir, number);
        let file = self.fs.create(&path)?;
        start_wal(file, header).inspect_err(|_| {
            if let Err(e) = self.fs.remove_file(&path) {
                tracing::warn!(error = %e, "could not remove a WAL that failed to start");
            }
        })
    }

    /// Syncs the WALs closed with unsynced records, oldest first. One that fails stays listed;
    /// the caller puts the database into the error state, so it is never synced again.
    pub(crate) fn sync_closed_wals(&self) -> Result<()> {
        let mut closed = self.closed_wals.lock();
        while let Some(oldest) = closed.first_mut() {
            oldest.wal.sync()?;
            closed.remove(0);
            self.stats.wal_syncs.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Forgets closed WALs below `log_number`: a flush put their records into tables.
    pub(crate) fn drop_flushed_wals(&self, log_number: u64) {
        self.closed_wals.lock().retain(|w| w.number >= log_number);
    }

    /// Syncs every WAL (used at close so `sync=false` writes also survive power loss after close).
    pub(crate) fn sync_wal(&self) -> Result<()> {
        let mut leader = self.leader.lock();
        self.sync_all_wals(&mut leader)
    }

    /// [`Db::sync_wal`](crate::Db::sync_wal): as [`DbInner::sync_wal`], but refused in the error
    /// state, and a failure puts the database into it (a failed sync is never retried).
    pub(crate) fn sync_wal_on_request(&self) -> Result<()> {
        let mut leader = self.leader.lock();
        if let Some(e) = self.background_error() {
            return Err(e);
        }
        self.sync_all_wals(&mut leader).inspect_err(|e| {
            leader.wal_failed = true;
            self.set_background_error(e, "syncing the WAL");
        })
    }

    fn sync_all_wals(&self, leader: &mut LeaderState) -> Result<()> {
        self.make_earlier_writes_durable(leader)?;
        self.sync_current_wal(leader)
    }
}

/// The writer of a newly created WAL file, after appending its header record.
pub(crate) fn start_wal(file: Box<dyn WritableFile>, header: &WalHeader) -> Result<LogWriter> {
    let mut wal = LogWriter::new(file).preallocating(WAL_PREALLOCATION_BYTES);
    let mut record = Vec::with_capacity(crate::wal_header::HEADER_BYTES);
    header.encode_to(&mut record);
    wal.add_record(&record)?;
    Ok(wal)
}
