//! The log's one read side, [`Reader`]: chain links, the rows of a range of links streamed with
//! binary COPY (every column by name), the chain head, unlinked rows, the erasure and restore
//! records, the sequence ranges the log holds per stream, and the record of verify runs
//! (through `audit.record_verify_run`, which the auditor role may call). Reads only, but for
//! that record. `verify` (and the chain poller) checks what it reads; no other room reads the
//! log's rows for a check.

use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures::stream::BoxStream;
use sqlx::postgres::PgPoolCopyExt;

use crate::db::{Ctx, Db, DbError};
use crate::row::columns::{self, col_ty, AsView};

/// One row of `audit.chain_links`.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct LinkRow {
    pub(crate) link_seq: i64,
    pub(crate) batch_id: i64,
    pub(crate) row_count: i32,
    pub(crate) batch_digest: Vec<u8>,
    pub(crate) prev_hash: Vec<u8>,
    pub(crate) hash: Vec<u8>,
    /// 1: the hash does not cover the tree; 2: it covers `tree_size` and `tree_root`.
    pub(crate) version: i16,
    pub(crate) tree_size: Option<i64>,
    pub(crate) tree_root: Option<Vec<u8>>,
}

macro_rules! stored_row {
    ($($v:ident $c:ident $t:ident $n:ident),* $(,)?) => {
        /// One row of `audit.events`, every column read by name (`columns::select_list`, jsonb
        /// as text): `prove` reads one row at a time this way; the walk streams rows with COPY
        /// instead ([`crate::row::view::RowView`]). Owned, so its own type (generated from the same
        /// column list as the view).
        #[derive(Debug, Clone, sqlx::FromRow)]
        pub struct StoredRow {
            $(pub $c: col_ty!((String, Vec<u8>, DateTime<Utc>) $t $n),)*
        }

        impl StoredRow {
            /// The row as the walk checks it.
            pub fn view(&self) -> crate::row::view::RowView<'_> {
                crate::row::view::RowView {
                    $($v: AsView::as_view(&self.$c),)*
                }
            }
        }
    };
}

crate::row::columns::events_row!(stored_row);

/// A row whose batch has no chain link.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct Unlinked {
    pub(crate) stream: String,
    pub(crate) stream_seq: i64,
    pub(crate) batch_id: i64,
    pub(crate) total: i64,
}

/// The row of an erasure record.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct ErasureRow {
    pub(crate) stream_seq: i64,
    pub(crate) raw: Vec<u8>,
    pub(crate) row_hash: Vec<u8>,
    pub(crate) linked: bool,
    /// The chain link of the record's batch (its place in the log), when it has one.
    pub(crate) link_seq: Option<i64>,
}

/// One run of `verify`, as recorded.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunRecord<'a> {
    pub(crate) ok: bool,
    pub(crate) links: i64,
    pub(crate) rows: i64,
    pub(crate) first_break: Option<&'a str>,
    pub(crate) breaks: i64,
    pub(crate) duration_ms: i64,
    /// Gaps by kind; `None` when completeness was not checked.
    pub(crate) gaps_purged: Option<i64>,
    pub(crate) gaps_deleted: Option<i64>,
    pub(crate) gaps_missing: Option<i64>,
    pub(crate) gaps_pending: Option<i64>,
    /// Whether the witnessed checkpoints held; `None` when not checked.
    pub(crate) witness_ok: Option<bool>,
}

/// The latest recorded run, as the daemon's chain poller exports it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct LastRun {
    pub(crate) ok: bool,
    pub(crate) verified_at: DateTime<Utc>,
    pub(crate) rows: i64,
    pub(crate) duration_ms: Option<i64>,
    pub(crate) gaps_purged: Option<i64>,
    pub(crate) gaps_deleted: Option<i64>,
    pub(crate) gaps_missing: Option<i64>,
    pub(crate) gaps_pending: Option<i64>,
    pub(crate) witness_ok: Option<bool>,
}

/// The log read back: every query `verify` and the chain poller make of it.
#[derive(Clone)]
pub struct Reader {
    db: Db,
}

/// The COPY statement streaming the rows of links `first..=last` (whose batch ids lie in
/// `batches`), `link_seq` first, in log order.
pub(crate) fn rows_copy_sql(first: i64, last: i64, batches: (i64, i64)) -> String {
    let cols: Vec<String> = columns::EVENTS
        .iter()
        .map(|c| format!("e.{}", c.name))
        .collect();
    format!(
        "COPY (SELECT l.link_seq, {} FROM audit.chain_links l JOIN audit.events e ON e.batch_id = l.batch_id \
         WHERE l.link_seq BETWEEN {first} AND {last} AND e.batch_id BETWEEN {} AND {} \
         ORDER BY l.link_seq, e.stream COLLATE \"C\", e.stream_seq, e.published_at) TO STDOUT (FORMAT binary)",
        cols.join(", "),
        batches.0,
        batches.1
    )
}

/// The row `stream`/`seq`, every column by name (what `prove` hands out).
pub async fn stored_row(db: &Db, stream: &str, seq: i64) -> Result<Option<StoredRow>, DbError> {
    let sql = format!(
        "SELECT {} FROM audit.events e WHERE e.stream = $1 AND e.stream_seq = $2 LIMIT 1",
        columns::select_list("e")
    );
    sqlx::query_as(&sql)
        .bind(stream)
        .bind(seq)
        .fetch_optional(db.pool())
        .await
        .ctx("read a row")
}

/// How many erasures `audit.erasures` records by account, and by publication time (payload
/// retention and pruned partitions): each left rows without their account number.
pub(crate) async fn erasure_counts(db: &Db) -> Result<(i64, i64), DbError> {
    sqlx::query_as(
        "SELECT count(*) FILTER (WHERE selector = 'account') AS by_account, \
           count(*) FILTER (WHERE selector <> 'account' AND selector NOT LIKE 'stream %') AS by_time \
         FROM audit.erasures",
    )
    .fetch_one(db.pool())
    .await
    .ctx("count the erasures")
}

impl Reader {
    pub fn new(db: Db) -> Reader {
        Reader { db }
    }

    pub(crate) async fn links(&self) -> Result<Vec<LinkRow>, DbError> {
        sqlx::query_as(
            "SELECT link_seq, batch_id, row_count, batch_digest, prev_hash, hash, version, tree_size, tree_root \
             FROM audit.chain_links ORDER BY link_seq",
        )
        .fetch_all(self.db.pool())
        .await
        .ctx("read chain links")
    }

    /// The rows of links `first..=last` as a binary COPY stream (see [`rows_copy_sql`]).
    pub(crate) async fn link_rows(
        &self,
        first: i64,
        last: i64,
        batches: (i64, i64),
    ) -> Result<BoxStream<'static, Result<Bytes, sqlx::Error>>, DbError> {
        let sql = rows_copy_sql(first, last, batches);
        self.db
            .pool()
            .copy_out_raw(&sql)
            .await
            .ctx("stream rows with COPY")
    }

    /// Whether PostgreSQL stores `text` as jsonb with exactly the text `stored` (false when it
    /// refuses it).
    pub(crate) async fn jsonb_equal(
        &self,
        text: &str,
        stored: Option<&str>,
    ) -> Result<bool, DbError> {
        let r: Result<Option<String>, sqlx::Error> = sqlx::query_scalar("SELECT $1::jsonb::text")
            .bind(text)
            .fetch_one(self.db.pool())
            .await;
        match r {
            Ok(t) => Ok(t.as_deref() == stored),
            Err(sqlx::Error::Database(_)) => Ok(false),
            Err(e) => Err(e).ctx("compare a payload as jsonb"),
        }
    }

    /// `(link_seq, hash)` of the chain head.
    pub(crate) async fn chain_head(&self) -> Result<(i64, Vec<u8>), DbError> {
        sqlx::query_as("SELECT link_seq, hash FROM audit.chain_head")
            .fetch_one(self.db.pool())
            .await
            .ctx("read chain head")
    }

    /// How many rows the log holds (an index-only scan when the table is vacuumed).
    /// The rows with these hashes, wherever they are: `(row_hash, stream, stream_seq)`. One
    /// scan of the table; called with a handful of hashes (`verify --mirror` naming what it
    /// found changed or lost).
    pub(crate) async fn rows_by_hash(
        &self,
        hashes: &[Vec<u8>],
    ) -> Result<Vec<(Vec<u8>, String, i64)>, DbError> {
        sqlx::query_as(
            "SELECT row_hash, stream, stream_seq FROM audit.events WHERE row_hash = ANY($1)",
        )
        .bind(hashes)
        .fetch_all(self.db.pool())
        .await
        .ctx("find rows by their hash")
    }

    pub(crate) async fn row_count(&self) -> Result<i64, DbError> {
        sqlx::query_scalar("SELECT count(*) FROM audit.events")
            .fetch_one(self.db.pool())
            .await
            .ctx("count rows")
    }

    /// The erasure records' rows (stream `event-audit.erasures`), in order: their sequence, raw
    /// message, row hash, and whether their batch has a chain link.
    pub(crate) async fn erasure_rows(&self) -> Result<Vec<ErasureRow>, DbError> {
        self.record_rows(crate::row::erasure::STREAM)
            .await
            .ctx("read the erasure records")
    }

    /// The restore records' rows (stream `event-audit.restores`), in order, as
    /// [`Reader::erasure_rows`] reads the erasures'.
    pub(crate) async fn restore_rows(&self) -> Result<Vec<ErasureRow>, DbError> {
        self.record_rows(crate::row::restore::STREAM)
            .await
            .ctx("read the restore records")
    }

    /// The rows of one of the log's own record streams, in order, with their chain link.
    async fn record_rows(&self, stream: &str) -> Result<Vec<ErasureRow>, sqlx::Error> {
        sqlx::query_as(
            "SELECT e.stream_seq, e.raw, e.row_hash, l.link_seq, l.link_seq IS NOT NULL AS linked \
             FROM audit.events e LEFT JOIN audit.chain_links l ON l.batch_id = e.batch_id \
             WHERE e.stream = $1 ORDER BY e.stream_seq",
        )
        .bind(stream)
        .fetch_all(self.db.pool())
        .await
    }

    /// The row hashes the log keeps for rows published in `[from, to)` (RFC 3339), by place,
    /// but the log's own erasure records (what `verify --archive` compares an archive with).
    pub(crate) async fn range_hashes(
        &self,
        from: &str,
        to: &str,
    ) -> Result<std::collections::HashMap<(String, i64), Vec<u8>>, DbError> {
        let rows: Vec<(String, i64, Vec<u8>)> = sqlx::query_as(
            "SELECT stream, stream_seq, row_hash FROM audit.events \
             WHERE published_at >= $1::timestamptz AND published_at < $2::timestamptz AND stream <> $3",
        )
        .bind(from)
        .bind(to)
        .bind(crate::row::erasure::STREAM)
        .fetch_all(self.db.pool())
        .await
        .ctx("read the row hashes of an archived partition's range")?;
        Ok(rows.into_iter().map(|(s, q, h)| ((s, q), h)).collect())
    }

    /// `audit.erasures`: each erasure's number and the row hash of its record's row.
    pub(crate) async fn erasure_index(&self) -> Result<Vec<(i64, Vec<u8>)>, DbError> {
        sqlx::query_as("SELECT erasure_id, row_hash FROM audit.erasures ORDER BY erasure_id")
            .fetch_all(self.db.pool())
            .await
            .ctx("read audit.erasures")
    }

    /// Up to `limit` rows whose batch has no chain link, each with the total count.
    pub(crate) async fn unlinked_rows(&self, limit: i64) -> Result<Vec<Unlinked>, DbError> {
        sqlx::query_as(
            "SELECT e.stream, e.stream_seq, e.batch_id, count(*) OVER () AS total FROM audit.events e \
             WHERE NOT EXISTS (SELECT 1 FROM audit.chain_links l WHERE l.batch_id = e.batch_id) \
             ORDER BY e.batch_id, e.stream, e.stream_seq LIMIT $1",
        )
        .bind(limit)
        .fetch_all(self.db.pool())
        .await
        .ctx("look for unlinked rows")
    }

    /// Per stream, the runs of consecutive stream sequences the log holds:
    /// `(stream, first, last)` in stream and sequence order.
    pub(crate) async fn held_ranges(&self) -> Result<Vec<(String, i64, i64)>, DbError> {
        sqlx::query_as(
            "SELECT stream, min(stream_seq) AS first, max(stream_seq) AS last FROM ( \
               SELECT stream, stream_seq, stream_seq - row_number() OVER (PARTITION BY stream ORDER BY stream_seq) AS island \
               FROM (SELECT DISTINCT stream, stream_seq FROM audit.events \
                     WHERE stream NOT IN ($1, $2, $3, $4)) d) s \
             GROUP BY stream, island ORDER BY stream, first",
        )
        .bind(crate::row::erasure::STREAM)
        .bind(crate::row::restore::STREAM)
        .bind(crate::row::restore::LEAVES)
        .bind(crate::row::index_record::STREAM)
        .fetch_all(self.db.pool())
        .await
        .ctx("read the sequence ranges of the log")
    }

    /// Distinct sequences of `stream` held within `first..=last` (a second look at a gap).
    pub(crate) async fn held_between(
        &self,
        stream: &str,
        first: i64,
        last: i64,
    ) -> Result<Vec<i64>, DbError> {
        sqlx::query_scalar(
            "SELECT DISTINCT stream_seq FROM audit.events WHERE stream = $1 \
             AND stream_seq BETWEEN $2 AND $3 ORDER BY stream_seq",
        )
        .bind(stream)
        .bind(first)
        .bind(last)
        .fetch_all(self.db.pool())
        .await
        .ctx("look at a gap again")
    }

    /// Records a run through `audit.record_verify_run` (SECURITY DEFINER: the auditor role may
    /// record, but neither change nor remove a run).
    pub(crate) async fn record_run(&self, r: &RunRecord<'_>) -> Result<(), DbError> {
        sqlx::query("SELECT audit.record_verify_run($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)")
            .bind(r.ok)
            .bind(r.links)
            .bind(r.rows)
            .bind(r.first_break)
            .bind(r.breaks)
            .bind(r.duration_ms)
            .bind(r.gaps_purged)
            .bind(r.gaps_deleted)
            .bind(r.gaps_missing)
            .bind(r.gaps_pending)
            .bind(r.witness_ok)
            .execute(self.db.pool())
            .await
            .ctx("record verify run")?;
        Ok(())
    }

    /// The latest recorded verify run.
    pub(crate) async fn last_run(&self) -> Result<Option<LastRun>, DbError> {
        sqlx::query_as(
            "SELECT ok, verified_at, rows, duration_ms, gaps_purged, gaps_deleted, gaps_missing, \
             gaps_pending, witness_ok FROM audit.verify_runs ORDER BY id DESC LIMIT 1",
        )
        .fetch_optional(self.db.pool())
        .await
        .ctx("read verify runs")
    }

    /// The occurrences of every envelope id the log holds more than once (or a finding
    /// names), in log order (by chain link, then stream, sequence and time), as rows:
    /// `event_id`, `stream`, `stream_seq`, `published_at`, `event_type`, `event_version`,
    /// `claims`, `raw_hash`, `raw`.
    pub(crate) fn repeated_ids(&self) -> BoxStream<'_, Result<sqlx::postgres::PgRow, sqlx::Error>> {
        static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
        let sql = SQL.get_or_init(|| {
            format!(
                "WITH repeated AS (SELECT event_id FROM audit.events WHERE event_id IS NOT NULL \
                     GROUP BY event_id HAVING count(*) > 1 \
                   UNION SELECT event_id FROM audit.id_findings) \
                 SELECT e.event_id, e.stream, e.stream_seq, e.published_at, e.event_type, \
                        e.event_version, {} AS claims, sha256(e.raw) AS raw_hash, e.raw \
                 FROM audit.events e JOIN repeated r ON r.event_id = e.event_id \
                 LEFT JOIN audit.chain_links l ON l.batch_id = e.batch_id \
                 ORDER BY l.link_seq, e.stream, e.stream_seq, e.published_at",
                columns::CLAIMS_ITS_ID
            )
        });
        sqlx::query(sql).fetch(self.db.pool())
    }

    /// The stored envelope-id findings (`audit.id_findings`), as rows: `stream`, `stream_seq`,
    /// `published_at`, `event_id`, `finding`, `first_stream`, `first_stream_seq`,
    /// `first_published_at`.
    pub(crate) fn id_findings(&self) -> BoxStream<'_, Result<sqlx::postgres::PgRow, sqlx::Error>> {
        sqlx::query(
            "SELECT stream, stream_seq, published_at, event_id, finding, first_stream, first_stream_seq, \
                    first_published_at FROM audit.id_findings",
        )
        .fetch(self.db.pool())
    }
}
