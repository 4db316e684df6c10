//! Reconciliation: proves a migration batch against the platform's import status.
//!
//! One run (its phases in `run`): read the event side from the audit log (latest
//! import-process outcome per external account number, order-process counts) while reading the
//! supplier lists over REST; ask the per-account endpoint only for what the lists do not settle
//! (see [`platform`]); look up `account.created` events for the platform account numbers;
//! decide one [`verdict::Verdict`] per account; follow each imported account's registration up
//! ([`registration`]); store the run with its results. `reconcile` (the CLI) and the daemon's
//! schedule both go through [`execute`]; a run of a registered [`batch`] takes its manifest and
//! tolerances from it.
//!
//! The accounts of a run: the manifest's (a batch's, or `--accounts`), when given; otherwise
//! every account with an outcome
//! event in the window and every account the suppliers list, except, when a window is given,
//! imported accounts whose creation time falls outside it (pending accounts, and imported ones
//! without a creation time, are always in). Events carry no supplier code, so an
//! account belongs to the supplier whose lists (or status answer) hold it, else to the first
//! supplier named. `account_created_event` is looked up for the platform account number, or for
//! the `complete` event's identifier when the platform has none.

mod assemble;
pub(crate) mod batch;
pub(crate) mod compare;
pub(crate) mod diff;
pub(crate) mod manifest;
pub(crate) mod metrics;
pub(crate) mod model;
mod platform;
pub(crate) mod poll;
pub(crate) mod registration;
pub(crate) mod report;
pub(crate) mod rest;
mod run;
pub(crate) mod settings;
pub(crate) mod store;
pub(crate) mod verdict;

use std::sync::atomic::Ordering;

use chrono::{DateTime, Duration, Utc};
use serde_json::json;

use crate::config::ReconcileSettings;
use crate::db::DbError;
pub use manifest::Manifest;
use model::{BatchRef, Outcome, RestSummary, RunReport, Tolerance};
use rest::client::{RestClient, RestError};
use store::ReconcileStore;

/// What to reconcile.
#[derive(Debug, Clone)]
pub(crate) struct Params {
    pub(crate) suppliers: Vec<String>,
    /// The registered batch (its manifest in `manifest`).
    pub(crate) batch: Option<BatchRef>,
    pub(crate) manifest: Option<Manifest>,
    pub(crate) since: Option<DateTime<Utc>>,
    pub(crate) until: Option<DateTime<Utc>>,
    /// A moving window (the daemon's): `since` is now minus this, at every run.
    pub(crate) window: Option<Duration>,
    pub(crate) grace: Duration,
    pub(crate) tolerances: Vec<Tolerance>,
    /// Ask the per-account endpoint about every pending account (tells `in_progress` from
    /// `pending` on deployments that list accounts being processed as pending).
    pub(crate) check_pending: bool,
    /// Follow registrations up: read `meterpoint-statuses-for-account` for every imported
    /// account of the run and join the join-supplier events.
    pub(crate) meter_points: bool,
    /// A registration requested longer ago than this without completion is `stalled`.
    pub(crate) registration_grace: Duration,
    /// `cli` or `daemon`.
    pub(crate) trigger: &'static str,
}

/// Why a run could not complete.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReconcileError {
    #[error(transparent)]
    Rest(#[from] RestError),
    #[error(transparent)]
    Store(#[from] DbError),
}

/// Progress of the per-account requests, for a caller that shows it (the CLI's progress bar).
pub(crate) trait Progress: Sync {
    /// `total` requests are about to be made.
    fn start(&self, _total: u64) {}
    /// One more answered.
    fn advance(&self) {}
    /// The run is over.
    fn finish(&self) {}
}

/// No progress shown (the daemon, tests).
pub(crate) struct NoProgress;

impl Progress for NoProgress {}

impl Params {
    /// A run of `suppliers` with the given grace and nothing else.
    pub(crate) fn new(suppliers: Vec<String>, grace: Duration, trigger: &'static str) -> Params {
        Params {
            suppliers,
            batch: None,
            manifest: None,
            since: None,
            until: None,
            window: None,
            grace,
            tolerances: Vec::new(),
            check_pending: false,
            meter_points: false,
            registration_grace: Duration::days(7),
            trigger,
        }
    }

    /// The daemon's scheduled supplier-wide run, looking back over the configured window.
    pub(crate) fn scheduled(s: &ReconcileSettings) -> Params {
        let mut p = Params::new(s.suppliers.clone(), s.grace.chrono(), "daemon");
        p.registration_grace = s.registration_grace.chrono();
        p.window = s.window.map(|w| w.chrono());
        p.since = p.window.and_then(|w| Utc::now().checked_sub_signed(w));
        p
    }

    /// The daemon's scheduled run of a batch: no window (the batch's manifest decides).
    pub(crate) fn scheduled_batch(
        s: &ReconcileSettings,
        b: &batch::Batch,
        manifest: Manifest,
    ) -> Params {
        let mut p = Params::scheduled(s);
        p.since = None;
        p.window = None;
        p.for_batch(b, manifest)
    }

    /// A run of batch `b` (its manifest and tolerances; meter points followed up).
    pub(crate) fn for_batch(mut self, b: &batch::Batch, manifest: Manifest) -> Params {
        self.suppliers = vec![b.supplier.clone()];
        self.batch = Some(b.reference());
        self.manifest = Some(manifest);
        self.tolerances.extend(b.tolerances());
        self.meter_points = true;
        self
    }

    /// The scope whose runs compare with this one.
    pub(crate) fn scope(&self) -> String {
        match (&self.batch, &self.manifest) {
            (Some(b), _) => batch::batch_scope(b.id),
            (None, Some(m)) => batch::manifest_scope(&m.sha256()),
            (None, None) => batch::supplier_scope(&self.suppliers),
        }
    }
}

/// The stored parameters of a run: its inputs, never a secret.
fn parameters(p: &Params, client: &RestClient) -> serde_json::Value {
    let mut v = json!({
        "suppliers": p.suppliers,
        "since": p.since,
        "until": p.until,
        "grace_secs": p.grace.num_seconds(),
        "batch": p.batch.as_ref().map(|b| &b.name),
        "manifest": p.manifest.as_ref().map(|m| json!({"file": m.name, "accounts": m.accounts.len(), "orders": m.orders.len()})),
        "registration_grace_secs": p.meter_points.then(|| p.registration_grace.num_seconds()),
        "tolerances": p.tolerances.iter().map(|t| match t.max {
            Some(n) => format!("{}={n}", t.verdict),
            None => t.verdict.to_string(),
        }).collect::<Vec<_>>(),
        "check_pending": p.check_pending,
        "meter_points": p.meter_points,
    });
    if let (Some(obj), serde_json::Value::Object(rest)) =
        (v.as_object_mut(), client.config().describe())
    {
        obj.extend(rest);
    }
    v
}

fn rest_summary(client: &RestClient) -> RestSummary {
    let s = &client.stats;
    RestSummary {
        calls: s.calls.load(Ordering::Relaxed),
        list_calls: s.list_calls.load(Ordering::Relaxed),
        account_calls: s.account_calls.load(Ordering::Relaxed),
        attempts: s.attempts.load(Ordering::Relaxed),
        retries: s.retries.load(Ordering::Relaxed),
    }
}

/// A run's report: counts, outcome and exit code derived from its results, or `incomplete`
/// with its error.
fn run_report(
    p: &Params,
    client: &RestClient,
    started_at: chrono::DateTime<Utc>,
    results: Vec<model::AccountResult>,
    error: Option<String>,
) -> RunReport {
    let counts = model::count(&results);
    let registration_counts = model::count_registrations(&results);
    let outcome = match error {
        Some(_) => Outcome::Incomplete,
        None => model::outcome(&counts, &p.tolerances),
    };
    RunReport {
        run_id: None,
        batch: p.batch.clone(),
        scope: p.scope(),
        started_at,
        finished_at: Utc::now(),
        trigger: p.trigger.to_owned(),
        suppliers: p.suppliers.clone(),
        parameters: parameters(p, client),
        settings: Some(settings::RunSettings::of(p)),
        outcome,
        exit_code: outcome.exit_code(),
        accounts: results.len() as u64,
        counts,
        registration_counts,
        order_processes: Default::default(),
        rest: rest_summary(client),
        error,
        timings_ms: Default::default(),
        results,
    }
}

/// Runs and stores; never fails: a run that could not complete is reported (and stored when
/// the database allows) as `incomplete` with its error. The metrics are derived from the
/// stored runs ([`poll`]), whichever process made them.
pub(crate) async fn execute(
    store: &ReconcileStore,
    client: &RestClient,
    p: &Params,
    progress: &dyn Progress,
) -> RunReport {
    let started_at = Utc::now();
    let mut report = match run::reconcile(store, client, p, progress).await {
        Ok(r) => r,
        Err(e) => run_report(p, client, started_at, Vec::new(), Some(e.to_string())),
    };
    progress.finish();
    let t = std::time::Instant::now();
    match store.save_reconcile_run(&report).await {
        Ok(id) => {
            report.run_id = Some(id);
            report.timings_ms.insert(
                "store".into(),
                u64::try_from(t.elapsed().as_millis()).unwrap_or(u64::MAX),
            );
        }
        Err(e) => {
            let msg = format!("storing the run: {e}");
            report.error = Some(match report.error.take() {
                Some(prev) => format!("{prev}; {msg}"),
                None => msg,
            });
            report.outcome = Outcome::Incomplete;
            report.exit_code = Outcome::Incomplete.exit_code();
        }
    }
    report
}

/// Closes batch `b` when it has been settled (outcome `ok`, every registration `registered`)
/// for at least `after`; returns the settling run when it closed.
pub(crate) async fn close_if_settled(
    store: &ReconcileStore,
    b: &batch::Batch,
    after: Duration,
    now: DateTime<Utc>,
) -> Result<Option<i64>, DbError> {
    let runs = store.batch_run_states(b.id, 10_000).await?;
    let states: Vec<(DateTime<Utc>, bool)> = runs
        .iter()
        .map(|(_, at, outcome, regs)| (*at, model::settled(*outcome, regs)))
        .collect();
    if !batch::closes(batch::settled_since(&states), now, after) {
        return Ok(None);
    }
    let run = runs.first().map(|(id, ..)| *id);
    Ok(store
        .close_batch(b.id, "settled", run)
        .await?
        .then_some(run)
        .flatten())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_follow_the_batch_the_manifest_or_the_suppliers() {
        let mut p = Params::new(vec!["B".into(), "A".into()], Duration::minutes(15), "cli");
        assert_eq!(p.scope(), "suppliers:A,B");
        p.manifest = Some(Manifest::parse("m", "E1\n"));
        assert!(p.scope().starts_with("manifest:"), "{}", p.scope());
        p.batch = Some(BatchRef {
            id: 4,
            supplier: "A".into(),
            name: "w1".into(),
        });
        assert_eq!(p.scope(), "batch:4");
    }
}
