//! Command-line interface: the subcommands and their options. `main.rs` parses, this dispatches.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "event-audit", version, about = "Makes a platform's event bus auditable during customer migrations")]
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
    /// Inspect the event catalogue generated from catalogue/.
    Catalogue {
        #[command(subcommand)]
        action: CatalogueAction,
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
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if cli.log_json {
        builder.json().init();
    } else {
        builder.init();
    }
}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Decode { files } => crate::cmd::decode::run(&files),
        Command::Catalogue { action } => match action {
            CatalogueAction::List => crate::cmd::catalogue::list(&mut std::io::stdout().lock()),
            CatalogueAction::Show { name } => {
                crate::cmd::catalogue::show(&mut std::io::stdout().lock(), &name)
            }
        },
    }
}
