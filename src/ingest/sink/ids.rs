//! Envelope ids: claims each id's first occurrence and tells a later message with the same id
//! as a duplicate (same event and payload) or a conflict (different): audit findings.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sqlx::{Executor, PgConnection, Row};

use super::copy::CopyBuf;
use crate::audit::record::Record;
use crate::db::{Ctx, DbError};

/// A later message with an envelope id already seen.
pub(super) struct Finding {
    idx: usize,
    pub(super) duplicate: bool,
    first: (String, i64, DateTime<Utc>),
}

/// The first occurrence of an envelope id, as a later one is compared with it.
struct First {
    at: (String, i64, DateTime<Utc>),
    digest: Vec<u8>,
    event_type: Option<String>,
    event_version: Option<String>,
    payload: Option<String>,
}

impl First {
    fn of(r: &Record) -> First {
        First {
            at: (r.stream.to_string(), r.stream_seq, r.published_at),
            digest: r.id_digest.map(|d| d.to_vec()).unwrap_or_default(),
            event_type: r.event_type.clone(),
            event_version: r.event_version.clone(),
            payload: r.payload_text().map(str::to_owned),
        }
    }

    /// Same event, same payload (byte for byte, or up to formatting: compared as JSON values).
    fn same_event(&self, r: &Record) -> bool {
        r.id_digest.is_some_and(|d| d[..] == self.digest[..])
            || (self.event_type == r.event_type
                && self.event_version == r.event_version
                && match (self.payload.as_deref(), r.payload_text()) {
                    (Some(a), Some(b)) => {
                        serde_json::from_str::<serde_json::Value>(a).ok()
                            == serde_json::from_str::<serde_json::Value>(b).ok()
                    }
                    _ => false,
                })
    }

    fn finding(&self, idx: usize, r: &Record) -> Finding {
        Finding {
            idx,
            duplicate: self.same_event(r),
            first: self.at.clone(),
        }
    }
}

/// Claims the batch's envelope ids; reports those already claimed as duplicates (same name and
/// payload) or conflicts (different). A repeat within the batch is compared with, and points
/// to, the id's first occurrence: an earlier batch's when there is one, else the batch's own.
/// Claims ids with one binary COPY inside a savepoint. `false` when an id was already claimed
/// (nothing is claimed then).
async fn claim_by_copy(
    tx: &mut PgConnection,
    ids: &[&str],
    streams: &[&str],
    seqs: &[i64],
    times: &[DateTime<Utc>],
    digests: &[Vec<u8>],
) -> Result<bool, DbError> {
    let mut buf = CopyBuf::with_capacity(ids.len() * 128);
    for i in 0..ids.len() {
        buf.row(5);
        buf.text(Some(ids[i]));
        buf.text(Some(streams[i]));
        buf.int8(seqs[i]);
        buf.timestamptz(Some(times[i]));
        buf.bytea(&digests[i]);
    }
    tx.execute("SAVEPOINT claim_ids").await.ctx("savepoint")?;
    let copied = async {
        let mut copy = tx
            .copy_in_raw("COPY audit.event_ids (event_id, stream, stream_seq, published_at, digest) FROM STDIN WITH (FORMAT binary)")
            .await?;
        copy.send(buf.finish()).await?;
        copy.finish().await
    }
    .await;
    match copied {
        Ok(_) => {
            tx.execute("RELEASE SAVEPOINT claim_ids")
                .await
                .ctx("release savepoint")?;
            Ok(true)
        }
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("23505") => {
            tx.execute("ROLLBACK TO SAVEPOINT claim_ids")
                .await
                .ctx("rollback to savepoint")?;
            Ok(false)
        }
        Err(source) => Err(source).ctx("claim event ids"),
    }
}

pub(super) async fn id_findings(
    tx: &mut PgConnection,
    live: &[&Record],
) -> Result<Vec<Finding>, DbError> {
    let mut first_in_batch: HashMap<&str, usize> = HashMap::new();
    let mut repeats: Vec<(usize, usize)> = Vec::new();
    let mut findings = Vec::new();
    let (mut ids, mut streams, mut seqs, mut times, mut digests) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, r) in live.iter().enumerate() {
        let (Some(id), Some(digest)) = (r.event_id.as_deref(), r.id_digest) else {
            continue;
        };
        if let Some(&j) = first_in_batch.get(id) {
            repeats.push((i, j));
            continue;
        }
        first_in_batch.insert(id, i);
        ids.push(id);
        streams.push(&*r.stream);
        seqs.push(r.stream_seq);
        times.push(r.published_at);
        digests.push(digest.to_vec());
    }
    if ids.is_empty() {
        return Ok(findings);
    }
    // Fast path: every id is new (the normal case), so a binary COPY claims them all. A repeat
    // makes it fail on the primary key; the savepoint undoes just that and the slow path below
    // tells which ids were seen before.
    if claim_by_copy(tx, &ids, &streams, &seqs, &times, &digests).await? {
        return Ok(repeats
            .into_iter()
            .map(|(i, j)| First::of(live[j]).finding(i, live[i]))
            .collect());
    }
    let claimed: Vec<String> = sqlx::query_scalar(
        "INSERT INTO audit.event_ids (event_id, stream, stream_seq, published_at, digest) \
         SELECT * FROM unnest($1::text[], $2::text[], $3::int8[], $4::timestamptz[], $5::bytea[]) \
         ON CONFLICT (event_id) DO NOTHING RETURNING event_id",
    )
    .bind(&ids)
    .bind(&streams)
    .bind(&seqs)
    .bind(&times)
    .bind(&digests)
    .fetch_all(&mut *tx)
    .await
    .ctx("claim event ids")?;
    // Ids first seen in an earlier batch.
    let mut earlier: HashMap<String, First> = HashMap::new();
    if claimed.len() != ids.len() {
        let claimed: HashSet<&str> = claimed.iter().map(String::as_str).collect();
        let seen: Vec<&str> = ids
            .iter()
            .copied()
            .filter(|id| !claimed.contains(id))
            .collect();
        let rows = sqlx::query(
            "SELECT i.event_id, i.stream, i.stream_seq, i.published_at, i.digest, e.event_type, e.event_version, e.payload::text AS payload \
             FROM audit.event_ids i LEFT JOIN audit.events e \
               ON e.stream = i.stream AND e.stream_seq = i.stream_seq AND e.published_at = i.published_at \
             WHERE i.event_id = ANY($1)",
        )
        .bind(&seen)
        .fetch_all(&mut *tx)
        .await
        .ctx("look up event ids")?;
        for row in rows {
            let id: String = row.get("event_id");
            let Some(&i) = first_in_batch.get(id.as_str()) else {
                continue;
            };
            let first = First {
                at: (
                    row.get("stream"),
                    row.get("stream_seq"),
                    row.get("published_at"),
                ),
                digest: row.get("digest"),
                event_type: row.get("event_type"),
                event_version: row.get("event_version"),
                payload: row.get("payload"),
            };
            findings.push(first.finding(i, live[i]));
            earlier.insert(id, first);
        }
    }
    for (i, j) in repeats {
        let id = live[i].event_id.as_deref().unwrap_or_default();
        let finding = match earlier.get(id) {
            Some(first) => first.finding(i, live[i]),
            None => First::of(live[j]).finding(i, live[i]),
        };
        findings.push(finding);
    }
    Ok(findings)
}

pub(super) async fn insert_findings(
    tx: &mut PgConnection,
    live: &[&Record],
    findings: &[Finding],
    batch_id: i64,
) -> Result<(), DbError> {
    let rec = |f: &Finding| live[f.idx];
    let streams: Vec<&str> = findings.iter().map(|f| &*rec(f).stream).collect();
    let seqs: Vec<i64> = findings.iter().map(|f| rec(f).stream_seq).collect();
    let times: Vec<DateTime<Utc>> = findings.iter().map(|f| rec(f).published_at).collect();
    let ids: Vec<&str> = findings
        .iter()
        .map(|f| rec(f).event_id.as_deref().unwrap_or_default())
        .collect();
    let kinds: Vec<&str> = findings
        .iter()
        .map(|f| if f.duplicate { "duplicate" } else { "conflict" })
        .collect();
    let fs: Vec<&str> = findings.iter().map(|f| f.first.0.as_str()).collect();
    let fq: Vec<i64> = findings.iter().map(|f| f.first.1).collect();
    let ft: Vec<DateTime<Utc>> = findings.iter().map(|f| f.first.2).collect();
    sqlx::query(
        "INSERT INTO audit.id_findings (stream, stream_seq, published_at, event_id, finding, \
         first_stream, first_stream_seq, first_published_at, batch_id) \
         SELECT *, $9 FROM unnest($1::text[], $2::int8[], $3::timestamptz[], $4::text[], $5::text[], \
         $6::text[], $7::int8[], $8::timestamptz[])",
    )
    .bind(&streams)
    .bind(&seqs)
    .bind(&times)
    .bind(&ids)
    .bind(&kinds)
    .bind(&fs)
    .bind(&fq)
    .bind(&ft)
    .bind(batch_id)
    .execute(&mut *tx)
    .await
    .ctx("record id findings")?;
    Ok(())
}
