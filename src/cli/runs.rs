//! `event-audit reconcile diff` and `event-audit reconcile link`: reading stored runs. `diff`
//! shows the accounts whose verdict (or registration) changed between two runs of one scope,
//! with counts per transition, by default between the latest two runs of a batch. `link`
//! prints a short-lived signed link to a report for a browser (the report routes need the
//! report token, which a browser cannot send).

use std::path::PathBuf;
use std::process::ExitCode;

use super::args::{ConfigArg, DatabaseArgs, LinkArgs};
use super::output::{emit, find_batch, format_of, links_for_file, signed_link};
use crate::db::Db;
use crate::reconcile::batch::batch_scope;
use crate::reconcile::compare;
use crate::reconcile::report::{changes, Format};
use crate::reconcile::store::ReconcileStore;

#[derive(clap::Subcommand, Debug, Clone)]
pub(crate) enum RunsAction {
    /// The accounts whose verdict changed between two runs of one scope, with counts per
    /// transition (`awaiting_event → matched`); by default the latest two runs of a batch.
    Diff(DiffArgs),
    /// A short-lived signed link to a report, for a browser.
    Link(LinkCmdArgs),
}

/// Options of `event-audit reconcile diff`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct DiffArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) database: DatabaseArgs,
    /// Compare the latest two completed runs of this batch.
    #[arg(long, conflicts_with = "runs", required_unless_present = "runs")]
    pub(crate) batch: Option<String>,
    /// The batch's supplier, when several have a batch of that name.
    #[arg(long, requires = "batch")]
    pub(crate) supplier: Option<String>,
    /// Two run ids of the same scope (the earlier first, or either order).
    #[arg(num_args = 2, value_names = ["RUN_A", "RUN_B"])]
    pub(crate) runs: Vec<i64>,
    /// Output format (`table`, `json` or `html`). [default: table on a terminal, else json;
    /// with --output, from its extension]
    #[arg(long, value_enum)]
    pub(crate) format: Option<Format>,
    /// Write the changes to this file (mode 0600).
    #[arg(long, short = 'o')]
    pub(crate) output: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) http: PublicUrlArg,
}

options_group! {
    /// Where the daemon's pages are, for the links of an HTML page written here.
    pub struct PublicUrlArg = [
        "http.public_url" => |a| a
            .help("The daemon's address as a browser reaches it (`https://audit.internal:9187`): the HTML page's links point under it (without it, they are left out)"),
    ];
}

/// Options of `event-audit reconcile link`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct LinkCmdArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) http: LinkArgs,
    /// A run's report (default: the latest run).
    #[arg(long, conflicts_with = "batch")]
    pub(crate) run: Option<i64>,
    /// The latest report of this batch (whatever run it is when the link is opened).
    #[arg(long)]
    pub(crate) batch: Option<String>,
    /// The batch's supplier, when several have a batch of that name.
    #[arg(long, requires = "batch")]
    pub(crate) supplier: Option<String>,
    /// The changes between the batch's latest two runs instead of its report.
    #[arg(long, requires = "batch")]
    pub(crate) changes: bool,
}

pub(super) fn run(action: RunsAction) -> anyhow::Result<ExitCode> {
    match action {
        RunsAction::Diff(args) => diff(args),
        RunsAction::Link(args) => link(args),
    }
}

fn diff(args: DiffArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load()?;
    let format = format_of(args.format, args.output.as_deref())?;
    if format == Format::Csv {
        anyhow::bail!("changes are shown as table, json or html (not csv)");
    }
    super::runtime()?.block_on(async {
        let db = Db::open_existing(&settings.database, 2).await?;
        let store = ReconcileStore::new(db);
        let d = match (&args.batch, args.runs.as_slice()) {
            (Some(name), _) => {
                let b = find_batch(&store, args.supplier.as_deref(), name).await?;
                compare::latest_two(&store, &batch_scope(b.id)).await?
            }
            (None, [a, b]) => compare::between(&store, *a, *b).await?,
            _ => anyhow::bail!("give --batch NAME, or two run ids"),
        };
        let mut body = changes::render(&d, format);
        if format == Format::Html {
            body = links_for_file(&body, settings.http.public_url.as_deref());
        }
        emit(args.output.as_deref(), &body)?;
        eprintln!(
            "{} account(s) changed between runs {} and {}",
            d.changes.len(),
            d.from_run,
            d.to_run
        );
        Ok(ExitCode::SUCCESS)
    })
}

fn link(args: LinkCmdArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load()?;
    let enc = crate::reconcile::report::html::segment;
    let path = match (&args.batch, args.run, args.changes) {
        (Some(name), _, changes) => {
            let supplier = args
                .supplier
                .as_deref()
                .map_or_else(String::new, |s| format!("&supplier={}", enc(s)));
            let route = if changes { "diff" } else { "" };
            format!(
                "/reports/reconciliation{}{route}?batch={}{supplier}&format=html",
                if changes { "/" } else { "" },
                enc(name)
            )
        }
        (None, Some(id), _) => format!("/reports/reconciliation?run={id}&format=html"),
        (None, None, _) => "/reports/reconciliation?format=html".to_owned(),
    };
    println!("{}", signed_link(&settings, &path)?);
    // An unsigned link (no report token) does not expire: no validity to state.
    if crate::config::secrets::load_secret(
        settings.http.report_token_file.as_ref(),
        crate::config::secrets::REPORT_TOKEN_ENV,
        "report token",
    )?
    .is_some()
    {
        eprintln!("valid for {}", settings.http.link_ttl);
    }
    Ok(ExitCode::SUCCESS)
}
