//! The daemon as a value: [`App::build`] reads and checks its files (tokens, signing key,
//! witness policy, the tiles' place), binds the HTTP listener (port 0 in tests), checks that
//! PostgreSQL and NATS answer, then creates the database and stream and binds the consumer;
//! [`App::run_until_stopped`] runs ingest with its background tasks (probers, chain poller,
//! checkpoint signer, scheduled reconciliation of each open batch, the reconciliation metrics
//! polled from the stored runs, retention when a period is set, HTTP) until the stop token is
//! cancelled (SIGTERM/SIGINT in the binary) or, with `exit_when_idle`, until the consumer is
//! drained. Nothing is aborted. The probers and pollers are in `probes`, the scheduled
//! reconciliation in `schedule`, the retention job in `crate::retention`.

pub mod metrics;
mod probes;
mod schedule;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::bus::{Bus, BusError};
use crate::config::{secrets, Settings};
use crate::db::{Db, DbError};
use crate::ingest::sink::Sink;
use crate::ingest::source::{Binding, PullConsumer};
use crate::ingest::{Ingest, IngestError, Totals};
use crate::reconcile::rest::token::Tokens;
use crate::reconcile::rest::{RestConfig, RestConfigError, RestError};
use crate::reconcile::store::ReconcileStore;
use crate::row::record::Naming;
use crate::server::reports::ReportState;
use crate::telemetry::health::Health;
use metrics::Metrics;

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
    #[error(transparent)]
    Signer(#[from] crate::witnessed::signer::CheckpointError),
    #[error("the log's tiles: {0}")]
    Tiles(#[from] crate::log::tiles::TilesError),
    #[error("HTTPS on the listener: {0}")]
    Tls(#[from] crate::tls::TlsError),
}

/// `event_audit_connection_tls{peer}` for the peers the daemon talks to: the database (as the
/// server says), NATS, and the REST service and the object store when configured (by scheme).
fn set_connection_tls(metrics: &Metrics, s: &Settings, db: &Db, bus: &Bus) {
    metrics.set_connection_tls("database", db.encrypted().unwrap_or(false));
    metrics.set_connection_tls("nats", bus.encrypted(&s.nats));
    let https = |u: &str| u.trim_start().starts_with("https://");
    if let Some(u) = &s.rest.url {
        metrics.set_connection_tls("rest", https(u));
    }
    if s.witness.tiles_url.is_some()
        || s.retention
            .archive_dir
            .as_deref()
            .is_some_and(|a| a.to_string_lossy().starts_with("s3://"))
    {
        let endpoint = s.object_store.endpoint.as_deref().unwrap_or("https://");
        metrics.set_connection_tls("object_store", https(endpoint));
    }
}

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
    /// HTTPS on the listener, when `http.tls_cert_file` is set.
    tls: Option<tokio_rustls::TlsAcceptor>,
    address: SocketAddr,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    rest: Option<(RestConfig, Arc<Tokens>)>,
    report_token: crate::server::reports::ReportToken,
    signer: Option<crate::witnessed::signer::Checked>,
    tiles: Option<crate::log::tiles::Tiles>,
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
                &cfg.tls,
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
        // Every file and setting is checked before anything is touched: the signing key (and
        // its origin and witness policy) and the tiles' place, as the tokens above.
        let signer = crate::witnessed::signer::check(&settings)?;
        let tiles = crate::log::tiles::configured(&settings)?;
        crate::server::limits::reserve_descriptors(settings.http.max_connections)?;
        let tls = crate::tls::listen::from_settings(
            settings.http.tls_cert_file.as_deref(),
            settings.http.tls_key_file.as_deref(),
        )?;
        // Check before creating anything: the port, that PostgreSQL and NATS answer; then create.
        let addr = settings.http.addr;
        let listen = |source| StartError::Listen { addr, source };
        let listener = TcpListener::bind(addr).await.map_err(listen)?;
        let address = listener.local_addr().map_err(listen)?;
        let mut db_settings = settings.database.clone();
        // Writers, the pollers (chain, reconciliation metrics), scheduled reconciliation and
        // retention each need their connection.
        let needed = settings.ingest.writers as u32
            + 2
            + if rest.is_some() { 2 } else { 0 }
            + u32::from(settings.retention.enabled());
        db_settings.connections = db_settings.connections.max(needed);
        Db::reach(&db_settings).await?;
        let bus = Bus::connect(&settings.nats).await?;
        let db = Db::open_writer(&db_settings).await?;
        set_connection_tls(&metrics, &settings, &db, &bus);
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
            tls,
            address,
            metrics,
            health,
            rest,
            report_token,
            signer,
            tiles,
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
            tls,
            address,
            metrics,
            health,
            rest,
            report_token,
            signer,
            tiles,
            stop,
        } = self;
        // Before the signer and ingest: the log's lost leaves back from a copy of its tiles
        // (a database restored from a backup), then ingest records what the bus still holds.
        let log = crate::log::Log::new(db.clone(), &settings.ingest.instance_name());
        crate::restore::start::at_start(&settings, &log, &metrics.restore, &metrics.ingest.rows)
            .await;
        // The log's tiles (a directory or a bucket), written by the signer, served at /log/.
        if let Some(t) = &tiles {
            let proof = t.store().prove("tiles").await?;
            metrics.witness.tiles_store_probe.set(proof.value());
        }
        let signer = crate::witnessed::signer::from_checked(
            signer,
            &settings,
            &db,
            &bus,
            (&metrics.witness, &metrics.index),
            tiles.clone(),
        )?
        .map(|s| s.clears_when_remembered(metrics.restore.memory_missing.clone()));
        if signer.is_none() {
            metrics.witness.checkpoints_off();
        }
        let tasks = TaskTracker::new();
        // Background tasks end when ingest has ended; HTTP last, after the acks are flushed.
        let background = CancellationToken::new();
        let http_stop = CancellationToken::new();
        let router = http_router(&db, &health, &metrics, report_token, tiles.clone());
        let scheme = if tls.is_some() { "HTTPS" } else { "HTTP" };
        tracing::info!(%address, "{scheme} listening (/ lists the endpoints)");
        tasks.spawn(crate::server::serve(
            listener,
            router,
            crate::server::limits::Limits::from_settings(&settings.http),
            tls,
            http_stop.clone(),
        ));
        probes::spawn(&tasks, &db, &bus, &consumer, &metrics, &health, &background);
        if let (Some(t), Some(s)) = (&tiles, &signer) {
            let repair =
                crate::witnessed::repair::Repair::new(t, s, &db, &settings, &metrics.witness);
            tasks.spawn(repair.run(background.clone()));
        }
        signer.map(|s| tasks.spawn(s.run(background.clone())));
        schedule::spawn(
            &tasks,
            &db,
            rest.as_ref(),
            &settings.reconcile,
            &metrics,
            &background,
        );
        if settings.retention.enabled() {
            crate::retention::spawn(
                &tasks,
                &db,
                &settings.retention,
                &settings.object_store,
                settings.ingest.instance_name(),
                &metrics.retention,
                &background,
            );
        }
        let ingest = ingest(&settings, &db, &metrics, &health).await;
        let totals = ingest.run(&bus, &binding, consumer, stop).await;
        background.cancel();
        if let (true, Some((rest, tokens)), true) =
            (settings.ingest.exit_when_idle, &rest, totals.is_ok())
        {
            schedule::once(&db, rest, tokens, &settings.reconcile, &metrics).await;
        }
        flush_acks(&bus.client, settings.ingest.shutdown_timeout.get()).await;
        http_stop.cancel();
        tasks.close();
        if tokio::time::timeout(TASKS_TIMEOUT, tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("background tasks did not end in time; leaving them");
        }
        stopped(totals, metrics.restore.leaves.get())
    }
}

/// The HTTP listener's routes: health, metrics, and the reports (behind the report token when
/// one is configured).
fn http_router(
    db: &Db,
    health: &Arc<Health>,
    metrics: &Metrics,
    report_token: crate::server::reports::ReportToken,
    tiles: Option<crate::log::tiles::Tiles>,
) -> axum::Router {
    if report_token.is_none() {
        tracing::info!("report endpoints are open: no report token configured (EVENT_AUDIT_REPORT_TOKEN or --report-token-file)");
    }
    let reports = ReportState {
        store: ReconcileStore::new(db.clone()),
        token: report_token,
    };
    crate::server::router(health.clone(), metrics.registry.clone(), reports, tiles)
}

/// The ingest pipeline, once the catalogue's fingerprint is recorded (a failure to record it
/// is logged, not fatal).
async fn ingest(
    settings: &Settings,
    db: &Db,
    metrics: &Arc<Metrics>,
    health: &Arc<Health>,
) -> Ingest {
    let sink = Sink::new(db.clone(), &settings.ingest.instance_name());
    if let Err(e) = sink
        .register_catalogue(crate::decode::catalogue::FINGERPRINT)
        .await
    {
        tracing::warn!(error = %e, "could not record the catalogue fingerprint");
    }
    Ingest {
        sink,
        metrics: metrics.ingest.clone(),
        recover: metrics.recover.clone(),
        health: health.clone(),
        naming: Naming {
            subject_prefix: Some(settings.stream.subject_prefix.clone()).filter(|p| !p.is_empty()),
            encoding_2: dev_row_encoding_2(),
        },
        settings: settings.ingest.clone(),
    }
}

/// Acks are published asynchronously: make sure they reach the server before exiting, within
/// the shutdown timeout's bound.
async fn flush_acks(client: &async_nats::Client, shutdown_timeout: Duration) {
    let flush_limit = FLUSH_TIMEOUT.min(shutdown_timeout);
    match tokio::time::timeout(flush_limit, client.flush()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "flushing acks failed; unflushed messages will be redelivered and skipped")
        }
        Err(_) => tracing::warn!(
            "flushing acks timed out; unflushed messages will be redelivered and skipped"
        ),
    }
}

/// The run's end, logged: its totals (with the rows recorded by recovery from the bus and the
/// leaves restored from a copy of the tiles at start-up), or the error ingest stopped with.
fn stopped(totals: Result<Totals, IngestError>, restored: u64) -> anyhow::Result<Totals> {
    let totals = match totals {
        Ok(t) => t,
        Err(e) => {
            tracing::error!(error = %e, "stopped");
            return Err(e.into());
        }
    };
    // Two rates, each named by what it is over: the time a batch was in hand (how fast the
    // daemon records), and the span from the first fetch to the last ack (idle time included:
    // how fast messages came).
    let (busy, span) = (totals.busy_secs(), totals.span_secs());
    tracing::info!(
        messages = totals.messages,
        inserted = totals.inserted,
        batches = totals.batches,
        recovered = totals.recovered,
        restored_leaves = restored,
        busy_secs = busy,
        per_busy_sec = totals.rate(busy),
        span_secs = span,
        per_span_sec = totals.rate(span),
        "stopped"
    );
    Ok(totals)
}

pub(crate) use event_audit_base::signal::shutdown_signal;

/// Development builds only: `EVENT_AUDIT_DEV_ROW_ENCODING=2` makes the daemon write new rows in
/// encoding 2, as before version 3, so that `scripts/bench-encoding.sh` can compare the two with
/// one binary. Production builds always write version 3.
fn dev_row_encoding_2() -> bool {
    #[cfg(feature = "dev")]
    {
        std::env::var("EVENT_AUDIT_DEV_ROW_ENCODING").as_deref() == Ok("2")
    }
    #[cfg(not(feature = "dev"))]
    false
}
