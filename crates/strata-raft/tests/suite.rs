//! openraft's own storage test suite (`openraft::testing::Suite`) against `RaftStore`, each
//! case on a fresh store in a temporary directory.

use openraft::testing::{StoreBuilder, Suite};
use openraft::StorageError;
use strata_raft::{LogStore, NodeId, RaftStore, StateMachine, TypeConfig};

struct Builder;

impl StoreBuilder<TypeConfig, LogStore, StateMachine, tempfile::TempDir> for Builder {
    async fn build(&self) -> Result<(tempfile::TempDir, LogStore, StateMachine), StorageError<NodeId>> {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = RaftStore::open(dir.path()).expect("open store");
        Ok((dir, store.log_store(), store.state_machine()))
    }
}

#[test]
fn openraft_storage_suite() -> Result<(), Box<StorageError<NodeId>>> {
    Suite::test_all(Builder).map_err(Box::new)
}
