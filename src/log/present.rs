//! What of a batch is already in the log: the redelivery check (which messages are there, by
//! stream, sequence and bus time: run only when a message was delivered before, or after a
//! unique violation), and the first occurrences of envelope ids a batch repeats.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::db::{Ctx, DbError};
use crate::row::columns;
use crate::row::record::Record;

/// Keeps in `recs` only the records the log does not hold yet.
pub(crate) async fn retain_absent(
    tx: &mut PgConnection,
    recs: &mut Vec<&Record>,
) -> Result<(), DbError> {
    let mut by_stream: HashMap<&str, Vec<&Record>> = HashMap::new();
    for r in recs.iter() {
        by_stream.entry(&r.stream).or_default().push(r);
    }
    let mut present: HashSet<(&str, i64, DateTime<Utc>)> = HashSet::new();
    for (stream, of) in by_stream {
        let seqs: Vec<i64> = of.iter().map(|r| r.stream_seq).collect();
        let lo = of.iter().map(|r| r.published_at).min();
        let hi = of.iter().map(|r| r.published_at).max();
        let rows: Vec<(i64, DateTime<Utc>)> = sqlx::query_as(
            "SELECT stream_seq, published_at FROM audit.events \
             WHERE stream = $1 AND stream_seq = ANY($2) AND published_at BETWEEN $3 AND $4",
        )
        .bind(stream)
        .bind(&seqs)
        .bind(lo)
        .bind(hi)
        .fetch_all(&mut *tx)
        .await
        .ctx("look up redeliveries")?;
        present.extend(rows.into_iter().map(|(seq, at)| (stream, seq, at)));
    }
    recs.retain(|r| !present.contains(&(&*r.stream, r.stream_seq, r.published_at)));
    Ok(())
}

/// The first occurrences of ids whose claims keep their place: one primary-key probe each.
pub(crate) async fn firsts_at(
    tx: &mut PgConnection,
    places: &[(String, i64, DateTime<Utc>)],
) -> Result<Vec<sqlx::postgres::PgRow>, DbError> {
    let streams: Vec<&str> = places.iter().map(|p| p.0.as_str()).collect();
    let seqs: Vec<i64> = places.iter().map(|p| p.1).collect();
    let times: Vec<DateTime<Utc>> = places.iter().map(|p| p.2).collect();
    sqlx::query(
        "SELECT e.event_id, e.stream, e.stream_seq, e.published_at, e.event_type, \
                e.event_version, e.payload::text AS payload, e.raw \
         FROM unnest($1::text[], $2::int8[], $3::timestamptz[]) AS k(s, q, t) \
         JOIN audit.events e ON e.stream = k.s AND e.stream_seq = k.q AND e.published_at = k.t",
    )
    .bind(&streams)
    .bind(&seqs)
    .bind(&times)
    .fetch_all(&mut *tx)
    .await
    .ctx("read first occurrences")
}

/// The first occurrences of ids claimed before claims kept their place: each claiming batch's
/// rows read once, its first row with the id that claims it kept.
pub(crate) async fn firsts_in_batches(
    tx: &mut PgConnection,
    wanted: &[(&str, i64)],
) -> Result<Vec<sqlx::postgres::PgRow>, DbError> {
    let ids: Vec<&str> = wanted.iter().map(|w| w.0).collect();
    let batches: Vec<i64> = wanted.iter().map(|w| w.1).collect();
    let sql = format!(
        "WITH want AS MATERIALIZED (SELECT * FROM unnest($1::text[], $2::int8[]) AS w(id, batch_id)) \
         SELECT DISTINCT ON (e.event_id) e.event_id, e.stream, e.stream_seq, e.published_at, \
                e.event_type, e.event_version, e.payload::text AS payload, e.raw \
         FROM audit.events e JOIN want w ON w.id = e.event_id AND w.batch_id = e.batch_id \
         WHERE e.batch_id = ANY(ARRAY(SELECT DISTINCT batch_id FROM want)) AND {} \
         ORDER BY e.event_id, e.stream, e.stream_seq, e.published_at",
        columns::CLAIMS_ITS_ID
    );
    sqlx::query(&sql)
        .bind(&ids)
        .bind(&batches)
        .persistent(false)
        .fetch_all(&mut *tx)
        .await
        .ctx("look up event ids")
}
