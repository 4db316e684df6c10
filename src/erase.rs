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
use crate::log::erasure::{self as erasure_rows, Target, Which};
pub(crate) use crate::log::erasure::{append_record, hold_the_head};
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
    /// The rows it names, as the log finds them.
    fn which(&self) -> Which<'_> {
        match self {
            Selector::Account(a) => Which::Account(a),
            Selector::Range { stream, seq } => Which::Range { stream, seq: *seq },
            Selector::PublishedBefore(t) => Which::PublishedBefore(*t),
        }
    }

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
    let found = erasure_rows::targets(&mut tx, &sel.which()).await?;
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

/// Removes the personal data: the rows' envelope-id claims and findings and their personal
/// columns (`log::erasure`), and for an account its reconciliation and batch data.
async fn remove(
    tx: &mut PgConnection,
    sel: &Selector,
    found: &[Target],
    out: &mut Outcome,
) -> Result<(), DbError> {
    (out.claims_removed, out.findings_removed) = erasure_rows::forget_ids(tx, found).await?;
    if let Selector::Account(a) = sel {
        account_data(tx, a, out).await?;
    }
    erasure_rows::empty(tx, found).await
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
