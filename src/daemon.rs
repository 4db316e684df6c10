//! `event-audit run`: wires configuration, store, bus, HTTP and the ingest pipeline together,
//! and turns SIGTERM/SIGINT into a graceful stop (finish the batch in hand, commit, ack, exit 0).
//!
//! With `--reconcile-supplier`, a background task reconciles those suppliers every
//! `--reconcile-interval` (the first run one interval after start) and stores each run like the
//! `reconcile` command does; with `--exit-when-idle` one more run follows the drained ingest.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::watch;

use crate::bus::{self, Bus};
use crate::config::{RunConfig, Schedule};
use crate::http::{self, AppState};
use crate::ingest::{Ingest, Totals};
use crate::metrics::Metrics;
use crate::store::{redact_url, Store};

/// A watch that turns true on SIGTERM or SIGINT.
pub fn shutdown_signal() -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        let term = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = term => {},
            _ = tokio::signal::ctrl_c() => {},
        }
        tracing::info!("shutdown requested: finishing the batch in hand");
        let _ = tx.send(true);
    });
    rx
}

pub async fn run(cfg: RunConfig, shutdown: watch::Receiver<bool>) -> anyhow::Result<Totals> {
    let metrics = Arc::new(Metrics::new());
    let store = Store::open(&cfg.conn.database_url, cfg.db_connections)
        .await
        .with_context(|| {
            format!(
                "opening the audit log at {}",
                redact_url(&cfg.conn.database_url)
            )
        })?;
    metrics.up.with_label_values(&["postgres"]).set(1);
    let (head, _) = store.chain_head().await?;
    metrics.chain_head.set(head);
    metrics.verify_ok.set(-1);
    if let Some((ok, at)) = store.last_verify().await? {
        metrics.verify_ok.set(i64::from(ok));
        metrics.verify_time.set(at.timestamp());
    }
    let bus = Bus::connect(&cfg.conn.nats_url).await?;
    metrics.up.with_label_values(&["nats"]).set(1);
    let consumer = bus.bind(&cfg.binding).await?;
    tracing::info!(stream = %cfg.binding.stream, consumer = %cfg.binding.consumer, batch_size = cfg.batch_size, "bound to JetStream");

    let bound = Arc::new(AtomicBool::new(false));
    let state = AppState {
        metrics: metrics.clone(),
        store: store.clone(),
        nats: bus.client.clone(),
        bound: bound.clone(),
        report_token: cfg.report_token.clone(),
    };
    if cfg.report_token.is_none() {
        tracing::info!("report endpoints are open: no report token configured (EVENT_AUDIT_REPORT_TOKEN or --report-token-file)");
    }
    let mut http_stop = shutdown.clone();
    let http = http::serve(cfg.http_addr, http::router(state), async move {
        let _ = http_stop.wait_for(|s| *s).await;
    })
    .await
    .with_context(|| format!("binding the HTTP listener on {}", cfg.http_addr))?;

    // Poll consumer state and partitions in the background.
    let poller = {
        let consumer = consumer.clone();
        let metrics = metrics.clone();
        let store = store.clone();
        let client = bus.client.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(5));
            let mut n = 0u64;
            loop {
                tick.tick().await;
                if let Some((pending, ack_pending)) = bus::consumer_state(&consumer).await {
                    metrics
                        .consumer_pending
                        .set(i64::try_from(pending).unwrap_or(i64::MAX));
                    metrics
                        .consumer_ack_pending
                        .set(i64::try_from(ack_pending).unwrap_or(i64::MAX));
                }
                let nats_up = client.connection_state() == async_nats::connection::State::Connected;
                metrics
                    .up
                    .with_label_values(&["nats"])
                    .set(i64::from(nats_up));
                // The chain head may move through other instances; `verify` runs elsewhere.
                if let Ok((head, _)) = store.chain_head().await {
                    metrics.chain_head.set(head);
                }
                if let Ok(Some((ok, at))) = store.last_verify().await {
                    metrics.verify_ok.set(i64::from(ok));
                    metrics.verify_time.set(at.timestamp());
                }
                n += 1;
                if n % 720 == 0 {
                    if let Err(e) = store.ensure_partitions(chrono::Utc::now()).await {
                        tracing::warn!(error = %e, "could not create partitions ahead");
                    }
                }
            }
        })
    };

    let scheduled = cfg.reconcile.clone().map(|sched| {
        let (store, metrics) = (store.clone(), metrics.clone());
        tokio::spawn(async move {
            let start = tokio::time::Instant::now() + sched.interval;
            let mut tick = tokio::time::interval_at(start, sched.interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                scheduled_reconcile(&store, &metrics, &sched).await;
            }
        })
    });
    if let Some(sched) = &cfg.reconcile {
        tracing::info!(suppliers = ?sched.suppliers, interval_secs = sched.interval.as_secs(), "scheduled reconciliation");
    }

    let ingest = Ingest {
        store: store.clone(),
        metrics: metrics.clone(),
        naming: cfg.naming.clone(),
        batch_size: cfg.batch_size,
        bound,
        linger: cfg.linger,
        writers: cfg.writers,
    };
    let totals = ingest
        .run(consumer, shutdown.clone(), cfg.exit_when_idle)
        .await?;
    poller.abort();
    if let Some(task) = scheduled {
        task.abort();
    }
    if let (true, Some(sched)) = (cfg.exit_when_idle, &cfg.reconcile) {
        scheduled_reconcile(&store, &metrics, sched).await;
    }
    // Acks are published asynchronously: make sure they reach the server before exiting.
    if let Err(e) = tokio::time::timeout(Duration::from_secs(10), bus.client.flush()).await {
        tracing::warn!(error = %e, "flushing acks timed out; unflushed messages will be redelivered and skipped");
    }
    drop(shutdown);
    http.abort();
    let secs = totals.busy_secs();
    tracing::info!(
        messages = totals.messages,
        inserted = totals.inserted,
        batches = totals.batches,
        busy_secs = secs,
        per_sec = (totals.messages as f64 / secs.max(1e-9)).round(),
        "stopped"
    );
    Ok(totals)
}

/// One scheduled reconciliation: run, store, metrics, one log line. Never fails the daemon.
async fn scheduled_reconcile(store: &Store, metrics: &Arc<Metrics>, sched: &Schedule) {
    use crate::reconcile::{self, client::RestClient, Params};
    let client = match RestClient::new(sched.rest.clone(), metrics.clone()) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "scheduled reconciliation cannot start");
            return;
        }
    };
    let params = Params {
        suppliers: sched.suppliers.clone(),
        manifest: None,
        since: sched
            .window
            .and_then(|w| chrono::Duration::from_std(w).ok())
            .and_then(|w| chrono::Utc::now().checked_sub_signed(w)),
        until: None,
        grace: chrono::Duration::from_std(sched.grace).unwrap_or(chrono::Duration::minutes(15)),
        tolerances: Vec::new(),
        check_pending: false,
        meter_points: false,
        trigger: "daemon",
    };
    let progress = indicatif::ProgressBar::hidden();
    let report = reconcile::execute(store, &client, &params, &progress, metrics).await;
    let summary = reconcile::report::summary(&report);
    match &report.error {
        None => tracing::info!(
            run_id = report.run_id,
            outcome = report.outcome.as_str(),
            "{summary}"
        ),
        Some(e) => {
            tracing::warn!(run_id = report.run_id, error = %e, "reconciliation could not complete: {summary}")
        }
    }
}
