//! `event-audit prove`: an evidence bundle (JSON) for one event (`--stream S --seq N`) or an
//! account's events (`--account NUMBER [--since T] [--until T]`) against the latest witnessed
//! checkpoint (with `--witness-policy`, the latest carrying the policy's quorum of cosignatures),
//! to stdout or `-o FILE`; the bundle is checked as `verify-proof` checks it before it is written.
//! Check it with `verify-proof` or tools/verify_bundle.py. `--format tlog-proof` writes a C2SP
//! tlog-proof per row instead (src/cli/prove_tlog_proof.rs).

use std::path::PathBuf;
use std::process::ExitCode;

use super::args::{ConfigArg, DatabaseArgs, NatsArgs};
use super::witness_args::PlaceArgs;
use crate::db::Db;
use crate::evidence::bundle::{check as check_bundle, Expect};
use crate::evidence::prove::{prove, Query};
use crate::log::tree::TreeStore;
use crate::witnessed::signer::CheckpointError;

/// Options of `event-audit prove`.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct ProveArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    /// The stream of the event to prove (with --seq).
    #[arg(long, requires = "seq", conflicts_with = "account")]
    pub(crate) stream: Option<String>,
    /// The stream sequence of the event to prove.
    #[arg(long, requires = "stream")]
    pub(crate) seq: Option<i64>,
    /// Prove every event of this account (optionally within --since/--until, by event time).
    #[arg(long, required_unless_present_any = ["stream", "index_consistency"])]
    pub(crate) account: Option<String>,
    /// Prove the account's history complete: every row about the person (every identifier the
    /// log links to the number: the platform's and the supplier's account numbers), with the
    /// account index's proof that there are no others, as an `event-audit-bundle/4`.
    #[arg(long, requires = "account", conflicts_with_all = ["since", "until"])]
    pub(crate) complete: bool,
    /// With --complete: the supplier whose external account number --account is, when several
    /// suppliers use it.
    #[arg(long, requires = "complete")]
    pub(crate) supplier: Option<String>,
    /// Prove that the account index of update N only grew into that of a later one
    /// (`--index-to`; by default the newest the checkpoint covers): an
    /// `event-audit-index-consistency/1`, checked by `verify-proof`.
    #[arg(long, value_name = "N", conflicts_with_all = ["stream", "account"])]
    pub(crate) index_consistency: Option<i64>,
    /// With --index-consistency: the later update.
    #[arg(long, value_name = "M", requires = "index_consistency")]
    pub(crate) index_to: Option<i64>,
    /// Events at or after this time (RFC 3339).
    #[arg(long, requires = "account")]
    pub(crate) since: Option<chrono::DateTime<chrono::Utc>>,
    /// Events before this time (RFC 3339).
    #[arg(long, requires = "account")]
    pub(crate) until: Option<chrono::DateTime<chrono::Utc>>,
    /// An archive directory (`event-audit archive --out`): a row whose partition was pruned
    /// is proven from its archived copy, which must make the row hash the log keeps.
    #[arg(long)]
    pub(crate) archive: Option<PathBuf>,
    /// Write the bundle here (mode 0600) instead of stdout; with `--format tlog-proof` and
    /// `--account`, a directory that gets one `<stream>-<seq>.tlog-proof` per row.
    #[arg(short = 'o', long = "output")]
    pub(crate) output: Option<PathBuf>,
    /// What to write: the evidence bundle (JSON: every field of each row, read back from its
    /// leaf data), or a C2SP tlog-proof (`c2sp.org/tlog-proof@v1`) per row, for its row hash.
    #[arg(long, value_enum, default_value_t = ProofFormat::Json)]
    pub(crate) format: ProofFormat,
    #[command(flatten)]
    pub(crate) keys: ProveKeyArgs,
    #[command(flatten)]
    pub(crate) database: DatabaseArgs,
    #[command(flatten)]
    pub(crate) nats: NatsArgs,
    #[command(flatten)]
    pub(crate) witness: PlaceArgs,
}

/// `prove --format`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum ProofFormat {
    // The evidence bundle (event-audit-bundle/3).
    #[default]
    Json,
    // A C2SP tlog-proof per row (docs/auditors.md).
    TlogProof,
}

options_group! {
    /// What a proof is checked against, as `prove` words it.
    pub struct ProveKeyArgs = [
        "witness.public_key" => |a| a.help(
            "The log's public key: only a checkpoint it verifies is used (and then the \
             database's copy of the latest checkpoint may stand in for an unreachable witness)",
        ),
        "witness.witness_policy" => |a| a.help(
            "A witness policy (C2SP tlog-policy: `witness <name> <vkey>`, `group`, `quorum`): \
             prove against the newest checkpoint that carries the policy's quorum of valid cosignatures",
        ),
        "witness.signing_key_file" => |a| a.help(
            "With --complete: the log's private key, which makes the account index label of an \
             identifier the index does not hold (to prove that no row is about it)",
        ),
    ];
}

pub(super) fn run(args: ProveArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load()?;
    super::runtime()?.block_on(async {
        let db = Db::open_existing(&settings.database, 2).await?;
        let key = match &settings.witness.public_key {
            Some(p) => Some(crate::witnessed::signer::load_public_key(p)?),
            None => None,
        };
        let policy = settings
            .witness
            .witness_policy
            .as_deref()
            .map(|p| super::verify_proof::read_policy(p, key.as_ref()))
            .transpose()?;
        let store = TreeStore::new(db.clone());
        let found = crate::witnessed::signer::latest_checkpoint(
            &settings,
            &db,
            key.as_ref(),
            policy.as_ref(),
        )
        .await;
        let (cp, note) = match found {
            Err(CheckpointError::NoCheckpoint) if policy.is_some() => anyhow::bail!(
                "no witnessed checkpoint the database reaches carries the witness policy's quorum \
                 of valid cosignatures (wait for the witnesses to cosign a newer checkpoint, or \
                 check the policy file)"
            ),
            other => other?,
        };
        if let Some(from) = args.index_consistency {
            let at = (&cp, note.as_str());
            let to = (args.index_to, args.output.as_deref());
            return super::prove_consistency::run(&store, from, to, at, (key.as_ref(), policy))
                .await;
        }
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
        anyhow::ensure!(
            !(args.complete && args.format == ProofFormat::TlogProof),
            "--complete writes an evidence bundle (--format json)"
        );
        if args.format == ProofFormat::TlogProof {
            let at = (&cp, note.as_str());
            let rows = super::prove_tlog_proof::write(
                &store,
                query,
                at,
                (key.as_ref(), policy.as_ref()),
                args.output.as_deref(),
            )
            .await?;
            eprintln!(
                "{rows} tlog-proof(s) against the checkpoint of size {} ({}) in {:.1} ms",
                cp.size,
                cp.origin,
                started.elapsed().as_secs_f64() * 1e3
            );
            return Ok(ExitCode::SUCCESS);
        }
        // An archive in a bucket is fetched into a staging directory first (removed after).
        let archive = match &args.archive {
            Some(a) => Some(crate::archive::remote::at(a, &settings.object_store).await?),
            None => None,
        };
        let dir = archive.as_ref().map(|(d, _)| d.as_path());
        if args.complete {
            let number = args.account.as_deref().unwrap_or_default();
            return super::prove_complete::run(
                &settings,
                &store,
                (number, args.supplier.as_deref()),
                (&cp, note.as_str()),
                (key.as_ref(), policy),
                (dir, args.output.as_deref()),
            )
            .await;
        }
        let bundle = prove(&store, query, &cp, &note, dir).await?;
        let took = started.elapsed();
        let body = serde_json::to_string_pretty(&bundle)? + "\n";
        let expect = Expect {
            origin: None,
            policy,
        };
        if let Err(e) = check_bundle(&body, key.as_ref(), &expect) {
            anyhow::bail!("the bundle does not pass its own check, nothing written: {e}");
        }
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
