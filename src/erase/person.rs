//! A person's erasure in the database beyond the log's rows: what holds each of their
//! identifiers (the log's rows per stream, reconciliation results per run, batch memberships),
//! listed as ranges for the report, and afterwards their results and memberships rewritten to
//! the person's tombstone (`erased:<erasure>`, `erased:<erasure>.<k>` for a further external
//! number) and their identifiers remembered only as keyed hashes in `audit.erased_subjects`.

use std::collections::BTreeMap;

use serde::Serialize;
use sqlx::{PgConnection, Row};

use super::identity::{self, Identifier, Kind};
use super::EraseError;
use crate::db::{Ctx, DbError};
use crate::log::erasure::{self as erasure_rows, Target, Which};

use crate::reconcile::batch::TOMBSTONE_PREFIX;

/// One identifier and what holds it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FoundId {
    #[serde(skip)]
    pub(crate) value: String,
    /// The identifier as the report shows it: whole on a dry run (for the operator to check
    /// it is the right person), masked otherwise.
    pub(crate) shown: String,
    pub(crate) kind: Kind,
    pub(crate) via: String,
    /// The log's rows holding it, per stream: sequences as ranges.
    pub(crate) events: BTreeMap<String, String>,
    /// Reconciliation runs with a result holding it, as ranges of run ids.
    pub(crate) reconcile_runs: String,
    /// The batches (`SUPPLIER/NAME`) whose manifest holds it.
    pub(crate) batches: Vec<String>,
}

/// The person as found.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Found {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) supplier: Option<String>,
    pub(crate) identifiers: Vec<FoundId>,
}

impl Found {
    /// Nothing holds any identifier.
    pub(crate) fn is_empty(&self) -> bool {
        self.identifiers
            .iter()
            .all(|i| i.events.is_empty() && i.reconcile_runs.is_empty() && i.batches.is_empty())
    }
}

/// The person's rows (in log order) and what holds each identifier.
pub(crate) struct PersonRows {
    pub(crate) rows: Vec<Target>,
    pub(crate) found: Found,
}

/// `A-247E5F86` as `A-…86`: enough to tell two apart in a filed report, not to name anyone.
pub(crate) fn mask(id: &str) -> String {
    let chars: Vec<char> = id.chars().collect();
    if chars.len() <= 4 {
        return "…".into();
    }
    let head: String = chars[..2].iter().collect();
    let tail: String = chars[chars.len() - 2..].iter().collect();
    format!("{head}…{tail}")
}

/// Resolves `number` to the person and finds what holds each of their identifiers.
pub(crate) async fn find(
    tx: &mut PgConnection,
    number: &str,
    supplier: Option<&str>,
    dry_run: bool,
) -> Result<PersonRows, EraseError> {
    let person = identity::resolve(tx, number, supplier).await?;
    let supplier = person.supplier.clone();
    let rows = erasure_rows::targets(tx, &Which::Person(&person.values())).await?;
    let mut identifiers = Vec::with_capacity(person.ids.len());
    for id in &person.ids {
        identifiers.push(holding(tx, id, supplier.as_deref(), dry_run).await?);
    }
    Ok(PersonRows {
        rows,
        found: Found {
            supplier,
            identifiers,
        },
    })
}

async fn holding(
    tx: &mut PgConnection,
    id: &Identifier,
    supplier: Option<&str>,
    dry_run: bool,
) -> Result<FoundId, DbError> {
    let one = std::slice::from_ref(&id.value);
    let mut per_stream: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for t in erasure_rows::targets(tx, &Which::Person(one)).await? {
        per_stream.entry(t.stream).or_default().push(t.stream_seq);
    }
    let runs: Vec<i64> = sqlx::query_scalar(
        "SELECT DISTINCT run_id FROM audit.reconcile_results \
         WHERE ($2::text IS NULL OR supplier = $2) AND (external_account_number = $1 \
           OR platform_account_number = $1 OR event_identifier = $1) ORDER BY run_id",
    )
    .bind(&id.value)
    .bind(supplier)
    .fetch_all(&mut *tx)
    .await
    .ctx("find the person's reconciliation results")?;
    let batches: Vec<String> = sqlx::query(
        "SELECT DISTINCT b.supplier || '/' || b.name AS label FROM audit.batch_members m \
         JOIN audit.batches b ON b.id = m.batch_id \
         WHERE m.kind = 'account' AND m.external_id = $1 AND ($2::text IS NULL OR b.supplier = $2) \
         ORDER BY 1",
    )
    .bind(&id.value)
    .bind(supplier)
    .fetch_all(&mut *tx)
    .await
    .ctx("find the person's batch memberships")?
    .iter()
    .map(|r| r.get("label"))
    .collect();
    Ok(FoundId {
        value: id.value.clone(),
        shown: if dry_run {
            id.value.clone()
        } else {
            mask(&id.value)
        },
        kind: id.kind,
        via: id.via.clone(),
        events: per_stream
            .into_iter()
            .map(|(s, seqs)| (s, super::bus::ranges(&seqs)))
            .collect(),
        reconcile_runs: super::bus::ranges(&runs),
        batches,
    })
}

/// Each identifier's tombstone: the person's external numbers `erased:<n>`, `erased:<n>.2`,
/// …; their platform numbers the first one's.
pub(crate) fn tombstones(found: &Found, erasure: i64) -> Vec<(String, String)> {
    let mut k = 0;
    let mut out: Vec<(String, String)> = Vec::new();
    for id in found
        .identifiers
        .iter()
        .filter(|i| i.kind == Kind::External)
    {
        k += 1;
        let t = match k {
            1 => format!("{TOMBSTONE_PREFIX}{erasure}"),
            _ => format!("{TOMBSTONE_PREFIX}{erasure}.{k}"),
        };
        out.push((id.value.clone(), t));
    }
    for id in found
        .identifiers
        .iter()
        .filter(|i| i.kind == Kind::Platform)
    {
        out.push((id.value.clone(), format!("{TOMBSTONE_PREFIX}{erasure}")));
    }
    out
}

/// Rewrites the person's reconciliation results and batch memberships to their tombstones
/// and remembers every identifier as a keyed hash: `(results, memberships)` changed.
pub(crate) async fn forget(
    tx: &mut PgConnection,
    found: &Found,
    supplier: Option<&str>,
    erasure: i64,
) -> Result<(u64, u64), DbError> {
    let tombs = tombstones(found, erasure);
    let (mut results, mut members) = (0, 0);
    for (ext, t) in tombs.iter().filter(|(v, _)| {
        found
            .identifiers
            .iter()
            .any(|i| &i.value == v && i.kind == Kind::External)
    }) {
        results += sqlx::query(
            "UPDATE audit.reconcile_results SET external_account_number = $2, \
               platform_account_number = NULL, event_id = NULL, event_identifier = NULL, \
               detail = NULL, meter_points = NULL \
             WHERE external_account_number = $1 AND ($3::text IS NULL OR supplier = $3)",
        )
        .bind(ext)
        .bind(t)
        .bind(supplier)
        .execute(&mut *tx)
        .await
        .ctx("rewrite the person's reconciliation results to their tombstone")?
        .rows_affected();
        members += sqlx::query(
            "UPDATE audit.batch_members m SET external_id = $2 FROM audit.batches b \
             WHERE b.id = m.batch_id AND m.kind = 'account' AND m.external_id = $1 \
               AND ($3::text IS NULL OR b.supplier = $3)",
        )
        .bind(ext)
        .bind(t)
        .bind(supplier)
        .execute(&mut *tx)
        .await
        .ctx("rewrite the person's batch memberships to their tombstone")?
        .rows_affected();
    }
    // A result that names a platform number of the person under another external number
    // (an identifier mismatch) keeps that number, but not the person's.
    let platform: Vec<&str> = tombs.iter().map(|(v, _)| v.as_str()).collect();
    results += sqlx::query(
        "UPDATE audit.reconcile_results SET platform_account_number = NULL, event_id = NULL, \
           event_identifier = NULL, detail = NULL, meter_points = NULL \
         WHERE (platform_account_number = ANY($1) OR event_identifier = ANY($1)) \
           AND ($2::text IS NULL OR supplier = $2)",
    )
    .bind(&platform)
    .bind(supplier)
    .execute(&mut *tx)
    .await
    .ctx("erase the person's platform numbers from reconciliation results")?
    .rows_affected();
    let (values, ts): (Vec<&str>, Vec<&str>) =
        tombs.iter().map(|(v, t)| (v.as_str(), t.as_str())).unzip();
    sqlx::query(
        "INSERT INTO audit.erased_subjects (subject, erasure_id, tombstone) \
         SELECT sha256(p.pepper || convert_to(i.id, 'UTF8')), $3, i.t \
         FROM audit.erasure_pepper p, unnest($1::text[], $2::text[]) AS i(id, t) \
         ON CONFLICT (subject) DO NOTHING",
    )
    .bind(&values)
    .bind(&ts)
    .bind(erasure)
    .execute(&mut *tx)
    .await
    .ctx("remember the person's identifiers as keyed hashes")?;
    // The account index keeps the person's leaves under their labels; the labels' link to the
    // numbers (their keyed hashes and VRF proofs) goes.
    let ids: Vec<String> = values.iter().map(|v| (*v).to_owned()).collect();
    crate::log::index::forget_labels(tx, &ids).await?;
    Ok((results, members))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(v: &str, kind: Kind) -> FoundId {
        FoundId {
            value: v.into(),
            shown: v.into(),
            kind,
            via: "given".into(),
            events: BTreeMap::new(),
            reconcile_runs: String::new(),
            batches: Vec::new(),
        }
    }

    #[test]
    fn tombstones_name_the_erasure_never_the_number() {
        let found = Found {
            supplier: None,
            identifiers: vec![
                id("A-1", Kind::Platform),
                id("E-1", Kind::External),
                id("E-2", Kind::External),
            ],
        };
        let t = tombstones(&found, 7);
        assert_eq!(
            t,
            vec![
                ("E-1".into(), "erased:7".into()),
                ("E-2".into(), "erased:7.2".into()),
                ("A-1".into(), "erased:7".into()),
            ]
        );
        assert!(t.iter().all(|(v, t)| !t.contains(v.as_str())));
    }

    #[test]
    fn a_masked_number_keeps_two_characters_each_end() {
        assert_eq!(mask("A-247E5F86"), "A-…86");
        assert_eq!(mask("ABC"), "…");
    }
}
