//! The daemon's scheduled reconciliation: every interval, each open batch of the configured
//! suppliers separately (its manifest, its tolerances, meter points followed up), closing
//! a batch that has been settled for `reconcile.close_after`; the whole supplier only with
//! `reconcile.whole_supplier`. And the reconciliation metrics, polled from the stored runs.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::metrics::Metrics;
use crate::config::ReconcileSettings;
use crate::db::Db;
use crate::reconcile::model::RunReport;
use crate::reconcile::poll::Poller;
use crate::reconcile::rest::client::RestClient;
use crate::reconcile::rest::token::Tokens;
use crate::reconcile::rest::RestConfig;
use crate::reconcile::store::ReconcileStore;
use crate::reconcile::{self, NoProgress, Params};

/// Starts, in `tasks` until `stop`, the reconciliation metrics' poller and, when there is a
/// platform to ask (`rest`), the scheduled reconciliation.
pub(super) fn spawn(
    tasks: &TaskTracker,
    db: &Db,
    rest: Option<&(RestConfig, Arc<Tokens>)>,
    s: &ReconcileSettings,
    metrics: &Arc<Metrics>,
    stop: &CancellationToken,
) {
    tasks.spawn(poll(
        db.clone(),
        metrics.clone(),
        s.poll.get(),
        stop.clone(),
    ));
    if let Some((rest, tokens)) = rest {
        tracing::info!(suppliers = ?s.suppliers, whole_supplier = s.whole_supplier, interval = %s.interval, "scheduled reconciliation of each open batch");
        tasks.spawn(run(
            db.clone(),
            rest.clone(),
            tokens.clone(),
            s.clone(),
            metrics.clone(),
            stop.clone(),
        ));
    }
}

/// Reconciles every interval (the first run one interval after start) until stopped.
async fn run(
    db: Db,
    rest: RestConfig,
    tokens: Arc<Tokens>,
    s: ReconcileSettings,
    metrics: Arc<Metrics>,
    stop: CancellationToken,
) {
    let every = s.interval.get();
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = once(&db, &rest, &tokens, &s, &metrics) => {}
        }
    }
}

fn log(report: &RunReport, scope: &str) {
    let summary = reconcile::report::summary(report);
    match &report.error {
        None => tracing::info!(
            run_id = report.run_id,
            scope,
            outcome = report.outcome.as_str(),
            "{summary}"
        ),
        Some(e) => {
            tracing::warn!(run_id = report.run_id, scope, error = %e, "reconciliation could not complete: {summary}")
        }
    }
}

/// One scheduled round: each open batch, then the whole suppliers when asked. Never fails
/// the daemon.
pub(super) async fn once(
    db: &Db,
    rest: &RestConfig,
    tokens: &Arc<Tokens>,
    s: &ReconcileSettings,
    metrics: &Metrics,
) {
    let client =
        match RestClient::with_tokens(rest.clone(), tokens.clone(), Some(metrics.rest.clone())) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(error = %e, "scheduled reconciliation cannot start");
                return;
            }
        };
    let store = ReconcileStore::new(db.clone());
    let batches = match store.batches(Some(&s.suppliers)).await {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(error = %e, "cannot list the open batches");
            Vec::new()
        }
    };
    for b in batches {
        let manifest = match store.batch_manifest(&b).await {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(batch = %b.label(), error = %e, "cannot read the batch's manifest");
                continue;
            }
        };
        let p = Params::scheduled_batch(s, &b, manifest);
        let report = reconcile::execute(&store, &client, &p, &NoProgress).await;
        log(&report, &b.label());
        if report.error.is_none() {
            let now = chrono::Utc::now();
            match reconcile::close_if_settled(&store, &b, s.close_after.chrono(), now).await {
                Ok(Some(run)) => {
                    tracing::info!(batch = %b.label(), run_id = run, after = %s.close_after, "batch closed: settled")
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(batch = %b.label(), error = %e, "cannot close the batch")
                }
            }
        }
    }
    if s.whole_supplier {
        let p = Params::scheduled(s);
        let report = reconcile::execute(&store, &client, &p, &NoProgress).await;
        log(&report, &p.scope());
    }
}

/// Derives the reconciliation metrics from the stored runs every `every` until stopped:
/// the only writer of `event_audit_reconcile_*`; and the people erased from the stored erasures.
async fn poll(db: Db, metrics: Arc<Metrics>, every: Duration, stop: CancellationToken) {
    let store = ReconcileStore::new(db.clone());
    let mut poller = Poller::default();
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        if let Err(e) = poller
            .poll(&store, &metrics.reconcile, chrono::Utc::now())
            .await
        {
            tracing::warn!(error = %e, "cannot derive the reconciliation metrics from the stored runs");
        }
        if let Err(e) = metrics.erasure.poll(&db).await {
            tracing::warn!(error = %e, "cannot count the people erased");
        }
    }
}
