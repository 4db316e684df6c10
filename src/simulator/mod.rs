//! `event-audit simulate-platform`: a real HTTP server standing in for the platform. It plans a
//! migration batch from a seed ([`state`]), plays it once onto NATS JetStream (the
//! `data_import.import_process.*` events and `account.created-v1` with `is_imported`, [`play`]),
//! writes the ground truth (`--expected`), then serves the Data-Import status endpoints from the
//! same state ([`server`]) until SIGTERM or Ctrl-C.
//!
//! stderr carries `simulator listening on http://ADDR` and `batch played: N accounts, M events`
//! (in that order; the second once every event is stored), then the request count at exit. The
//! token comes from `--token-file` or `EVENT_AUDIT_REST_TOKEN`, never argv.

pub mod play;
pub mod server;
pub mod state;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use chrono::{DateTime, Utc};

use crate::config::parse_duration;
use crate::reconcile::command::parse_time;
use crate::secrets::{load_secret, REST_TOKEN_ENV};
use state::{Anomaly, PlanConfig};

/// Anomaly rates: the fraction of the batch's accounts that get each (distinct accounts).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Rates {
    /// Completion event dropped (→ missing_event).
    #[arg(long, default_value_t = 0.0)]
    pub drop_completion: f64,
    /// Complete event names another account number (→ identifier_mismatch).
    #[arg(long, default_value_t = 0.0)]
    pub wrong_identifier: f64,
    /// Error event although the account was created (→ error_but_imported).
    #[arg(long, default_value_t = 0.0)]
    pub error_but_created: f64,
    /// Cancelled, staged data gone (→ cancelled).
    #[arg(long, default_value_t = 0.0)]
    pub cancelled: f64,
    /// Cancelled event although the account was created (→ cancelled_but_imported).
    #[arg(long, default_value_t = 0.0)]
    pub cancelled_but_imported: f64,
    /// Dry runs only (→ dry_run_only).
    #[arg(long, default_value_t = 0.0)]
    pub dry_run: f64,
    /// Complete event published twice with one envelope id (→ matched).
    #[arg(long, default_value_t = 0.0)]
    pub duplicate_events: f64,
    /// An earlier attempt's error event delivered after the completion (→ matched).
    #[arg(long, default_value_t = 0.0)]
    pub late_events: f64,
    /// Left IN_PROGRESS, no event (→ in_progress).
    #[arg(long, default_value_t = 0.0)]
    pub left_in_progress: f64,
    /// Left staged, no event (→ pending).
    #[arg(long, default_value_t = 0.0)]
    pub left_pending: f64,
    /// Error event, not created (→ failed).
    #[arg(long, default_value_t = 0.0)]
    pub failed: f64,
    /// Complete event, but no account on the platform (→ missing_in_platform).
    #[arg(long, default_value_t = 0.0)]
    pub missing_in_platform: f64,
}

impl Rates {
    fn map(&self) -> BTreeMap<Anomaly, f64> {
        [
            (Anomaly::DropCompletion, self.drop_completion),
            (Anomaly::WrongIdentifier, self.wrong_identifier),
            (Anomaly::ErrorButCreated, self.error_but_created),
            (Anomaly::Cancelled, self.cancelled),
            (Anomaly::CancelledButImported, self.cancelled_but_imported),
            (Anomaly::DryRun, self.dry_run),
            (Anomaly::DuplicateEvents, self.duplicate_events),
            (Anomaly::LateEvents, self.late_events),
            (Anomaly::LeftInProgress, self.left_in_progress),
            (Anomaly::LeftPending, self.left_pending),
            (Anomaly::Failed, self.failed),
            (Anomaly::MissingInPlatform, self.missing_in_platform),
        ]
        .into_iter()
        .filter(|(_, r)| *r > 0.0)
        .collect()
    }
}

/// Options of `event-audit simulate-platform`.
#[derive(clap::Args, Debug, Clone)]
pub struct SimArgs {
    /// Listen address of the REST service (port 0: any free port, printed on stderr).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// The import supplier code the batch belongs to.
    #[arg(long, default_value = "SIM")]
    pub supplier: String,
    /// Accounts in the batch.
    #[arg(long, default_value_t = 100)]
    pub accounts: usize,
    /// Seed: the same seed gives the same accounts, numbers, anomalies and events.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, env = "NATS_URL", default_value = crate::config::DEFAULT_NATS_URL, hide_env_values = true)]
    pub nats_url: String,
    /// Subject to publish the events to.
    #[arg(long, default_value = "events.platform")]
    pub subject: String,
    #[command(flatten)]
    pub stream: crate::publish::StreamArgs,
    /// Simulated time of the batch's first account (10 ms between accounts). [default: now
    /// minus --age]
    #[arg(long, value_parser = parse_time)]
    pub start: Option<DateTime<Utc>>,
    /// How long ago the batch ran, when --start is not given.
    #[arg(long, value_parser = parse_duration, default_value = "1h")]
    pub age: Duration,
    #[command(flatten)]
    pub rates: Rates,
    /// `data_import.order_process.*` events to publish (outcomes drawn from the seed).
    #[arg(long, default_value_t = 0)]
    pub orders: usize,
    /// Fraction of REST requests answered 503 (retries overcome it).
    #[arg(long = "rest-5xx", default_value_t = 0.0)]
    pub rest_5xx: f64,
    /// Fraction of accounts whose per-account endpoints always answer 503 (→ unverified).
    #[arg(long, default_value_t = 0.0)]
    pub rest_down: f64,
    /// Fraction of REST requests answered slowly.
    #[arg(long, default_value_t = 0.0)]
    pub rest_slow: f64,
    #[arg(long, default_value_t = 2000)]
    pub rest_slow_ms: u64,
    /// How list records name the platform account number.
    #[arg(long, value_enum, default_value = "spec")]
    pub naming: server::Naming,
    /// Wrap the imported list in `{"count", "next", "results"}`.
    #[arg(long)]
    pub wrap_imported: bool,
    /// Write the ground truth (expected verdict per account, counts) to this JSON file.
    #[arg(long)]
    pub expected: Option<PathBuf>,
    /// File holding the token the REST service requires (else EVENT_AUDIT_REST_TOKEN).
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// JetStream publishes awaiting their ack at once.
    #[arg(long, default_value_t = 512)]
    pub window: usize,
}

pub async fn run(
    args: SimArgs,
    shutdown: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let token = load_secret(args.token_file.as_ref(), REST_TOKEN_ENV, "REST token")?
        .ok_or_else(|| anyhow::anyhow!("no token: set {REST_TOKEN_ENV} or pass --token-file"))?;
    let start = args.start.unwrap_or_else(|| {
        Utc::now()
            - chrono::Duration::from_std(args.age).unwrap_or_else(|_| chrono::Duration::hours(1))
    });
    let plan = state::plan(&PlanConfig {
        supplier: args.supplier.clone(),
        accounts: args.accounts,
        seed: args.seed,
        start,
        rates: args.rates.map(),
        rest_down: args.rest_down,
        orders: args.orders,
    })
    .map_err(|e| anyhow::anyhow!(e))?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    let addr = listener.local_addr()?;
    eprintln!("simulator listening on http://{addr}");
    let played = play::publish(
        &args.nats_url,
        &args.stream,
        &args.subject,
        &plan.events,
        args.window,
    )
    .await?;
    if let Some(path) = &args.expected {
        std::fs::write(path, serde_json::to_vec(&plan.expected())?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    eprintln!(
        "batch played: {} accounts, {played} events",
        plan.accounts.len()
    );
    let platform = Arc::new(server::Platform::new(
        plan,
        token,
        server::Faults {
            seed: args.seed,
            rate_5xx: args.rest_5xx,
            slow: args.rest_slow,
            slow_ms: args.rest_slow_ms,
        },
        args.naming,
        args.wrap_imported,
    ));
    let mut stop = shutdown;
    axum::serve(listener, server::router(platform.clone()))
        .with_graceful_shutdown(async move {
            let _ = stop.wait_for(|s| *s).await;
        })
        .await?;
    eprintln!(
        "simulator served {} requests ({} answered 503)",
        platform.served.load(Ordering::Relaxed),
        platform.failed.load(Ordering::Relaxed)
    );
    Ok(())
}
