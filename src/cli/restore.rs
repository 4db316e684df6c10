//! `event-audit restore-leaves --from COPY --public-key FILE [--dry-run]`: after a database
//! restored from a backup that is behind the last checkpoint the log's key signed, the leaves it
//! lost are brought back from a copy of the log's tiles given by hand (a directory or a URL: a
//! copied tiles directory, another daemon's `/log/`, an auditor's mirror), checked against the
//! signed checkpoint, and the restore recorded in the log (see `restore`); then the account
//! index's updates the database lost are replayed from the deltas the copy publishes beside its
//! tiles (`index::replay`). The checkpoint to
//! reach is what the signer's memory file says (`--signer-state`, or beside `--signing-key-file`)
//! or else the newest a copy holds that opens with the key. Exit 0 restored (or nothing to
//! restore), 2 when no copy holds the leaves, it could not restore, or a copy's index deltas
//! were refused (the leaves are restored then). Never creates the
//! database, never migrates.

use std::path::PathBuf;
use std::process::ExitCode;

use super::args::{ConfigArg, StatementDatabaseArgs};
use crate::db::Db;
use crate::index::replay::COPY_TIMEOUT;
use crate::log::signed::Memory;
use crate::log::Log;
use crate::restore::{replay_index, restore, Copies, Outcome, Target};
use crate::witnessed::signer::{load_key, load_public_key};

/// Options of `event-audit restore-leaves`.
#[derive(clap::Args, Debug, Clone)]
#[command(group(clap::ArgGroup::new("key").required(true).args(["public_key", "signing_key_file"])))]
pub(crate) struct RestoreArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) database: StatementDatabaseArgs,
    #[command(flatten)]
    pub(crate) tls: super::witness_args::WitnessTlsArgs,
    /// A copy of the log's tiles: a directory, a file:// URL, an http(s):// prefix, or
    /// s3://BUCKET/PREFIX (with the settings file's `[object_store]`); with or without a mirror's
    /// `<hex sha256(origin)>/` folder; repeat to try several in order.
    #[arg(long = "from", required = true)]
    pub(crate) from: Vec<String>,
    /// The log's public key (its name is the log's origin).
    #[arg(long)]
    pub(crate) public_key: Option<PathBuf>,
    /// The log's signing key: its memory file beside it names the checkpoint to reach.
    #[arg(long)]
    pub(crate) signing_key_file: Option<PathBuf>,
    /// The signer's memory file (default: beside --signing-key-file).
    #[arg(long)]
    pub(crate) signer_state: Option<PathBuf>,
    /// Why (recorded in the log).
    #[arg(
        long,
        default_value = "the database was restored from a backup behind the last signed checkpoint"
    )]
    pub(crate) reason: String,
    /// Say what would be restored and from where; write nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
}

pub(super) fn run(args: RestoreArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load()?;
    let (public, state) = match (&args.signing_key_file, &args.public_key) {
        (Some(k), _) => {
            let key = load_key(k)?;
            let state = args
                .signer_state
                .clone()
                .or_else(|| Some(PathBuf::from(format!("{}.state", k.display()))));
            (key.public(), state)
        }
        (None, Some(p)) => (load_public_key(p)?, args.signer_state.clone()),
        (None, None) => anyhow::bail!("restore-leaves needs --public-key or --signing-key-file"),
    };
    let copies = Copies {
        origin: public.name.clone(),
        key: public.clone(),
        copies: args.from.clone(),
        timeout: COPY_TIMEOUT,
        object_store: settings.object_store.clone(),
        tls: crate::mirror::source::Source::tls_of(&settings.witness),
    };
    let out = super::runtime()?.block_on(async {
        let remembered = match &state {
            Some(p) => Memory::load(p, &public)?
                .and_then(|m| m.logs.get(&public.name).map(|r| (r.size, r.root))),
            None => None,
        };
        let target = match remembered {
            Some((size, root)) => Target { size, root },
            None => copies.newest().await.ok_or_else(|| {
                anyhow::anyhow!("no copy given holds a checkpoint of {} that opens with the key, and no signer memory names one: nothing to restore to", public.name)
            })?,
        };
        let db = Db::open_existing(&settings.database, 2).await?;
        let log = Log::new(db, &settings.ingest.instance_name());
        let out = restore(&log, &copies, &target, &args.reason, args.dry_run).await?;
        let index = match &out {
            Outcome::Restored { record, .. } => {
                Some(replay_index(&log, &copies, record.size).await)
            }
            _ => None,
        };
        anyhow::Ok((out, index))
    })?;
    println!("{}", out.0.line());
    match out.1 {
        Some(Ok(line)) => println!("{line}"),
        Some(Err(line)) => {
            eprintln!("{line}");
            return Ok(ExitCode::from(2));
        }
        None => {}
    }
    Ok(ExitCode::SUCCESS)
}
