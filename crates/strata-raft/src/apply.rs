//! Applying committed entries to the state machine: evaluates each request in log order and
//! gathers one call's effects, with the new `applied` log id and membership, into ONE strata
//! batch. Transactions read the state as of their own entry: the effects of earlier entries in
//! the same call are kept in an overlay consulted before the database.
//!
//! The batch is written with `sync = false`: the Raft log is the durable record, and after a
//! crash openraft re-applies from `applied + 1`. Since `applied` is in the same batch as the
//! effects, an entry's effect is never applied twice nor lost. This module must not touch the
//! log families.
//!
//! A request strata would refuse (a key or value over strata's limits) has no effect and
//! answers `succeeded: false`, on every node alike, instead of failing the batch. An empty key
//! is a key, as in strata.

use std::collections::HashMap;

use openraft::{Entry, EntryPayload, LogId, StoredMembership};
use strata::batch::{MAX_KEY_LEN, MAX_VALUE_LEN};
use strata::{WriteBatch, WriteOptions};

use crate::codec::{self, APPLIED_KEY, MEMBERSHIP_KEY};
use crate::store::Shared;
use crate::types::{Compare, NodeId, Op, Request, Response, TypeConfig};

/// One apply call's pending effects.
struct Pending<'a> {
    shared: &'a Shared,
    batch: WriteBatch,
    /// Values written earlier in this call (`None`: deleted).
    overlay: HashMap<Vec<u8>, Option<Vec<u8>>>,
}

impl Pending<'_> {
    fn value(&self, key: &[u8]) -> strata::Result<Option<Vec<u8>>> {
        match self.overlay.get(key) {
            Some(v) => Ok(v.clone()),
            None if key.len() > MAX_KEY_LEN => Ok(None),
            None => self.shared.db.get_cf(&self.shared.data_cf, key),
        }
    }

    fn holds(&self, compare: &Compare) -> strata::Result<bool> {
        match compare {
            Compare::ValueIs { key, value } => Ok(self.value(key)? == *value),
        }
    }

    /// Records `ops`, or nothing when one is invalid; whether they were recorded.
    fn write(&mut self, ops: &[Op]) -> bool {
        if !ops.iter().all(valid) {
            return false;
        }
        let cf = &self.shared.data_cf;
        for op in ops {
            match op {
                Op::Put { key, value } => {
                    self.batch.put_cf(cf, key, value);
                    self.overlay.insert(key.clone(), Some(value.clone()));
                }
                Op::Delete { key } => {
                    self.batch.delete_cf(cf, key);
                    self.overlay.insert(key.clone(), None);
                }
            }
        }
        true
    }

    /// Evaluates one entry's request.
    fn respond(&mut self, request: &Request) -> strata::Result<Response> {
        let Request::Batch(requests) = request else {
            return Ok(Response { succeeded: self.request(request)?, each: Vec::new() });
        };
        let each = requests.iter().map(|r| self.request(r)).collect::<strata::Result<Vec<bool>>>()?;
        Ok(Response { succeeded: each.iter().all(|&ok| ok), each })
    }

    fn request(&mut self, request: &Request) -> strata::Result<bool> {
        match request {
            Request::Write(ops) => Ok(self.write(ops)),
            Request::Batch(_) => Ok(self.respond(request)?.succeeded),
            Request::Txn { compares, success, failure } => {
                let mut held = true;
                for compare in compares {
                    held &= self.holds(compare)?;
                }
                let branch_ok = self.write(if held { success } else { failure });
                Ok(held && branch_ok)
            }
        }
    }
}

fn valid(op: &Op) -> bool {
    let key_ok = |k: &[u8]| k.len() <= MAX_KEY_LEN;
    match op {
        Op::Put { key, value } => key_ok(key) && value.len() <= MAX_VALUE_LEN,
        Op::Delete { key } => key_ok(key),
    }
}

/// Applies `entries` in order; one response per entry.
///
/// # Errors
/// As `strata::Db::get_cf` and `strata::Db::write_opt`; nothing is applied then.
pub(crate) fn apply(shared: &Shared, entries: Vec<Entry<TypeConfig>>) -> strata::Result<Vec<Response>> {
    let mut pending = Pending { shared, batch: WriteBatch::new(), overlay: HashMap::new() };
    let mut responses = Vec::with_capacity(entries.len());
    let mut applied: Option<LogId<NodeId>> = None;
    let mut membership = None;
    for entry in entries {
        applied = Some(entry.log_id);
        let response = match &entry.payload {
            EntryPayload::Blank => Response { succeeded: true, each: Vec::new() },
            EntryPayload::Normal(request) => pending.respond(request)?,
            EntryPayload::Membership(m) => {
                membership = Some(StoredMembership::new(Some(entry.log_id), m.clone()));
                Response { succeeded: true, each: Vec::new() }
            }
        };
        responses.push(response);
    }
    let Some(applied) = applied else { return Ok(responses) };
    let mut batch = pending.batch;
    batch.put_cf(&shared.sm_cf, APPLIED_KEY, codec::encode(&applied)?);
    if let Some(m) = membership {
        batch.put_cf(&shared.sm_cf, MEMBERSHIP_KEY, codec::encode(&m)?);
    }
    shared.db.write_opt(&WriteOptions { sync: false, disable_wal: false }, batch)?;
    Ok(responses)
}
