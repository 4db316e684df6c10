//! `event-audit verify`: walks the hash chain link by link, recomputes every row's hash from
//! its stored columns, and names the first row (or link) that does not match.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use futures::TryStreamExt;
use sha2::{Digest, Sha256};
use sqlx::Row;

use super::{Ctx, Store, StoreError};
use crate::catalogue::rt::FieldError;
use crate::record::{canonical_errors, canonical_headers, canonical_strings, Canon};

/// The outcome of one walk.
#[derive(Debug, Clone, serde::Serialize)]
pub struct VerifyReport {
    pub ok: bool,
    pub links: i64,
    pub rows: i64,
    /// The first thing that does not match, naming the row (stream, sequence) or link.
    pub first_break: Option<String>,
    pub head_link_seq: i64,
}

/// `SHA-256(prev || link_seq || batch_id || row_count || batch_digest)`, as the writer's SQL.
pub fn link_hash(
    prev: &[u8],
    link_seq: i64,
    batch_id: i64,
    row_count: i32,
    digest: &[u8],
) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(prev);
    h.update(link_seq.to_be_bytes());
    h.update(batch_id.to_be_bytes());
    h.update(row_count.to_be_bytes());
    h.update(digest);
    h.finalize().into()
}

/// `(link_seq, batch_id, row_count, batch_digest, prev_hash, hash)` of `audit.chain_links`.
type LinkRow = (i64, i64, i32, Vec<u8>, Vec<u8>, Vec<u8>);

fn fail(report: &mut VerifyReport, what: String) {
    report.ok = false;
    report.first_break = Some(what);
}

fn recanon<T: serde::de::DeserializeOwned>(
    text: Option<String>,
    f: impl Fn(&T) -> Option<String>,
) -> Result<Option<String>, ()> {
    match text {
        None => Ok(None),
        Some(t) => serde_json::from_str::<T>(&t).map(|v| f(&v)).map_err(|_| ()),
    }
}

/// The payload a row's raw bytes carry, if any (the same extraction the writer did).
fn payload_of(raw: &[u8]) -> Option<&str> {
    match crate::envelope::open(raw, Some("-")) {
        Ok(env) => Some(env.payload),
        Err(m) => m.payload,
    }
}

impl Store {
    /// Walks the whole chain. Records the result in `audit.verify_runs`.
    pub async fn verify(&self) -> Result<VerifyReport, StoreError> {
        let report = self.walk().await?;
        sqlx::query(
            "INSERT INTO audit.verify_runs (ok, links, rows, first_break) VALUES ($1, $2, $3, $4)",
        )
        .bind(report.ok)
        .bind(report.links)
        .bind(report.rows)
        .bind(&report.first_break)
        .execute(self.pool())
        .await
        .ctx("record verify run")?;
        Ok(report)
    }

    /// The latest recorded verify run: `(ok, time)`.
    pub async fn last_verify(&self) -> Result<Option<(bool, DateTime<Utc>)>, StoreError> {
        let row =
            sqlx::query("SELECT ok, verified_at FROM audit.verify_runs ORDER BY id DESC LIMIT 1")
                .fetch_optional(self.pool())
                .await
                .ctx("read verify runs")?;
        Ok(row.map(|r| (r.get(0), r.get(1))))
    }

    async fn walk(&self) -> Result<VerifyReport, StoreError> {
        let mut report = VerifyReport {
            ok: true,
            links: 0,
            rows: 0,
            first_break: None,
            head_link_seq: 0,
        };
        let links: Vec<LinkRow> = sqlx::query_as(
            "SELECT link_seq, batch_id, row_count, batch_digest, prev_hash, hash FROM audit.chain_links ORDER BY link_seq",
        )
        .fetch_all(self.pool())
        .await
        .ctx("read chain links")?;
        let mut prev = vec![0u8; 32];
        'links: for (expect_seq, (link_seq, batch_id, row_count, digest, prev_hash, hash)) in
            (1i64..).zip(links)
        {
            report.links += 1;
            if link_seq != expect_seq || prev_hash != prev {
                fail(
                    &mut report,
                    format!(
                        "link {link_seq}: does not follow link {} (chain broken or a link removed)",
                        expect_seq - 1
                    ),
                );
                break;
            }
            let mut rows = sqlx::query(
                "SELECT stream, stream_seq, published_at, received_at, subject, delivery_count, headers::text, \
                 envelope, event_id, event_type, event_version, status, errors::text, unknown_fields::text, \
                 account_number, occurred_at, raw, row_hash, payload::text \
                 FROM audit.events WHERE batch_id = $1 ORDER BY stream COLLATE \"C\", stream_seq, published_at",
            )
            .bind(batch_id)
            .fetch(self.pool());
            let mut batch = Sha256::new();
            let mut n = 0i32;
            while let Some(row) = rows.try_next().await.ctx("read rows")? {
                n += 1;
                report.rows += 1;
                let stream: String = row.get(0);
                let seq: i64 = row.get(1);
                let name = format!(
                    "row stream={stream} stream_seq={seq} (batch {batch_id}, link {link_seq})"
                );
                let headers =
                    recanon::<BTreeMap<String, Vec<String>>>(row.get(6), canonical_headers);
                let errors = recanon::<Vec<FieldError>>(row.get(12), |e| canonical_errors(e));
                let unknown = recanon::<Vec<String>>(row.get(13), |u| canonical_strings(u));
                let (Ok(headers), Ok(errors), Ok(unknown)) = (headers, errors, unknown) else {
                    fail(
                        &mut report,
                        format!("{name}: a JSON column no longer has its recorded shape"),
                    );
                    break 'links;
                };
                let raw: Vec<u8> = row.get(16);
                let canon = Canon {
                    stream: &stream,
                    stream_seq: seq,
                    published_at_us: row.get::<DateTime<Utc>, _>(2).timestamp_micros(),
                    received_at_us: row.get::<DateTime<Utc>, _>(3).timestamp_micros(),
                    subject: row.get(4),
                    delivery_count: row.get(5),
                    headers: headers.as_deref(),
                    envelope: row.get(7),
                    event_id: row.get(8),
                    event_type: row.get(9),
                    event_version: row.get(10),
                    status: row.get(11),
                    errors: errors.as_deref(),
                    unknown_fields: unknown.as_deref(),
                    account_number: row.get(14),
                    occurred_at_us: row
                        .get::<Option<DateTime<Utc>>, _>(15)
                        .map(|t| t.timestamp_micros()),
                    raw: &raw,
                };
                let computed = canon.hash();
                let stored: Vec<u8> = row.get(17);
                if stored != computed {
                    fail(
                        &mut report,
                        format!("{name}: stored columns do not match the row's hash (row edited)"),
                    );
                    break 'links;
                }
                let payload: Option<String> = row.get(18);
                if let Some(p) = payload {
                    let from_raw = payload_of(&raw)
                        .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok());
                    if serde_json::from_str::<serde_json::Value>(&p).ok() != from_raw {
                        fail(&mut report, format!("{name}: payload column does not match the raw message (payload edited)"));
                        break 'links;
                    }
                }
                batch.update(computed);
            }
            if n != row_count {
                fail(&mut report, format!("batch {batch_id} (link {link_seq}): {n} rows found, the link covers {row_count} (rows deleted or added)"));
                break;
            }
            let computed_digest: [u8; 32] = batch.finalize().into();
            if computed_digest[..] != digest[..] {
                fail(&mut report, format!("batch {batch_id} (link {link_seq}): row hashes do not match the link's digest (row hash edited)"));
                break;
            }
            let computed = link_hash(&prev, link_seq, batch_id, row_count, &digest);
            if computed[..] != hash[..] {
                fail(
                    &mut report,
                    format!("link {link_seq}: hash does not match its contents (link edited)"),
                );
                break;
            }
            prev = hash;
            report.head_link_seq = link_seq;
        }
        if report.ok {
            let (head_seq, head_hash) = self.chain_head().await?;
            if head_seq != report.head_link_seq || head_hash != prev {
                let last = report.head_link_seq;
                fail(
                    &mut report,
                    format!("chain head (link {head_seq}) does not match the last link ({last})"),
                );
            }
        }
        if report.ok {
            let orphan: Option<(String, i64, i64)> = sqlx::query_as(
                "SELECT e.stream, e.stream_seq, e.batch_id FROM audit.events e \
                 WHERE NOT EXISTS (SELECT 1 FROM audit.chain_links l WHERE l.batch_id = e.batch_id) LIMIT 1",
            )
            .fetch_optional(self.pool())
            .await
            .ctx("look for unlinked rows")?;
            if let Some((stream, seq, batch)) = orphan {
                fail(&mut report, format!("row stream={stream} stream_seq={seq}: batch {batch} has no chain link (row inserted outside the chain)"));
            }
        }
        Ok(report)
    }
}
