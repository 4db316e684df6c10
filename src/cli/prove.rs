//! `event-audit prove`: an evidence bundle (JSON) for one event (`--stream S --seq N`) or an
//! account's events (`--account NUMBER [--since T] [--until T]`) against the latest witnessed
//! checkpoint, to stdout or `-o FILE`. Check it with `verify-proof` or tools/verify_bundle.py.

use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;

use super::args::{ConfigArg, DatabaseArgs, NatsArgs};
use super::witness_args::PlaceArgs;
use crate::db::Db;
use crate::prove::{prove, Query};
use crate::tree::TreeStore;

/// Options of `event-audit prove`.
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct ProveArgs {
    #[command(flatten)]
    #[serde(skip)]
    pub config: ConfigArg,
    /// The stream of the event to prove (with --seq).
    #[arg(long, requires = "seq", conflicts_with = "account")]
    #[serde(skip)]
    pub stream: Option<String>,
    /// The stream sequence of the event to prove.
    #[arg(long, requires = "stream")]
    #[serde(skip)]
    pub seq: Option<i64>,
    /// Prove every event of this account (optionally within --since/--until, by event time).
    #[arg(long, required_unless_present = "stream")]
    #[serde(skip)]
    pub account: Option<String>,
    /// Events at or after this time (RFC 3339).
    #[arg(long, requires = "account")]
    #[serde(skip)]
    pub since: Option<chrono::DateTime<chrono::Utc>>,
    /// Events before this time (RFC 3339).
    #[arg(long, requires = "account")]
    #[serde(skip)]
    pub until: Option<chrono::DateTime<chrono::Utc>>,
    /// Write the bundle here (mode 0600) instead of stdout.
    #[arg(short = 'o', long = "output")]
    #[serde(skip)]
    pub output: Option<PathBuf>,
    /// The log's public key: only a checkpoint it verifies is used (and then the database's
    /// copy of the latest checkpoint may stand in for an unreachable witness).
    #[arg(long, env = "EVENT_AUDIT_PUBLIC_KEY")]
    #[serde(skip)]
    pub public_key: Option<PathBuf>,
    #[command(flatten)]
    pub database: DatabaseArgs,
    #[command(flatten)]
    pub nats: NatsArgs,
    #[command(flatten)]
    pub witness: PlaceArgs,
}

pub fn run(args: ProveArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load(&args)?;
    super::runtime()?.block_on(async {
        let db = Db::open_existing(&settings.database, 2).await?;
        let key = match &args.public_key {
            Some(p) => Some(crate::checkpoint::load_public_key(p)?),
            None => None,
        };
        let store = TreeStore::new(db.clone());
        let policy = match &settings.witness.witness_policy {
            Some(p) => Some(crate::checkpoint::load_policy(p)?),
            None => None,
        };
        let (cp, note) =
            crate::checkpoint::latest_checkpoint(&settings, &db, key.as_ref(), policy.as_ref())
                .await?;
        let (since, until) = (
            args.since.map(|t| t.to_rfc3339()).unwrap_or_default(),
            args.until.map(|t| t.to_rfc3339()).unwrap_or_default(),
        );
        let query = match (&args.stream, args.seq, &args.account) {
            (Some(stream), Some(seq), _) => Query::Event { stream, seq },
            (_, _, Some(number)) => Query::Account {
                number,
                since: &since,
                until: &until,
            },
            _ => anyhow::bail!("give --stream and --seq, or --account"),
        };
        let started = std::time::Instant::now();
        let bundle = prove(&store, query, &cp, &note).await?;
        let took = started.elapsed();
        let body = serde_json::to_string_pretty(&bundle)? + "\n";
        super::output::emit(args.output.as_deref(), &body)?;
        let rows = bundle.entries.len().max(1) as f64;
        eprintln!(
            "{} row(s) proven against the checkpoint of size {} ({}) in {:.1} ms, {:.2} ms per row",
            bundle.entries.len(),
            cp.size,
            cp.origin,
            took.as_secs_f64() * 1e3,
            took.as_secs_f64() * 1e3 / rows
        );
        Ok(ExitCode::SUCCESS)
    })
}
