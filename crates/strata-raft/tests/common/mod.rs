//! Helpers shared by the strata-raft integration tests: log ids, entries and requests.
#![allow(dead_code)]

use std::collections::BTreeSet;

use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId, Membership};
use strata_raft::{Compare, Op, Request, TypeConfig};

pub fn log_id(term: u64, index: u64) -> LogId<u64> {
    LogId::new(CommittedLeaderId::new(term, 1), index)
}

pub fn blank(term: u64, index: u64) -> Entry<TypeConfig> {
    Entry { log_id: log_id(term, index), payload: EntryPayload::Blank }
}

pub fn normal(term: u64, index: u64, request: Request) -> Entry<TypeConfig> {
    Entry { log_id: log_id(term, index), payload: EntryPayload::Normal(request) }
}

pub fn membership(term: u64, index: u64, voters: &[u64]) -> Entry<TypeConfig> {
    let voters: BTreeSet<u64> = voters.iter().copied().collect();
    Entry {
        log_id: log_id(term, index),
        payload: EntryPayload::Membership(Membership::new(vec![voters], None)),
    }
}

pub fn put(key: &str, value: &str) -> Op {
    Op::Put { key: key.as_bytes().to_vec(), value: value.as_bytes().to_vec() }
}

pub fn del(key: &str) -> Op {
    Op::Delete { key: key.as_bytes().to_vec() }
}

pub fn value_is(key: &str, value: Option<&str>) -> Compare {
    Compare::ValueIs { key: key.as_bytes().to_vec(), value: value.map(|v| v.as_bytes().to_vec()) }
}

pub fn write(ops: Vec<Op>) -> Request {
    Request::Write(ops)
}

pub fn txn(compares: Vec<Compare>, success: Vec<Op>, failure: Vec<Op>) -> Request {
    Request::Txn { compares, success, failure }
}

/// Every applied pair, as strings.
pub fn dump(store: &strata_raft::RaftStore) -> Vec<(String, String)> {
    let s = |b: Vec<u8>| String::from_utf8(b).expect("utf-8 test data");
    store.scan(b"", None, usize::MAX).expect("scan").into_iter().map(|(k, v)| (s(k), s(v))).collect()
}
