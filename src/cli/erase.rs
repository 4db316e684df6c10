//! `event-audit erase`: one account's (`--account`), one stream range's (`--stream`,
//! `--seq A..B`) or everything published before a time (`--published-before`) personal data
//! erased and the erasure recorded in the log (see `erase`); prints what it did, or with `--dry-run` what it would do. Exit 0 done, 2 nothing matched (nothing
//! changed) or could not erase. A reader's open: never creates the database, never migrates.

use std::process::ExitCode;

use super::args::{ConfigArg, NatsArgs, StatementDatabaseArgs};
use super::catalogue::ListFormat;
use crate::db::Db;
use crate::erase::{self, EraseError, Selector};

/// Options of `event-audit erase`.
#[derive(clap::Args, Debug, Clone)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["account", "stream", "published_before"])))]
pub(crate) struct EraseArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) database: StatementDatabaseArgs,
    /// Where the erased messages are deleted from the bus (the stream the daemon owns: its
    /// `stream.name`, `stream.bind_only` off).
    #[command(flatten)]
    pub(crate) nats: NatsArgs,
    #[command(flatten)]
    pub(crate) owned: OwnedStreamArgs,
    /// A person, by any account number the log links to them: the platform's account number
    /// or the external one the migrating supplier knows (its manifests, its import events).
    /// Every row, reconciliation result and batch membership holding any of their
    /// identifiers is erased.
    #[arg(long, conflicts_with = "stream")]
    pub(crate) account: Option<String>,
    /// The supplier whose external account number --account is, where the number is in the
    /// batches or results of several suppliers.
    #[arg(long, requires = "account")]
    pub(crate) supplier: Option<String>,
    /// The rows of this stream (with --seq).
    #[arg(long, requires = "seq")]
    pub(crate) stream: Option<String>,
    /// Stream sequences A..B (inclusive).
    #[arg(long, requires = "stream", value_parser = super::reprocess::parse_range)]
    pub(crate) seq: Option<(i64, i64)>,
    /// Every row published before this time (RFC 3339, e.g. 2025-10-22T00:00:00Z): what the
    /// daemon's `retention.payloads_for` does on its schedule, by hand.
    #[arg(long, conflicts_with_all = ["account", "stream"], value_parser = parse_time)]
    pub(crate) published_before: Option<chrono::DateTime<chrono::Utc>>,
    /// Why (recorded in the log: name the request, never the person or their data).
    #[arg(long)]
    pub(crate) reason: String,
    /// Print what would be erased; change nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    #[arg(long, value_enum, default_value = "table")]
    pub(crate) format: ListFormat,
}

options_group! {
    /// The stream the daemon owns, as the daemon reads it (`--stream` selects rows here, so the
    /// daemon's stream has a flag of its own; its environment variables are the daemon's).
    pub struct OwnedStreamArgs = [
        "stream.name" => |a| a
            .long("daemon-stream")
            .help("The daemon's stream (its --stream): erased messages are deleted from it"),
        "stream.bind_only" => |a| a
            .long("daemon-bind-only")
            .help("The daemon only binds to the stream (its --bind-only): nothing is deleted from it"),
    ];
}

/// The erasure's database error, with what to do when `login` may not erase.
fn not_eraser(e: crate::db::DbError, login: &str) -> anyhow::Error {
    if e.sqlstate().as_deref() != Some("42501") {
        return e.into();
    }
    anyhow::anyhow!(
        "{e}; erase works as the role {role}, which this login is not a member of: grant it as \
         a superuser or the role's admin (`GRANT {role} TO {login};`), or run erase as a login \
         that has it",
        role = crate::erase::ERASER_ROLE
    )
}

/// The user name of a database URL (`<login>` when it names none).
fn login_of(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .map(|u| u.username().to_owned())
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "<login>".into())
}

/// An RFC 3339 time, as `--published-before` takes it.
pub(crate) fn parse_time(s: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    chrono::DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|e| format!("not an RFC 3339 time such as 2025-10-22T00:00:00Z: {e}"))
}

pub(super) fn run(args: EraseArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load()?;
    let sel = match (&args.account, &args.stream, args.seq) {
        _ if args.published_before.is_some() => {
            Selector::PublishedBefore(args.published_before.unwrap_or_default())
        }
        (Some(a), _, _) => Selector::Account {
            number: a.clone(),
            supplier: args.supplier.clone(),
        },
        (None, Some(s), Some(seq)) => Selector::Range {
            stream: s.clone(),
            seq,
        },
        _ => anyhow::bail!("erase needs --account NUMBER, or --stream S with --seq A..B"),
    };
    let instance = settings.ingest.instance_name();
    let login = login_of(&settings.database.url);
    let outcome = super::runtime()?.block_on(async {
        let db = Db::open_existing(&settings.database, 1)
            .await
            .map_err(|e| not_eraser(e, &login))?;
        let bound = settings.database.statement_timeout.get();
        let done = tokio::time::timeout(
            bound * 4,
            erase::erase(&db, &sel, &args.reason, args.dry_run, &instance),
        )
        .await;
        match done {
            Ok(r) => anyhow::Ok(r),
            Err(_) => anyhow::bail!(
                "erase did not finish within {:?} (4 × database.statement_timeout) at {}; nothing was committed; try again, or raise --db-statement-timeout",
                bound * 4,
                db.place()
            ),
        }
    })?;
    let mut outcome = match outcome {
        Ok(o) => o,
        Err(EraseError::NothingMatched(what)) => {
            eprintln!("no row with personal data matches {what}: nothing changed");
            return Ok(ExitCode::from(2));
        }
        Err(e @ (EraseError::FutureBound(..) | EraseError::Identity(_))) => {
            eprintln!("{e}");
            return Ok(ExitCode::from(2));
        }
        Err(EraseError::Db(e)) => return Err(not_eraser(e, &login)),
    };
    outcome.bus = if outcome.dry_run {
        erase::bus::plan(&outcome.rows, &settings.stream)
    } else {
        let (nats, own, rows) = (&settings.nats, &settings.stream, &outcome.rows);
        super::runtime()?.block_on(erase::bus::delete(nats, own, rows))
    };
    match args.format {
        ListFormat::Json => println!("{}", serde_json::to_string_pretty(&outcome)?),
        ListFormat::Table => print!("{}", erase::report(&outcome)),
    }
    Ok(ExitCode::SUCCESS)
}
