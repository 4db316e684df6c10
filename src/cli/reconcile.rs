//! `event-audit reconcile`: one run from the command line, of a registered batch (`--batch`), a
//! manifest (`--accounts`) or whole suppliers. Prints the report (a table on a terminal, JSON
//! otherwise, or `--format`; `-o FILE` takes its format from `.html`, `.csv` or `.json` and
//! refuses other extensions without `--format`), a one-line summary with the REST call count on
//! stderr (and a signed link to the HTML report with `--public-url`), and exits 0 (all matched
//! or tolerated), 1 (mismatches) or 2 (could not complete, or `unverified` accounts and no
//! mismatch). A run that could not complete prints only its error. `reconcile diff` and
//! `reconcile link` read stored runs ([`super::runs`]).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use chrono::{DateTime, NaiveDate, Utc};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::args::{ConfigArg, DatabaseArgs, LinkArgs, RestArgs};
use super::output::{emit, find_batch, format_of, links_for_file, signed_link};
use super::runs::{self, RunsAction};
use crate::db::Db;
use crate::reconcile::model::Tolerance;
use crate::reconcile::report::{self, Format};
use crate::reconcile::rest::client::RestClient;
use crate::reconcile::rest::RestConfig;
use crate::reconcile::store::ReconcileStore;
use crate::reconcile::{compare, execute, Manifest, Params, Progress};

options_group! {
    /// The reconciliation settings a run takes from the command line.
    pub struct RunSettingsArgs = [
        "reconcile.suppliers" => |a| a
            .long("supplier")
            .help("Import supplier code (repeatable). Events carry no supplier code: name every supplier of the batch (with --batch: the batch's supplier, when several have its name)")
            .required_unless_present("batch"),
        "reconcile.grace" => |a| a
            .long("grace")
            .help("An account imported less than this long ago without outcome event is `awaiting_event`, not `missing_event`"),
        "reconcile.registration_grace",
    ];
}

/// Options of `event-audit reconcile`.
#[derive(clap::Args, Debug, Clone)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct ReconcileArgs {
    #[command(subcommand)]
    pub(crate) action: Option<RunsAction>,
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) database: DatabaseArgs,
    #[command(flatten)]
    pub(crate) rest: RestArgs,
    #[command(flatten)]
    pub(crate) reconcile: RunSettingsArgs,
    #[command(flatten)]
    pub(crate) http: LinkArgs,
    /// A registered batch (`event-audit batch register`): its accounts, its orders and its
    /// tolerances; meter points followed up.
    #[arg(long, conflicts_with = "accounts")]
    pub(crate) batch: Option<String>,
    /// A manifest: one external account number a line (`order:ID` lines list the batch's
    /// orders). Without it or --batch: every account the suppliers list and every account
    /// with outcome events in the window.
    #[arg(long)]
    pub(crate) accounts: Option<PathBuf>,
    /// Outcome events at or after this time (RFC 3339, or a date: midnight UTC).
    #[arg(long, value_parser = parse_time)]
    pub(crate) since: Option<DateTime<Utc>>,
    /// Outcome events before this time.
    #[arg(long, value_parser = parse_time)]
    pub(crate) until: Option<DateTime<Utc>>,
    /// Output format. [default: table on a terminal, else json; with --output, from its
    /// extension (.html, .csv, .json)]
    #[arg(long, value_enum)]
    pub(crate) format: Option<Format>,
    /// Write the report to this file (created with mode 0600: it holds personal data).
    #[arg(long, short = 'o')]
    pub(crate) output: Option<PathBuf>,
    /// Count a verdict as OK for the exit code: `VERDICT` (any number) or `VERDICT=N` (up to
    /// N accounts). Repeatable.
    #[arg(long = "tolerate")]
    pub(crate) tolerances: Vec<Tolerance>,
    /// Ask account-transfer-status about every pending account too (tells `in_progress` from
    /// `pending` where the platform lists accounts being processed as pending).
    #[arg(long)]
    pub(crate) check_pending: bool,
    /// Follow registrations up: each imported account's meter point statuses joined with its
    /// join-supplier events (one more request per account). On by default for --batch.
    #[arg(long, conflicts_with = "no_meter_points")]
    pub(crate) meter_points: bool,
    /// Do not follow registrations up, not even for --batch.
    #[arg(long)]
    pub(crate) no_meter_points: bool,
    /// List matched accounts in the table too.
    #[arg(long)]
    pub(crate) show_matched: bool,
}

/// A progress bar on a terminal, for runs with many per-account requests.
struct Bar(ProgressBar);

impl Progress for Bar {
    fn start(&self, total: u64) {
        self.0.set_length(total);
        if total < 1000 {
            self.0.set_draw_target(ProgressDrawTarget::hidden());
        }
    }

    fn advance(&self) {
        self.0.inc(1);
    }

    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

fn progress_bar() -> Bar {
    if !std::io::stderr().is_terminal() {
        return Bar(ProgressBar::hidden());
    }
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} per-account requests {bar:40} {pos}/{len} {per_sec} eta {eta}",
    ) {
        bar.set_style(style);
    }
    Bar(bar)
}

/// RFC 3339, or `YYYY-MM-DD` (midnight UTC).
pub(crate) fn parse_time(s: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s.trim()) {
        return Ok(t.with_timezone(&Utc));
    }
    NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .ok_or_else(|| format!("`{s}` is not an RFC 3339 time or a YYYY-MM-DD date"))
}

pub(super) fn run(args: ReconcileArgs) -> anyhow::Result<ExitCode> {
    if let Some(action) = args.action {
        return runs::run(action);
    }
    let settings = args.config.load()?;
    let format = format_of(args.format, args.output.as_deref())?;
    let rest = RestConfig::from_settings(&settings.rest)?;
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
    // The one supplier the command line (or its environment) named, not the settings file's.
    let supplier_flag = match args.config.given("reconcile.suppliers") {
        Some(toml::Value::Array(one)) if one.len() == 1 => one[0].as_str().map(str::to_owned),
        _ => None,
    };
    super::runtime()?.block_on(async {
        let db = Db::open_existing(&settings.database, 4).await?;
        if db.is_standby().await? {
            eprintln!("event-audit: {} is a read-only standby; a reconciliation stores its run, so run it against the primary (`reconcile diff` and the reports read stored runs here)", db.place());
            return Ok(ExitCode::from(2));
        }
        let store = ReconcileStore::new(db);
        let mut params = Params::new(
            settings.reconcile.suppliers.clone(),
            settings.reconcile.grace.chrono(),
            "cli",
        );
        params.registration_grace = settings.reconcile.registration_grace.chrono();
        params.manifest = manifest;
        params.since = args.since;
        params.until = args.until;
        params.tolerances = args.tolerances.clone();
        params.check_pending = args.check_pending;
        if let Some(name) = &args.batch {
            let b = find_batch(&store, supplier_flag.as_deref(), name).await?;
            if let Some(c) = &b.closed {
                eprintln!(
                    "note: batch {} was closed ({}) at {}",
                    b.label(),
                    c.reason,
                    c.closed_at.to_rfc3339()
                );
            }
            let m = store.batch_manifest(&b).await?;
            params = params.for_batch(&b, m);
        }
        params.meter_points = (params.meter_points || args.meter_points) && !args.no_meter_points;
        let client = RestClient::new(rest, None)?;
        let report = execute(&store, &client, &params, &progress_bar()).await;
        if let Some(e) = &report.error {
            // Only the error: no report and no summary that could be read as a result.
            eprintln!(
                "event-audit: reconciliation could not complete: {e}{}",
                report.run_id.map_or_else(String::new, |id| format!(
                    " (stored as incomplete run {id})"
                ))
            );
            return Ok(ExitCode::from(report.exit_code));
        }
        let changes = match format {
            Format::Html => compare::since_previous(&store, &report).await?,
            _ => None,
        };
        let mut body = report::render(&report, format, args.show_matched, changes.as_ref());
        if format == Format::Html {
            body = links_for_file(&body, settings.http.public_url.as_deref());
        }
        emit(args.output.as_deref(), &body)?;
        eprintln!("{}", report::summary(&report));
        if let (Some(id), Some(_)) = (report.run_id, &settings.http.public_url) {
            match signed_link(
                &settings,
                &format!("/reports/reconciliation?run={id}&format=html"),
            ) {
                Ok(link) => eprintln!("report in a browser: {link}"),
                Err(e) => eprintln!("no report link: {e:#}"),
            }
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
