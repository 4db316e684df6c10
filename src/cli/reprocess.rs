//! `event-audit reprocess`: stored events judged again from their raw bytes by this binary's
//! catalogue (or `--catalogue-dir`); prints the transitions. `--dry-run` is a reader (never
//! creates the database, never migrates, writes nothing); a real run never creates the database
//! either, migrates it like the daemon, and stores the run.

use std::path::PathBuf;
use std::process::ExitCode;

use super::args::{ConfigArg, StatementDatabaseArgs};
use super::catalogue::ListFormat;
use crate::config::defaults;
use crate::db::Db;
use crate::decode::verdict::Status;
use crate::evolution::compat;
use crate::evolution::drift::parse_time;
use crate::evolution::reprocess::{self, store::ReprocessStore, Judge, Selection};

/// Options of `event-audit reprocess`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ReprocessArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) database: StatementDatabaseArgs,
    /// From this bus time (RFC 3339, or a date).
    #[arg(long, value_parser = parse_time)]
    pub(crate) since: Option<chrono::DateTime<chrono::Utc>>,
    /// Until this bus time, excluded.
    #[arg(long, value_parser = parse_time)]
    pub(crate) until: Option<chrono::DateTime<chrono::Utc>>,
    /// Only this stream.
    #[arg(long)]
    pub(crate) stream: Option<String>,
    /// Stream sequences A..B (inclusive; needs --stream).
    #[arg(long, requires = "stream", value_parser = parse_range)]
    pub(crate) seq: Option<(i64, i64)>,
    /// Only rows whose original status is one of these (repeatable).
    #[arg(long = "status", value_parser = parse_status, num_args = 1..)]
    pub(crate) statuses: Vec<String>,
    /// Judge and print the transitions; write nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Judge with the catalogue in this directory instead of the built-in one.
    #[arg(long)]
    pub(crate) catalogue_dir: Option<PathBuf>,
    /// Continue a run that stopped before its end (its selection and catalogue are kept).
    #[arg(long, conflicts_with_all = ["since", "until", "stream", "seq", "statuses", "dry_run"])]
    pub(crate) resume: Option<i64>,
    /// Rows per page (one transaction each).
    #[arg(long, default_value_t = defaults::REPROCESS_PAGE)]
    pub(crate) page_size: i64,
    #[arg(long, value_enum, default_value = "table")]
    pub(crate) format: ListFormat,
}

pub(crate) fn parse_range(s: &str) -> Result<(i64, i64), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("`{s}`: expected A..B"))?;
    let a: i64 = a.parse().map_err(|_| format!("`{a}` is not a sequence"))?;
    let b: i64 = b.parse().map_err(|_| format!("`{b}` is not a sequence"))?;
    if a > b {
        return Err(format!("`{s}`: A is after B"));
    }
    Ok((a, b))
}

fn parse_status(s: &str) -> Result<String, String> {
    Status::parse(s)
        .map(|st| st.as_str().to_owned())
        .ok_or_else(|| {
            let all: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
            format!("`{s}` is not a status ({})", all.join(", "))
        })
}

pub(super) fn run(args: ReprocessArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load()?;
    let loaded = match &args.catalogue_dir {
        Some(dir) => Some(compat::dynamic(&compat::load(dir)?)),
        None => None,
    };
    let judge = match &loaded {
        Some(c) => Judge::Loaded(c),
        None => Judge::BuiltIn,
    };
    let mut sel = Selection {
        since: args.since,
        until: args.until,
        stream: args.stream.clone(),
        seq: args.seq,
        statuses: args.statuses.clone(),
    };
    let page = args.page_size.max(1);
    let outcome = super::runtime()?.block_on(async {
        // Never creates the database, whatever the mode.
        let reader = Db::open_existing(&settings.database, 2).await?;
        let store = if args.dry_run {
            ReprocessStore::new(reader)
        } else {
            drop(reader);
            ReprocessStore::new(Db::open_writer(&settings.database).await?)
        };
        let run = if args.dry_run {
            None
        } else if let Some(id) = args.resume {
            let Some(r) = store.run(id).await? else {
                anyhow::bail!("reprocess run {id} does not exist");
            };
            if r.closed {
                anyhow::bail!("reprocess run {id} is already finished; start a new run");
            }
            if r.catalogue != judge.fingerprint() {
                anyhow::bail!(
                    "reprocess run {id} judges with catalogue {}, this one is {}; resume it with that catalogue (--catalogue-dir)",
                    r.catalogue,
                    judge.fingerprint()
                );
            }
            sel = serde_json::from_str(&r.selection)?;
            Some(reprocess::RunStart {
                id,
                cursor: r.cursor,
                done: r.pages,
            })
        } else {
            let selection = serde_json::to_string(&sel)?;
            let id = store.open_run(&judge.fingerprint(), &selection).await?;
            Some(reprocess::RunStart {
                id,
                cursor: reprocess::Cursor::start(),
                done: Vec::new(),
            })
        };
        let outcome = reprocess::reprocess(&store, &judge, &sel, run, page, |n| {
            tracing::debug!(rows = n, "reprocessed");
        })
        .await?;
        anyhow::Ok(outcome)
    })?;
    if outcome.rows == 0 {
        eprintln!("no stored rows in this selection: nothing to reprocess");
    }
    match args.format {
        ListFormat::Json => println!("{}", serde_json::to_string_pretty(&outcome)?),
        ListFormat::Table => print!("{}", reprocess::table(&outcome)),
    }
    Ok(ExitCode::SUCCESS)
}
