//! The `event-audit-proof` binary: the auditor's commands (`verify-proof`, `mirror`, `tiles
//! fsck`) without the daemon, its database or its bus.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use event_audit_proof::cli::{mirror, tiles, verify_proof};

/// Checks event-audit's evidence offline: bundles, mirrors of the log's tiles, a store's tiles.
#[derive(Parser, Debug)]
#[command(name = "event-audit-proof", version, about, long_about = None)]
struct Cli {
    /// Log lines as JSON (one object per line) instead of text.
    #[arg(long, global = true)]
    log_json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Check an evidence bundle offline: exit 0 proven, 1 rejected, 2 unusable.
    VerifyProof(verify_proof::VerifyProofArgs),
    /// Copy the log's tiles and checkpoints into a directory, checking each against the last.
    Mirror(mirror::MirrorArgs),
    /// The log's tiles in a store: `tiles fsck` checks them against a signed checkpoint.
    Tiles {
        #[command(subcommand)]
        action: tiles::TilesAction,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    event_audit_proof::logging::init(cli.log_json, "info");
    let done = match cli.command {
        Command::VerifyProof(args) => verify_proof::run(args),
        Command::Mirror(args) => mirror::run(args),
        Command::Tiles { action } => tiles::run(action),
    };
    match done {
        Ok(code) => code,
        Err(err) => {
            eprintln!(
                "event-audit-proof: {}",
                event_audit_proof::logging::error_line(&err)
            );
            ExitCode::from(2)
        }
    }
}
