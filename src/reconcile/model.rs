//! What a reconciliation run produces: one [`AccountResult`] per account and a [`RunReport`]
//! around them (counts per verdict, REST calls, outcome and exit code). The same structures are
//! stored in Postgres, rendered by `report`, and served by the HTTP endpoints.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::registration::{MeterPoint, Registration};
use super::verdict::Verdict;

/// One account's verdict and the evidence on both sides.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct AccountResult {
    pub(crate) external_account_number: String,
    /// The supplier whose records hold the account (the first one named when none does).
    pub(crate) supplier: String,
    pub(crate) verdict: Verdict,
    /// `complete`, `error`, `cancelled`, `dry_run_complete` or `dry_run_error`.
    pub(crate) event_outcome: Option<String>,
    pub(crate) event_type: Option<String>,
    pub(crate) event_id: Option<String>,
    /// The platform account number a `complete` event names.
    pub(crate) event_identifier: Option<String>,
    pub(crate) event_time: Option<DateTime<Utc>>,
    /// `imported`, `in_progress`, `pending`, `unknown`, `not_found`, `absent` or `unverified`.
    pub(crate) platform_status: String,
    pub(crate) platform_account_number: Option<String>,
    pub(crate) platform_created_at: Option<DateTime<Utc>>,
    /// Whether an `account.created` event with `is_imported: true` exists for the platform
    /// account number.
    pub(crate) account_created_event: bool,
    pub(crate) detail: Option<String>,
    /// The registration follow-through, rolled up (imported accounts whose meter points were
    /// read); never changes `verdict`.
    pub(crate) registration: Option<Registration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) meter_points: Option<Vec<MeterPoint>>,
}

/// REST requests of one run.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct RestSummary {
    /// Requests made: list pages plus per-account requests (retries not counted).
    pub(crate) calls: u64,
    pub(crate) list_calls: u64,
    pub(crate) account_calls: u64,
    /// HTTP attempts including retries.
    pub(crate) attempts: u64,
    pub(crate) retries: u64,
}

/// How a run ended. Exit codes: `ok` 0, `mismatches` 1, `incomplete` 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Outcome {
    /// Every account `matched`, or within the tolerances.
    Ok,
    /// At least one account with a verdict other than `matched` beyond its tolerance
    /// (`unverified` never counts as a mismatch).
    Mismatches,
    /// The run could not complete, or some accounts are `unverified` (and nothing mismatched).
    Incomplete,
}

impl Outcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Mismatches => "mismatches",
            Outcome::Incomplete => "incomplete",
        }
    }

    pub(crate) fn parse(s: &str) -> Outcome {
        match s {
            "ok" => Outcome::Ok,
            "mismatches" => Outcome::Mismatches,
            _ => Outcome::Incomplete,
        }
    }

    pub(crate) fn exit_code(self) -> u8 {
        match self {
            Outcome::Ok => 0,
            Outcome::Mismatches => 1,
            Outcome::Incomplete => 2,
        }
    }
}

/// A verdict that counts as OK, for up to `max` accounts (any number when `None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Tolerance {
    pub(crate) verdict: Verdict,
    pub(crate) max: Option<u64>,
}

impl std::str::FromStr for Tolerance {
    type Err = String;

    /// `VERDICT` or `VERDICT=N`.
    fn from_str(s: &str) -> Result<Tolerance, String> {
        let (name, max) = match s.split_once('=') {
            Some((name, n)) => (
                name,
                Some(
                    n.trim()
                        .parse::<u64>()
                        .map_err(|_| format!("`{n}` is not a count"))?,
                ),
            ),
            None => (s, None),
        };
        let verdict = Verdict::parse(name.trim()).ok_or_else(|| {
            let all: Vec<&str> = Verdict::ALL.iter().map(|v| v.as_str()).collect();
            format!("unknown verdict `{name}`; one of {}", all.join(", "))
        })?;
        Ok(Tolerance { verdict, max })
    }
}

/// Accounts per verdict, every verdict present (zero when none).
pub(crate) fn count(results: &[AccountResult]) -> BTreeMap<String, u64> {
    let mut counts: BTreeMap<String, u64> = Verdict::ALL
        .iter()
        .map(|v| (v.as_str().to_owned(), 0))
        .collect();
    for r in results {
        *counts.entry(r.verdict.as_str().to_owned()).or_default() += 1;
    }
    counts
}

/// The outcome of a completed run with these counts and tolerances.
pub(crate) fn outcome(counts: &BTreeMap<String, u64>, tolerances: &[Tolerance]) -> Outcome {
    let allowed = |v: Verdict, n: u64| {
        tolerances
            .iter()
            .any(|t| t.verdict == v && t.max.is_none_or(|max| n <= max))
    };
    let mut unverified = false;
    for (name, &n) in counts {
        let Some(v) = Verdict::parse(name) else {
            continue;
        };
        if n == 0 || v == Verdict::Matched || v == Verdict::Erased || allowed(v, n) {
            continue;
        }
        if v == Verdict::Unverified {
            unverified = true;
        } else {
            return Outcome::Mismatches;
        }
    }
    if unverified {
        Outcome::Incomplete
    } else {
        Outcome::Ok
    }
}

/// Accounts per registration state, every state present (zero when none); empty when no
/// meter points were read.
pub(crate) fn count_registrations(results: &[AccountResult]) -> BTreeMap<String, u64> {
    if results.iter().all(|r| r.registration.is_none()) {
        return BTreeMap::new();
    }
    let mut counts: BTreeMap<String, u64> = Registration::ALL
        .iter()
        .map(|r| (r.as_str().to_owned(), 0))
        .collect();
    for r in results.iter().filter_map(|r| r.registration) {
        *counts.entry(r.as_str().to_owned()).or_default() += 1;
    }
    counts
}

/// Whether a run's accounts are all settled: outcome `ok` (every account matched or tolerated)
/// and every registration read is `registered`.
pub(crate) fn settled(outcome: Outcome, registrations: &BTreeMap<String, u64>) -> bool {
    outcome == Outcome::Ok
        && registrations
            .iter()
            .all(|(k, &n)| n == 0 || Registration::parse(k).is_some_and(Registration::is_settled))
}

/// The batch a run belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct BatchRef {
    pub(crate) id: i64,
    pub(crate) supplier: String,
    pub(crate) name: String,
}

/// One run: parameters, counts, outcome and (when loaded with them) its results.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunReport {
    /// The stored run's id (`None` when it could not be stored).
    pub(crate) run_id: Option<i64>,
    /// The registered batch the run reconciled, if any.
    pub(crate) batch: Option<BatchRef>,
    /// Runs of one scope are compared: `batch:<id>`, `suppliers:<codes>` or
    /// `manifest:<sha256 prefix>`.
    pub(crate) scope: String,
    pub(crate) started_at: DateTime<Utc>,
    pub(crate) finished_at: DateTime<Utc>,
    /// `cli` or `daemon`.
    pub(crate) trigger: String,
    pub(crate) suppliers: Vec<String>,
    /// The run's inputs: window, grace, manifest, REST URL without credentials, tolerances.
    pub(crate) parameters: serde_json::Value,
    /// The settings that decide its verdicts and outcome; `None` for a run stored before runs
    /// recorded them.
    pub(crate) settings: Option<super::settings::RunSettings>,
    pub(crate) outcome: Outcome,
    pub(crate) exit_code: u8,
    pub(crate) accounts: u64,
    pub(crate) counts: BTreeMap<String, u64>,
    /// Accounts per registration state (empty when meter points were not read).
    pub(crate) registration_counts: BTreeMap<String, u64>,
    /// `data_import.order_process.*` events by outcome (no REST counterpart): in the window for
    /// a supplier-wide run; for a batch or manifest, only its listed orders, with `no_event` for
    /// listed orders without any.
    pub(crate) order_processes: BTreeMap<String, u64>,
    pub(crate) rest: RestSummary,
    /// Why an incomplete run stopped.
    pub(crate) error: Option<String>,
    /// Milliseconds per phase of this process's run (not stored).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) timings_ms: BTreeMap<String, u64>,
    pub(crate) results: Vec<AccountResult>,
}

impl RunReport {
    /// The counts, in the vocabulary's order, zeros left out.
    pub(crate) fn nonzero_counts(&self) -> Vec<(&str, u64)> {
        let mut out: Vec<(&str, u64)> = Verdict::ALL
            .iter()
            .filter_map(|v| {
                let n = self.counts.get(v.as_str()).copied().unwrap_or(0);
                (n > 0).then_some((v.as_str(), n))
            })
            .collect();
        for (k, &n) in &self.counts {
            if n > 0 && Verdict::parse(k).is_none() {
                out.push((k.as_str(), n));
            }
        }
        out
    }

    /// Accounts per registration state, in the vocabulary's order, zeros left out.
    pub(crate) fn nonzero_registrations(&self) -> Vec<(&str, u64)> {
        let mut out: Vec<(&str, u64)> = Registration::ALL
            .iter()
            .filter_map(|r| {
                let n = self
                    .registration_counts
                    .get(r.as_str())
                    .copied()
                    .unwrap_or(0);
                (n > 0).then_some((r.as_str(), n))
            })
            .collect();
        for (k, &n) in &self.registration_counts {
            if n > 0 && !Registration::ALL.iter().any(|r| r.as_str() == k) {
                out.push((k.as_str(), n));
            }
        }
        out
    }

    /// Order-process events per outcome, zeros left out (`no_event 0`: every listed order
    /// has events).
    pub(crate) fn nonzero_orders(&self) -> Vec<(&str, u64)> {
        self.order_processes
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(k, &n)| (k.as_str(), n))
            .collect()
    }
}

/// One stored run without its results (the history).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunSummary {
    pub(crate) run_id: i64,
    pub(crate) scope: String,
    /// The batch's name, for a batch run.
    pub(crate) batch: Option<String>,
    pub(crate) registration_counts: BTreeMap<String, u64>,
    pub(crate) started_at: DateTime<Utc>,
    pub(crate) finished_at: DateTime<Utc>,
    pub(crate) trigger: String,
    pub(crate) suppliers: Vec<String>,
    pub(crate) outcome: Outcome,
    pub(crate) accounts: u64,
    pub(crate) counts: BTreeMap<String, u64>,
    pub(crate) rest_calls: u64,
    pub(crate) error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(pairs: &[(Verdict, u64)]) -> BTreeMap<String, u64> {
        pairs
            .iter()
            .map(|(v, n)| (v.as_str().to_owned(), *n))
            .collect()
    }

    #[test]
    fn settled_means_ok_and_every_registration_registered() {
        let regs = |pairs: &[(&str, u64)]| -> BTreeMap<String, u64> {
            pairs.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect()
        };
        assert!(settled(Outcome::Ok, &regs(&[])));
        assert!(settled(
            Outcome::Ok,
            &regs(&[("registered", 3), ("stalled", 0)])
        ));
        assert!(!settled(
            Outcome::Ok,
            &regs(&[("registered", 3), ("in_flight", 1)])
        ));
        assert!(!settled(Outcome::Mismatches, &regs(&[])));
        assert!(!settled(Outcome::Incomplete, &regs(&[])));
    }

    #[test]
    fn outcomes_and_tolerances() {
        let t = |s: &str| s.parse::<Tolerance>().expect("tolerance");
        assert_eq!(outcome(&counts(&[(Verdict::Matched, 5)]), &[]), Outcome::Ok);
        let c = counts(&[(Verdict::Matched, 5), (Verdict::Pending, 2)]);
        assert_eq!(outcome(&c, &[]), Outcome::Mismatches);
        assert_eq!(outcome(&c, &[t("pending")]), Outcome::Ok);
        assert_eq!(outcome(&c, &[t("pending=2")]), Outcome::Ok);
        assert_eq!(outcome(&c, &[t("pending=1")]), Outcome::Mismatches);
        let u = counts(&[(Verdict::Matched, 5), (Verdict::Unverified, 1)]);
        assert_eq!(outcome(&u, &[]), Outcome::Incomplete);
        assert_eq!(outcome(&u, &[t("unverified")]), Outcome::Ok);
        let both = counts(&[(Verdict::Unverified, 1), (Verdict::Failed, 1)]);
        assert_eq!(outcome(&both, &[]), Outcome::Mismatches);
        assert!("nonsense".parse::<Tolerance>().is_err());
        assert!("pending=x".parse::<Tolerance>().is_err());
        assert_eq!(Outcome::Mismatches.exit_code(), 1);
    }
}
