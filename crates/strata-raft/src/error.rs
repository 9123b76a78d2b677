//! How strata errors reach openraft: each `strata::Error` becomes an openraft `StorageError`
//! naming what was being read or written, so openraft can report it and stop the node. This
//! module only converts; it must not decide whether an error is fatal.

use openraft::{AnyError, ErrorSubject, ErrorVerb, StorageError, StorageIOError};

use crate::types::NodeId;

/// The openraft error for a failure while `verb`-ing `subject`.
pub(crate) fn storage(
    subject: ErrorSubject<NodeId>,
    verb: ErrorVerb,
    e: &strata::Error,
) -> StorageError<NodeId> {
    StorageIOError::new(subject, verb, AnyError::new(e)).into()
}

pub(crate) fn read_logs(e: strata::Error) -> StorageError<NodeId> {
    storage(ErrorSubject::Logs, ErrorVerb::Read, &e)
}

pub(crate) fn write_logs(e: strata::Error) -> StorageError<NodeId> {
    storage(ErrorSubject::Logs, ErrorVerb::Write, &e)
}

pub(crate) fn read_vote(e: strata::Error) -> StorageError<NodeId> {
    storage(ErrorSubject::Vote, ErrorVerb::Read, &e)
}

pub(crate) fn write_vote(e: strata::Error) -> StorageError<NodeId> {
    storage(ErrorSubject::Vote, ErrorVerb::Write, &e)
}

pub(crate) fn read_sm(e: strata::Error) -> StorageError<NodeId> {
    storage(ErrorSubject::StateMachine, ErrorVerb::Read, &e)
}

pub(crate) fn write_sm(e: strata::Error) -> StorageError<NodeId> {
    storage(ErrorSubject::StateMachine, ErrorVerb::Write, &e)
}

pub(crate) fn write_snapshot(e: strata::Error) -> StorageError<NodeId> {
    storage(ErrorSubject::Snapshot(None), ErrorVerb::Write, &e)
}

/// A strata IO error for `path`, for filesystem work outside the database (snapshot files).
pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> strata::Error {
    strata::Error::Io { path: Some(path.to_path_buf()), source }
}

/// The error of a blocking task that did not finish (it panicked or the runtime is stopping).
pub(crate) fn join(e: tokio::task::JoinError) -> strata::Error {
    strata::Error::Io {
        path: None,
        source: std::io::Error::other(format!("blocking storage task failed: {e}")),
    }
}
