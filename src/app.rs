//! The daemon as a value: [`App::build`] binds the HTTP listener (port 0 in tests), checks that
//! PostgreSQL and NATS answer, then creates the database and stream and binds the consumer;
//! [`App::run_until_stopped`] runs ingest with its background tasks (probers, chain poller,
//! checkpoint signer, scheduled reconciliation of each open batch, the reconciliation metrics
//! polled from the stored runs, HTTP) until the stop token is cancelled (SIGTERM/SIGINT in the
//! binary) or, with `exit_when_idle`, until the consumer is drained. Nothing is aborted.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::audit::record::Naming;
use crate::bus::{Bus, BusError};
use crate::config::{secrets, Settings};
use crate::db::{Db, DbError};
use crate::ingest::sink::Sink;
use crate::ingest::source::{self, Binding, PullConsumer};
use crate::ingest::{Ingest, Totals};
use crate::reconcile::rest::token::Tokens;
use crate::reconcile::rest::{RestConfig, RestConfigError, RestError};
use crate::reconcile::store::ReconcileStore;
use crate::server::reports::ReportState;
use crate::telemetry::health::Health;
use crate::telemetry::metrics::Metrics;
use crate::verify::VerifyStore;

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("opening the audit log: {0}")]
    Db(#[from] DbError),
    #[error(transparent)]
    Bus(#[from] BusError),
    #[error("binding the HTTP listener on {addr}: {source}; choose another --http-addr")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("scheduled reconciliation: {0}")]
    Rest(#[from] RestConfigError),
    #[error(transparent)]
    Secret(#[from] secrets::SecretError),
    #[error(transparent)]
    Descriptors(#[from] crate::server::limits::DescriptorError),
    #[error("scheduled reconciliation: {0}")]
    RestClient(#[from] RestError),
}

/// How often the probers and pollers look.
const PROBE_EVERY: Duration = Duration::from_secs(2);
const POLL_EVERY: Duration = Duration::from_secs(5);
/// Partitions are created ahead this often.
const PARTITIONS_EVERY: Duration = Duration::from_secs(3600);
/// How long the last acks may take to reach the server.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the background tasks and the HTTP server may take to end after ingest.
const TASKS_TIMEOUT: Duration = Duration::from_secs(5);

/// A built daemon, ready to run.
pub struct App {
    settings: Settings,
    db: Db,
    bus: Bus,
    binding: Binding,
    consumer: PullConsumer,
    listener: TcpListener,
    address: SocketAddr,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    rest: Option<(RestConfig, Arc<Tokens>)>,
    report_token: crate::server::reports::ReportToken,
    stop: CancellationToken,
}

impl App {
    pub async fn build(settings: Settings) -> Result<App, StartError> {
        let metrics = Arc::new(Metrics::new());
        metrics.set_instance(&settings.ingest.instance_name());
        metrics.rest.at_zero(
            &crate::reconcile::rest::Endpoint::ALL.map(|e| e.as_str()),
            &crate::reconcile::rest::token::TokenSource::LABELS,
        );
        let rest = if settings.reconcile.suppliers.is_empty() {
            None
        } else {
            let cfg = RestConfig::from_settings(&settings.rest)?;
            // One token for every scheduled run: renewed after a 401, re-read from its file at
            // each run.
            let tokens = Tokens::new(
                cfg.token.clone(),
                cfg.scheme,
                cfg.timeout,
                Some(metrics.rest.clone()),
            )?;
            Some((cfg, Arc::new(tokens)))
        };
        let report_token = secrets::load_secret(
            settings.http.report_token_file.as_ref(),
            secrets::REPORT_TOKEN_ENV,
            "report token",
        )?
        .map(Arc::new);
        crate::server::limits::reserve_descriptors(settings.http.max_connections)?;
        // Check before creating anything: the port, that PostgreSQL and NATS answer; then create.
        let addr = settings.http.addr;
        let listen = |source| StartError::Listen { addr, source };
        let listener = TcpListener::bind(addr).await.map_err(listen)?;
        let address = listener.local_addr().map_err(listen)?;
        let mut db_settings = settings.database.clone();
        // Writers, the pollers (chain, reconciliation metrics), and scheduled reconciliation
        // each need their connection.
        let needed = settings.ingest.writers as u32 + 2 + if rest.is_some() { 2 } else { 0 };
        db_settings.connections = db_settings.connections.max(needed);
        Db::reach(&db_settings).await?;
        let bus = Bus::connect(&settings.nats).await?;
        let db = Db::open_writer(&db_settings).await?;
        let binding = Binding::new(&settings.stream, &settings.ingest);
        let consumer = bus.bind(&binding).await?;
        tracing::info!(stream = %binding.stream, consumer = %binding.consumer, batch_size = settings.ingest.batch_size, "bound to JetStream");
        let health = Arc::new(Health::new(&metrics.registry));
        health.set_stall_timeout(settings.ingest.stall_timeout.get());
        Ok(App {
            settings,
            db,
            bus,
            binding,
            consumer,
            listener,
            address,
            metrics,
            health,
            rest,
            report_token,
            stop: CancellationToken::new(),
        })
    }

    /// The HTTP listener's address (the real port when 0 was asked for).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Cancelling this token stops the daemon gracefully.
    pub fn stop_token(&self) -> CancellationToken {
        self.stop.clone()
    }

    pub fn metrics(&self) -> Arc<Metrics> {
        self.metrics.clone()
    }

    /// Runs until stopped; returns what was ingested.
    pub async fn run_until_stopped(self) -> anyhow::Result<Totals> {
        let App {
            settings,
            db,
            bus,
            binding,
            consumer,
            listener,
            address,
            metrics,
            health,
            rest,
            report_token,
            stop,
        } = self;
        let signer = crate::checkpoint::from_settings(&settings, &db, &bus, &metrics)?;
        let tasks = TaskTracker::new();
        // Background tasks end when ingest has ended; HTTP last, after the acks are flushed.
        let background = CancellationToken::new();
        let http_stop = CancellationToken::new();
        if report_token.is_none() {
            tracing::info!("report endpoints are open: no report token configured (EVENT_AUDIT_REPORT_TOKEN or --report-token-file)");
        }
        let reports = ReportState {
            store: ReconcileStore::new(db.clone()),
            token: report_token,
        };
        let router = crate::server::router(health.clone(), metrics.registry.clone(), reports);
        tracing::info!(%address, "HTTP listening (/ lists the endpoints)");
        tasks.spawn(crate::server::serve(
            listener,
            router,
            crate::server::limits::Limits::from_settings(&settings.http),
            http_stop.clone(),
        ));
        tasks.spawn(probe_postgres(
            db.clone(),
            health.clone(),
            background.clone(),
        ));
        tasks.spawn(probe_nats(
            bus.client.clone(),
            consumer.clone(),
            metrics.clone(),
            health.clone(),
            background.clone(),
        ));
        tasks.spawn(poll_chain(db.clone(), metrics.clone(), background.clone()));
        signer.map(|s| tasks.spawn(s.run(background.clone())));
        tasks.spawn(schedule::poll(
            db.clone(),
            metrics.clone(),
            settings.reconcile.poll.get(),
            background.clone(),
        ));
        if let Some((rest, tokens)) = &rest {
            tracing::info!(suppliers = ?settings.reconcile.suppliers, whole_supplier = settings.reconcile.whole_supplier, interval = %settings.reconcile.interval, "scheduled reconciliation of each open batch");
            tasks.spawn(schedule::run(
                db.clone(),
                rest.clone(),
                tokens.clone(),
                settings.reconcile.clone(),
                metrics.clone(),
                background.clone(),
            ));
        }
        let sink = Sink::new(db.clone(), &settings.ingest.instance_name());
        if let Err(e) = sink
            .register_catalogue(crate::decode::catalogue::FINGERPRINT)
            .await
        {
            tracing::warn!(error = %e, "could not record the catalogue fingerprint");
        }
        let ingest = Ingest {
            sink: sink.clone(),
            metrics: metrics.clone(),
            health: health.clone(),
            naming: Naming {
                subject_prefix: Some(settings.stream.subject_prefix.clone())
                    .filter(|p| !p.is_empty()),
            },
            settings: settings.ingest.clone(),
        };
        let totals = ingest.run(&bus, &binding, consumer, stop).await;
        background.cancel();
        if let (true, Some((rest, tokens)), true) =
            (settings.ingest.exit_when_idle, &rest, totals.is_ok())
        {
            schedule::once(&db, rest, tokens, &settings.reconcile, &metrics).await;
        }
        // Acks are published asynchronously: make sure they reach the server before exiting,
        // within the shutdown timeout's bound.
        let flush_limit = FLUSH_TIMEOUT.min(settings.ingest.shutdown_timeout.get());
        match tokio::time::timeout(flush_limit, bus.client.flush()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "flushing acks failed; unflushed messages will be redelivered and skipped")
            }
            Err(_) => tracing::warn!(
                "flushing acks timed out; unflushed messages will be redelivered and skipped"
            ),
        }
        http_stop.cancel();
        tasks.close();
        if tokio::time::timeout(TASKS_TIMEOUT, tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("background tasks did not end in time; leaving them");
        }
        let totals = match totals {
            Ok(t) => t,
            Err(e) => {
                tracing::error!(error = %e, "stopped");
                return Err(e.into());
            }
        };
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
}

/// A token cancelled on SIGTERM or SIGINT.
pub(crate) fn shutdown_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let t = token.clone();
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
        tracing::info!("shutdown requested: finishing the batches in hand");
        t.cancel();
    });
    token
}

/// The only writer of `connection_up{postgres}`.
async fn probe_postgres(db: Db, health: Arc<Health>, stop: CancellationToken) {
    let mut tick = tokio::time::interval(PROBE_EVERY);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => health.set_postgres(db.ping().await),
        }
    }
}

/// The only writer of `connection_up{nats, jetstream}`, of the consumer's backlog gauges and
/// of the leader changes (polled at once, then every `POLL_EVERY`).
async fn probe_nats(
    client: async_nats::Client,
    consumer: PullConsumer,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    stop: CancellationToken,
) {
    let js = async_nats::jetstream::new(client.clone());
    let mut leaders = source::Leaders::default();
    let mut tick = tokio::time::interval(PROBE_EVERY);
    let mut n = 0u64;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        health.set_nats(client.connection_state() == async_nats::connection::State::Connected);
        n += 1;
        if (n - 1) % (POLL_EVERY.as_secs() / PROBE_EVERY.as_secs()).max(1) == 0 {
            let limit = crate::bus::API_TIMEOUT;
            leaders
                .observe(&js, &consumer, &metrics, &health, limit)
                .await;
        }
    }
}

/// The only writer of the chain metrics (the head can move through other instances and
/// `verify` runs elsewhere), and of the partitions created ahead.
async fn poll_chain(db: Db, metrics: Arc<Metrics>, stop: CancellationToken) {
    let verify = VerifyStore::new(db.clone());
    let mut tick = tokio::time::interval(POLL_EVERY);
    let mut partitions = tokio::time::interval(PARTITIONS_EVERY);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = partitions.tick() => {
                if let Err(e) = db.ensure_partitions(chrono::Utc::now()).await {
                    tracing::warn!(error = %e, "could not create partitions ahead");
                }
            }
            _ = tick.tick() => {
                let m = &metrics.chain;
                if let Ok((head, _)) = verify.chain_head().await {
                    m.head.set(head);
                }
                if let Ok(Some(run)) = verify.last_run().await {
                    run.export(m);
                }
            }
        }
    }
}

mod schedule {
    //! The daemon's scheduled reconciliation: every interval, each open batch of the configured
    //! suppliers separately (its manifest, its tolerances, meter points followed up), closing
    //! a batch that has been settled for `reconcile.close_after`; the whole supplier only with
    //! `reconcile.whole_supplier`. And the reconciliation metrics, polled from the stored runs.

    use std::sync::Arc;
    use std::time::Duration;

    use tokio_util::sync::CancellationToken;

    use crate::config::ReconcileSettings;
    use crate::db::Db;
    use crate::reconcile::model::RunReport;
    use crate::reconcile::poll::Poller;
    use crate::reconcile::rest::client::RestClient;
    use crate::reconcile::rest::token::Tokens;
    use crate::reconcile::rest::RestConfig;
    use crate::reconcile::store::ReconcileStore;
    use crate::reconcile::{self, NoProgress, Params};
    use crate::telemetry::metrics::Metrics;

    /// Reconciles every interval (the first run one interval after start) until stopped.
    pub async fn run(
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
    pub(crate) async fn once(
        db: &Db,
        rest: &RestConfig,
        tokens: &Arc<Tokens>,
        s: &ReconcileSettings,
        metrics: &Metrics,
    ) {
        let client =
            match RestClient::with_tokens(rest.clone(), tokens.clone(), Some(metrics.rest.clone()))
            {
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
            let mut p = Params::scheduled(s);
            p.since = None;
            let p = p.for_batch(&b, manifest);
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
    /// the only writer of `event_audit_reconcile_*`.
    pub async fn poll(db: Db, metrics: Arc<Metrics>, every: Duration, stop: CancellationToken) {
        let store = ReconcileStore::new(db);
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
        }
    }
}
