//! Command-line interface: the subcommands and their options. `main.rs` parses, this dispatches.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "event-audit",
    version,
    about = "Makes a platform's event bus auditable during customer migrations"
)]
pub struct Cli {
    /// Log as JSON lines instead of human-readable text.
    #[arg(long, global = true, env = "EVENT_AUDIT_LOG_JSON")]
    pub log_json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Decode JSON Lines envelopes (files, or stdin) and print one verdict per line.
    Decode {
        /// Input files, one envelope per line; stdin when none.
        files: Vec<PathBuf>,
    },
    /// The first run: platform simulator + batch with anomalies + load + daemon + reconciliation;
    /// prints where to look. Ctrl-C stops everything.
    Demo(crate::demo::DemoArgs),
    /// The daemon: consume the stream through a durable consumer into the audit log.
    Run(crate::config::RunArgs),
    /// Load generator: publish N catalogue events of a realistic mix to a subject.
    Publish(crate::publish::PublishArgs),
    /// Reconcile a migration batch: outcome events against the platform's import status
    /// (exit 0 all matched, 1 mismatches, 2 could not complete).
    Reconcile(crate::reconcile::command::ReconcileArgs),
    /// A simulated platform: plays a seeded migration batch onto NATS and serves the
    /// Data-Import status endpoints (with injectable anomalies and faults).
    SimulatePlatform(crate::simulator::SimArgs),
    /// Walk the audit log's hash chain; name the first row that does not match (exit 1).
    Verify {
        #[command(flatten)]
        conn: crate::config::ConnArgs,
    },
    /// Throughput ceilings for scripts/bench-ingest.sh.
    #[command(hide = true)]
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
    /// Inspect the event catalogue generated from catalogue/.
    Catalogue {
        #[command(subcommand)]
        action: CatalogueAction,
    },
}

#[derive(Subcommand, Debug)]
pub enum BenchWhat {
    /// Drain a stream with an ack-only consumer (the bus ceiling).
    AckOnly {
        #[arg(long, env = "NATS_URL", default_value = crate::config::DEFAULT_NATS_URL)]
        nats_url: String,
        #[arg(long)]
        stream: String,
        #[arg(long)]
        consumer: String,
        #[arg(long, default_value_t = 2000)]
        batch_size: usize,
    },
    /// Delete a stream (benchmark clean-up).
    DeleteStream {
        #[arg(long, env = "NATS_URL", default_value = crate::config::DEFAULT_NATS_URL)]
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
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value_t = 2000)]
        batch_size: usize,
    },
}

#[derive(Subcommand, Debug)]
pub enum CatalogueAction {
    /// One line per event version: full name, required and optional field counts.
    List,
    /// One event version's (or shape's) fields, types and requiredness, shapes expanded.
    Show {
        /// Full event name (e.g. account.created-v1) or shape name.
        name: String,
    },
}

/// Human-readable logs on stderr by default, JSON with `--log-json`; `RUST_LOG` filters.
pub fn init_tracing(cli: &Cli) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if cli.log_json {
        builder.json().init();
    } else {
        builder.init();
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Demo(args) => {
            runtime()?.block_on(async {
                let shutdown = crate::daemon::shutdown_signal();
                crate::demo::run(args, shutdown).await
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Run(args) => {
            let cfg = args.resolve()?;
            runtime()?.block_on(async {
                let shutdown = crate::daemon::shutdown_signal();
                crate::daemon::run(cfg, shutdown).await
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench { what } => {
            let (label, (n, secs)) = runtime()?.block_on(async {
                anyhow::Ok(match what {
                    BenchWhat::AckOnly {
                        nats_url,
                        stream,
                        consumer,
                        batch_size,
                    } => (
                        "ack-only",
                        crate::bench::ack_only(&nats_url, &stream, &consumer, batch_size).await?,
                    ),
                    BenchWhat::DeleteStream { nats_url, stream } => {
                        let bus = crate::bus::Bus::connect(&nats_url).await?;
                        bus.js
                            .delete_stream(&stream)
                            .await
                            .map_err(|e| anyhow::anyhow!("deleting stream {stream}: {e}"))?;
                        ("deleted", (0, 0.0))
                    }
                    BenchWhat::Copy {
                        database_url,
                        count,
                        seed,
                        batch_size,
                    } => (
                        "copy",
                        crate::bench::copy_ceiling(&database_url, count, seed, batch_size).await?,
                    ),
                })
            })?;
            println!("{label} {n} {secs:.3} {:.0}", n as f64 / secs.max(1e-9));
            Ok(ExitCode::SUCCESS)
        }
        Command::Publish(args) => {
            let (n, secs) = runtime()?.block_on(crate::publish::run(&args))?;
            eprintln!(
                "published {n} messages to {} in {secs:.2}s ({:.0}/s)",
                args.subject,
                n as f64 / secs.max(1e-9)
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Verify { conn } => {
            let conn = conn.resolve()?;
            runtime()?.block_on(async {
                let store = crate::store::Store::open(&conn.database_url, 2).await?;
                let report = store.verify().await?;
                println!("{}", serde_json::to_string(&report)?);
                if report.ok {
                    eprintln!("chain intact: {} links, {} rows", report.links, report.rows);
                    Ok(ExitCode::SUCCESS)
                } else {
                    eprintln!(
                        "chain BROKEN: {}",
                        report.first_break.as_deref().unwrap_or("?")
                    );
                    Ok(ExitCode::from(1))
                }
            })
        }
        Command::Reconcile(args) => crate::reconcile::command::run(args),
        Command::SimulatePlatform(args) => {
            runtime()?.block_on(async {
                let shutdown = crate::daemon::shutdown_signal();
                crate::simulator::run(args, shutdown).await
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Decode { files } => crate::cmd::decode::run(&files),
        Command::Catalogue { action } => match action {
            CatalogueAction::List => crate::cmd::catalogue::list(&mut std::io::stdout().lock()),
            CatalogueAction::Show { name } => {
                crate::cmd::catalogue::show(&mut std::io::stdout().lock(), &name)
            }
        },
    }
}
