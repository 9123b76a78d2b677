//! Transactions over a [`Db`](crate::Db): an indexed write batch that reads its own writes, the
//! lock manager pessimistic transactions wait in, and the transactions themselves. This module
//! sits above `db`: it uses the database's reads and its commit hook, and `db` must not import
//! it.

mod batch_iter;
mod indexed_batch;

pub use batch_iter::BatchAndDbIterator;
pub use indexed_batch::{BatchLookup, WriteBatchWithIndex};
