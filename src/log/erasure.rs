//! The log's side of an erasure and of a prune's record: the rows an erasure names that still
//! hold personal data (in log order), the chain head held from their choice to the commit, the
//! erasure record appended as a row of the log and indexed in `audit.erasures`, and the rows'
//! envelope-id claims, findings and personal columns removed. What is erased, why, and what the
//! bus keeps is `erase`'s.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::db::{Ctx, DbError};
use crate::row::erasure::{self, Erasure};

/// A row an erasure empties, as found.
#[derive(sqlx::FromRow)]
pub(crate) struct Target {
    pub(crate) stream: String,
    pub(crate) stream_seq: i64,
    pub(crate) published_at: DateTime<Utc>,
    pub(crate) row_hash: Vec<u8>,
    pub(crate) v3: bool,
}

/// Which rows an erasure names.
pub(crate) enum Which<'a> {
    /// Every row of this account number.
    Account(&'a str),
    /// Stream sequences `A..=B` of a stream.
    Range { stream: &'a str, seq: (i64, i64) },
    /// Every row published before this time.
    PublishedBefore(DateTime<Utc>),
}

/// The rows the selector names that still hold personal data, in log order.
pub(crate) async fn targets(
    tx: &mut PgConnection,
    sel: &Which<'_>,
) -> Result<Vec<Target>, DbError> {
    let held = "(octet_length(e.raw) > 0 OR e.salt IS NOT NULL OR e.payload IS NOT NULL \
         OR e.headers IS NOT NULL OR e.event_id IS NOT NULL OR e.account_number IS NOT NULL \
         OR e.errors IS NOT NULL)";
    let cols = "e.stream, e.stream_seq, e.published_at, e.row_hash, e.commitment IS NOT NULL AS v3";
    let found = match sel {
        Which::Account(a) => {
            let sql = format!(
                "SELECT {cols} FROM audit.events e WHERE e.account_number = $1 AND {held} \
                 ORDER BY e.batch_id, e.stream, e.stream_seq"
            );
            sqlx::query_as(&sql).bind(*a).fetch_all(&mut *tx).await
        }
        Which::Range { stream, seq } => {
            let sql = format!(
                "SELECT {cols} FROM audit.events e WHERE e.stream = $1 \
                 AND e.stream_seq BETWEEN $2 AND $3 AND e.stream <> $4 AND {held} \
                 ORDER BY e.batch_id, e.stream, e.stream_seq"
            );
            sqlx::query_as(&sql)
                .bind(*stream)
                .bind(seq.0)
                .bind(seq.1)
                .bind(erasure::STREAM)
                .fetch_all(&mut *tx)
                .await
        }
        Which::PublishedBefore(t) => {
            let sql = format!(
                "SELECT {cols} FROM audit.events e WHERE e.published_at < $1 \
                 AND e.stream <> $2 AND {held} ORDER BY e.batch_id, e.stream, e.stream_seq"
            );
            sqlx::query_as(&sql)
                .bind(t)
                .bind(erasure::STREAM)
                .fetch_all(&mut *tx)
                .await
        }
    };
    found.ctx("find the rows to erase")
}

/// Locks the chain head before the rows are chosen and until the commit, so that no batch
/// links between them and the record: every row the erasure finds precedes its record in the
/// log, and every row of its selector that precedes the record is one it found (`verify`
/// holds an erasure by time's count and digest against exactly those rows).
pub(crate) async fn hold_the_head(tx: &mut PgConnection) -> Result<(), DbError> {
    sqlx::query("SELECT link_seq FROM audit.chain_head WHERE id FOR UPDATE")
        .execute(&mut *tx)
        .await
        .ctx("lock the chain head")?;
    Ok(())
}

/// Numbers `e` (the next in the erasure stream), stamps it now, appends it as a row of the log
/// through the chain and indexes it in `audit.erasures`. The caller holds the erasure lock.
/// Returns its number and its link.
pub(crate) async fn append_record(
    tx: &mut PgConnection,
    mut e: Erasure,
    instance: &str,
) -> Result<(i64, i64), DbError> {
    let next: i64 = sqlx::query_scalar(
        "SELECT coalesce(max(stream_seq), 0) + 1 FROM audit.events WHERE stream = $1",
    )
    .bind(erasure::STREAM)
    .fetch_one(&mut *tx)
    .await
    .ctx("number the erasure")?;
    let now = Utc::now();
    e.erasure = next;
    e.at = erasure::stamp(now);
    let count = e
        .published
        .as_ref()
        .map_or(e.rows.len() as i64, |p| p.count);
    let row = e.row(now);
    let (_, link_seq) =
        crate::log::append::append_own_rows(tx, std::slice::from_ref(&row), instance).await?;
    sqlx::query(
        "INSERT INTO audit.erasures (erasure_id, erased_at, reason, selector, rows, row_hash) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(next)
    .bind(row.published_at)
    .bind(&e.reason)
    .bind(&e.selector)
    .bind(i32::try_from(count).unwrap_or(i32::MAX))
    .bind(&row.row_hash[..])
    .execute(&mut *tx)
    .await
    .ctx("index the erasure in audit.erasures")?;
    Ok((next, link_seq))
}

const KEYS: &str = "SELECT * FROM unnest($1::text[], $2::int8[], $3::timestamptz[]) AS k(stream, stream_seq, published_at)";

/// The keys of `found` as three arrays.
fn keys(found: &[Target]) -> (Vec<&str>, Vec<i64>, Vec<DateTime<Utc>>) {
    (
        found.iter().map(|t| t.stream.as_str()).collect(),
        found.iter().map(|t| t.stream_seq).collect(),
        found.iter().map(|t| t.published_at).collect(),
    )
}

/// Removes the envelope-id claims and findings of `found` (found through the rows' envelope
/// ids, so before the rows are emptied): `(claims, findings)` removed.
pub(crate) async fn forget_ids(
    tx: &mut PgConnection,
    found: &[Target],
) -> Result<(u64, u64), DbError> {
    let (streams, seqs, times) = keys(found);
    let keys = KEYS;
    let claims = format!(
        "DELETE FROM audit.event_claims WHERE id_key IN ( \
           SELECT substring(sha256(convert_to(e.event_id, 'UTF8')) FROM 1 FOR 16) \
           FROM audit.events e JOIN ({keys}) k USING (stream, stream_seq, published_at) \
           WHERE e.event_id IS NOT NULL)"
    );
    let claims = sqlx::query(&claims)
        .bind(&streams)
        .bind(&seqs)
        .bind(&times)
        .execute(&mut *tx)
        .await
        .ctx("remove the erased rows' envelope-id claims")?
        .rows_affected();
    let findings = format!(
        "DELETE FROM audit.id_findings f WHERE (f.stream, f.stream_seq, f.published_at) IN ({keys}) \
         OR (f.first_stream, f.first_stream_seq, f.first_published_at) IN ({keys})"
    );
    let findings = sqlx::query(&findings)
        .bind(&streams)
        .bind(&seqs)
        .bind(&times)
        .execute(&mut *tx)
        .await
        .ctx("remove the erased rows' envelope-id findings")?
        .rows_affected();
    Ok((claims, findings))
}

/// Empties the personal columns of `found` (raw to no bytes, the others NULL).
pub(crate) async fn empty(tx: &mut PgConnection, found: &[Target]) -> Result<(), DbError> {
    let (streams, seqs, times) = keys(found);
    let keys = KEYS;
    let update = format!(
        "UPDATE audit.events e SET raw = '\\x'::bytea, salt = NULL, payload = NULL, headers = NULL, \
           event_id = NULL, account_number = NULL, errors = NULL \
         FROM ({keys}) k WHERE (e.stream, e.stream_seq, e.published_at) = (k.stream, k.stream_seq, k.published_at)"
    );
    sqlx::query(&update)
        .bind(&streams)
        .bind(&seqs)
        .bind(&times)
        .execute(&mut *tx)
        .await
        .ctx("erase the rows' personal columns")?;
    Ok(())
}
