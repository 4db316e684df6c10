//! `event-audit reconcile`: one run from the command line. Prints the report (a table on a
//! terminal, JSON otherwise, or `--format`/`--output`), a one-line summary with the REST call
//! count on stderr, and exits 0 (all matched or tolerated), 1 (mismatches) or 2 (could not
//! complete, or `unverified` accounts and no mismatch).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use chrono::{DateTime, NaiveDate, Utc};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::client::RestClient;
use super::model::Tolerance;
use super::report::{self, Format};
use super::{execute, Manifest, Params};
use crate::config::{parse_duration, ConnArgs, RestArgs};
use crate::metrics::Metrics;
use crate::store::{redact_url, Store};

/// Options of `event-audit reconcile`.
#[derive(clap::Args, Debug, Clone)]
pub struct ReconcileArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub rest: RestArgs,
    /// Import supplier code (repeatable). Events carry no supplier code: name every supplier
    /// of the batch.
    #[arg(long = "supplier", required = true)]
    pub suppliers: Vec<String>,
    /// The batch manifest: one external account number a line. Without it: every account the
    /// suppliers list and every account with outcome events in the window.
    #[arg(long)]
    pub accounts: Option<PathBuf>,
    /// Outcome events at or after this time (RFC 3339, or a date: midnight UTC).
    #[arg(long, value_parser = parse_time)]
    pub since: Option<DateTime<Utc>>,
    /// Outcome events before this time.
    #[arg(long, value_parser = parse_time)]
    pub until: Option<DateTime<Utc>>,
    /// An account imported less than this long ago without outcome event is `awaiting_event`,
    /// not `missing_event`.
    #[arg(long, value_parser = parse_duration, default_value = "15m")]
    pub grace: Duration,
    /// Output format. [default: table on a terminal, else json; with --output, from its
    /// extension]
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Write the report to this file (created with mode 0600: it holds personal data).
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Count a verdict as OK for the exit code: `VERDICT` (any number) or `VERDICT=N` (up to
    /// N accounts). Repeatable.
    #[arg(long = "tolerate")]
    pub tolerances: Vec<Tolerance>,
    /// Ask account-transfer-status about every pending account too (tells `in_progress` from
    /// `pending` where the platform lists accounts being processed as pending).
    #[arg(long)]
    pub check_pending: bool,
    /// Add each imported account's meter point statuses (one more request per account).
    #[arg(long)]
    pub meter_points: bool,
    /// List matched accounts in the table too.
    #[arg(long)]
    pub show_matched: bool,
}

/// RFC 3339, or `YYYY-MM-DD` (midnight UTC).
pub fn parse_time(s: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s.trim()) {
        return Ok(t.with_timezone(&Utc));
    }
    NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .ok_or_else(|| format!("`{s}` is not an RFC 3339 time or a YYYY-MM-DD date"))
}

fn format_of(args: &ReconcileArgs) -> Format {
    if let Some(f) = args.format {
        return f;
    }
    if let Some(ext) = args
        .output
        .as_ref()
        .and_then(|p| p.extension())
        .and_then(|e| e.to_str())
    {
        if let Some(f) = Format::parse(&ext.to_ascii_lowercase()) {
            return f;
        }
    }
    if args.output.is_none() && std::io::stdout().is_terminal() {
        Format::Table
    } else {
        Format::Json
    }
}

fn write_private(path: &PathBuf, body: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    f.write_all(body)
        .with_context(|| format!("writing {}", path.display()))
}

pub fn run(args: ReconcileArgs) -> anyhow::Result<ExitCode> {
    if args.suppliers.iter().any(|s| s.trim().is_empty()) {
        anyhow::bail!("--supplier must not be empty");
    }
    let conn = args.conn.resolve()?;
    let rest = args
        .rest
        .resolve_with(&args.conn.config)?
        .ok_or_else(|| anyhow::anyhow!("--rest-url (or EVENT_AUDIT_REST_URL) is required"))?;
    let manifest = match &args.accounts {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading the manifest {}", path.display()))?;
            let name = path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            Some(Manifest::parse(&name, &text))
        }
        None => None,
    };
    let grace = chrono::Duration::from_std(args.grace).context("--grace is too long")?;
    let params = Params {
        suppliers: args.suppliers.clone(),
        manifest,
        since: args.since,
        until: args.until,
        grace,
        tolerances: args.tolerances.clone(),
        check_pending: args.check_pending,
        meter_points: args.meter_points,
        trigger: "cli",
    };
    let format = format_of(&args);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let store = Store::open(&conn.database_url, 4).await.with_context(|| {
            format!(
                "opening the audit log at {}",
                redact_url(&conn.database_url)
            )
        })?;
        let metrics = Arc::new(Metrics::new());
        let client = RestClient::new(rest, metrics.clone())?;
        let progress = if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(
                "{spinner} per-account requests {bar:40} {pos}/{len} {per_sec} eta {eta}",
            ) {
                bar.set_style(style);
            }
            bar
        } else {
            ProgressBar::hidden()
        };
        let report = execute(&store, &client, &params, &progress, &metrics).await;
        let body = report::render(&report, format, args.show_matched);
        match &args.output {
            Some(path) => write_private(path, body.as_bytes())?,
            None => {
                let mut out = std::io::stdout().lock();
                out.write_all(body.as_bytes())?;
                out.flush()?;
            }
        }
        eprintln!("{}", report::summary(&report));
        if let Some(e) = &report.error {
            eprintln!("event-audit: reconciliation could not complete: {e}");
        }
        Ok(ExitCode::from(report.exit_code))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(
            parse_time("2026-01-05").map(|t| t.to_rfc3339()),
            Ok("2026-01-05T00:00:00+00:00".to_owned())
        );
        assert!(parse_time("2026-01-05T10:00:00+01:00").is_ok());
        assert!(parse_time("yesterday").is_err());
    }
}
