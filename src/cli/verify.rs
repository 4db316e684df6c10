//! `event-audit verify`: its options, and the rendering of [`crate::verify::run`]'s report. The
//! run walks the chain as a reader (never creates the database, never migrates), rehashing every
//! row over `--db-connections` connections, then reports completeness against the streams' state
//! on NATS (unless `--skip-completeness`); this prints the report as one JSON document (with `--public-key`, the witness's report and the auditor's
//! state beside the chain's), a summary on stderr; exit 0 intact, 1 broken (or a break
//! remembered and not acknowledged), 2 could not verify.

use std::process::ExitCode;

use super::args::{ConfigArg, NatsArgs, PooledDatabaseArgs};
use super::witness_args::ReaderArgs;
use crate::verify::{CouldNotVerify, Recorded, VerifyOptions, VerifyReport};

/// Options of `event-audit verify`.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct VerifyArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) database: PooledDatabaseArgs,
    #[command(flatten)]
    pub(crate) nats: NatsArgs,
    #[command(flatten)]
    pub(crate) verify: VerifyGroup,
    /// An archive directory (`event-audit archive --out`): every archived row must make its
    /// row hash again and match the row the log keeps at its place (pruned or not), every file
    /// its manifest's digest, a pruned partition's file the one its prune record names.
    #[arg(long)]
    pub(crate) archive: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub(crate) witness: ReaderArgs,
}

options_group! {
    /// What `verify` checks besides the chain, of its settings.
    pub struct VerifyGroup = [
        "verify.skip_completeness",
        "verify.mirror",
    ];
}

pub(super) fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load()?;
    let options = VerifyOptions {
        archive: args.archive.clone(),
    };
    match super::runtime()?.block_on(crate::verify::run(&settings, &options)) {
        Ok(report) => render(report),
        Err(stopped) => {
            if let Some(v) = &stopped.standby {
                eprintln!("{}", v.line());
            }
            if let Some(found) = &stopped.found {
                print_summary(found);
            }
            match stopped.why {
                CouldNotVerify::Failed(e) => Err(e),
                why => {
                    eprintln!("event-audit: {why}");
                    Ok(ExitCode::from(2))
                }
            }
        }
    }
}

/// The summary on stderr, the one JSON document on stdout, and the exit code.
fn render(report: VerifyReport) -> anyhow::Result<ExitCode> {
    print_summary(&report);
    // Through a `Value`: the document's keys in the order it has always printed them.
    println!("{}", serde_json::to_value(&report)?);
    let code = ExitCode::from(report.exit_code());
    match report.recorded {
        Recorded::Yes => Ok(code),
        Recorded::Standby => {
            eprintln!("this run is not recorded in audit.verify_runs: a standby takes no writes (runs verified on the primary are)");
            Ok(code)
        }
        Recorded::Failed(e) => Err(e.into()),
    }
}

/// The summary lines of what was found, in the order the checks run: the standby's view, the
/// chain, the witness and the auditor's state, the mirror, the archive, the account index.
fn print_summary(report: &VerifyReport) {
    if let Some(v) = &report.chain.standby {
        eprintln!("{}", v.line());
    }
    eprintln!("{}", chain_line(&report.chain, report.not_rehashed_before));
    super::verify_witness::print(report);
    if let Some(m) = &report.mirror {
        eprintln!("{}", m.line());
    }
    if let Some(a) = &report.archive {
        eprintln!("{}", a.line());
    }
    if let Some(i) = &report.index {
        eprintln!("{}", i.line());
    }
}

/// The chain's one-line summary: the log's real counts, and which rows were not rehashed.
fn chain_line(report: &crate::verify::ChainReport, skipped: Option<u64>) -> String {
    let rehashed = match skipped {
        Some(n) => format!(
            "; {} rehashed (--incremental: the rows before size {n} were not rehashed)",
            report.rows_rehashed
        ),
        None => ", every row rehashed".to_owned(),
    };
    let rehashed = match &report.erasures {
        Some(e) => format!("{rehashed}; {}", e.line()),
        None => rehashed,
    };
    if report.ok {
        format!(
            "chain intact: {} links, {} rows{rehashed}",
            report.links, report.rows
        )
    } else {
        format!(
            "chain BROKEN: {} ({} break(s) in all; {} links, {} rows{rehashed})",
            report.first_break.as_deref().unwrap_or("?"),
            report.breaks_total,
            report.links,
            report.rows
        )
    }
}
