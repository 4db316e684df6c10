//! Envelope ids: claims each id's first occurrence and tells a later message with the same id
//! as a duplicate (same event and payload) or a conflict (different): audit findings.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use sqlx::{Executor, PgConnection, Row};

use super::copy::CopyBuf;
use crate::audit::columns;
use crate::audit::record::Record;
use crate::db::{Ctx, DbError};

/// A later message with an envelope id already seen.
pub(super) struct Finding {
    idx: usize,
    pub(super) duplicate: bool,
    first: (String, i64, DateTime<Utc>),
}

/// The claim key of an envelope id: the first 16 bytes of SHA-256 of its text.
pub fn id_key(id: &str) -> [u8; 16] {
    let d = Sha256::digest(id.as_bytes());
    let mut k = [0u8; 16];
    k.copy_from_slice(&d[..16]);
    k
}

/// The first occurrence of an envelope id, as a later one is compared with it.
struct First {
    at: (String, i64, DateTime<Utc>),
    /// In this batch: its digest of event name and payload text.
    digest: Option<[u8; 32]>,
    /// In an earlier batch: the message as received.
    raw: Option<Vec<u8>>,
    event_type: Option<String>,
    event_version: Option<String>,
    payload: Option<String>,
}

impl First {
    fn of(r: &Record) -> First {
        First {
            at: (r.stream.to_string(), r.stream_seq, r.published_at),
            digest: r.id_digest,
            raw: None,
            event_type: r.event_type.clone(),
            event_version: r.event_version.clone(),
            payload: r.payload_text().map(str::to_owned),
        }
    }

    /// Same event, same payload: byte for byte (the same digest, or the same message with the
    /// same event), or up to formatting (compared as JSON values).
    fn same_event(&self, r: &Record) -> bool {
        let same_name = self.event_type == r.event_type && self.event_version == r.event_version;
        (self.digest.is_some() && self.digest == r.id_digest)
            || (same_name && self.raw.as_deref() == Some(&r.raw[..]))
            || (same_name
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

/// Claims ids with one binary COPY inside a savepoint, in key order (the index's descents then
/// touch its pages in order). `false` when an id was already claimed (nothing is claimed then).
async fn claim_by_copy(
    tx: &mut PgConnection,
    keys: &[[u8; 16]],
    batch_id: i64,
) -> Result<bool, DbError> {
    let mut sorted: Vec<&[u8; 16]> = keys.iter().collect();
    sorted.sort_unstable();
    let mut buf = CopyBuf::with_capacity(keys.len() * 40);
    for k in sorted {
        buf.row(2);
        buf.bytea(k);
        buf.int8(batch_id);
    }
    tx.execute("SAVEPOINT claim_ids").await.ctx("savepoint")?;
    let copied = async {
        let mut copy = tx
            .copy_in_raw(
                "COPY audit.event_claims (id_key, batch_id) FROM STDIN WITH (FORMAT binary)",
            )
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

/// Claims the batch's envelope ids; reports those already claimed as duplicates (same name and
/// payload) or conflicts (different). A repeat within the batch is compared with, and points
/// to, the id's first occurrence: an earlier batch's when there is one, else the batch's own.
pub(super) async fn id_findings(
    tx: &mut PgConnection,
    live: &[&Record],
    batch_id: i64,
) -> Result<Vec<Finding>, DbError> {
    let mut first_in_batch: HashMap<&str, usize> = HashMap::new();
    let mut repeats: Vec<(usize, usize)> = Vec::new();
    let mut findings = Vec::new();
    let (mut ids, mut keys) = (Vec::new(), Vec::new());
    for (i, r) in live.iter().enumerate() {
        let (Some(id), Some(_)) = (r.event_id.as_deref(), r.id_digest) else {
            continue;
        };
        if let Some(&j) = first_in_batch.get(id) {
            repeats.push((i, j));
            continue;
        }
        first_in_batch.insert(id, i);
        ids.push(id);
        keys.push(id_key(id));
    }
    if ids.is_empty() {
        return Ok(findings);
    }
    // Fast path: every id is new (the normal case), so a binary COPY claims them all. A repeat
    // makes it fail on the primary key; the savepoint undoes just that and the slow path below
    // tells which ids were seen before.
    if claim_by_copy(tx, &keys, batch_id).await? {
        return Ok(repeats
            .into_iter()
            .map(|(i, j)| First::of(live[j]).finding(i, live[i]))
            .collect());
    }
    let key_refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    let claimed: Vec<Vec<u8>> = sqlx::query_scalar(
        "INSERT INTO audit.event_claims (id_key, batch_id) SELECT k, $2 FROM unnest($1::bytea[]) AS k \
         ON CONFLICT (id_key) DO NOTHING RETURNING id_key",
    )
    .bind(&key_refs)
    .bind(batch_id)
    .fetch_all(&mut *tx)
    .await
    .ctx("claim event ids")?;
    // Ids first seen in an earlier batch: that batch's first row with the id that claims it.
    let mut earlier: HashMap<String, First> = HashMap::new();
    if claimed.len() != ids.len() {
        let claimed: HashSet<&[u8]> = claimed.iter().map(Vec::as_slice).collect();
        let (seen_ids, seen_keys): (Vec<&str>, Vec<&[u8]>) = ids
            .iter()
            .zip(&key_refs)
            .filter(|(_, k)| !claimed.contains(**k))
            .map(|(id, k)| (*id, *k))
            .unzip();
        // Each earlier batch is read once, whatever number of its ids repeat: the claims name
        // the batches, one index scan per batch reads their rows with one of the ids, and a hash
        // join keeps each id's rows in the batch that claimed it. (Joining claim by claim read a
        // batch's 2,000 rows again for each of its ids: a replay of one batch read it 2,000
        // times.)
        let sql = format!(
            "WITH want AS MATERIALIZED ( \
                 SELECT u.id, c.batch_id FROM unnest($1::text[], $2::bytea[]) AS u(id, id_key) \
                 JOIN audit.event_claims c ON c.id_key = u.id_key), \
             found AS MATERIALIZED ( \
                 SELECT e.event_id, e.batch_id, e.stream, e.stream_seq, e.published_at, \
                        e.event_type, e.event_version, e.payload, e.payload_error, e.raw \
                 FROM audit.events e \
                 WHERE e.batch_id = ANY(ARRAY(SELECT DISTINCT batch_id FROM want)) \
                   AND e.event_id = ANY($1::text[])) \
             SELECT DISTINCT ON (e.event_id) e.event_id, e.stream, e.stream_seq, e.published_at, \
                    e.event_type, e.event_version, e.payload::text AS payload, e.raw \
             FROM found e JOIN want w ON w.id = e.event_id AND w.batch_id = e.batch_id \
             WHERE {} \
             ORDER BY e.event_id, e.stream, e.stream_seq, e.published_at",
            columns::CLAIMS_ITS_ID
        );
        let rows = sqlx::query(&sql)
            .bind(&seen_ids)
            .bind(&seen_keys)
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
                digest: None,
                raw: Some(row.get("raw")),
                event_type: row.get("event_type"),
                event_version: row.get("event_version"),
                payload: row.get("payload"),
            };
            findings.push(first.finding(i, live[i]));
            earlier.insert(id, first);
        }
        if earlier.len() != seen_ids.len() {
            // Only another id with the same 16-byte key (SHA-256 prefix) gets here.
            tracing::warn!(
                ids = seen_ids.len() - earlier.len(),
                "an envelope id's claim key is taken by another id; recorded without a finding"
            );
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
