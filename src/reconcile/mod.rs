//! Reconciliation: proves a migration batch against the platform's import status.
//!
//! One run: read the event side from the audit log (latest import-process outcome per external
//! account number, order-process counts) while reading the supplier lists over REST; ask the
//! per-account endpoint only for what the lists do not settle (see [`platform`]); look up
//! `account.created` events for the platform account numbers; decide one [`verdict::Verdict`] per
//! account; store the run with its results. `reconcile` (the CLI) and the daemon's schedule both
//! go through [`execute`].
//!
//! The accounts of a run: the manifest's, when given; otherwise every account with an outcome
//! event in the window and every account the suppliers list, except, when a window is given,
//! imported accounts whose creation time falls outside it (pending accounts, and imported ones
//! without a creation time, are always in). Events carry no supplier code, so an
//! account belongs to the supplier whose lists (or status answer) hold it, else to the first
//! supplier named. `account_created_event` is looked up for the platform account number, or for
//! the `complete` event's identifier when the platform has none.

mod assemble;
pub mod client;
pub mod command;
pub mod model;
pub mod platform;
pub mod records;
pub mod report;
pub mod rest;
pub mod routes;
pub mod verdict;

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::Ordering;

use chrono::{DateTime, Duration, Utc};
use futures::StreamExt;
use indicatif::ProgressBar;
use serde_json::json;

use crate::metrics::Metrics;
use crate::store::reconcile::OutcomeRow;
use crate::store::{Store, StoreError};
use client::{RestClient, RestError};
use model::{Outcome, RestSummary, RunReport, Tolerance};
use verdict::{Platform, Verdict};

/// The batch manifest: one external account number a line (blank lines and `#` comments
/// skipped, repeats dropped).
#[derive(Debug, Clone)]
pub struct Manifest {
    /// The file name, for the stored parameters.
    pub name: String,
    pub accounts: Vec<String>,
}

impl Manifest {
    pub fn parse(name: &str, text: &str) -> Manifest {
        let mut seen = std::collections::HashSet::new();
        let accounts = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .filter(|l| seen.insert(l.to_string()))
            .map(str::to_owned)
            .collect();
        Manifest {
            name: name.to_owned(),
            accounts,
        }
    }
}

/// What to reconcile.
#[derive(Debug, Clone)]
pub struct Params {
    pub suppliers: Vec<String>,
    pub manifest: Option<Manifest>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    pub grace: Duration,
    pub tolerances: Vec<Tolerance>,
    /// Ask the per-account endpoint about every pending account (tells `in_progress` from
    /// `pending` on deployments that list accounts being processed as pending).
    pub check_pending: bool,
    /// Read `meterpoint-statuses-for-account` for every imported account of the run.
    pub meter_points: bool,
    /// `cli` or `daemon`.
    pub trigger: &'static str,
}

/// Why a run could not complete.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error(transparent)]
    Rest(#[from] RestError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The stored parameters of a run: its inputs, never a secret.
fn parameters(p: &Params, client: &RestClient) -> serde_json::Value {
    let c = client.config();
    json!({
        "suppliers": p.suppliers,
        "since": p.since,
        "until": p.until,
        "grace_secs": p.grace.num_seconds(),
        "manifest": p.manifest.as_ref().map(|m| json!({"file": m.name, "accounts": m.accounts.len()})),
        "tolerances": p.tolerances.iter().map(|t| match t.max {
            Some(n) => format!("{}={n}", t.verdict),
            None => t.verdict.to_string(),
        }).collect::<Vec<_>>(),
        "check_pending": p.check_pending,
        "meter_points": p.meter_points,
        "rest_url": client::redact(&c.base_url),
        "rest_auth": match c.scheme { client::AuthScheme::Token => "token", client::AuthScheme::Bare => "bare" },
        "rest_concurrency": c.concurrency,
        "rest_rate": c.rate,
        "rest_retries": c.retries,
        "rest_timeout_ms": c.timeout.as_millis() as u64,
    })
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

/// Runs one reconciliation (nothing stored).
pub async fn reconcile(
    store: &Store,
    client: &RestClient,
    p: &Params,
    progress: &ProgressBar,
) -> Result<RunReport, ReconcileError> {
    let started_at = Utc::now();
    let mut clock = Clock::start();
    let manifest = p.manifest.as_ref().map(|m| m.accounts.as_slice());
    let (events, orders, lists) = tokio::try_join!(
        async { Ok::<_, ReconcileError>(store.import_outcomes(p.since, p.until, manifest).await?) },
        async { Ok(store.order_outcome_counts(p.since, p.until).await?) },
        async { Ok(platform::read_lists(client, &p.suppliers).await?) },
    )?;
    clock.lap("events_and_lists");
    let events: HashMap<String, OutcomeRow> = events
        .into_iter()
        .map(|r| (r.external.clone(), r))
        .collect();
    let windowed = p.since.is_some() || p.until.is_some();
    let accounts: Vec<String> = match manifest {
        Some(m) => m.to_vec(),
        None => events
            .keys()
            .chain(
                lists
                    .accounts()
                    .filter(|ext| !windowed || in_window(lists.find(ext), p.since, p.until)),
            )
            .collect::<BTreeSet<_>>()
            .into_iter()
            .cloned()
            .collect(),
    };

    let mut resolved: Vec<Option<platform::Resolved>> = Vec::with_capacity(accounts.len());
    let mut asks = Vec::new();
    for (i, ext) in accounts.iter().enumerate() {
        let r = platform::settled(lists.find(ext), events.contains_key(ext), p.check_pending);
        if r.is_none() {
            asks.push(i);
        }
        resolved.push(r);
    }
    progress.set_length(asks.len() as u64);
    if asks.len() < 1000 {
        // A progress bar only for large batches.
        progress.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let width = client.config().concurrency.max(1) * 2;
    let mut answers = futures::stream::iter(asks)
        .map(|i| {
            let (lists, accounts) = (&lists, &accounts);
            async move {
                let ext = &accounts[i];
                (
                    i,
                    platform::ask(client, &p.suppliers, ext, lists.find(ext)).await,
                )
            }
        })
        .buffer_unordered(width);
    while let Some((i, answer)) = answers.next().await {
        resolved[i] = Some(answer?);
        progress.inc(1);
    }
    drop(answers);
    clock.lap("account_requests");

    let lookup: Vec<String> = accounts
        .iter()
        .zip(&resolved)
        .filter_map(|(ext, r)| {
            let r = r.as_ref()?;
            r.platform.account_number().map(str::to_owned).or_else(|| {
                events
                    .get(ext)
                    .and_then(|e| e.identifier.clone())
                    .filter(|_| !matches!(r.platform, Platform::Imported { .. }))
            })
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let created = store.imported_account_created(&lookup).await?;
    clock.lap("account_created_lookup");

    let now = Utc::now();
    let mut results = Vec::with_capacity(accounts.len());
    for (ext, r) in accounts.into_iter().zip(resolved) {
        let r = r.unwrap_or(platform::Resolved {
            supplier: 0,
            platform: Platform::Absent,
            detail: None,
        });
        let ev = events.get(&ext);
        results.push(assemble::result(
            ext,
            r,
            ev,
            &p.suppliers,
            p.grace,
            now,
            &created,
        ));
    }
    if p.meter_points {
        assemble::add_meter_points(client, &mut results).await?;
    }
    clock.lap("verdicts");
    let mut report = run_report(p, client, started_at, results, None);
    report.order_processes = orders;
    report.timings_ms = clock.laps;
    Ok(report)
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
    let outcome = match error {
        Some(_) => Outcome::Incomplete,
        None => model::outcome(&counts, &p.tolerances),
    };
    RunReport {
        run_id: None,
        started_at,
        finished_at: Utc::now(),
        trigger: p.trigger.to_owned(),
        suppliers: p.suppliers.clone(),
        parameters: parameters(p, client),
        outcome,
        exit_code: outcome.exit_code(),
        accounts: results.len() as u64,
        counts,
        order_processes: Default::default(),
        rest: rest_summary(client),
        error,
        timings_ms: Default::default(),
        results,
    }
}

/// Phase timings.
struct Clock {
    last: std::time::Instant,
    laps: std::collections::BTreeMap<String, u64>,
}

impl Clock {
    fn start() -> Clock {
        Clock {
            last: std::time::Instant::now(),
            laps: Default::default(),
        }
    }

    fn lap(&mut self, name: &str) {
        let now = std::time::Instant::now();
        let ms = (now - self.last).as_millis();
        self.laps
            .insert(name.to_owned(), u64::try_from(ms).unwrap_or(u64::MAX));
        self.last = now;
    }
}

/// Whether a listed account belongs to a run windowed on `[since, until)`: imported within it
/// (or at a time the platform does not give), or not imported (pending, being processed).
fn in_window(
    listed: Option<(usize, &platform::Listed)>,
    since: Option<DateTime<Utc>>,
    until: Option<DateTime<Utc>>,
) -> bool {
    match listed {
        Some((
            _,
            platform::Listed::Imported {
                created_at: Some(t),
                ..
            },
        )) => since.map_or(true, |s| *t >= s) && until.map_or(true, |u| *t < u),
        _ => true,
    }
}

/// Runs, stores and records metrics; never fails: a run that could not complete is reported
/// (and stored when the database allows) as `incomplete` with its error.
pub async fn execute(
    store: &Store,
    client: &RestClient,
    p: &Params,
    progress: &ProgressBar,
    metrics: &Metrics,
) -> RunReport {
    let started_at = Utc::now();
    let mut report = match reconcile(store, client, p, progress).await {
        Ok(r) => r,
        Err(e) => run_report(p, client, started_at, Vec::new(), Some(e.to_string())),
    };
    progress.finish_and_clear();
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
    record_metrics(metrics, &report);
    report
}

/// Updates the reconciliation metrics with one run.
pub fn record_metrics(m: &Metrics, r: &RunReport) {
    for s in &r.suppliers {
        m.reconcile_runs
            .with_label_values(&[s.as_str(), r.outcome.as_str()])
            .inc();
    }
    if r.error.is_some() {
        return;
    }
    let mut by: HashMap<(&str, Verdict), i64> = HashMap::new();
    for res in &r.results {
        *by.entry((res.supplier.as_str(), res.verdict)).or_default() += 1;
    }
    for s in &r.suppliers {
        for v in Verdict::ALL {
            let n = by.get(&(s.as_str(), v)).copied().unwrap_or(0);
            m.reconcile_accounts
                .with_label_values(&[s.as_str(), v.as_str()])
                .set(n);
        }
        m.reconcile_last_run
            .with_label_values(&[s.as_str()])
            .set(r.finished_at.timestamp());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use platform::Listed;

    #[test]
    fn a_window_keeps_imports_within_it_and_everything_not_imported() {
        let t = |h: i64| DateTime::from_timestamp(1_800_000_000 + h * 3600, 0);
        let imported = |at: Option<DateTime<Utc>>| Listed::Imported {
            number: Some("A-1".into()),
            created_at: at,
            note: None,
        };
        let (since, until) = (t(0), t(10));
        let inside = imported(t(5));
        let before = imported(t(-1));
        let after = imported(t(10));
        let unknown = imported(None);
        assert!(in_window(Some((0, &inside)), since, until));
        assert!(!in_window(Some((0, &before)), since, until));
        assert!(!in_window(Some((0, &after)), since, until));
        assert!(in_window(Some((0, &unknown)), since, until));
        assert!(in_window(Some((0, &Listed::Pending)), since, until));
        assert!(in_window(Some((0, &Listed::AllOnly)), since, until));
        assert!(in_window(Some((0, &before)), None, until));
    }

    #[test]
    fn manifests_skip_blanks_comments_and_repeats() {
        let m = Manifest::parse("b.txt", "E1\n\n# c\n E2 \nE1\n");
        assert_eq!(m.accounts, vec!["E1".to_owned(), "E2".to_owned()]);
    }
}
