//! The log's side of an erasure and of a prune's record: the rows an erasure names that still
//! hold personal data (in log order), the chain head held from their choice to the commit, the
//! erasure record appended as a row of the log and indexed in `audit.erasures`, and the rows'
//! envelope-id claims, findings and personal columns removed. What is erased, why, and what the
//! bus keeps is `erase`'s.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use super::append::Appender;
use crate::db::{Ctx, DbError};
use crate::decode::catalogue::IDENTIFIER_PATHS;
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
    /// Every row of this account number (the `account_number` column).
    Account(&'a str),
    /// Every row holding any of a person's identifiers: the `account_number` column, every
    /// catalogue path of `catalogue/identifiers.toml`, any equal string in a payload the
    /// catalogue could not type, the raw bytes of a message that was not JSON.
    Person(&'a [String]),
    /// Stream sequences `A..=B` of a stream.
    Range { stream: &'a str, seq: (i64, i64) },
    /// Every row published before this time.
    PublishedBefore(DateTime<Utc>),
}

/// A row that still holds personal data.
pub(crate) const HELD: &str =
    "(octet_length(e.raw) > 0 OR e.salt IS NOT NULL OR e.payload IS NOT NULL \
     OR e.headers IS NOT NULL OR e.event_id IS NOT NULL OR e.account_number IS NOT NULL \
     OR e.errors IS NOT NULL)";

/// The columns a [`Target`] is read from.
const COLS: &str =
    "e.stream, e.stream_seq, e.published_at, e.row_hash, e.commitment IS NOT NULL AS v3";

/// The rows the selector names that still hold personal data, in log order.
pub(crate) async fn targets(
    tx: &mut PgConnection,
    sel: &Which<'_>,
) -> Result<Vec<Target>, DbError> {
    let held = HELD;
    let cols = COLS;
    let found = match sel {
        Which::Account(a) => {
            let sql = format!(
                "SELECT {cols} FROM audit.events e WHERE e.account_number = $1 AND {held} \
                 ORDER BY e.batch_id, e.stream, e.stream_seq"
            );
            sqlx::query_as(&sql).bind(*a).fetch_all(&mut *tx).await
        }
        Which::Person(ids) => return rows_holding(tx, ids).await,
        Which::Range { stream, seq } => {
            let sql = format!(
                "SELECT {cols} FROM audit.events e WHERE e.stream = $1 \
                 AND e.stream_seq BETWEEN $2 AND $3 AND e.stream <> ALL($4) AND {held} \
                 ORDER BY e.batch_id, e.stream, e.stream_seq"
            );
            sqlx::query_as(&sql)
                .bind(*stream)
                .bind(seq.0)
                .bind(seq.1)
                .bind(&crate::row::own::KEPT[..])
                .fetch_all(&mut *tx)
                .await
        }
        Which::PublishedBefore(t) => {
            let sql = format!(
                "SELECT {cols} FROM audit.events e WHERE e.published_at < $1 \
                 AND e.stream <> ALL($2) AND {held} ORDER BY e.batch_id, e.stream, e.stream_seq"
            );
            sqlx::query_as(&sql)
                .bind(t)
                .bind(&crate::row::own::KEPT[..])
                .fetch_all(&mut *tx)
                .await
        }
    };
    found.ctx("find the rows to erase")
}

/// The rows that still hold personal data and hold any of `ids` (in log order).
async fn rows_holding(tx: &mut PgConnection, ids: &[String]) -> Result<Vec<Target>, DbError> {
    let held = HELD;
    let (mut types, mut versions, mut paths) = (Vec::new(), Vec::new(), Vec::new());
    for (t, v, path, _) in IDENTIFIER_PATHS {
        types.push(*t);
        versions.push(*v);
        paths.push(format!("{path} ? (@ == $ids[*])"));
    }
    let vars = serde_json::json!({ "ids": ids });
    let sql = format!(
        "SELECT {COLS} FROM audit.events e \
         WHERE {held} AND e.stream <> $6 AND ( \
           e.account_number = ANY($1) \
           OR (e.payload IS NOT NULL AND EXISTS ( \
                 SELECT 1 FROM unnest($2::text[], $3::text[], $4::text[]) AS p(t, v, path) \
                 WHERE p.t = e.event_type AND p.v = e.event_version \
                   AND jsonb_path_exists(e.payload, p.path::jsonpath, $5, true))) \
           OR (e.payload IS NOT NULL AND e.status <> 'decoded' \
               AND jsonb_path_exists(e.payload, '$.** ? (@ == $ids[*])', $5, true)) \
           OR (e.payload IS NULL AND octet_length(e.raw) > 0 AND EXISTS ( \
                 SELECT 1 FROM unnest($1::text[]) AS i(id) \
                 WHERE position(convert_to(i.id, 'UTF8') IN e.raw) > 0))) \
         ORDER BY e.batch_id, e.stream, e.stream_seq"
    );
    sqlx::query_as(&sql)
        .bind(ids)
        .bind(&types)
        .bind(&versions)
        .bind(&paths)
        .bind(&vars)
        .bind(erasure::STREAM)
        .fetch_all(&mut *tx)
        .await
        .ctx("find the rows holding the person's identifiers")
}

/// The import events (`data_import.import_process.*` of `resource_type` account) that name any
/// of `ids`: each one's `(external_identifier, identifier, event name)`, which link a person's
/// external account number to the platform's.
pub(crate) async fn import_links(
    tx: &mut PgConnection,
    ids: &[String],
) -> Result<Vec<(Option<String>, Option<String>, String)>, DbError> {
    use crate::decode::catalogue::fields::data_import_import_process_complete_v1 as import;
    // `event_type LIKE 'data_import.%'` is the partial index's predicate
    // (events_data_import_ext_idx), repeated verbatim.
    let sql = format!(
        "SELECT DISTINCT e.payload ->> '{ext}' AS ext, e.payload ->> '{plat}' AS plat, \
           e.event_type || '-' || e.event_version AS via \
         FROM audit.events e \
         WHERE e.event_type LIKE 'data_import.%' AND e.event_type LIKE 'data_import.import_process.%' \
           AND e.payload ->> '{rt}' = 'account' \
           AND (e.payload ->> '{ext}' = ANY($1) OR e.payload ->> '{plat}' = ANY($1))",
        ext = import::EXTERNAL_IDENTIFIER,
        plat = import::IDENTIFIER,
        rt = import::RESOURCE_TYPE,
    );
    sqlx::query_as(&sql)
        .bind(ids)
        .fetch_all(&mut *tx)
        .await
        .ctx("follow the import events' links between account numbers")
}

/// How many people `erase --account` erased (erasure records whose selector is `account`).
pub(crate) async fn people_erased(db: &crate::db::Db) -> Result<i64, DbError> {
    sqlx::query_scalar("SELECT count(*) FROM audit.erasures WHERE selector = 'account'")
        .fetch_one(db.pool())
        .await
        .ctx("count the people erased")
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

impl Appender<'_> {
    /// Numbers `e` (the next in the erasure stream), stamps it now, appends it as a row of the
    /// log through the chain and indexes it in `audit.erasures`. The caller holds the erasure
    /// lock. Returns its number and its link.
    pub(crate) async fn erasure_record(&mut self, mut e: Erasure) -> Result<(i64, i64), DbError> {
        let next: i64 = sqlx::query_scalar(
            "SELECT coalesce(max(stream_seq), 0) + 1 FROM audit.events WHERE stream = $1",
        )
        .bind(erasure::STREAM)
        .fetch_one(self.tx())
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
        let (_, link_seq) = self.own_rows(std::slice::from_ref(&row)).await?;
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
        .execute(self.tx())
        .await
        .ctx("index the erasure in audit.erasures")?;
        Ok((next, link_seq))
    }
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
