//! Proposal batching: the writes of concurrent clients become one Raft entry.
//!
//! openraft 0.9 appends each proposal to the leader's log and waits for that append's fsync
//! before it takes the next proposal, so one entry per client request holds a leader to one
//! request per fsync however many clients wait (measured: one log write per request at 64
//! clients, 3,000 writes/s). Here the requests that arrive while earlier proposals are in
//! flight gather into one `Request::Batch` entry: one log write, one fsync and one replication
//! round for all of them. Each request is still applied exactly as it would be alone, in
//! arrival order, and answered on its own. This module must not change what a request does.

use std::sync::Arc;

use openraft::Raft;
use strata_raft::{Request, Response, TypeConfig};
use tokio::sync::{mpsc, oneshot, Semaphore};

use crate::api::ApiError;
use crate::errors::from_write;

/// Proposals in flight at once. While they are, new requests gather into the next batch; more
/// than one lets a batch replicate while the next is appended (2 and 4 measured alike at 1, 8
/// and 64 clients on loopback).
const IN_FLIGHT: usize = 4;

/// Requests in one entry at most: bounds an entry's size and one apply call's work.
const MAX_BATCH: usize = 1024;

type Answer = Result<Response, ApiError>;

struct Proposal {
    request: Request,
    reply: oneshot::Sender<Answer>,
}

/// The node's proposal queue.
pub struct Proposer {
    tx: mpsc::UnboundedSender<Proposal>,
}

impl Proposer {
    /// Starts the task that batches proposals into `raft`.
    pub fn start(raft: Raft<TypeConfig>) -> Proposer {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(raft, rx));
        Proposer { tx }
    }

    /// Proposes `request` and answers once it is committed and applied (or failed).
    ///
    /// # Errors
    /// As `Raft::client_write` (`errors::from_write`); `Unavailable` when the node is shutting
    /// down before the request was proposed, `Internal` (outcome unknown) after.
    pub async fn propose(&self, request: Request) -> Answer {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Proposal { request, reply })
            .map_err(|_| ApiError::Unavailable("the node is shutting down".into()))?;
        answer.await.unwrap_or_else(|_| Err(ApiError::Internal("the node stopped while proposing".into())))
    }
}

async fn run(raft: Raft<TypeConfig>, mut rx: mpsc::UnboundedReceiver<Proposal>) {
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    while let Some(first) = rx.recv().await {
        // Waiting for a slot before draining the queue is what lets a batch grow.
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else { return };
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(p) => batch.push(p),
                Err(_) => break,
            }
        }
        let raft = raft.clone();
        tokio::spawn(async move {
            propose(&raft, batch).await;
            drop(slot);
        });
    }
}

async fn propose(raft: &Raft<TypeConfig>, mut batch: Vec<Proposal>) {
    if batch.len() == 1 {
        let Proposal { request, reply } = batch.remove(0);
        let answer = raft.client_write(request).await.map(|r| r.data).map_err(from_write);
        // A client that went away no longer needs its answer.
        let _ = reply.send(answer);
        return;
    }
    let (requests, replies): (Vec<_>, Vec<_>) = batch.into_iter().map(|p| (p.request, p.reply)).unzip();
    match raft.client_write(Request::Batch(requests)).await {
        Ok(r) => {
            // One answer per request; a reply left without one reports an unknown outcome.
            for (reply, succeeded) in replies.into_iter().zip(r.data.each) {
                let _ = reply.send(Ok(Response { succeeded, each: Vec::new() }));
            }
        }
        Err(e) => {
            let e = from_write(e);
            for reply in replies {
                let _ = reply.send(Err(e.clone()));
            }
        }
    }
}
