//! The command line: every subcommand's arguments and the dispatch, a file per command. A
//! command turns its arguments into [`crate::config::Settings`] (defaults → file → environment →
//! flags, once) and calls into the library; output formatting lives here, logic does not.

/// The option groups' macro is the base crate's ([`event_audit_base::options_group`]); in scope
/// here for every command's file.
macro_rules! options_group {
    ($($t:tt)*) => { event_audit_base::options_group!($($t)*); };
}

mod archive;
pub(crate) use event_audit_base::args;
#[cfg(test)]
#[path = "cli/args_tests.rs"]
mod args_tests;
mod batch;
mod catalogue;
mod decode;
mod drift;
mod environment;
mod erase;
mod keygen;
#[cfg(all(test, feature = "dev"))]
mod options_doc;
mod output;
mod prove;
mod prove_complete;
mod prove_consistency;
mod prove_tlog_proof;
mod reconcile;
mod recover;
mod reprocess;
mod restore;
mod run;
mod runs;
mod verify;
mod verify_witness;
pub(crate) use event_audit_base::witness_args;
use event_audit_witness::cli as witness;

#[cfg(feature = "dev")]
mod dev;

use event_audit_proof::cli::{mirror, tiles, verify_proof};
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// `event-audit --version`: the version and the git commit `/metrics` reports.
pub(crate) const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (git ",
    env!("EVENT_AUDIT_GIT_HASH"),
    ")"
);

#[derive(Parser, Debug)]
#[command(
    name = "event-audit",
    version = VERSION,
    about = "Makes a platform's event bus auditable during customer migrations"
)]
pub struct Cli {
    /// Log as JSON lines instead of human-readable text.
    #[arg(long, global = true, env = "EVENT_AUDIT_LOG_JSON")]
    pub log_json: bool,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Parsed once per process: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// The daemon: consume the stream through a durable consumer into the audit log.
    Run(run::RunArgs),
    /// Rehash every row and walk the hash chain, report completeness; list every break (exit 1),
    /// 2 when it could not verify.
    Verify(verify::VerifyArgs),
    /// Check an evidence bundle, or a C2SP tlog-proof for `--entry`, offline against the log's
    /// public key (no database, no NATS).
    VerifyProof(verify_proof::VerifyProofArgs),
    /// Write a key pair for signing checkpoints (or, with --witness, a witness's cosigning key):
    /// PREFIX.key (private, 0600) and PREFIX.pub.
    Keygen(keygen::KeygenArgs),
    /// The independent witness (C2SP tlog-witness): cosigns a log's checkpoints that extend
    /// the last one it cosigned; for auditors, outside the log operators' reach.
    Witness {
        #[command(subcommand)]
        action: witness::WitnessAction,
    },
    /// The auditor's mirror (C2SP tlog-mirror, pulling): copy every leaf of a log from its
    /// tiles, checked against its signed checkpoint (exit 1 on a rollback or fork, with both
    /// notes; 2 when it could not mirror). No PostgreSQL, no NATS.
    Mirror(mirror::MirrorArgs),
    /// A copy of a log's tiles: `tiles fsck` checks one tile by tile against its checkpoint.
    Tiles {
        #[command(subcommand)]
        action: tiles::TilesAction,
    },
    /// Write an evidence bundle (JSON), or a C2SP tlog-proof per row, proving one event, or an
    /// account's events, against the latest witnessed checkpoint.
    Prove(prove::ProveArgs),
    /// Reconcile a migration batch: outcome events against the platform's import status
    /// (exit 0 all matched, 1 mismatches, 2 could not complete).
    Reconcile(reconcile::ReconcileArgs),
    /// Migration batches: register a manifest, close a batch, list them.
    Batch {
        #[command(subcommand)]
        action: batch::BatchAction,
    },
    /// Decode JSON Lines envelopes (files, or stdin) and print one verdict per line.
    Decode(decode::DecodeArgs),
    /// What live traffic carries that the catalogue does not declare, per event version (from
    /// the audit log's aggregates; read-only). `--suggest` prints a patch to events.toml.
    Drift(drift::DriftArgs),
    /// Judge stored events again from their raw bytes with this binary's catalogue (or
    /// --catalogue-dir); prints the transitions; stores the run unless --dry-run.
    Reprocess(reprocess::ReprocessArgs),
    /// Erase one account's (or one stream range's) personal data, recorded in the log as an
    /// erasure (exit 2: nothing matched, nothing changed); --dry-run prints what it would do.
    Erase(erase::EraseArgs),
    /// Record every sequence the stream still holds and the log lacks (after a database
    /// restored from a backup), in stream order; name what the stream no longer holds as lost.
    Recover(recover::RecoverArgs),
    /// Bring back the log's leaves a restored database lost from a copy of its tiles (a
    /// directory, another daemon's /log/, an auditor's mirror), checked against the signed
    /// checkpoint, and record the restore in the log.
    RestoreLeaves(restore::RestoreArgs),
    /// Write the log's monthly partitions that end by a time to a directory (JSON Lines and a
    /// manifest); with --prune then drop their contents from the database, recorded in the log.
    Archive(archive::ArchiveArgs),
    /// Inspect the event catalogue generated from catalogue/.
    Catalogue {
        #[command(subcommand)]
        action: catalogue::CatalogueAction,
    },
    /// The first run: platform simulator + batch with anomalies + load + daemon + reconciliation;
    /// prints where to look. Ctrl-C stops everything.
    #[cfg(feature = "dev")]
    Demo(dev::DemoArgs),
    /// A simulated platform: plays a seeded migration batch onto NATS and serves the
    /// Data-Import status endpoints (with injectable anomalies and faults).
    #[cfg(feature = "dev")]
    SimulatePlatform(dev::SimArgs),
    /// Load generator: publish N catalogue events of a realistic mix to a subject.
    #[cfg(feature = "dev")]
    Publish(dev::PublishArgs),
    /// Throughput ceilings for scripts/bench-ingest.sh.
    #[cfg(feature = "dev")]
    #[command(hide = true)]
    Bench {
        #[command(subcommand)]
        what: dev::BenchWhat,
    },
}

/// Parses argv; `--help` shows every setting's default from `config::defaults`. An option whose
/// derived environment name is unset reads its old name, if that is set. A URL with a password
/// (or a NATS URL with any credentials) given as a command-line argument is refused: argv is
/// visible to every user of the machine.
pub fn parse() -> Cli {
    let cmd = crate::config::layer::show_defaults(Cli::command());
    let cmd = crate::config::options::env_aliases(cmd, &|name| std::env::var_os(name).is_some());
    let names: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .collect();
    for line in environment::unknown(&cmd, names.iter().map(String::as_str)) {
        eprintln!("{line}");
    }
    let argv: Vec<String> = std::env::args().collect();
    let matches = match cmd.try_get_matches() {
        Ok(m) => m,
        Err(e) => {
            if let Some(why) = environment::bad_value(&e, &argv, &|n| std::env::var(n).ok()) {
                eprintln!("{why}");
                std::process::exit(2);
            }
            e.exit()
        }
    };
    if let Some((_, sub)) = matches.subcommand() {
        if let Some(why) = credentials_in_argv(sub) {
            eprintln!("event-audit: {why}");
            std::process::exit(2);
        }
    }
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// Why a command line holds a credential, if it does.
fn credentials_in_argv(m: &clap::ArgMatches) -> Option<String> {
    for (id, flag, instead) in [
        (
            "database.url",
            "--database-url",
            "give the URL without its password and the password in a PostgreSQL password file (~/.pgpass, or PGPASSFILE) or PGPASSWORD, or the whole URL in EVENT_AUDIT_DATABASE_URL or the --config file",
        ),
        (
            "nats.url",
            "--nats-url",
            "give the credentials with --nats-user and --nats-password-file (or NATS_PASSWORD), --nats-creds or --nats-token-file, or the whole URL in EVENT_AUDIT_NATS_URL or the --config file",
        ),
    ] {
        // `try_get_one` first: it answers for commands without the option, where
        // `value_source` would panic.
        let Ok(Some(value)) = m.try_get_one::<String>(id) else {
            continue;
        };
        if m.value_source(id) != Some(clap::parser::ValueSource::CommandLine) {
            continue;
        }
        let secret = value.split(',').any(|part| {
            let part = part.trim();
            let with_scheme = if part.contains("://") {
                part.to_owned()
            } else {
                format!("nats://{part}")
            };
            url::Url::parse(&with_scheme).is_ok_and(|u| {
                u.password().is_some()
                    || (id == "nats.url" && !u.username().is_empty())
                    || u.query().is_some_and(|q| q.contains("password"))
            })
        });
        if secret {
            return Some(format!(
                "{flag} holds credentials, and the command line is visible to every user of the machine; {instead}"
            ));
        }
    }
    None
}

/// The log filter when `RUST_LOG` is not set: `telemetry::DEFAULT_FILTER`, except for
/// the demo, which prints its own summary of each run and logs only warnings (`RUST_LOG=info`
/// shows the daemon's log).
pub fn default_log_filter(cli: &Cli) -> &'static str {
    match cli.command {
        #[cfg(feature = "dev")]
        Command::Demo(_) => "warn",
        _ => crate::telemetry::DEFAULT_FILTER,
    }
}

/// A multi-threaded runtime for the commands that do I/O.
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Verify(args) => verify::run(args),
        Command::VerifyProof(args) => verify_proof::run(args),
        Command::Keygen(args) => keygen::run(args),
        Command::Witness { action } => witness::run(action),
        Command::Mirror(args) => mirror::run(args),
        Command::Tiles { action } => tiles::run(action),
        Command::Prove(args) => prove::run(args),
        Command::Reconcile(args) => reconcile::run(args),
        Command::Batch { action } => batch::run(action),
        Command::Decode(args) => decode::run(&args.files),
        Command::Drift(args) => drift::run(args),
        Command::Reprocess(args) => reprocess::run(args),
        Command::Erase(args) => erase::run(args),
        Command::Recover(args) => recover::run(args),
        Command::RestoreLeaves(args) => restore::run(args),
        Command::Archive(args) => archive::run(args),
        Command::Catalogue { action } => catalogue::run(action),
        #[cfg(feature = "dev")]
        Command::Demo(args) => dev::demo(args),
        #[cfg(feature = "dev")]
        Command::SimulatePlatform(args) => dev::simulate(args),
        #[cfg(feature = "dev")]
        Command::Publish(args) => dev::publish(args),
        #[cfg(feature = "dev")]
        Command::Bench { what } => dev::bench(what),
    }
}
