//! Batches, pure: a registered manifest of one import supplier (names unique per supplier; the
//! same name with another list is refused), the scope strings that tell which runs compare, and
//! when a batch closes by itself: once every run has been settled (outcome `ok`, every
//! registration `registered`) for longer than `reconcile.close_after`. Closed batches are no
//! longer reconciled by the daemon nor exported as metrics; their runs stay.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::model::{BatchRef, Tolerance};

/// The prefix of an erased member's tombstone (`erased:<erasure>`): the member keeps its place
/// in the batch, its number is gone; no manifest may list a number that starts with it.
pub(crate) const TOMBSTONE_PREFIX: &str = "erased:";

/// A registered batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Batch {
    pub(crate) id: i64,
    pub(crate) supplier: String,
    pub(crate) name: String,
    pub(crate) accounts: u64,
    pub(crate) orders: u64,
    pub(crate) manifest_sha256: String,
    /// The manifest's file name as given at registration.
    pub(crate) source: Option<String>,
    /// `VERDICT` or `VERDICT=N`, applied to every run of the batch.
    pub(crate) tolerances: Vec<String>,
    pub(crate) registered_at: DateTime<Utc>,
    pub(crate) closed: Option<Closure>,
}

/// Why and when a batch was closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Closure {
    pub(crate) closed_at: DateTime<Utc>,
    /// `command` or `settled`.
    pub(crate) reason: String,
    /// The run that settled it.
    pub(crate) run_id: Option<i64>,
}

impl Batch {
    pub(crate) fn reference(&self) -> BatchRef {
        BatchRef {
            id: self.id,
            supplier: self.supplier.clone(),
            name: self.name.clone(),
        }
    }

    /// The stored tolerances (checked at registration).
    pub(crate) fn tolerances(&self) -> Vec<Tolerance> {
        self.tolerances
            .iter()
            .filter_map(|t| t.parse().ok())
            .collect()
    }

    /// `ACME/week-1`.
    pub(crate) fn label(&self) -> String {
        format!("{}/{}", self.supplier, self.name)
    }
}

/// What registering a batch found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Registered {
    /// A new batch.
    Created(Batch),
    /// The same name with the same list and tolerances: nothing to do.
    Existing(Batch),
    /// The same name with another list or other tolerances: refused.
    Conflict(Batch),
}

/// Why a batch name cannot be used.
pub(crate) fn name_problem(name: &str) -> Option<&'static str> {
    if name.trim().is_empty() {
        return Some("a batch name must not be empty");
    }
    if name.len() > 128 {
        return Some("a batch name has at most 128 bytes");
    }
    if name.chars().any(|c| c.is_control() || c == '/') {
        return Some("a batch name has no control characters and no `/`");
    }
    None
}

/// The scope of a batch's runs.
pub(crate) fn batch_scope(id: i64) -> String {
    format!("batch:{id}")
}

/// The scope of supplier-wide runs (the suppliers sorted).
pub(crate) fn supplier_scope(suppliers: &[String]) -> String {
    let mut s: Vec<&str> = suppliers.iter().map(String::as_str).collect();
    s.sort_unstable();
    s.dedup();
    format!("suppliers:{}", s.join(","))
}

/// The scope of runs over an unregistered manifest (`--accounts FILE`).
pub(crate) fn manifest_scope(sha256: &str) -> String {
    format!("manifest:{}", &sha256[..sha256.len().min(16)])
}

/// Since when a batch has been settled without interruption, from its completed runs newest
/// first (`finished_at`, settled); `None` when its latest run is not settled.
pub(crate) fn settled_since(runs: &[(DateTime<Utc>, bool)]) -> Option<DateTime<Utc>> {
    let mut since = None;
    for (at, settled) in runs {
        if !settled {
            break;
        }
        since = Some(*at);
    }
    since
}

/// Whether a batch settled since `since` closes at `now`.
pub(crate) fn closes(since: Option<DateTime<Utc>>, now: DateTime<Utc>, after: Duration) -> bool {
    since.is_some_and(|t| now - t >= after)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(h: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + h * 3600, 0).unwrap_or_default()
    }

    #[test]
    fn a_batch_closes_after_an_unbroken_settled_streak() {
        let day = Duration::hours(24);
        // Newest first: settled for the last 30 hours, unsettled before.
        let runs = [(t(30), true), (t(10), true), (t(0), true), (t(-1), false)];
        assert_eq!(settled_since(&runs), Some(t(0)));
        assert!(closes(settled_since(&runs), t(30), day));
        assert!(!closes(settled_since(&runs), t(20), day));
        // The latest run is not settled: the streak is broken.
        let runs = [(t(30), false), (t(10), true), (t(0), true)];
        assert_eq!(settled_since(&runs), None);
        assert!(!closes(None, t(100), day));
    }

    #[test]
    fn scopes_and_names() {
        assert_eq!(
            supplier_scope(&["B".into(), "A".into(), "B".into()]),
            "suppliers:A,B"
        );
        assert_eq!(batch_scope(7), "batch:7");
        assert_eq!(
            manifest_scope("0123456789abcdef0123"),
            "manifest:0123456789abcdef"
        );
        assert!(name_problem("week-1").is_none());
        assert!(name_problem(" ").is_some());
        assert!(name_problem("a/b").is_some());
    }
}
