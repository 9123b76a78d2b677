//! `LogStore`: openraft's `RaftLogReader` and `RaftLogStorage` on strata. Entries live in
//! `raft_log` keyed by index; the vote, the committed and the last purged log ids in
//! `raft_meta`. Every change goes through the writer thread (`log_writer`), which makes it
//! durable before openraft is told; reads overlay the writer's in-memory tail on the database,
//! so an entry is readable as soon as `append` returns. It must not touch the state machine.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{Entry, LogId, LogState, OptionalSend, RaftLogReader, StorageError, Vote};

use crate::codec::{self, log_key, COMMITTED_KEY, LAST_PURGED_KEY, VOTE_KEY};
use crate::error;
use crate::log_writer::{lock, Change};
use crate::store::Shared;
use crate::types::{NodeId, TypeConfig};

/// A key past every `raft_log` key (they are all 8 bytes).
const PAST_LAST_LOG_KEY: [u8; 9] = [0xff; 9];

/// The log half of a `RaftStore`; clones share it (one is the log reader).
#[derive(Clone)]
pub struct LogStore {
    shared: Arc<Shared>,
}

impl LogStore {
    pub(crate) fn new(shared: Arc<Shared>) -> LogStore {
        LogStore { shared }
    }

    /// The entries with index in `[start, end)` (`end: None`: to the last), tail included.
    fn entries(&self, start: u64, end: Option<u64>) -> strata::Result<Vec<Entry<TypeConfig>>> {
        let s = &self.shared;
        if end.is_some_and(|end| end <= start) {
            return Ok(Vec::new());
        }
        let upper = end.map_or(Bound::Unbounded, Bound::Excluded);
        // The tail first: an entry the writer moves from it to the database meanwhile is then
        // found in the database.
        let tail: Vec<Entry<TypeConfig>> =
            lock(&s.writer.tail).range((Bound::Included(start), upper)).map(|(_, e)| e.clone()).collect();
        let from = log_key(start);
        let iter = match end {
            Some(end) => s.db.range_cf(&s.log_cf, from..log_key(end)),
            None => s.db.range_cf(&s.log_cf, from..),
        };
        let mut out = BTreeMap::new();
        for item in iter {
            let (key, value) = item?;
            let entry: Entry<TypeConfig> = codec::decode(&value, "raft_log entry")?;
            let index = codec::log_index(&key)?;
            if entry.log_id.index != index {
                return Err(strata::Error::Corruption(format!(
                    "raft_log key {index} holds entry {}",
                    entry.log_id
                )));
            }
            out.insert(index, entry);
        }
        out.extend(tail.into_iter().map(|e| (e.log_id.index, e)));
        Ok(out.into_values().collect())
    }

    fn last_log_id(&self) -> strata::Result<Option<LogId<NodeId>>> {
        let s = &self.shared;
        let in_tail = lock(&s.writer.tail).last_key_value().map(|(_, e)| e.log_id);
        let in_db = match s.db.iter_cf(&s.log_cf).next_back() {
            Some(item) => Some(codec::decode::<Entry<TypeConfig>>(&item?.1, "raft_log entry")?.log_id),
            None => None,
        };
        Ok(in_tail.into_iter().chain(in_db).max_by_key(|id| id.index))
    }
}

/// `[start, end)` of a range of indexes (`end: None`: unbounded).
fn bounds(range: &impl RangeBounds<u64>) -> (u64, Option<u64>) {
    let start = match range.start_bound() {
        Bound::Included(&i) => i,
        Bound::Excluded(&i) => i.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&i) => i.checked_add(1),
        Bound::Excluded(&i) => Some(i),
        Bound::Unbounded => None,
    };
    (start, end)
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError<NodeId>> {
        let (start, end) = bounds(&range);
        self.entries(start, end).map_err(error::read_logs)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<NodeId>> {
        let last_purged: Option<LogId<NodeId>> =
            self.shared.read(&self.shared.meta_cf, LAST_PURGED_KEY).map_err(error::read_logs)?;
        let last = self.last_log_id().map_err(error::read_logs)?;
        Ok(LogState { last_purged_log_id: last_purged, last_log_id: last.or(last_purged) })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError<NodeId>> {
        let change = Change::Put(
            self.shared.meta_cf.clone(),
            VOTE_KEY.to_vec(),
            codec::encode(vote).map_err(error::write_vote)?,
        );
        self.shared.writer.write(vec![change]).await.map_err(error::write_vote)
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError<NodeId>> {
        self.shared.read(&self.shared.meta_cf, VOTE_KEY).map_err(error::read_vote)
    }

    async fn save_committed(&mut self, committed: Option<LogId<NodeId>>) -> Result<(), StorageError<NodeId>> {
        let value = codec::encode(&committed).map_err(error::write_logs)?;
        let change = Change::Put(self.shared.meta_cf.clone(), COMMITTED_KEY.to_vec(), value);
        // Not awaited: losing the last committed id in a crash only makes the node re-learn it
        // from the leader; the write still lands in log order, before the next append's sync.
        self.shared.writer.submit(vec![change]);
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>, StorageError<NodeId>> {
        let stored: Option<Option<LogId<NodeId>>> =
            self.shared.read(&self.shared.meta_cf, COMMITTED_KEY).map_err(error::read_logs)?;
        Ok(stored.flatten())
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut changes = Vec::new();
        let mut encoded = Vec::new();
        for entry in entries {
            let value = codec::encode(&entry).map_err(error::write_logs)?;
            changes.push(Change::Put(
                self.shared.log_cf.clone(),
                log_key(entry.log_id.index).to_vec(),
                value,
            ));
            encoded.push(entry);
        }
        let ids = encoded.iter().map(|e| e.log_id).collect();
        lock(&self.shared.writer.tail).extend(encoded.into_iter().map(|e| (e.log_id.index, e)));
        self.shared.writer.append(changes, ids, callback);
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        drop(lock(&self.shared.writer.tail).split_off(&log_id.index));
        let from = log_key(log_id.index).to_vec();
        let change = Change::DeleteRange(self.shared.log_cf.clone(), from, PAST_LAST_LOG_KEY.to_vec());
        self.shared.writer.write(vec![change]).await.map_err(error::write_logs)
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        {
            let mut tail = lock(&self.shared.writer.tail);
            *tail = tail.split_off(&log_id.index.saturating_add(1));
        }
        let end = log_id.index.checked_add(1).map_or(PAST_LAST_LOG_KEY.to_vec(), |i| log_key(i).to_vec());
        let s = &self.shared;
        let changes = vec![
            Change::Put(
                s.meta_cf.clone(),
                LAST_PURGED_KEY.to_vec(),
                codec::encode(&log_id).map_err(error::write_logs)?,
            ),
            Change::DeleteRange(s.log_cf.clone(), log_key(0).to_vec(), end),
        ];
        s.writer.write(changes).await.map_err(error::write_logs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::{CommittedLeaderId, EntryPayload};

    fn blank(index: u64) -> Entry<TypeConfig> {
        Entry { log_id: LogId::new(CommittedLeaderId::new(1, 1), index), payload: EntryPayload::Blank }
    }

    /// Entries still in the writer's tail are read with those in the database, the tail's
    /// copy winning, and count for the last log id.
    #[tokio::test(flavor = "multi_thread")]
    async fn reads_overlay_the_unwritten_tail() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::RaftStore::open(dir.path()).unwrap();
        let mut log = store.log_store();
        openraft::storage::RaftLogStorageExt::blocking_append(&mut log, [blank(1), blank(2)]).await.unwrap();
        lock(&log.shared.writer.tail).insert(3, blank(3));
        let ids: Vec<u64> =
            log.try_get_log_entries(..).await.unwrap().iter().map(|e| e.log_id.index).collect();
        assert_eq!(ids, [1, 2, 3]);
        assert_eq!(log.try_get_log_entries(3..=3).await.unwrap().len(), 1);
        assert_eq!(log.get_log_state().await.unwrap().last_log_id.map(|id| id.index), Some(3));
        assert!(log.shared.db.get_cf(&log.shared.log_cf, log_key(3)).unwrap().is_none());
        assert!(log.try_get_log_entries(std::ops::Range { start: 5, end: 2 }).await.unwrap().is_empty());
    }
}
