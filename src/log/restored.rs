//! The rows of a restore: the leaves a restored database lost, brought back from a copy of the
//! log's tiles as rows whose contents are lost but whose row hashes and leaf indexes are kept,
//! then the restore's own record, appended through the chain and the tree like any batch, in
//! one transaction that holds the chain head from the first read to the commit.

use chrono::Utc;
use sqlx::PgConnection;

use super::append::Appender;
use super::Log;
use crate::db::{Ctx, DbError};
use crate::row::restore::{self, Restore};
use crate::tlog::merkle::{Frontier, Hash};

/// Leaves written per link.
const LEAVES_PER_LINK: usize = 1_000;

/// Why the leaves were not appended.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AppendError {
    /// The tree is no longer the size the leaves were checked against (another daemon wrote,
    /// or restored, meanwhile).
    #[error("the log's tree has {now} leaves, not the {expected} the restore was checked against (written meanwhile); nothing was restored: run it again")]
    Moved { expected: u64, now: u64 },
    #[error(transparent)]
    Db(#[from] DbError),
}

/// The head's tree as the chain head holds it: its size and right edge.
pub(crate) async fn head_tree(conn: &mut PgConnection, lock: bool) -> Result<Frontier, DbError> {
    let sql = if lock {
        "SELECT tree_size, frontier FROM audit.chain_head WHERE id FOR UPDATE"
    } else {
        "SELECT tree_size, frontier FROM audit.chain_head WHERE id"
    };
    let (size, front): (i64, Vec<u8>) = sqlx::query_as(sql)
        .fetch_one(&mut *conn)
        .await
        .ctx("read the chain head's tree")?;
    u64::try_from(size)
        .ok()
        .and_then(|n| Frontier::from_bytes(n, &front))
        .ok_or(DbError::Corrupt {
            what: "audit.chain_head.frontier",
            why: "does not hold one hash per set bit of the tree size",
        })
}

impl Log {
    /// The log's tree now: its size and right edge.
    pub(crate) async fn tree(&self) -> Result<Frontier, DbError> {
        let mut conn = self.db.acquire().await?;
        head_tree(&mut conn, false).await
    }

    /// Appends `hashes` as the rows of leaves `record.database_size..record.size`, then the
    /// record (numbered here, the next in its stream), in one transaction; refused when the
    /// tree is no longer `record.database_size` leaves. Returns the record as written and its
    /// chain link.
    pub(crate) async fn append_restored(
        &self,
        hashes: &[Hash],
        mut record: Restore,
    ) -> Result<(Restore, i64), AppendError> {
        let mut conn = self.db.acquire().await?;
        let mut log = Appender::begin(&mut conn, &self.instance).await?;
        let tree = head_tree(log.tx(), true).await?;
        if tree.size() != record.database_size {
            return Err(AppendError::Moved {
                expected: record.database_size,
                now: tree.size(),
            });
        }
        let now = Utc::now();
        let mut index = record.database_size;
        for chunk in hashes.chunks(LEAVES_PER_LINK) {
            let rows: Vec<_> = chunk
                .iter()
                .map(|h| {
                    let r = restore::leaf_row(index, *h, now);
                    index += 1;
                    r
                })
                .collect();
            log.own_rows(&rows).await?;
        }
        let next: i64 = sqlx::query_scalar(
            "SELECT coalesce(max(stream_seq), 0) + 1 FROM audit.events WHERE stream = $1",
        )
        .bind(restore::STREAM)
        .fetch_one(log.tx())
        .await
        .ctx("number the restore")?;
        record.restore = next;
        record.at = crate::row::erasure::stamp(now);
        let row = record.row(now);
        let (_, link) = log.own_rows(std::slice::from_ref(&row)).await?;
        log.commit("commit the restore").await?;
        Ok((record, link))
    }
}
