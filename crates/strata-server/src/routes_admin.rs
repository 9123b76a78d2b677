//! Cluster and admin routes: forming the cluster (`init`), membership changes, status (postcard,
//! or JSON with `?format=json`), strata's stats and properties, manual compaction, and the
//! partition switch for fault tests. Membership changes go to the leader (a follower forwards).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use openraft::BasicNode;
use serde::Deserialize;
use strata_raft::NodeId;

use crate::api::{self, AddLearnerRequest, ApiError, ApiResult, NodeStatus, PartitionRequest};
use crate::errors::{from_init, from_storage, from_write, reply};
use crate::node::Node;

pub async fn init(State(node): State<Arc<Node>>, body: Bytes) -> Response {
    let result: ApiResult<()> = async {
        let members: BTreeMap<NodeId, String> = api::decode(&body)?;
        let nodes: BTreeMap<NodeId, BasicNode> =
            members.into_iter().map(|(id, addr)| (id, BasicNode { addr })).collect();
        node.raft.initialize(nodes).await.map_err(from_init)
    }
    .await;
    reply(result)
}

pub async fn add_learner(State(node): State<Arc<Node>>, body: Bytes) -> Response {
    let result: ApiResult<()> = async {
        let req: AddLearnerRequest = api::decode(&body)?;
        // Blocking: answer once the learner has caught up, so callers can promote it next.
        node.raft.add_learner(req.id, BasicNode { addr: req.addr }, true).await.map_err(from_write)?;
        Ok(())
    }
    .await;
    reply(result)
}

pub async fn change_membership(State(node): State<Arc<Node>>, body: Bytes) -> Response {
    let result: ApiResult<()> = async {
        let voters: BTreeSet<NodeId> = api::decode(&body)?;
        node.raft.change_membership(voters, false).await.map_err(from_write)?;
        Ok(())
    }
    .await;
    reply(result)
}

#[derive(Deserialize)]
pub struct StatusQuery {
    format: Option<String>,
}

pub async fn status(State(node): State<Arc<Node>>, Query(q): Query<StatusQuery>) -> Response {
    let status = node_status(&node);
    if q.format.as_deref() == Some("json") {
        let json = serde_json::to_string_pretty(&status).unwrap_or_default();
        return ([("content-type", "application/json")], json).into_response();
    }
    reply(Ok::<_, ApiError>(status))
}

/// The node's view, from openraft's metrics.
pub fn node_status(node: &Node) -> NodeStatus {
    let m = node.raft.metrics().borrow().clone();
    let membership = m.membership_config.membership();
    NodeStatus {
        id: node.id,
        state: format!("{:?}", m.state),
        leader: m.current_leader,
        term: m.current_term,
        last_log_index: m.last_log_index,
        last_applied: m.last_applied.map(|l| l.index),
        snapshot_index: m.snapshot.map(|l| l.index),
        purged_index: m.purged.map(|l| l.index),
        voters: membership.voter_ids().collect(),
        learners: membership.learner_ids().collect(),
        nodes: membership.nodes().map(|(id, n)| (*id, n.addr.clone())).collect(),
    }
}

pub async fn stats(State(node): State<Arc<Node>>) -> Response {
    node.store.db().property("strata.stats").unwrap_or_default().into_response()
}

#[derive(Deserialize)]
pub struct PropertyQuery {
    name: String,
}

pub async fn property(State(node): State<Arc<Node>>, Query(q): Query<PropertyQuery>) -> Response {
    match node.store.db().property(&q.name) {
        Some(value) => value.into_response(),
        None => (StatusCode::NOT_FOUND, format!("no property {}\n", q.name)).into_response(),
    }
}

/// Compacts the whole key space (log and state machine) on this node only.
pub async fn compact(State(node): State<Arc<Node>>) -> Response {
    let store = node.store.clone();
    let result =
        tokio::task::spawn_blocking(move || store.db().compact_range(None, None).map_err(from_storage))
            .await
            .unwrap_or_else(|e| Err(ApiError::Internal(format!("compaction task: {e}"))));
    reply(result)
}

pub async fn partition(State(node): State<Arc<Node>>, body: Bytes) -> Response {
    let result: ApiResult<()> =
        api::decode::<PartitionRequest>(&body).map(|req| node.partition.set(req.peers));
    reply(result)
}
