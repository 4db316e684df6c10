//! The SQL of the checkpoint signer: under a transaction-scoped advisory lock (one signer at a
//! time across every daemon of the log), the committed tree's head, the closed re-verdict runs'
//! end hashes, the stored checkpoints (the queue of what is to be published, per log: a
//! convenience, since the signer trusts only notes that open with its key), storing one,
//! and marking one published with the cosignatures it got.

use sqlx::{PgConnection, Postgres, Transaction};

use crate::db::{Ctx, Db, DbError};

/// The advisory lock key of the checkpoint signer (any constant unique to this use).
const SIGNER_LOCK: i64 = 0x6576_6175_6469_7431; // "evaudit1"

/// Which tree a checkpoint is of: the rows (`events`) or the closed re-verdict runs.
pub(crate) const LOG_EVENTS: &str = "events";
pub(crate) const LOG_REVERDICTS: &str = "reverdicts";

#[derive(Clone)]
pub(crate) struct CheckpointStore {
    db: Db,
}

/// A stored checkpoint.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct Stored {
    pub(crate) tree_size: i64,
    pub(crate) note: String,
}

impl CheckpointStore {
    pub(crate) fn new(db: Db) -> CheckpointStore {
        CheckpointStore { db }
    }

    pub(crate) fn db(&self) -> &Db {
        &self.db
    }

    /// A transaction holding the signer's lock (waits for another daemon's signer).
    pub(crate) async fn lock(&self) -> Result<Transaction<'static, Postgres>, DbError> {
        let mut tx = self.db.pool().begin().await.ctx("begin")?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(SIGNER_LOCK)
            .execute(&mut *tx)
            .await
            .ctx("take the checkpoint signer's lock")?;
        Ok(tx)
    }

    /// The committed tree: its size and right edge.
    pub(crate) async fn head(tx: &mut PgConnection) -> Result<(i64, Vec<u8>), DbError> {
        sqlx::query_as("SELECT tree_size, frontier FROM audit.chain_head")
            .fetch_one(tx)
            .await
            .ctx("read the tree head")
    }

    /// Every closed re-verdict run's end: (previous hash, hash), in no order.
    pub(crate) async fn run_ends(
        tx: &mut PgConnection,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, DbError> {
        sqlx::query_as("SELECT prev_hash, hash FROM audit.reprocess_run_ends")
            .fetch_all(tx)
            .await
            .ctx("read the re-verdict run ends")
    }

    /// The stored checkpoints of `log` larger than `size`, or not yet published, oldest first.
    pub(crate) async fn newer_or_queued(
        tx: &mut PgConnection,
        log: &str,
        size: i64,
    ) -> Result<Vec<Stored>, DbError> {
        sqlx::query_as(
            "SELECT tree_size, note FROM audit.checkpoints \
             WHERE log = $1 AND (tree_size > $2 OR NOT published) ORDER BY tree_size",
        )
        .bind(log)
        .bind(size)
        .fetch_all(tx)
        .await
        .ctx("read stored checkpoints")
    }

    /// Stores a checkpoint (nothing when one of that size is stored already).
    pub(crate) async fn insert(
        tx: &mut PgConnection,
        log: &str,
        size: i64,
        note: &str,
    ) -> Result<(), DbError> {
        sqlx::query(
            "INSERT INTO audit.checkpoints (log, tree_size, note) VALUES ($1, $2, $3) \
             ON CONFLICT DO NOTHING",
        )
        .bind(log)
        .bind(size)
        .bind(note)
        .execute(tx)
        .await
        .ctx("store a checkpoint")?;
        Ok(())
    }

    pub(crate) async fn mark_published(
        tx: &mut PgConnection,
        log: &str,
        size: i64,
        cosignatures: Option<&str>,
    ) -> Result<(), DbError> {
        sqlx::query(
            "UPDATE audit.checkpoints SET published = true, cosignatures = $3 \
             WHERE log = $1 AND tree_size = $2",
        )
        .bind(log)
        .bind(size)
        .bind(cosignatures)
        .execute(tx)
        .await
        .ctx("mark a checkpoint published")?;
        Ok(())
    }

    /// The note of the largest checkpoint of the events log stored in the database, published
    /// or not (whether a key signed this log before).
    pub(crate) async fn newest_stored(db: &Db) -> Result<Option<String>, DbError> {
        sqlx::query_scalar(
            "SELECT note FROM audit.checkpoints WHERE log = $1 ORDER BY tree_size DESC LIMIT 1",
        )
        .bind(LOG_EVENTS)
        .fetch_optional(db.pool())
        .await
        .ctx("read the newest stored checkpoint")
    }

    /// The newest published checkpoint of the events log, with the cosignatures it was
    /// published with.
    pub(crate) async fn newest_published(tx: &mut PgConnection) -> Result<Option<String>, DbError> {
        let row: Option<(String, Option<String>)> = sqlx::query_as(
            "SELECT note, cosignatures FROM audit.checkpoints WHERE log = $1 AND published \
             ORDER BY tree_size DESC LIMIT 1",
        )
        .bind(LOG_EVENTS)
        .fetch_optional(tx)
        .await
        .ctx("read the newest published checkpoint")?;
        Ok(row.map(|(n, c)| match c {
            Some(c) => crate::tlog::note::with_signatures(&n, &c),
            None => n,
        }))
    }

    /// The stored checkpoints of the events log, newest first, with their cosignatures
    /// appended (`prove`'s fallback when the witness cannot be read; trusted only once the
    /// signature and any witness policy hold).
    pub(crate) async fn notes_newest_first(&self) -> Result<Vec<String>, DbError> {
        let rows: Vec<(String, Option<String>)> = sqlx::query_as(
            "SELECT note, cosignatures FROM audit.checkpoints WHERE log = $1 \
             ORDER BY tree_size DESC LIMIT 100",
        )
        .bind(LOG_EVENTS)
        .fetch_all(self.db.pool())
        .await
        .ctx("read the stored checkpoints")?;
        Ok(rows
            .into_iter()
            .map(|(n, c)| match c {
                Some(c) => crate::tlog::note::with_signatures(&n, &c),
                None => n,
            })
            .collect())
    }

    /// The committed tree's size.
    pub(crate) async fn tree_size(&self) -> Result<i64, DbError> {
        sqlx::query_scalar("SELECT tree_size FROM audit.chain_head")
            .fetch_one(self.db.pool())
            .await
            .ctx("read the tree size")
    }
}
