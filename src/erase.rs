//! `event-audit erase`: one account's, or one stream range's, personal data removed from every
//! place the database keeps it, in one transaction as the eraser role
//! (`event_audit_eraser`): the rows' raw message, salt, payload, headers, envelope id, account
//! number and errors (a version 3 row's hash still holds through its commitment; a version 1 or
//! 2 row's contents become unverifiable), their envelope-id claims and findings, and, for an
//! account, its reconciliation results and batch memberships. The erasure is recorded first, as
//! a row of the log itself (`row::erasure`) appended through the chain and the tree like a
//! batch, and in `audit.erasures`. What the bus, the backups and the WAL keep is the
//! operator's to remove: the report says what.

pub(crate) mod bus;

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::{Connection, PgConnection};

use crate::db::{Ctx, Db, DbError};
use crate::row::erasure::{self, Erased, Erasure};
use crate::row::hex;

/// The role erasure works as.
pub(crate) const ERASER_ROLE: &str = "event_audit_eraser";

/// Which rows.
#[derive(Debug, Clone)]
pub(crate) enum Selector {
    /// Every row of this account number.
    Account(String),
    /// Stream sequences `A..=B` of a stream.
    Range { stream: String, seq: (i64, i64) },
    /// Every row published before this time (payload retention): recorded as the range, a
    /// count and a digest of the rows' hashes rather than row by row.
    PublishedBefore(DateTime<Utc>),
}

impl Selector {
    /// How the record names it: never the account number.
    fn recorded(&self) -> String {
        match self {
            Selector::Account(_) => "account".into(),
            Selector::Range { stream, seq } => format!("stream {stream} seq {}..{}", seq.0, seq.1),
            Selector::PublishedBefore(t) => format!("published before {}", erasure::stamp(*t)),
        }
    }
}

/// What an erasure did (or, dry, would do).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Outcome {
    pub(crate) dry_run: bool,
    /// The erasure's number (`None` on a dry run).
    pub(crate) erasure: Option<i64>,
    /// Its record's place in the chain (`None` on a dry run).
    pub(crate) link_seq: Option<i64>,
    pub(crate) rows: Vec<Erased>,
    /// Of them, rows of encodings 1 and 2 (their contents become unverifiable).
    pub(crate) rows_before_v3: i64,
    pub(crate) claims_removed: u64,
    pub(crate) findings_removed: u64,
    pub(crate) reconcile_results: u64,
    pub(crate) batch_members: u64,
    /// The bus's copy, per stream (set by the caller: [`bus::delete`], or [`bus::plan`]).
    pub(crate) bus: Vec<bus::OnTheBus>,
}

/// Why an erasure did not happen.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EraseError {
    #[error("no row with personal data matches {0}: nothing erased")]
    NothingMatched(String),
    /// An erasure by time whose bound lies past the time its record is written: it covers only
    /// the rows recorded before it, so a later bound would name rows it does not erase.
    #[error("--published-before {0} lies in the future (now {1}): an erasure covers only the rows recorded before it; give a time in the past")]
    FutureBound(String, String),
    #[error(transparent)]
    Db(#[from] DbError),
}

#[derive(sqlx::FromRow)]
struct Target {
    stream: String,
    stream_seq: i64,
    published_at: DateTime<Utc>,
    row_hash: Vec<u8>,
    v3: bool,
}

/// The rows the selector names that still hold personal data, in log order.
async fn targets(tx: &mut PgConnection, sel: &Selector) -> Result<Vec<Target>, DbError> {
    let held = "(octet_length(e.raw) > 0 OR e.salt IS NOT NULL OR e.payload IS NOT NULL \
         OR e.headers IS NOT NULL OR e.event_id IS NOT NULL OR e.account_number IS NOT NULL \
         OR e.errors IS NOT NULL)";
    let cols = "e.stream, e.stream_seq, e.published_at, e.row_hash, e.commitment IS NOT NULL AS v3";
    let found = match sel {
        Selector::Account(a) => {
            let sql = format!(
                "SELECT {cols} FROM audit.events e WHERE e.account_number = $1 AND {held} \
                 ORDER BY e.batch_id, e.stream, e.stream_seq"
            );
            sqlx::query_as(&sql).bind(a).fetch_all(&mut *tx).await
        }
        Selector::Range { stream, seq } => {
            let sql = format!(
                "SELECT {cols} FROM audit.events e WHERE e.stream = $1 \
                 AND e.stream_seq BETWEEN $2 AND $3 AND e.stream <> $4 AND {held} \
                 ORDER BY e.batch_id, e.stream, e.stream_seq"
            );
            sqlx::query_as(&sql)
                .bind(stream)
                .bind(seq.0)
                .bind(seq.1)
                .bind(erasure::STREAM)
                .fetch_all(&mut *tx)
                .await
        }
        Selector::PublishedBefore(t) => {
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

/// Erases what `sel` names (see the module), or on `dry_run` only says what it would.
pub(crate) async fn erase(
    db: &Db,
    sel: &Selector,
    reason: &str,
    dry_run: bool,
    instance: &str,
) -> Result<Outcome, EraseError> {
    if let Selector::PublishedBefore(t) = sel {
        let now = Utc::now();
        if *t > now {
            return Err(EraseError::FutureBound(
                erasure::stamp(*t),
                erasure::stamp(now),
            ));
        }
    }
    let mut conn = db.acquire().await?;
    let mut tx = conn.begin().await.ctx("begin")?;
    sqlx::query(&format!("SET LOCAL ROLE {ERASER_ROLE}"))
        .execute(&mut *tx)
        .await
        .ctx("work as the eraser role (GRANT event_audit_eraser TO the login that erases)")?;
    // One erasure at a time: its number is the next in the erasure stream.
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('event-audit erase'))")
        .execute(&mut *tx)
        .await
        .ctx("take the erasure lock")?;
    if !dry_run {
        hold_the_head(&mut tx).await?;
    }
    let found = targets(&mut tx, sel).await?;
    if found.is_empty() {
        return Err(EraseError::NothingMatched(sel.recorded()));
    }
    let rows: Vec<Erased> = found
        .iter()
        .map(|t| Erased {
            stream: t.stream.clone(),
            stream_seq: t.stream_seq,
            row_hash: hex(&t.row_hash),
        })
        .collect();
    let mut out = Outcome {
        dry_run,
        erasure: None,
        link_seq: None,
        rows,
        rows_before_v3: found.iter().filter(|t| !t.v3).count() as i64,
        claims_removed: 0,
        findings_removed: 0,
        reconcile_results: 0,
        batch_members: 0,
        bus: Vec::new(),
    };
    if dry_run {
        tx.rollback().await.ctx("roll back a dry run")?;
        return Ok(out);
    }
    record(&mut tx, sel, reason, instance, &found, &mut out).await?;
    remove(&mut tx, sel, &found, &mut out).await?;
    tx.commit().await.ctx("commit the erasure")?;
    Ok(out)
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

/// Appends the erasure record for `sel` through the chain and indexes it in `audit.erasures`.
async fn record(
    tx: &mut PgConnection,
    sel: &Selector,
    reason: &str,
    instance: &str,
    found: &[Target],
    out: &mut Outcome,
) -> Result<(), DbError> {
    let (rows, published) = match sel {
        Selector::PublishedBefore(t) => {
            let hashes: Vec<[u8; 32]> = found
                .iter()
                .map(|t| t.row_hash.as_slice().try_into().unwrap_or([0; 32]))
                .collect();
            let published = erasure::Published {
                from: None,
                before: erasure::stamp(*t),
                count: out.rows.len() as i64,
                row_hashes_sha256: hex(&hashes_digest(&hashes)),
            };
            (Vec::new(), Some(published))
        }
        _ => (out.rows.clone(), None),
    };
    let e = Erasure {
        erasure: 0,
        at: String::new(),
        reason: reason.to_owned(),
        selector: sel.recorded(),
        rows,
        published,
        archive: None,
    };
    let (n, link_seq) = append_record(tx, e, instance).await?;
    (out.erasure, out.link_seq) = (Some(n), Some(link_seq));
    Ok(())
}

/// SHA-256 of 32-byte row hashes, concatenated in order (an erasure by time and an archive
/// name their rows by it).
pub(crate) fn hashes_digest(hashes: &[[u8; 32]]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for x in hashes {
        h.update(x);
    }
    h.finalize().into()
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
        crate::ingest::sink::append_own_rows(tx, std::slice::from_ref(&row), instance).await?;
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

/// Removes the personal data: claims and findings first (they are found through the rows'
/// envelope ids), the account's reconciliation and batch data, then the rows' columns.
async fn remove(
    tx: &mut PgConnection,
    sel: &Selector,
    found: &[Target],
    out: &mut Outcome,
) -> Result<(), DbError> {
    let streams: Vec<&str> = found.iter().map(|t| t.stream.as_str()).collect();
    let seqs: Vec<i64> = found.iter().map(|t| t.stream_seq).collect();
    let times: Vec<DateTime<Utc>> = found.iter().map(|t| t.published_at).collect();
    let keys = "SELECT * FROM unnest($1::text[], $2::int8[], $3::timestamptz[]) AS k(stream, stream_seq, published_at)";
    let claims = format!(
        "DELETE FROM audit.event_claims WHERE id_key IN ( \
           SELECT substring(sha256(convert_to(e.event_id, 'UTF8')) FROM 1 FOR 16) \
           FROM audit.events e JOIN ({keys}) k USING (stream, stream_seq, published_at) \
           WHERE e.event_id IS NOT NULL)"
    );
    out.claims_removed = sqlx::query(&claims)
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
    out.findings_removed = sqlx::query(&findings)
        .bind(&streams)
        .bind(&seqs)
        .bind(&times)
        .execute(&mut *tx)
        .await
        .ctx("remove the erased rows' envelope-id findings")?
        .rows_affected();
    if let Selector::Account(a) = sel {
        account_data(tx, a, out).await?;
    }
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

/// The account number, its envelope ids and details in reconciliation results, and its
/// membership of batches, replaced by `erased` (each membership by a value of its own).
async fn account_data(
    tx: &mut PgConnection,
    account: &str,
    out: &mut Outcome,
) -> Result<(), DbError> {
    out.reconcile_results = sqlx::query(
        "UPDATE audit.reconcile_results SET external_account_number = 'erased', \
           platform_account_number = NULL, event_id = NULL, event_identifier = NULL, detail = NULL \
         WHERE external_account_number = $1 OR platform_account_number = $1",
    )
    .bind(account)
    .execute(&mut *tx)
    .await
    .ctx("erase the account from reconciliation results")?
    .rows_affected();
    out.batch_members = sqlx::query(
        "UPDATE audit.batch_members SET external_id = 'erased:' || md5(random()::text || clock_timestamp()::text) \
         WHERE kind = 'account' AND external_id = $1",
    )
    .bind(account)
    .execute(&mut *tx)
    .await
    .ctx("erase the account from batch memberships")?
    .rows_affected();
    Ok(())
}

/// The report: what was erased, and what the operator must still do.
pub(crate) fn report(o: &Outcome) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let verb = if o.dry_run { "would erase" } else { "erased" };
    let _ = writeln!(
        s,
        "{verb} the personal data of {} rows ({} of encodings 1 and 2, whose contents become unverifiable)",
        o.rows.len(),
        o.rows_before_v3
    );
    if let (Some(n), Some(link)) = (o.erasure, o.link_seq) {
        let _ = writeln!(s, "recorded as erasure {n}: a row of the log (stream {}, seq {n}) in chain link {link}; the next signed checkpoint covers it", erasure::STREAM);
        let _ = writeln!(
            s,
            "also removed: {} envelope-id claims, {} envelope-id findings, {} reconciliation results, {} batch memberships",
            o.claims_removed, o.findings_removed, o.reconcile_results, o.batch_members
        );
    }
    for b in &o.bus {
        let list = bus::ranges;
        if !b.deleted.is_empty() {
            let _ = writeln!(
                s,
                "deleted from the bus: stream {} sequences {}",
                b.stream,
                list(&b.deleted)
            );
        }
        if b.left.is_empty() {
            continue;
        }
        let _ = match (&b.why, o.dry_run) {
            (None, true) => writeln!(s, "would delete from the bus: stream {} sequences {}", b.stream, list(&b.left)),
            (why, _) => writeln!(
                s,
                "the bus still holds them: stream {} sequences {} ({}); delete each (`nats stream rmm {} SEQ`) where the stream's policy allows it, or let its limits age them out",
                b.stream,
                list(&b.left),
                why.as_deref().unwrap_or("not deleted"),
                b.stream
            ),
        };
    }
    let _ = writeln!(
        s,
        "backups and the WAL archive still hold the erased data until they expire"
    );
    s
}
