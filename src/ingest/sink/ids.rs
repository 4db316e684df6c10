//! Envelope ids: claims each id's first occurrence and tells a later message with the same id
//! as a duplicate (same event and payload) or a conflict (different): audit findings.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use sqlx::{Executor, PgConnection, Row};

use crate::db::{Ctx, DbError};
use crate::row::pgcopy::CopyBuf;
use crate::row::record::Record;

/// A later message with an envelope id already seen.
pub(super) struct Finding {
    idx: usize,
    pub(super) duplicate: bool,
    first: (String, i64, DateTime<Utc>),
}

/// The claim key of an envelope id: the first 16 bytes of SHA-256 of its text.
pub(crate) fn id_key(id: &str) -> [u8; 16] {
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
/// touch its pages in order): each claim keeps the batch, the place and the digest (event name
/// and payload text) of the id's first occurrence. `false` when an id was already claimed
/// (nothing is claimed then).
async fn claim_by_copy(
    tx: &mut PgConnection,
    claims: &[([u8; 16], &Record)],
    batch_id: i64,
) -> Result<bool, DbError> {
    let mut sorted: Vec<&([u8; 16], &Record)> = claims.iter().collect();
    sorted.sort_unstable_by_key(|(k, _)| *k);
    let mut buf = CopyBuf::with_capacity(claims.len() * 110);
    for (k, r) in sorted {
        buf.row(6);
        buf.bytea(k);
        buf.int8(batch_id);
        buf.text(Some(&r.stream));
        buf.int8(r.stream_seq);
        buf.timestamptz(Some(r.published_at));
        buf.bytea(r.id_digest.as_ref().map_or(&[][..], |d| &d[..]));
    }
    tx.execute("SAVEPOINT claim_ids").await.ctx("savepoint")?;
    let copied = async {
        let mut copy = tx
            .copy_in_raw(
                "COPY audit.event_claims (id_key, batch_id, first_stream, first_stream_seq, \
                 first_published_at, first_digest) FROM STDIN WITH (FORMAT binary)",
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

/// Claims `claims` that no earlier batch claimed; the keys of those it claimed.
async fn claim_new(
    tx: &mut PgConnection,
    claims: &[([u8; 16], &Record)],
    batch_id: i64,
) -> Result<HashSet<Vec<u8>>, DbError> {
    let keys: Vec<&[u8]> = claims.iter().map(|(k, _)| &k[..]).collect();
    let streams: Vec<&str> = claims.iter().map(|(_, r)| &*r.stream).collect();
    let seqs: Vec<i64> = claims.iter().map(|(_, r)| r.stream_seq).collect();
    let times: Vec<DateTime<Utc>> = claims.iter().map(|(_, r)| r.published_at).collect();
    let digests: Vec<&[u8]> = claims
        .iter()
        .map(|(_, r)| r.id_digest.as_ref().map_or(&[][..], |d| &d[..]))
        .collect();
    let claimed: Vec<Vec<u8>> = sqlx::query_scalar(
        "INSERT INTO audit.event_claims (id_key, batch_id, first_stream, first_stream_seq, \
         first_published_at, first_digest) \
         SELECT k, $2, s, q, t, d FROM unnest($1::bytea[], $3::text[], $4::int8[], \
         $5::timestamptz[], $6::bytea[]) AS u(k, s, q, t, d) \
         ON CONFLICT (id_key) DO NOTHING RETURNING id_key",
    )
    .bind(&keys)
    .bind(batch_id)
    .bind(&streams)
    .bind(&seqs)
    .bind(&times)
    .bind(&digests)
    .fetch_all(&mut *tx)
    .await
    .ctx("claim event ids")?;
    Ok(claimed.into_iter().collect())
}

/// An earlier batch's claim: where the id first occurred, and the digest of its event name and
/// payload text (none for claims made before the place was kept).
struct Claim {
    batch_id: i64,
    at: Option<(String, i64, DateTime<Utc>)>,
    digest: Option<[u8; 32]>,
}

/// The claims of `keys`: one probe of the claims' primary key each, whatever the statistics
/// say (with `= ANY` PostgreSQL scanned the whole table while it was small, which it stays for a
/// while after every start of a log).
async fn claims_of(
    tx: &mut PgConnection,
    keys: &[&[u8]],
) -> Result<HashMap<Vec<u8>, Claim>, DbError> {
    let rows = sqlx::query(
        "SELECT c.id_key, c.batch_id, c.first_stream, c.first_stream_seq, \
                c.first_published_at, c.first_digest \
         FROM unnest($1::bytea[]) AS k(id_key), LATERAL ( \
             SELECT * FROM audit.event_claims c WHERE c.id_key = k.id_key LIMIT 1) c",
    )
    .bind(keys)
    .fetch_all(&mut *tx)
    .await
    .ctx("read event id claims")?;
    let mut out = HashMap::with_capacity(rows.len());
    for row in rows {
        let stream: Option<String> = row.get("first_stream");
        let seq: Option<i64> = row.get("first_stream_seq");
        let time: Option<DateTime<Utc>> = row.get("first_published_at");
        let digest: Option<Vec<u8>> = row.get("first_digest");
        let claim = Claim {
            batch_id: row.get("batch_id"),
            at: match (stream, seq, time) {
                (Some(s), Some(q), Some(t)) => Some((s, q, t)),
                _ => None,
            },
            digest: digest.and_then(|d| <[u8; 32]>::try_from(d.as_slice()).ok()),
        };
        out.insert(row.get("id_key"), claim);
    }
    Ok(out)
}

/// The first occurrences of the ids `seen` (with their claims `stored`), read from the log only
/// where a repeat's digest differs from the claim's, or the claim predates the kept place.
async fn firsts_of(
    tx: &mut PgConnection,
    live: &[&Record],
    seen: &[(&str, &[u8])],
    stored: &HashMap<Vec<u8>, Claim>,
    first_in_batch: &HashMap<&str, usize>,
) -> Result<HashMap<String, First>, DbError> {
    let mut earlier: HashMap<String, First> = HashMap::new();
    // Every occurrence in this batch of each seen id: the digests it must match.
    let mut digests: HashMap<&str, Vec<Option<[u8; 32]>>> = HashMap::new();
    for r in live {
        if let (Some(id), Some(_)) = (r.event_id.as_deref(), r.id_digest) {
            digests.entry(id).or_default().push(r.id_digest);
        }
    }
    let (mut at_places, mut in_batches) = (Vec::new(), Vec::new());
    for (id, key) in seen {
        let Some(claim) = stored.get(*key) else {
            continue;
        };
        let all_same = claim.digest.is_some()
            && digests
                .get(id)
                .is_some_and(|ds| ds.iter().all(|d| *d == claim.digest));
        match &claim.at {
            Some(at) if all_same => {
                earlier.insert(
                    (*id).to_owned(),
                    First {
                        at: at.clone(),
                        digest: claim.digest,
                        raw: None,
                        event_type: None,
                        event_version: None,
                        payload: None,
                    },
                );
            }
            Some(at) => at_places.push(at.clone()),
            None => in_batches.push((*id, claim.batch_id)),
        }
    }
    let mut rows = Vec::new();
    if !at_places.is_empty() {
        rows.extend(crate::log::present::firsts_at(tx, &at_places).await?);
    }
    if !in_batches.is_empty() {
        rows.extend(crate::log::present::firsts_in_batches(tx, &in_batches).await?);
    }
    for row in rows {
        let id: Option<String> = row.get("event_id");
        let Some(id) = id.filter(|id| first_in_batch.contains_key(id.as_str())) else {
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
        earlier.insert(id, first);
    }
    Ok(earlier)
}

/// Claims the batch's envelope ids; reports those already claimed as duplicates (same name and
/// payload) or conflicts (different). A repeat within the batch is compared with, and points
/// to, the id's first occurrence: an earlier batch's when there is one, else the batch's own.
/// A replay costs no read of the log when every repeat carries the claimed digest (the same
/// event name and payload text byte for byte): only a repeat that differs reads its first
/// occurrence, by primary key, to tell a conflict from a duplicate up to formatting.
///
/// `replaying` is this sink's memory that a recent batch repeated ids: while it holds, the COPY
/// that would fail on the first repeat is not tried (a replay storm goes straight to the slow
/// path), and a batch of new ids clears it.
pub(super) async fn id_findings(
    tx: &mut PgConnection,
    live: &[&Record],
    batch_id: i64,
    replaying: &AtomicBool,
) -> Result<Vec<Finding>, DbError> {
    let mut first_in_batch: HashMap<&str, usize> = HashMap::new();
    let mut repeats: Vec<(usize, usize)> = Vec::new();
    let mut findings = Vec::new();
    let mut claims: Vec<([u8; 16], &Record)> = Vec::new();
    let mut ids: Vec<&str> = Vec::new();
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
        claims.push((id_key(id), *r));
    }
    if ids.is_empty() {
        return Ok(findings);
    }
    // Fast path: every id is new (the normal case), so a binary COPY claims them all. A repeat
    // makes it fail on the primary key; the savepoint undoes just that and the slow path below
    // tells which ids were seen before.
    if !replaying.load(Ordering::Relaxed) && claim_by_copy(tx, &claims, batch_id).await? {
        return Ok(repeats
            .into_iter()
            .map(|(i, j)| First::of(live[j]).finding(i, live[i]))
            .collect());
    }
    // Slow path: the claims already made are read first (one primary-key probe per id), and only
    // the ids without one are claimed; an id another writer claimed in between is read again.
    // A replay storm thus costs one probe per id.
    let all_keys: Vec<&[u8]> = claims.iter().map(|(k, _)| &k[..]).collect();
    let mut stored = claims_of(tx, &all_keys).await?;
    let absent: Vec<([u8; 16], &Record)> = claims
        .iter()
        .filter(|(k, _)| !stored.contains_key(&k[..]))
        .copied()
        .collect();
    if !absent.is_empty() {
        let claimed = claim_new(tx, &absent, batch_id).await?;
        let raced: Vec<&[u8]> = absent
            .iter()
            .map(|(k, _)| &k[..])
            .filter(|k| !claimed.contains(*k))
            .collect();
        if !raced.is_empty() {
            stored.extend(claims_of(tx, &raced).await?);
        }
    }
    replaying.store(!stored.is_empty(), Ordering::Relaxed);
    let mut earlier: HashMap<String, First> = HashMap::new();
    if !stored.is_empty() {
        let seen: Vec<(&str, &[u8])> = ids
            .iter()
            .zip(&claims)
            .filter(|(_, (k, _))| stored.contains_key(&k[..]))
            .map(|(id, (k, _))| (*id, &k[..]))
            .collect();
        earlier = firsts_of(tx, live, &seen, &stored, &first_in_batch).await?;
        for (id, _) in &seen {
            if let Some(first) = earlier.get(*id) {
                let i = first_in_batch[id];
                findings.push(first.finding(i, live[i]));
            }
        }
        if earlier.len() != seen.len() {
            // Only another id with the same 16-byte key (SHA-256 prefix) gets here.
            tracing::warn!(
                ids = seen.len() - earlier.len(),
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

/// Records the findings with one binary COPY.
pub(super) async fn insert_findings(
    tx: &mut PgConnection,
    live: &[&Record],
    findings: &[Finding],
    batch_id: i64,
) -> Result<(), DbError> {
    let mut buf = CopyBuf::with_capacity(findings.len() * 160);
    for f in findings {
        let r = live[f.idx];
        buf.row(9);
        buf.text(Some(&r.stream));
        buf.int8(r.stream_seq);
        buf.timestamptz(Some(r.published_at));
        buf.text(Some(r.event_id.as_deref().unwrap_or_default()));
        buf.text(Some(if f.duplicate { "duplicate" } else { "conflict" }));
        buf.text(Some(&f.first.0));
        buf.int8(f.first.1);
        buf.timestamptz(Some(f.first.2));
        buf.int8(batch_id);
    }
    let mut copy = tx
        .copy_in_raw(
            "COPY audit.id_findings (stream, stream_seq, published_at, event_id, finding, \
             first_stream, first_stream_seq, first_published_at, batch_id) \
             FROM STDIN WITH (FORMAT binary)",
        )
        .await
        .ctx("record id findings")?;
    copy.send(buf.finish()).await.ctx("record id findings")?;
    copy.finish().await.ctx("record id findings")?;
    Ok(())
}
