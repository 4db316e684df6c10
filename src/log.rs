//! The log: every write to, and every read of, the audit log's own tables (its rows, chain
//! links and head, the stored Merkle tree, the checkpoint queue, the erasure index), over
//! PostgreSQL. [`append::Appender`] is the one appender: it owns a batch's transaction (the
//! rows, the chain link and the tree under the head's lock, the caller's writes inside it; the
//! log's own rows: erasure and restore records, restored leaves); [`Reader`] ([`read`]) is the
//! one read side, what `verify` and the chain poller read; [`tree`] reads the stored tree
//! (subtrees, leaf ranges, proofs, a row's place); [`checkpoints`] is the signer's queue of
//! checkpoints. No other room names these tables: `ingest`, `erase`, `retention`, `archive`,
//! `verify`, `evidence`, `restore` and the signer call in here.

pub(crate) mod append;
pub(crate) mod checkpoints;
pub(crate) mod erasure;
pub(crate) mod held;
pub(crate) mod index;
pub(crate) mod partitions;
pub(crate) mod present;
pub(crate) mod read;
pub(crate) mod restored;
pub(crate) mod signed;
pub(crate) mod standby;
pub(crate) use event_audit_proof::tiles;
pub(crate) mod tree;

pub use read::Reader;

use std::sync::Arc;

use crate::db::Db;

/// The log over its database, and the name the links this process writes carry.
#[derive(Clone)]
pub(crate) struct Log {
    db: Db,
    instance: Arc<str>,
}

impl Log {
    pub(crate) fn new(db: Db, instance: &str) -> Log {
        Log {
            db,
            instance: Arc::from(instance),
        }
    }

    pub(crate) fn pool(&self) -> &sqlx::PgPool {
        self.db.pool()
    }

    pub(crate) fn db(&self) -> &Db {
        &self.db
    }
}
