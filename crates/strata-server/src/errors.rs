//! Turns openraft's and strata's errors into the API's typed [`ApiError`], and an [`ApiResult`]
//! into an HTTP answer. It decides which failures a client may safely retry (see
//! `ApiError::retry_safe`), so every mapping here says whether the request could have been applied.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use openraft::error::{CheckIsLeaderError, ClientWriteError, ForwardToLeader, InitializeError, RaftError};
use openraft::BasicNode;
use serde::Serialize;
use strata_raft::NodeId;

use crate::api::{self, ApiError, ApiResult};

/// The postcard answer, with a status that says the same as the body for people using curl.
pub fn reply<T: Serialize>(result: ApiResult<T>) -> Response {
    let status = match &result {
        Ok(_) => StatusCode::OK,
        Err(ApiError::ForwardToLeader { .. }) => StatusCode::MISDIRECTED_REQUEST,
        Err(ApiError::Unavailable(_)) => StatusCode::SERVICE_UNAVAILABLE,
        Err(ApiError::BadRequest(_)) => StatusCode::BAD_REQUEST,
        Err(ApiError::Rejected(_)) => StatusCode::CONFLICT,
        Err(ApiError::Internal(_)) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    (status, api::encode(&result)).into_response()
}

pub fn forward(f: &ForwardToLeader<NodeId, BasicNode>) -> ApiError {
    let leader = match (f.leader_id, &f.leader_node) {
        (Some(id), Some(node)) => Some((id, node.addr.clone())),
        _ => None,
    };
    ApiError::ForwardToLeader { leader }
}

/// A proposal's failure. Only a forward (never appended here, or truncated) is certainly not
/// applied; a fatal error may come after the entry was appended, so its outcome is unknown.
pub fn from_write(e: RaftError<NodeId, ClientWriteError<NodeId, BasicNode>>) -> ApiError {
    match e {
        RaftError::APIError(ClientWriteError::ForwardToLeader(f)) => forward(&f),
        RaftError::APIError(ClientWriteError::ChangeMembershipError(e)) => ApiError::Rejected(e.to_string()),
        RaftError::Fatal(f) => ApiError::Internal(f.to_string()),
    }
}

/// A read index's failure: nothing was proposed, so every case is safe to retry elsewhere.
pub fn from_read(e: RaftError<NodeId, CheckIsLeaderError<NodeId, BasicNode>>) -> ApiError {
    match e {
        RaftError::APIError(CheckIsLeaderError::ForwardToLeader(f)) => forward(&f),
        RaftError::APIError(CheckIsLeaderError::QuorumNotEnough(q)) => ApiError::Unavailable(q.to_string()),
        RaftError::Fatal(f) => ApiError::Unavailable(f.to_string()),
    }
}

pub fn from_init(e: RaftError<NodeId, InitializeError<NodeId, BasicNode>>) -> ApiError {
    match e {
        RaftError::APIError(InitializeError::NotAllowed(e)) => ApiError::Rejected(e.to_string()),
        RaftError::APIError(InitializeError::NotInMembers(e)) => ApiError::BadRequest(e.to_string()),
        RaftError::Fatal(f) => ApiError::Unavailable(f.to_string()),
    }
}

/// A read of the applied state failed in storage.
pub fn from_storage(e: strata::Error) -> ApiError {
    ApiError::Internal(format!("storage: {e}"))
}
