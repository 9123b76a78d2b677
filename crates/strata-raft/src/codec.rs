//! Where each Raft record lives in the strata database and how it is encoded: the column family
//! names, the fixed keys of the meta families, the log key (index as 8 big-endian bytes, so the
//! family's order is log order) and postcard for every value. docs/format.md ("Raft storage")
//! is the written form of this module; change both together.
//!
//! It only encodes and decodes: it must not read or write the database. A record that does not
//! decode is reported as `strata::Error::Corruption`, never a panic.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// The Raft log: key = index (8 bytes, big-endian), value = postcard of `openraft::Entry`.
pub const LOG_CF: &str = "raft_log";
/// The log store's own state: `vote`, `committed`, `last_purged`.
pub const META_CF: &str = "raft_meta";
/// The state machine's state besides user data: `applied`, `membership`, `installing`.
pub const SM_META_CF: &str = "sm_meta";

/// `raft_meta` key of the vote (postcard `Vote`).
pub const VOTE_KEY: &[u8] = b"vote";
/// `raft_meta` key of the last committed log id (postcard `Option<LogId>`).
pub const COMMITTED_KEY: &[u8] = b"committed";
/// `raft_meta` key of the last purged log id (postcard `LogId`).
pub const LAST_PURGED_KEY: &[u8] = b"last_purged";
/// `sm_meta` key of the last applied log id (postcard `LogId`).
pub const APPLIED_KEY: &[u8] = b"applied";
/// `sm_meta` key of the last applied membership (postcard `StoredMembership`).
pub const MEMBERSHIP_KEY: &[u8] = b"membership";
/// `sm_meta` key present while a snapshot install is under way: the snapshot's file name (UTF-8).
pub const INSTALLING_KEY: &[u8] = b"installing";

/// The `raft_log` key of `index`.
pub fn log_key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

/// The index a `raft_log` key names.
///
/// # Errors
/// `Corruption` when the key is not 8 bytes long.
pub fn log_index(key: &[u8]) -> strata::Result<u64> {
    let bytes: [u8; 8] = key
        .try_into()
        .map_err(|_| strata::Error::Corruption(format!("raft_log key of {} bytes, not 8", key.len())))?;
    Ok(u64::from_be_bytes(bytes))
}

/// The postcard encoding of `value`.
///
/// # Errors
/// `InvalidArgument` when serde refuses the value (postcard fails only for unsupported types).
pub fn encode<T: Serialize>(value: &T) -> strata::Result<Vec<u8>> {
    postcard::to_stdvec(value)
        .map_err(|e| strata::Error::InvalidArgument(format!("cannot encode a Raft record: {e}")))
}

/// Decodes a postcard record; `what` names it in the error.
///
/// # Errors
/// `Corruption` when the bytes do not decode to a `T`.
pub fn decode<T: DeserializeOwned>(bytes: &[u8], what: &str) -> strata::Result<T> {
    postcard::from_bytes(bytes)
        .map_err(|e| strata::Error::Corruption(format!("undecodable {what} record: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_keys_sort_in_index_order() {
        assert!(log_key(255) < log_key(256));
        assert_eq!(log_index(&log_key(0x0102_0304_0506_0708)).unwrap(), 0x0102_0304_0506_0708);
        assert!(matches!(log_index(b"short"), Err(strata::Error::Corruption(_))));
    }

    #[test]
    fn garbage_decodes_to_corruption_not_a_panic() {
        let r: strata::Result<openraft::Vote<u64>> = decode(&[0xff, 0xff, 0xff], "vote");
        assert!(matches!(r, Err(strata::Error::Corruption(_))));
    }
}
