//! The SQL of the checkpoint signer: under a transaction-scoped advisory lock (one signer at a
//! time across every daemon of the log), the committed tree's head, the latest stored
//! checkpoint, storing a new one, the ones not yet published (in order) and marking them.

use sqlx::{PgConnection, Postgres, Transaction};

use crate::db::{Ctx, Db, DbError};

/// The advisory lock key of the checkpoint signer (any constant unique to this use).
const SIGNER_LOCK: i64 = 0x6576_6175_6469_7431; // "evaudit1"

#[derive(Clone)]
pub struct CheckpointStore {
    db: Db,
}

/// A stored checkpoint not yet published.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Unpublished {
    pub tree_size: i64,
    pub note: String,
}

impl CheckpointStore {
    pub fn new(db: Db) -> CheckpointStore {
        CheckpointStore { db }
    }

    /// A transaction holding the signer's lock (waits for another daemon's signer).
    pub async fn lock(&self) -> Result<Transaction<'static, Postgres>, DbError> {
        let mut tx = self.db.pool().begin().await.ctx("begin")?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(SIGNER_LOCK)
            .execute(&mut *tx)
            .await
            .ctx("take the checkpoint signer's lock")?;
        Ok(tx)
    }

    /// The committed tree: its size and right edge.
    pub async fn head(tx: &mut PgConnection) -> Result<(i64, Vec<u8>), DbError> {
        sqlx::query_as("SELECT tree_size, frontier FROM audit.chain_head")
            .fetch_one(tx)
            .await
            .ctx("read the tree head")
    }

    /// The size of the latest stored checkpoint (0 when none).
    pub async fn latest(tx: &mut PgConnection) -> Result<i64, DbError> {
        sqlx::query_scalar("SELECT COALESCE(max(tree_size), 0)::int8 FROM audit.checkpoints")
            .fetch_one(tx)
            .await
            .ctx("read the latest checkpoint")
    }

    pub async fn insert(tx: &mut PgConnection, size: i64, note: &str) -> Result<(), DbError> {
        sqlx::query("INSERT INTO audit.checkpoints (tree_size, note) VALUES ($1, $2)")
            .bind(size)
            .bind(note)
            .execute(tx)
            .await
            .ctx("store a checkpoint")?;
        Ok(())
    }

    /// The checkpoints not yet published, oldest first.
    pub async fn unpublished(tx: &mut PgConnection) -> Result<Vec<Unpublished>, DbError> {
        sqlx::query_as(
            "SELECT tree_size, note FROM audit.checkpoints WHERE NOT published ORDER BY tree_size",
        )
        .fetch_all(tx)
        .await
        .ctx("read unpublished checkpoints")
    }

    pub async fn mark_published(tx: &mut PgConnection, size: i64) -> Result<(), DbError> {
        sqlx::query("UPDATE audit.checkpoints SET published = true WHERE tree_size = $1")
            .bind(size)
            .execute(tx)
            .await
            .ctx("mark a checkpoint published")?;
        Ok(())
    }

    /// The latest stored checkpoint's note (`prove`'s fallback, trusted only once its
    /// signature verifies).
    pub async fn latest_note(&self) -> Result<Option<String>, DbError> {
        sqlx::query_scalar("SELECT note FROM audit.checkpoints ORDER BY tree_size DESC LIMIT 1")
            .fetch_optional(self.db.pool())
            .await
            .ctx("read the latest stored checkpoint")
    }

    /// The committed tree's size.
    pub async fn tree_size(&self) -> Result<i64, DbError> {
        sqlx::query_scalar("SELECT tree_size FROM audit.chain_head")
            .fetch_one(self.db.pool())
            .await
            .ctx("read the tree size")
    }
}
