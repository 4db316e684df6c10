//! The development commands (behind the `dev` feature, off by default): `demo`,
//! `simulate-platform`, `publish` and the hidden `bench`. Arguments only; the work is in
//! `crate::dev`.

use std::process::ExitCode;

use super::args::{ConfigArg, HttpArgs, NatsArgs, StreamArgs};
use crate::config::defaults;

/// Options of `event-audit demo`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct DemoArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) nats: NatsArgs,
    #[command(flatten)]
    pub(crate) http: HttpArgs,
    #[command(flatten)]
    pub(crate) demo: DemoGroup,
}

options_group! {
    pub struct DemoGroup = [
        "demo.database_url",
        "demo.platform_addr",
        "demo.accounts",
        "demo.load_rate",
        "demo.seed",
        "demo.keep",
    ];
}

options_group! {
    /// Anomaly rates of the simulated batch, each a fraction (0 to 1) of its accounts.
    pub struct RatesArgs = [
        "simulator.rates.drop_completion",
        "simulator.rates.wrong_identifier",
        "simulator.rates.error_but_created",
        "simulator.rates.cancelled",
        "simulator.rates.cancelled_but_imported",
        "simulator.rates.dry_run",
        "simulator.rates.duplicate_events",
        "simulator.rates.late_events",
        "simulator.rates.left_in_progress",
        "simulator.rates.left_pending",
        "simulator.rates.failed",
        "simulator.rates.missing_in_platform",
        "simulator.rates.registration_in_flight",
        "simulator.rates.registration_never_requested",
        "simulator.rates.registration_stalled",
        "simulator.rates.registration_cancelled",
        "simulator.rates.registration_reversed",
    ];
}

options_group! {
    pub struct SimGroup = [
        "simulator.listen",
        "simulator.supplier",
        "simulator.accounts",
        "simulator.seed",
        "simulator.subject",
        "simulator.start",
        "simulator.age",
        RatesArgs,
        "simulator.orders",
        "simulator.rest_5xx",
        "simulator.rest_down",
        "simulator.rest_slow",
        "simulator.rest_slow_delay",
        "simulator.naming",
        "simulator.wrap_imported",
        "simulator.expected",
        "simulator.token_file",
        "simulator.window",
        "simulator.manifest",
        "simulator.token_uses",
        "simulator.api_key_file",
    ];
}

/// Options of `event-audit simulate-platform`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct SimArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) nats: NatsArgs,
    #[command(flatten)]
    pub(crate) stream: StreamArgs,
    #[command(flatten)]
    pub(crate) simulator: SimGroup,
}

options_group! {
    pub struct PublishGroup = [
        "publish.count",
        "publish.subject",
        "publish.rate",
        "publish.seed",
        "publish.window",
        "publish.accounts",
    ];
}

/// Options of `event-audit publish`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct PublishArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) nats: NatsArgs,
    #[command(flatten)]
    pub(crate) stream: StreamArgs,
    #[command(flatten)]
    pub(crate) publish: PublishGroup,
}

#[derive(clap::Subcommand, Debug, Clone)]
pub(crate) enum BenchWhat {
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
    /// A completeness proof on a large account index: written into a new database, the proof
    /// of one account read back, measured and checked (`dev::bench_index`).
    IndexProof {
        #[arg(long)]
        database_url: String,
        /// Accounts in the index.
        #[arg(long, default_value_t = 1_000_000)]
        labels: u64,
        /// Events of the account proven.
        #[arg(long, default_value_t = 50)]
        events: u64,
    },
    /// The account index of a log brought up to its head as fast as it goes (no ingest beside
    /// it): rows indexed a second.
    IndexCatchUp {
        #[arg(long)]
        database_url: String,
        /// The log's signing key (its index key is derived from it).
        #[arg(long)]
        signing_key_file: std::path::PathBuf,
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
    let settings = args.config.load()?;
    super::runtime()?.block_on(async {
        let stop = crate::app::shutdown_signal("stopping the demo");
        crate::dev::demo::run(settings, stop).await
    })?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn simulate(args: SimArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load()?;
    super::runtime()?.block_on(async {
        let stop = crate::app::shutdown_signal("stopping the simulator");
        crate::dev::simulator::run(&settings, stop).await
    })?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn publish(args: PublishArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load()?;
    let (n, secs, subject) =
        super::runtime()?.block_on(crate::dev::publish::run_to(&settings, None))?;
    eprintln!(
        "published {n} messages to {subject} in {secs:.2}s ({:.0}/s)",
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
            BenchWhat::IndexProof {
                database_url,
                labels,
                events,
            } => {
                let (n, secs) =
                    crate::dev::bench_index::index_proof(&database_url, labels, events).await?;
                ("index-built", (n, secs))
            }
            BenchWhat::IndexCatchUp {
                database_url,
                signing_key_file,
            } => (
                "index-caught-up",
                crate::dev::bench_index::catch_up(&database_url, &signing_key_file).await?,
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
