//! `event-audit simulate-platform`: a real HTTP server standing in for the platform. It plans a
//! migration batch from a seed ([`state`]; a random one unless `--seed` is given, so re-runs
//! never reuse envelope ids), plays it once onto NATS JetStream (the
//! `data_import.import_process.*` events, `account.created-v1` with `is_imported`, and the
//! join-supplier events of the imported accounts' meter points, [`play`], [`registration`]),
//! writes the ground truth (`--expected`) and the batch's manifest (`--manifest`), both with
//! mode 0600, then serves the Data-Import status endpoints (and, with `--api-key-file`, a
//! GraphQL token mutation) from the same state ([`server`]) until SIGTERM or Ctrl-C.
//!
//! stderr carries `simulator listening on http://ADDR`, the seed, and `batch played: N
//! accounts, M events` (in that order; the last once every event is stored), then the request
//! count at exit. Inside the demo ([`Simulator::start_telling`]) these lines go to stdout with
//! the demo's own, so that its stderr holds only warnings. Secrets come from
//! `--token-file`/`EVENT_AUDIT_REST_TOKEN` and
//! `--api-key-file`/`EVENT_AUDIT_API_KEY`, never argv.

mod play;
mod registration;
pub(crate) mod server;
mod state;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use anyhow::Context;
use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;

use crate::config::secrets::{load_secret, API_KEY_ENV, REST_TOKEN_ENV};
use crate::config::{Settings, SimRates};
use crate::reconcile::manifest::write_private;
use state::{Anomaly, PlanConfig};

/// The anomaly rates that are set.
fn rates(r: &SimRates) -> BTreeMap<Anomaly, f64> {
    [
        (Anomaly::DropCompletion, r.drop_completion),
        (Anomaly::WrongIdentifier, r.wrong_identifier),
        (Anomaly::ErrorButCreated, r.error_but_created),
        (Anomaly::Cancelled, r.cancelled),
        (Anomaly::CancelledButImported, r.cancelled_but_imported),
        (Anomaly::DryRun, r.dry_run),
        (Anomaly::DuplicateEvents, r.duplicate_events),
        (Anomaly::LateEvents, r.late_events),
        (Anomaly::LeftInProgress, r.left_in_progress),
        (Anomaly::LeftPending, r.left_pending),
        (Anomaly::Failed, r.failed),
        (Anomaly::MissingInPlatform, r.missing_in_platform),
        (Anomaly::RegistrationInFlight, r.registration_in_flight),
        (
            Anomaly::RegistrationNeverRequested,
            r.registration_never_requested,
        ),
        (Anomaly::RegistrationStalled, r.registration_stalled),
        (Anomaly::RegistrationCancelled, r.registration_cancelled),
        (Anomaly::RegistrationReversed, r.registration_reversed),
    ]
    .into_iter()
    .filter(|(_, r)| *r > 0.0)
    .collect()
}

/// A simulator whose batch is played and whose listener is bound, ready to serve.
pub struct Simulator {
    listener: tokio::net::TcpListener,
    addr: std::net::SocketAddr,
    platform: Arc<server::Platform>,
    /// The ground truth (expected verdict per account, counts).
    pub expected: serde_json::Value,
    /// The batch's manifest (its accounts and orders).
    pub manifest: crate::reconcile::Manifest,
    /// Where its lines go (stderr, or the demo's stdout).
    tell: fn(&str),
}

/// A line on stderr: the standalone simulator's.
fn to_stderr(line: &str) {
    eprintln!("{line}");
}

impl Simulator {
    /// Plans the batch of `settings.simulator`, binds its listener, plays the batch onto the
    /// stream (returning once JetStream stored every event) and writes the ground truth.
    pub async fn start(settings: &Settings) -> anyhow::Result<Simulator> {
        Simulator::start_telling(settings, to_stderr).await
    }

    /// [`Simulator::start`], its lines (listening, seed, batch played, requests served) given
    /// to `tell`.
    pub async fn start_telling(settings: &Settings, tell: fn(&str)) -> anyhow::Result<Simulator> {
        let sim = &settings.simulator;
        let token = load_secret(sim.token_file.as_ref(), REST_TOKEN_ENV, "REST token")?
            .ok_or_else(|| {
                anyhow::anyhow!("no token: set {REST_TOKEN_ENV} or pass --token-file")
            })?;
        let api_key = match &sim.api_key_file {
            Some(f) => load_secret(Some(f), API_KEY_ENV, "organisation API key")?,
            None => None,
        };
        let seed = sim.seed.unwrap_or_else(rand::random);
        let now = Utc::now();
        let start = match &sim.start {
            Some(t) => DateTime::parse_from_rfc3339(t)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| anyhow::anyhow!("--start `{t}` is not an RFC 3339 time"))?,
            None => now - sim.age.chrono(),
        };
        let plan = state::plan(&PlanConfig {
            supplier: sim.supplier.clone(),
            accounts: sim.accounts,
            seed,
            start,
            rates: rates(&sim.rates),
            rest_down: sim.rest_down,
            orders: sim.orders,
            now,
        })
        .map_err(|e| anyhow::anyhow!(e))?;
        let listener = tokio::net::TcpListener::bind(sim.listen)
            .await
            .with_context(|| format!("binding {}", sim.listen))?;
        let addr = listener.local_addr()?;
        tell(&format!("simulator listening on http://{addr}"));
        tell(&format!(
            "seed {seed} (pass --seed {seed} to play the same batch again)"
        ));
        let played = play::publish(
            &settings.nats,
            &settings.stream,
            &sim.subject,
            &plan.events,
            sim.window,
        )
        .await?;
        let expected = serde_json::to_value(plan.expected())?;
        if let Some(path) = &sim.expected {
            write_private(path, &serde_json::to_vec(&expected)?)
                .with_context(|| format!("writing {}", path.display()))?;
        }
        let manifest = plan.manifest();
        if let Some(path) = &sim.manifest {
            write_private(path, manifest.render().as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
        }
        tell(&format!(
            "batch played: {} accounts, {played} events",
            plan.accounts.len()
        ));
        let platform = Arc::new(server::Platform::new(
            plan,
            server::Auth {
                token,
                uses: sim.token_uses,
                api_key,
            },
            server::Faults {
                seed,
                rate_5xx: sim.rest_5xx,
                slow: sim.rest_slow,
                slow_ms: u64::try_from(sim.rest_slow_delay.get().as_millis()).unwrap_or(u64::MAX),
            },
            sim.naming,
            sim.wrap_imported,
        ));
        Ok(Simulator {
            listener,
            addr,
            platform,
            expected,
            manifest,
            tell,
        })
    }

    /// The REST service's address.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// The served platform (counters, the accounts' state), shared with the server.
    pub fn platform(&self) -> Arc<server::Platform> {
        self.platform.clone()
    }

    /// Serves the status endpoints until `stop` is cancelled.
    pub async fn serve(self, stop: CancellationToken) -> anyhow::Result<()> {
        let platform = self.platform;
        axum::serve(self.listener, server::router(platform.clone()))
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await?;
        (self.tell)(&format!(
            "simulator served {} requests ({} answered 503, {} refused an expired token; {} tokens issued)",
            platform.served.load(Ordering::Relaxed),
            platform.failed.load(Ordering::Relaxed),
            platform.expired.load(Ordering::Relaxed),
            platform.issued.load(Ordering::Relaxed)
        ));
        Ok(())
    }
}

/// Plans, plays and serves the batch of `settings.simulator` until `stop` is cancelled.
pub(crate) async fn run(settings: &Settings, stop: CancellationToken) -> anyhow::Result<()> {
    Simulator::start(settings).await?.serve(stop).await
}
