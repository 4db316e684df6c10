//! The `event-audit-witness` binary: the independent witness, built without the daemon, its
//! database or its bus (`event-audit-witness serve`, the daemon's `witness serve` as well).

use std::process::ExitCode;

use clap::Parser;

use event_audit_witness::cli::{self, WitnessAction};

/// An independent C2SP tlog-witness for event-audit's log.
#[derive(Parser, Debug)]
#[command(name = "event-audit-witness", version, about, long_about = None)]
struct Cli {
    /// Log lines as JSON (one object per line) instead of text.
    #[arg(long, global = true)]
    log_json: bool,
    #[command(subcommand)]
    action: WitnessAction,
}

fn main() -> ExitCode {
    let args = Cli::parse();
    event_audit_witness::logging::init(args.log_json, "info");
    match cli::run(args.action) {
        Ok(code) => code,
        Err(err) => {
            eprintln!(
                "event-audit-witness: {}",
                event_audit_witness::logging::error_line(&err)
            );
            ExitCode::from(2)
        }
    }
}
