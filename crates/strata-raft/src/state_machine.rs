//! `StateMachine`: openraft's `RaftStateMachine` and `RaftSnapshotBuilder` on strata. It hands
//! each call to the module that owns the work (`apply`, `snapshot`, `install`) on tokio's
//! blocking pool, since strata calls may wait for disk IO; it must hold no state of its own.

use std::path::PathBuf;
use std::sync::Arc;

use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    Entry, LogId, OptionalSend, RaftSnapshotBuilder, SnapshotMeta, StorageError, StoredMembership,
};

use crate::codec::{APPLIED_KEY, MEMBERSHIP_KEY};
use crate::error;
use crate::store::Shared;
use crate::types::{NodeId, Response, TypeConfig};

/// The state machine half of a `RaftStore`; clones share it (one is the snapshot builder).
#[derive(Clone)]
pub struct StateMachine {
    shared: Arc<Shared>,
}

type Membership = StoredMembership<NodeId, openraft::BasicNode>;

impl StateMachine {
    pub(crate) fn new(shared: Arc<Shared>) -> StateMachine {
        StateMachine { shared }
    }

    /// Runs `work` on the blocking pool.
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Shared) -> strata::Result<T> + Send + 'static,
    ) -> strata::Result<T> {
        let shared = self.shared.clone();
        tokio::task::spawn_blocking(move || work(&shared)).await.map_err(error::join)?
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<NodeId>> {
        let (meta, path) = self.blocking(crate::snapshot::build).await.map_err(error::write_snapshot)?;
        Ok(Snapshot { meta, snapshot: Box::new(path) })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = StateMachine;

    async fn applied_state(&mut self) -> Result<(Option<LogId<NodeId>>, Membership), StorageError<NodeId>> {
        let s = &self.shared;
        let applied = s.read(&s.sm_cf, APPLIED_KEY).map_err(error::read_sm)?;
        let membership = s.read(&s.sm_cf, MEMBERSHIP_KEY).map_err(error::read_sm)?.unwrap_or_default();
        Ok((applied, membership))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Response>, StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<_> = entries.into_iter().collect();
        self.blocking(move |s| crate::apply::apply(s, entries)).await.map_err(error::write_sm)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<PathBuf>, StorageError<NodeId>> {
        Ok(Box::new(self.shared.snapshots.receive_path()))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, openraft::BasicNode>,
        snapshot: Box<PathBuf>,
    ) -> Result<(), StorageError<NodeId>> {
        let meta = meta.clone();
        self.blocking(move |s| crate::install::install(s, &meta, &snapshot))
            .await
            .map_err(error::write_snapshot)
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError<NodeId>> {
        Ok(self.shared.snapshots.current().map(|(meta, path)| Snapshot { meta, snapshot: Box::new(path) }))
    }
}
