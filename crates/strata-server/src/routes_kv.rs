//! The client key-value routes. Writes go through the node's `Proposer` (batched into
//! `Raft::client_write`, answered once committed and applied); reads first get a read index
//! (`Raft::ensure_linearizable`: the leader confirms it still leads with a quorum and waits
//! until it has applied that far), then read the applied state from the `RaftStore`. A
//! follower answers every route with a forward to the leader.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use strata_raft::{Op, Request};

use crate::api::{self, ApiResult, ScanRequest, TxnRequest};
use crate::errors::{from_read, from_storage, reply};
use crate::node::Node;

pub async fn write(State(node): State<Arc<Node>>, body: Bytes) -> Response {
    let result: ApiResult<()> = async {
        let ops: Vec<Op> = api::decode(&body)?;
        node.proposer.propose(Request::Write(ops)).await?;
        Ok(())
    }
    .await;
    reply(result)
}

pub async fn txn(State(node): State<Arc<Node>>, body: Bytes) -> Response {
    let result: ApiResult<bool> = async {
        let t: TxnRequest = api::decode(&body)?;
        let request = Request::Txn { compares: t.compares, success: t.success, failure: t.failure };
        Ok(node.proposer.propose(request).await?.succeeded)
    }
    .await;
    reply(result)
}

pub async fn get(State(node): State<Arc<Node>>, body: Bytes) -> Response {
    let result: ApiResult<Option<Vec<u8>>> = async {
        let key: Vec<u8> = api::decode(&body)?;
        node.raft.ensure_linearizable().await.map_err(from_read)?;
        node.store.get(&key).map_err(from_storage)
    }
    .await;
    reply(result)
}

pub async fn scan(State(node): State<Arc<Node>>, body: Bytes) -> Response {
    let result: ApiResult<Vec<(Vec<u8>, Vec<u8>)>> = async {
        let s: ScanRequest = api::decode(&body)?;
        node.raft.ensure_linearizable().await.map_err(from_read)?;
        let limit = usize::try_from(s.limit).unwrap_or(usize::MAX);
        node.store.scan(&s.start, s.end.as_deref(), limit).map_err(from_storage)
    }
    .await;
    reply(result)
}
