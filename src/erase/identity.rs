//! A person as erasure finds them: every identifier the log links to the number given (the
//! platform's account number, the migrating supplier's external one), resolved from the log
//! itself (`data_import.import_process.*` events of `resource_type` account, reconciliation
//! results, batch manifests). The rows that hold any of them are the log's to find
//! (`log::erasure`, `Which::Person`). Bounded: at most [`MAX_IDS`] identifiers in
//! [`MAX_ROUNDS`] rounds.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use sqlx::{PgConnection, Row};

use crate::db::{Ctx, DbError};

/// The most identifiers one person may resolve to: more means a shared value (an empty
/// string, a placeholder), and the erasure is refused rather than widened.
pub(crate) const MAX_IDS: usize = 16;
/// The most rounds of following links.
pub(crate) const MAX_ROUNDS: usize = 4;

/// What an identifier is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    /// A number the migrating supplier knows (a batch manifest's, an import's
    /// `external_identifier`).
    External,
    /// The platform's account number.
    Platform,
}

impl Kind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::External => "external account number",
            Kind::Platform => "platform account number",
        }
    }
}

/// One identifier of the person and where it was found.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Identifier {
    /// The identifier itself: shown on a dry run only, never stored or logged.
    #[serde(skip)]
    pub(crate) value: String,
    pub(crate) kind: Kind,
    /// `given`, or what linked it (`data_import.import_process.complete-v1`,
    /// `reconciliation results`).
    pub(crate) via: String,
}

/// Why a person could not be resolved.
#[derive(Debug, thiserror::Error)]
pub(crate) enum IdentityError {
    #[error("the external account number is in the batches or reconciliation results of several suppliers ({0}): name one with --supplier")]
    Ambiguous(String),
    #[error("the number links to more than {MAX_IDS} identifiers (a shared or placeholder value?): nothing erased; erase by --stream and --seq instead")]
    TooMany,
    #[error("an empty account number names no person")]
    Empty,
    #[error(transparent)]
    Db(#[from] DbError),
}

/// The person: their identifiers, the given one first.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Person {
    pub(crate) ids: Vec<Identifier>,
    /// The supplier the external numbers belong to (given, or the only one found).
    pub(crate) supplier: Option<String>,
}

impl Person {
    pub(crate) fn values(&self) -> Vec<String> {
        self.ids.iter().map(|i| i.value.clone()).collect()
    }
}

/// Resolves `given` (either kind of number) to every identifier the log links to it.
pub(crate) async fn resolve(
    tx: &mut PgConnection,
    given: &str,
    supplier: Option<&str>,
) -> Result<Person, IdentityError> {
    let given = given.trim();
    if given.is_empty() {
        return Err(IdentityError::Empty);
    }
    let mut found: BTreeMap<String, (Kind, String)> = BTreeMap::new();
    found.insert(given.to_owned(), (Kind::Platform, "given".into()));
    let mut frontier = vec![given.to_owned()];
    let mut suppliers = BTreeSet::new();
    for _ in 0..MAX_ROUNDS {
        if frontier.is_empty() {
            break;
        }
        let mut next = Vec::new();
        for (ext, plat, via, sup) in links(tx, &frontier, supplier).await? {
            if let Some(s) = sup {
                suppliers.insert(s);
            }
            // A number seen as an external one anywhere is the supplier's.
            if let Some(e) = ext.as_deref().filter(|e| !e.is_empty()) {
                match found.get_mut(e) {
                    Some(slot) => slot.0 = Kind::External,
                    None => {
                        found.insert(e.to_owned(), (Kind::External, via.clone()));
                        next.push(e.to_owned());
                    }
                }
            }
            if let Some(p) = plat.as_deref().filter(|p| !p.is_empty()) {
                if !found.contains_key(p) {
                    found.insert(p.to_owned(), (Kind::Platform, via.clone()));
                    next.push(p.to_owned());
                }
            }
            if found.len() > MAX_IDS {
                return Err(IdentityError::TooMany);
            }
        }
        frontier = next;
    }
    if supplier.is_none() && suppliers.len() > 1 {
        let list: Vec<String> = suppliers.into_iter().collect();
        return Err(IdentityError::Ambiguous(list.join(", ")));
    }
    let mut ids: Vec<Identifier> = found
        .into_iter()
        .map(|(value, (kind, via))| Identifier { value, kind, via })
        .collect();
    ids.sort_by_key(|i| (i.via != "given", i.kind, i.value.clone()));
    Ok(Person {
        ids,
        supplier: supplier
            .map(str::to_owned)
            .or_else(|| suppliers.into_iter().next()),
    })
}

/// `(external, platform, via, supplier)` pairs linked to any of `ids`.
type Link = (Option<String>, Option<String>, String, Option<String>);

async fn links(
    tx: &mut PgConnection,
    ids: &[String],
    supplier: Option<&str>,
) -> Result<Vec<Link>, DbError> {
    let mut out: Vec<Link> = crate::log::erasure::import_links(tx, ids)
        .await?
        .into_iter()
        .map(|(ext, plat, via)| (ext, plat, via, None))
        .collect();
    let results = sqlx::query(
        "SELECT DISTINCT external_account_number AS ext, \
           coalesce(platform_account_number, event_identifier) AS plat, supplier \
         FROM audit.reconcile_results \
         WHERE ($2::text IS NULL OR supplier = $2) AND (external_account_number = ANY($1) \
           OR platform_account_number = ANY($1) OR event_identifier = ANY($1))",
    )
    .bind(ids)
    .bind(supplier)
    .fetch_all(&mut *tx)
    .await
    .ctx("follow the reconciliation results' links between account numbers")?;
    for r in &results {
        let sup: String = r.get("supplier");
        out.push((
            r.get("ext"),
            r.get("plat"),
            "reconciliation results".into(),
            Some(sup),
        ));
        // The other platform number of a result (an identifier mismatch) is the person's too.
    }
    let members = sqlx::query(
        "SELECT DISTINCT m.external_id AS ext, b.supplier FROM audit.batch_members m \
         JOIN audit.batches b ON b.id = m.batch_id \
         WHERE m.kind = 'account' AND m.external_id = ANY($1) AND ($2::text IS NULL OR b.supplier = $2)",
    )
    .bind(ids)
    .bind(supplier)
    .fetch_all(&mut *tx)
    .await
    .ctx("find the account numbers in batch manifests")?;
    for r in &members {
        out.push((
            r.get("ext"),
            None,
            "batch manifests".into(),
            Some(r.get("supplier")),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {

    use crate::decode::catalogue::IDENTIFIER_PATHS;

    #[test]
    fn the_generated_paths_cover_the_import_events_and_the_account_number() {
        let has = |t: &str, path: &str| {
            IDENTIFIER_PATHS
                .iter()
                .any(|(ty, _, p, _)| *ty == t && p.contains(path))
        };
        assert!(has("data_import.import_process.complete", "\"identifier\""));
        assert!(has(
            "data_import.import_process.complete",
            "\"external_identifier\""
        ));
        assert!(has(
            "data_import.import_process.error",
            "\"external_identifier\""
        ));
        assert!(has("account.created", "\"account_number\""));
        // Through a shape: a ledger's account number.
        assert!(IDENTIFIER_PATHS
            .iter()
            .any(|(_, _, p, _)| p.contains("\"account\".\"number\"")));
        // The links are the import events' two numbers, nothing else.
        assert!(IDENTIFIER_PATHS
            .iter()
            .filter(|x| x.3)
            .all(|(t, ..)| t.starts_with("data_import.import_process.")));
    }
}
