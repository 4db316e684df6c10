//! `event-audit erase`: one person's (`--account`, by any number the log links to them:
//! [`identity`]), or one stream range's, personal data removed from every place the database
//! keeps it, in one transaction as the eraser role (`event_audit_eraser`): the rows' raw
//! message, salt, payload, headers, envelope id, account number and errors (a version 3 row's
//! hash still holds through its commitment; a version 1 or 2 row's contents become
//! unverifiable), their envelope-id claims and findings, and, for a person, their
//! reconciliation results and batch memberships (each replaced by the person's tombstone
//! `erased:<erasure>`), remembered only as keyed hashes (`audit.erased_subjects`) so that no
//! later reconciliation asks about or stores them again. The erasure is recorded first, as a
//! row of the log itself (`row::erasure`) appended through the chain and the tree like a batch,
//! and in `audit.erasures`; it names the person only by commitments whose openings the report
//! hands to the requester. What the bus, the backups and the WAL keep is the operator's to
//! remove: the report says what.

pub(crate) mod bus;
pub(crate) mod identity;
pub(crate) mod metrics;
mod person;

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgConnection;

use crate::db::{Ctx, Db, DbError};
use crate::log::append::Appender;
pub(crate) use crate::log::erasure::hold_the_head;
use crate::log::erasure::{self as erasure_rows, Target, Which};
use crate::row::erasure::{self, Erased, Erasure};
use crate::row::hex;

/// The role erasure works as.
pub(crate) const ERASER_ROLE: &str = "event_audit_eraser";

/// Which rows.
#[derive(Debug, Clone)]
pub(crate) enum Selector {
    /// A person: every row, result and membership holding any identifier the log links to
    /// this number (platform or external; `supplier` where an external number is ambiguous).
    Account {
        number: String,
        supplier: Option<String>,
    },
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
            Selector::Account { number, .. } => Which::Account(number),
            Selector::Range { stream, seq } => Which::Range { stream, seq: *seq },
            Selector::PublishedBefore(t) => Which::PublishedBefore(*t),
        }
    }

    /// How the record names it: never the account number.
    fn recorded(&self) -> String {
        match self {
            Selector::Account { .. } => "account".into(),
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
    /// A person's erasure: their identifiers, and what holds each.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) person: Option<person::Found>,
    /// The openings of the record's commitments, one per identifier (hex), in the order of
    /// `person.identifiers`: for whoever made the request, never stored.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) openings: Vec<String>,
    /// The bus's copy, per stream (set by the caller: [`bus::delete`], or [`bus::plan`]).
    pub(crate) bus: Vec<bus::OnTheBus>,
}

/// Why an erasure did not happen.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EraseError {
    #[error("no row with personal data matches {0}: nothing erased")]
    NothingMatched(String),
    #[error(transparent)]
    Identity(#[from] identity::IdentityError),
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
    // The log's appender owns the transaction: the selection, the record and the emptying.
    let mut log = Appender::begin(&mut conn, instance).await?;
    let tx = log.tx();
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
        hold_the_head(tx).await?;
    }
    let (found, person) = match sel {
        Selector::Account { number, supplier } => {
            let p = person::find(tx, number, supplier.as_deref(), dry_run).await?;
            (p.rows, Some(p.found))
        }
        _ => (erasure_rows::targets(tx, &sel.which()).await?, None),
    };
    if found.is_empty() && person.as_ref().is_none_or(|p| p.is_empty()) {
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
        person,
        openings: Vec::new(),
        bus: Vec::new(),
    };
    if dry_run {
        log.rollback("roll back a dry run").await?;
        return Ok(out);
    }
    record(&mut log, sel, reason, &found, &mut out).await?;
    remove(log.tx(), sel, &found, &mut out).await?;
    log.commit("commit the erasure").await?;
    Ok(out)
}

/// Appends the erasure record for `sel` through the chain and indexes it in `audit.erasures`.
async fn record(
    log: &mut Appender<'_>,
    sel: &Selector,
    reason: &str,
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
    let mut subjects = Vec::new();
    if let Some(p) = &out.person {
        for id in &p.identifiers {
            let mut opening = [0u8; 32];
            rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut opening);
            subjects.push(hex(&erasure::commit(&opening, &id.value)));
            out.openings.push(hex(&opening));
        }
    }
    let e = Erasure {
        erasure: 0,
        at: String::new(),
        reason: reason.to_owned(),
        selector: sel.recorded(),
        rows,
        subjects,
        published,
        archive: None,
    };
    let (n, link_seq) = log.erasure_record(e).await?;
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
    if let (Selector::Account { supplier, .. }, Some(p), Some(n)) =
        (sel, out.person.as_ref(), out.erasure)
    {
        let (results, members) = person::forget(tx, p, supplier.as_deref(), n).await?;
        (out.reconcile_results, out.batch_members) = (results, members);
    }
    erasure_rows::empty(tx, found).await
}

/// A person's identifiers, what held each, and (after the erasure) the openings of the
/// record's commitments.
fn person_lines(s: &mut String, p: &person::Found, o: &Outcome) {
    use std::fmt::Write;
    let _ = writeln!(
        s,
        "the person: {} identifier(s){}",
        p.identifiers.len(),
        p.supplier
            .as_deref()
            .map(|x| format!(" (supplier {x})"))
            .unwrap_or_default()
    );
    for (i, id) in p.identifiers.iter().enumerate() {
        let _ = writeln!(s, "  {} {} (via {})", id.kind.as_str(), id.shown, id.via);
        for (stream, seqs) in &id.events {
            let _ = writeln!(s, "    audit.events: stream {stream} sequences {seqs}");
        }
        if !id.reconcile_runs.is_empty() {
            let _ = writeln!(s, "    audit.reconcile_results: runs {}", id.reconcile_runs);
        }
        if !id.batches.is_empty() {
            let _ = writeln!(
                s,
                "    audit.batch_members: batches {}",
                id.batches.join(", ")
            );
        }
        if let Some(opening) = o.openings.get(i) {
            let _ = writeln!(s, "    commitment opening: {opening}");
        }
    }
    if !o.openings.is_empty() {
        let _ = writeln!(s, "hand each opening with its number to whoever made the request: with both, anyone can check the erasure record's commitment (docs/auditors.md#an-erasure-request); the openings are not stored");
    }
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
    if let Some(p) = &o.person {
        person_lines(&mut s, p, o);
    }
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
