//! The development commands (behind the default-on `dev` feature): `demo`,
//! `simulate-platform`, `publish` and the hidden `bench`. Arguments only; the work is in
//! `crate::dev`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;
use serde_with::skip_serializing_none;

use super::args::{is_false, ConfigArg, HttpArgs, NatsArgs, StreamArgs};
use crate::config::{defaults, Dur, SimNaming};

/// Options of `event-audit demo`.
#[derive(clap::Args, Debug, Clone, Serialize)]
pub struct DemoArgs {
    #[command(flatten)]
    #[serde(skip)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) nats: NatsArgs,
    #[command(flatten)]
    pub(crate) http: HttpArgs,
    #[command(flatten)]
    pub(crate) demo: DemoGroup,
}

#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct DemoGroup {
    /// The demo's own database; when it is the default one, dropped and recreated at start and
    /// dropped again when the demo stops (unless --keep). Another database is never dropped.
    #[arg(
        long = "database-url",
        id = "demo.database_url",
        env = "EVENT_AUDIT_DEMO_DATABASE_URL",
        hide_env_values = true
    )]
    pub(crate) database_url: Option<String>,
    /// The platform simulator's REST listener.
    #[arg(long = "platform-addr", id = "demo.platform_addr")]
    pub(crate) platform_addr: Option<SocketAddr>,
    /// Accounts in the simulated migration batch.
    #[arg(long, id = "demo.accounts")]
    pub(crate) accounts: Option<usize>,
    /// Background catalogue events per second (a realistic mix, ~2% bad).
    #[arg(long = "load-rate", id = "demo.load_rate")]
    pub(crate) load_rate: Option<u64>,
    /// Seed of the simulated batch and of the background load (same seed, same accounts);
    /// random unless given.
    #[arg(long, id = "demo.seed")]
    pub(crate) seed: Option<u64>,
    /// Leave the demo's stream (EVENT_AUDIT_DEMO) and database behind when it stops, to query,
    /// verify or diff the stored runs afterwards (not to reconcile again: the simulated platform
    /// stops with the demo); without it, Ctrl-C drops both.
    #[arg(long, id = "demo.keep")]
    #[serde(skip_serializing_if = "is_false")]
    pub(crate) keep: bool,
}

/// Anomaly rates of the simulated batch, each a fraction (0 to 1) of its accounts.
#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct RatesArgs {
    /// Fraction of accounts whose completion event is dropped (→ missing_event).
    #[arg(long, id = "simulator.rates.drop_completion")]
    pub(crate) drop_completion: Option<f64>,
    /// Fraction whose complete event names another account number (→ identifier_mismatch).
    #[arg(long, id = "simulator.rates.wrong_identifier")]
    pub(crate) wrong_identifier: Option<f64>,
    /// Fraction with an error event although the account was created (→ error_but_imported).
    #[arg(long, id = "simulator.rates.error_but_created")]
    pub(crate) error_but_created: Option<f64>,
    /// Fraction cancelled, staged data gone (→ cancelled).
    #[arg(long, id = "simulator.rates.cancelled")]
    pub(crate) cancelled: Option<f64>,
    /// Fraction with a cancelled event although created (→ cancelled_but_imported).
    #[arg(long, id = "simulator.rates.cancelled_but_imported")]
    pub(crate) cancelled_but_imported: Option<f64>,
    /// Fraction with dry runs only (→ dry_run_only).
    #[arg(long, id = "simulator.rates.dry_run")]
    pub(crate) dry_run: Option<f64>,
    /// Fraction whose complete event is published twice with one envelope id (→ matched).
    #[arg(long, id = "simulator.rates.duplicate_events")]
    pub(crate) duplicate_events: Option<f64>,
    /// Fraction with an earlier attempt's error delivered after the completion (→ matched).
    #[arg(long, id = "simulator.rates.late_events")]
    pub(crate) late_events: Option<f64>,
    /// Fraction left IN_PROGRESS without event (→ in_progress).
    #[arg(long, id = "simulator.rates.left_in_progress")]
    pub(crate) left_in_progress: Option<f64>,
    /// Fraction left staged without event (→ pending).
    #[arg(long, id = "simulator.rates.left_pending")]
    pub(crate) left_pending: Option<f64>,
    /// Fraction with an error event, not created (→ failed).
    #[arg(long, id = "simulator.rates.failed")]
    pub(crate) failed: Option<f64>,
    /// Fraction with a complete event but no account on the platform (→ missing_in_platform).
    #[arg(long, id = "simulator.rates.missing_in_platform")]
    pub(crate) missing_in_platform: Option<f64>,
    /// Fraction imported whose registration was requested just now (→ registration in_flight).
    #[arg(long, id = "simulator.rates.registration_in_flight")]
    pub(crate) registration_in_flight: Option<f64>,
    /// Fraction imported whose registration was never requested (→ never_requested).
    #[arg(long, id = "simulator.rates.registration_never_requested")]
    pub(crate) registration_never_requested: Option<f64>,
    /// Fraction imported whose registration was requested with the import and never completed
    /// (→ stalled, with a registration grace below --age).
    #[arg(long, id = "simulator.rates.registration_stalled")]
    pub(crate) registration_stalled: Option<f64>,
    /// Fraction imported whose registration was requested, then cancelled (→ cancelled).
    #[arg(long, id = "simulator.rates.registration_cancelled")]
    pub(crate) registration_cancelled: Option<f64>,
    /// Fraction imported whose registration completed, then was reversed (→ reversed).
    #[arg(long, id = "simulator.rates.registration_reversed")]
    pub(crate) registration_reversed: Option<f64>,
}

#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct SimGroup {
    /// Listen address of the REST service (port 0: any free port, printed on stderr).
    #[arg(long, id = "simulator.listen")]
    pub(crate) listen: Option<SocketAddr>,
    /// The import supplier code the batch belongs to.
    #[arg(long, id = "simulator.supplier")]
    pub(crate) supplier: Option<String>,
    /// Accounts in the batch.
    #[arg(long, id = "simulator.accounts")]
    pub(crate) accounts: Option<usize>,
    /// Seed: the same seed gives the same accounts, numbers, anomalies and events (envelope
    /// ids included); random unless given, so that re-runs never reuse envelope ids.
    #[arg(long, id = "simulator.seed")]
    pub(crate) seed: Option<u64>,
    /// Subject to publish the events to.
    #[arg(long, id = "simulator.subject")]
    pub(crate) subject: Option<String>,
    /// Simulated time of the batch's first account, RFC 3339 (10 ms between accounts);
    /// now minus --age when not given.
    #[arg(long, id = "simulator.start")]
    pub(crate) start: Option<String>,
    /// How long ago the batch ran, when --start is not given.
    #[arg(long, id = "simulator.age")]
    pub(crate) age: Option<Dur>,
    #[command(flatten)]
    pub(crate) rates: RatesArgs,
    /// `data_import.order_process.*` events to publish (outcomes drawn from the seed).
    #[arg(long, id = "simulator.orders")]
    pub(crate) orders: Option<usize>,
    /// Fraction (0 to 1) of REST requests answered 503 (retries overcome it).
    #[arg(long = "rest-5xx", id = "simulator.rest_5xx")]
    pub(crate) rest_5xx: Option<f64>,
    /// Fraction (0 to 1) of accounts whose per-account endpoints always answer 503
    /// (→ unverified).
    #[arg(long = "rest-down", id = "simulator.rest_down")]
    pub(crate) rest_down: Option<f64>,
    /// Fraction (0 to 1) of REST requests answered slowly (after --rest-slow-delay).
    #[arg(long = "rest-slow", id = "simulator.rest_slow")]
    pub(crate) rest_slow: Option<f64>,
    /// How slowly the slow requests are answered.
    #[arg(long = "rest-slow-delay", id = "simulator.rest_slow_delay")]
    pub(crate) rest_slow_delay: Option<Dur>,
    /// How list records name the platform account number.
    #[arg(long, id = "simulator.naming", value_enum)]
    pub(crate) naming: Option<SimNaming>,
    /// Wrap the imported list in `{"count", "next", "results"}`.
    #[arg(long = "wrap-imported", id = "simulator.wrap_imported")]
    #[serde(skip_serializing_if = "is_false")]
    pub(crate) wrap_imported: bool,
    /// Write the ground truth (expected verdict per account, counts) to this JSON file.
    #[arg(long, id = "simulator.expected")]
    pub(crate) expected: Option<PathBuf>,
    /// File holding the token the REST service requires (else EVENT_AUDIT_REST_TOKEN).
    #[arg(long = "token-file", id = "simulator.token_file")]
    pub(crate) token_file: Option<PathBuf>,
    /// JetStream publishes awaiting their ack at once.
    #[arg(long, id = "simulator.window")]
    pub(crate) window: Option<usize>,
    /// Write the batch's manifest (one external account number a line, `order:ID` lines) to
    /// this file (mode 0600), for `event-audit batch register --accounts`.
    #[arg(long, id = "simulator.manifest")]
    pub(crate) manifest: Option<PathBuf>,
    /// A token expires after this many requests (401 `Token has expired.`); 0: never.
    #[arg(long = "token-uses", id = "simulator.token_uses")]
    pub(crate) token_uses: Option<u64>,
    /// File holding the organisation API key: serves the GraphQL token mutation at
    /// `POST /graphql` (issued tokens expire after --token-uses too).
    #[arg(long = "api-key-file", id = "simulator.api_key_file")]
    pub(crate) api_key_file: Option<PathBuf>,
}

/// Options of `event-audit simulate-platform`.
#[derive(clap::Args, Debug, Clone, Serialize)]
pub struct SimArgs {
    #[command(flatten)]
    #[serde(skip)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) nats: NatsArgs,
    #[command(flatten)]
    pub(crate) stream: StreamArgs,
    #[command(flatten)]
    pub(crate) simulator: SimGroup,
}

#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct PublishGroup {
    /// Messages to publish.
    #[arg(long, short = 'n', id = "publish.count")]
    pub(crate) count: Option<usize>,
    /// Subject to publish to (must be captured by the stream).
    #[arg(long, id = "publish.subject")]
    pub(crate) subject: Option<String>,
    /// Messages per second, each message paced; 0 = as fast as the server acknowledges.
    #[arg(long, id = "publish.rate")]
    pub(crate) rate: Option<u64>,
    /// Seed of the deterministic mix (envelope ids included); random unless given, so that
    /// re-runs never reuse envelope ids.
    #[arg(long, id = "publish.seed")]
    pub(crate) seed: Option<u64>,
    /// JetStream publishes awaiting their ack at once.
    #[arg(long, id = "publish.window")]
    pub(crate) window: Option<usize>,
}

/// Options of `event-audit publish`.
#[derive(clap::Args, Debug, Clone, Serialize)]
pub struct PublishArgs {
    #[command(flatten)]
    #[serde(skip)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) nats: NatsArgs,
    #[command(flatten)]
    pub(crate) stream: StreamArgs,
    #[command(flatten)]
    pub(crate) publish: PublishGroup,
}

#[derive(clap::Subcommand, Debug, Clone)]
pub enum BenchWhat {
    /// Drain a stream with an ack-only consumer (the bus ceiling).
    AckOnly {
        #[arg(long, env = "NATS_URL", default_value = defaults::NATS_URL, hide_env_values = true)]
        nats_url: String,
        #[arg(long)]
        stream: String,
        #[arg(long)]
        consumer: String,
        #[arg(long, default_value_t = defaults::BATCH_SIZE)]
        batch_size: usize,
    },
    /// Delete a stream (benchmark clean-up).
    DeleteStream {
        #[arg(long, env = "NATS_URL", default_value = defaults::NATS_URL, hide_env_values = true)]
        nats_url: String,
        #[arg(long)]
        stream: String,
    },
    /// COPY the rows of the same mix into audit.events (the database ceiling).
    Copy {
        #[arg(long)]
        database_url: String,
        #[arg(long, short = 'n')]
        count: usize,
        #[arg(long, default_value_t = defaults::SEED)]
        seed: u64,
        #[arg(long, default_value_t = defaults::BATCH_SIZE)]
        batch_size: usize,
        /// Write the same rows through the daemon's sink instead (one writer: rows, envelope-id
        /// claims, drift observations and the chain link, one transaction per batch), to see
        /// what the database does beyond the COPY without the bus or decoding.
        #[arg(long, conflicts_with = "primary_key_only")]
        through_sink: bool,
        /// COPY the same rows into a plain table of the log's columns with its primary key
        /// only (created in the database first): the floor of any design keeping these rows.
        #[arg(long)]
        primary_key_only: bool,
    },
}

pub(crate) fn demo(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load(&args)?;
    super::runtime()?.block_on(async {
        let stop = crate::app::shutdown_signal("stopping the demo");
        crate::dev::demo::run(settings, stop).await
    })?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn simulate(args: SimArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load(&args)?;
    super::runtime()?.block_on(async {
        let stop = crate::app::shutdown_signal("stopping the simulator");
        crate::dev::simulator::run(&settings, stop).await
    })?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn publish(args: PublishArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load(&args)?;
    let (n, secs) = super::runtime()?.block_on(crate::dev::publish::run(&settings, None))?;
    eprintln!(
        "published {n} messages to {} in {secs:.2}s ({:.0}/s)",
        settings.publish.subject,
        n as f64 / secs.max(1e-9)
    );
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn bench(what: BenchWhat) -> anyhow::Result<ExitCode> {
    use crate::dev::bench;
    let (label, (n, secs)) = super::runtime()?.block_on(async {
        anyhow::Ok(match what {
            BenchWhat::AckOnly {
                nats_url,
                stream,
                consumer,
                batch_size,
            } => (
                "ack-only",
                bench::ack_only(&nats_url, &stream, &consumer, batch_size).await?,
            ),
            BenchWhat::DeleteStream { nats_url, stream } => {
                bench::delete_stream(&nats_url, &stream).await?;
                ("deleted", (0, 0.0))
            }
            BenchWhat::Copy {
                database_url,
                count,
                seed,
                batch_size,
                through_sink,
                primary_key_only,
            } => {
                let into = match (through_sink, primary_key_only) {
                    (true, _) => bench::CopyInto::Sink,
                    (false, true) => bench::CopyInto::PrimaryKeyOnly,
                    (false, false) => bench::CopyInto::Log,
                };
                (
                    into.label(),
                    bench::copy_ceiling(&database_url, count, seed, batch_size, into).await?,
                )
            }
        })
    })?;
    println!("{label} {n} {secs:.3} {:.0}", n as f64 / secs.max(1e-9));
    Ok(ExitCode::SUCCESS)
}
