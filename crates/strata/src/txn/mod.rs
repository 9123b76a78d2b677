//! Transactions over a [`Db`](crate::Db) (docs/transactions.md): an indexed write batch that
//! reads its own writes ([`WriteBatchWithIndex`], usable on its own), the lock manager
//! pessimistic transactions wait in, and the transactions themselves: optimistic
//! ([`Db::begin_transaction`](crate::Db::begin_transaction)) and pessimistic
//! ([`TransactionDb`]). This module sits above `db`: it uses the database's reads and its
//! commit hook, and `db` must not import it.

mod batch_iter;
mod batch_ops;
mod indexed_batch;
mod locks;
mod transaction;
mod transaction_db;

pub use batch_iter::BatchAndDbIterator;
pub use indexed_batch::{BatchLookup, WriteBatchWithIndex};
pub use transaction::Transaction;
pub use transaction_db::{TransactionDb, TransactionDbOptions, TransactionOptions};
