//! Transactions over a [`Db`](crate::Db): an indexed write batch that reads its own writes, the
//! lock manager pessimistic transactions wait in, and the transactions themselves. This module
//! sits above `db`: it uses the database's reads and its commit hook, and `db` must not import
//! it.

// The transaction step uses the lock manager; until it lands only the unit tests do.
#[cfg_attr(not(test), allow(dead_code))]
mod locks;
#[allow(unused_imports)]
pub(crate) use locks::LockManager;
