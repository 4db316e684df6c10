//! The log's dated partitions, as archives and prunes meet them: which partitions end by a
//! time (pruned already, holding rows), a partition's rows streamed with their leaf index in the
//! order of the archive's digest, the newest published checkpoint an archive names, and a
//! prune's own statements (the partition held against new rows, its rows' envelope-id claims and
//! findings removed, the partition compacted in place). What a file holds is
//! `archive`'s.

use chrono::{DateTime, Utc};

use crate::db::{Ctx, Db, DbError};
use crate::row::columns;
use crate::row::erasure::{self, stamp};

/// The selector of a prune's record: `partition <name>`.
pub(crate) const PRUNED_SELECTOR: &str = "partition ";

/// A dated partition of `audit.events`: `[from, to)`.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct Partition {
    pub(crate) name: String,
    pub(crate) from_ts: DateTime<Utc>,
    pub(crate) to_ts: DateTime<Utc>,
    /// Whether a recorded prune already emptied it.
    pub(crate) pruned: bool,
    /// Whether it holds any row to archive.
    pub(crate) has_rows: bool,
}

/// The dated partitions that end by `before`, oldest first.
pub(crate) async fn before(db: &Db, before: DateTime<Utc>) -> Result<Vec<Partition>, DbError> {
    let parts: Vec<Partition> = sqlx::query_as(
        "SELECT p.name, p.from_ts, p.to_ts, \
           EXISTS (SELECT 1 FROM audit.erasures x WHERE x.selector = $3 || p.name) AS pruned, \
           EXISTS (SELECT 1 FROM audit.events e WHERE e.published_at >= p.from_ts \
             AND e.published_at < p.to_ts AND e.stream <> $2) AS has_rows \
         FROM (SELECT c.relname::text AS name, \
                 substring(b FROM $$FROM \\('([^']+)'\\)$$)::timestamptz AS from_ts, \
                 substring(b FROM $$TO \\('([^']+)'\\)$$)::timestamptz AS to_ts \
               FROM pg_class c JOIN pg_inherits i ON i.inhrelid = c.oid, \
                 LATERAL pg_get_expr(c.relpartbound, c.oid) AS b \
               WHERE i.inhparent = 'audit.events'::regclass AND b <> 'DEFAULT') p \
         WHERE p.to_ts <= $1 ORDER BY p.from_ts",
    )
    .bind(before)
    .bind(erasure::STREAM)
    .bind(PRUNED_SELECTOR)
    .fetch_all(db.pool())
    .await
    .ctx("list the partitions of audit.events")?;
    Ok(parts)
}

/// The COPY of a partition's rows (but the log's own erasure records, which the prune keeps
/// whole), each with its leaf index first, in order of batch, stream
/// and sequence (the order of the archive's and the prune's row-hash digest). A row's leaf
/// index is where its link's leaves start plus its place among its batch's rows, which may
/// lie in other partitions too. The partition is read through `audit.events` and its range
/// (pruned to it by the planner): a partition has no grants of its own, so the writer and the
/// eraser (the daemon's retention) may read only the parent.
fn copy_sql(p: &Partition) -> String {
    let cols: Vec<String> = columns::EVENTS
        .iter()
        .map(|c| format!("x.{}", c.name))
        .collect();
    format!(
        "COPY (SELECT (l.tree_size - l.row_count + x.pos)::int8, {cols} FROM ( \
           SELECT e.*, row_number() OVER (PARTITION BY e.batch_id \
             ORDER BY e.stream COLLATE \"C\", e.stream_seq, e.published_at) - 1 AS pos \
           FROM audit.events e WHERE e.batch_id IN (SELECT DISTINCT batch_id FROM audit.events \
             WHERE published_at >= '{from}' AND published_at < '{to}')) x \
         JOIN audit.chain_links l ON l.batch_id = x.batch_id \
         WHERE x.published_at >= '{from}' AND x.published_at < '{to}' AND x.stream <> '{stream}' \
         ORDER BY x.batch_id, x.stream, x.stream_seq) TO STDOUT (FORMAT binary)",
        cols = cols.join(", "),
        from = stamp(p.from_ts),
        to = stamp(p.to_ts),
        stream = erasure::STREAM
    )
}

/// The rows of `p` as a binary COPY stream (see [`copy_sql`]), inside `tx`.
pub(crate) async fn copy_rows<'t>(
    tx: &'t mut sqlx::PgConnection,
    p: &Partition,
) -> Result<futures::stream::BoxStream<'t, Result<bytes::Bytes, sqlx::Error>>, DbError> {
    tx.copy_out_raw(&copy_sql(p))
        .await
        .ctx("stream a partition's rows with COPY")
}

/// The newest published checkpoint's note (what an archive's manifest names).
pub(crate) async fn newest_published(db: &Db) -> Result<Option<String>, DbError> {
    let note: Option<String> = sqlx::query_scalar(
        "SELECT note FROM audit.checkpoints WHERE published ORDER BY tree_size DESC LIMIT 1",
    )
    .fetch_optional(db.pool())
    .await
    .ctx("read the newest published checkpoint")?;
    Ok(note)
}

/// A prune's first statements, as the eraser role inside its transaction: the partition held
/// against new rows (batches still writing into it commit first: every row it holds precedes
/// the prune's record), then the envelope-id claims and findings of its range removed.
/// Returns `(claims, findings)` removed.
pub(crate) async fn hold_and_forget(
    tx: &mut sqlx::PgConnection,
    partition: &str,
    from: &str,
    to: &str,
) -> Result<(u64, u64), DbError> {
    sqlx::query("SELECT audit.hold_partition($1)")
        .bind(partition)
        .execute(&mut *tx)
        .await
        .ctx("hold the partition against new rows (audit.hold_partition)")?;
    let claims = sqlx::query(
        "DELETE FROM audit.event_claims WHERE id_key IN ( \
           SELECT substring(sha256(convert_to(e.event_id, 'UTF8')) FROM 1 FOR 16) \
           FROM audit.events e WHERE e.published_at >= $1::timestamptz \
             AND e.published_at < $2::timestamptz AND e.event_id IS NOT NULL)",
    )
    .bind(from)
    .bind(to)
    .execute(&mut *tx)
    .await
    .ctx("remove the pruned rows' envelope-id claims")?
    .rows_affected();
    let findings = sqlx::query(
        "DELETE FROM audit.id_findings f \
         WHERE (f.published_at >= $1::timestamptz AND f.published_at < $2::timestamptz) \
            OR (f.first_published_at >= $1::timestamptz AND f.first_published_at < $2::timestamptz)",
    )
    .bind(from)
    .bind(to)
    .execute(&mut *tx)
    .await
    .ctx("remove the pruned rows' envelope-id findings")?
    .rows_affected();
    Ok((claims, findings))
}

/// Compacts the partition in place (`audit.prune_partition`, refused unless it holds
/// exactly `rows` rows whose hashes make `digest`); the rows it pruned.
pub(crate) async fn swap(
    tx: &mut sqlx::PgConnection,
    partition: &str,
    rows: i64,
    digest: &[u8; 32],
) -> Result<i64, DbError> {
    sqlx::query_scalar("SELECT audit.prune_partition($1, $2, $3)")
        .bind(partition)
        .bind(rows)
        .bind(&digest[..])
        .fetch_one(&mut *tx)
        .await
        .ctx("prune the partition (audit.prune_partition)")
}
