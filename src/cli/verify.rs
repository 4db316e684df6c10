//! `event-audit verify`: walks the chain as a reader (never creates the database, never
//! migrates), rehashing every row over `--db-connections` connections, then reports
//! completeness against the streams' state on NATS (unless `--skip-completeness`); prints the
//! report as one JSON document (with `--public-key`, the witness's report and the auditor's
//! state beside the chain's), a summary on stderr; exit 0 intact, 1 broken (or a break
//! remembered and not acknowledged), 2 could not verify.

use std::process::ExitCode;

use serde::Serialize;

use super::args::{is_false, ConfigArg, NatsArgs, PooledDatabaseArgs};
use super::witness_args::ReaderArgs;
use crate::bus::Bus;
use crate::db::Db;
use crate::log::tree::TreeStore;
use crate::verify::walk::LeafSink;
use crate::verify::{gaps, witness, VerifyStore, WalkOptions};

/// Options of `event-audit verify`.
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct VerifyArgs {
    #[command(flatten)]
    #[serde(skip)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) database: PooledDatabaseArgs,
    #[command(flatten)]
    pub(crate) nats: NatsArgs,
    #[command(flatten)]
    pub(crate) verify: VerifyGroup,
    #[command(flatten)]
    pub(crate) witness: ReaderArgs,
}

/// What `verify` checks besides the chain.
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct VerifyGroup {
    /// Skip the completeness report (which needs NATS for the streams' state).
    #[arg(
        long,
        id = "verify.skip_completeness",
        env = "EVENT_AUDIT_SKIP_COMPLETENESS"
    )]
    #[serde(skip_serializing_if = "is_false")]
    pub(crate) skip_completeness: bool,
    /// An auditor's mirror directory (`event-audit mirror --dir`), or a copy of the log's
    /// tiles: every row's hash must equal the mirror's entry at its leaf index; leaves the
    /// mirror holds and the database lost are named. Needs no witness.
    #[arg(long, id = "verify.mirror", env = "EVENT_AUDIT_VERIFY_MIRROR")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) mirror: Option<std::path::PathBuf>,
    /// An archive directory (`event-audit archive --out`): every archived row must make its
    /// row hash again and match the row the log keeps at its place (pruned or not), every file
    /// its manifest's digest, a pruned partition's file the one its prune record names.
    #[arg(long)]
    #[serde(skip)]
    pub(crate) archive: Option<std::path::PathBuf>,
}

pub fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load(&args)?;
    // An archive in a bucket is fetched first, into a staging directory kept until the end.
    let (mirror, args_archive, _staged) =
        match read_first(&settings, args.verify.archive.as_deref()) {
            Ok(m) => m,
            Err(line) => {
                eprintln!("event-audit: {line}");
                return Ok(ExitCode::from(2));
            }
        };
    super::runtime()?.block_on(async {
        let workers = settings.database.connections.max(1);
        // One more connection than workers: a payload compared by PostgreSQL itself.
        let db = Db::open_existing(&settings.database, workers + 1).await?;
        let standby = db.standby_view().await?;
        if let Some(v) = &standby {
            eprintln!("{}", v.line());
        }
        let store = VerifyStore::new(db.clone());
        let trees = TreeStore::new(db.clone());
        // With the witness: the key, policy, state and checkpoints first (exit 2 when they
        // cannot be used); the walk then feeds the tree from its own read of the rows, and
        // resumes after the checkpoint checked last time (`--full`: every row).
        let prepared = match &settings.witness.public_key {
            Some(key) => match witness::prepare(&settings, &trees, key).await {
                Ok(p) => Some(p),
                Err(e) => {
                    eprintln!("event-audit: could not verify against the witnessed checkpoints: {e}");
                    return Ok(ExitCode::from(2));
                }
            },
            None => None,
        };
        let mut sink = match &prepared {
            Some(p) => Some(p.sink(&trees).await?),
            None => None,
        };
        let opts = WalkOptions {
            workers: workers as usize,
            from_link: prepared.as_ref().and_then(|p| p.from_link),
        };
        let started = std::time::Instant::now();
        let leaves = sink.as_mut().map(|s| s as &mut dyn LeafSink);
        let mut report = store.walk(opts, leaves).await?;
        if !settings.verify.skip_completeness {
            let bus = Bus::connect(&settings.nats).await.map_err(|e| {
                anyhow::anyhow!("{e}; or pass --skip-completeness to verify without the completeness report, which needs NATS")
            })?;
            let c = gaps::check(&store, &bus).await?;
            report.add_completeness(c);
        }
        // Re-verdicts of `reprocess` (their own hashes and run chain), and the runs' ends in
        // chain order: the leaves of the re-verdict runs' tree.
        let (broken, reverdict_leaves) = crate::verify::reverdicts::check_runs(&db).await?;
        if let Some(why) = broken {
            report.add_break(why);
        }
        report.duration_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        report.standby = standby;
        // One JSON document: the chain's report, and the witness's and the state's beside it.
        let mut doc = serde_json::to_value(&report)?;
        let skipped = prepared.as_ref().and_then(|p| p.not_rehashed_before());
        eprintln!("{}", chain_line(&report, skipped));
        let (code, witness_ok) = match (prepared, sink) {
            (Some(p), Some(sink)) => {
                let parts = super::verify_witness::Parts {
                    trees: &trees,
                    reverdict_leaves: &reverdict_leaves,
                    chain: &report,
                };
                super::verify_witness::report(p, sink, parts, &mut doc).await?
            }
            _ => (ExitCode::SUCCESS, None),
        };
        let code = match &mirror {
            Some(mirror) => {
                let m = match crate::verify::mirror::check(&store, &trees, mirror).await {
                    Ok(m) => m,
                    Err(e) => {
                        eprintln!("event-audit: could not verify against the mirror: {e}");
                        return Ok(ExitCode::from(2));
                    }
                };
                eprintln!("{}", m.line());
                doc["mirror"] = serde_json::to_value(&m)?;
                if m.holds() { code } else { ExitCode::from(1) }
            }
            None => code,
        };
        let code = match &args_archive {
            Some(dir) => {
                // With a mirror, each archived row is checked at its leaf in the mirror's tiles.
                let entries = mirror.as_ref().map(|m| m.entries.as_slice());
                let a = match crate::verify::archive::check(&store, dir, entries).await {
                    Ok(a) => a,
                    Err(e) => {
                        eprintln!("event-audit: could not verify the archive: {e}");
                        return Ok(ExitCode::from(2));
                    }
                };
                eprintln!("{}", a.line());
                doc["archive"] = serde_json::to_value(&a)?;
                if a.holds() { code } else { ExitCode::from(1) }
            }
            None => code,
        };
        println!("{doc}");
        if report.standby.is_none() {
            store.record(&report, witness_ok).await?;
        } else {
            eprintln!("this run is not recorded in audit.verify_runs: a standby takes no writes (runs verified on the primary are)");
        }
        Ok(if report.ok { code } else { ExitCode::from(1) })
    })
}

/// The mirror read, and the archive's directory (fetched from its bucket into a staging
/// directory, kept while the guard lives, when it is `s3://...`).
type ReadFirst = (
    Option<crate::verify::mirror::Mirror>,
    Option<std::path::PathBuf>,
    Option<tempfile::TempDir>,
);

/// What `verify` reads before the database, bounded: the mirror, once (for `--mirror` and
/// `--archive` both), and the archive's manifest with every file it names opened (the files
/// are read later). A copy that cannot be read, whose checkpoint the key does not open, or an
/// archive naming a file outside its folder is exit 2 at once, in one line.
fn read_first(
    settings: &crate::config::Settings,
    archive: Option<&std::path::Path>,
) -> Result<ReadFirst, String> {
    let rt = super::runtime().map_err(|e| e.to_string())?;
    let mirror = match &settings.verify.mirror {
        Some(dir) => {
            let key = settings.witness.public_key.as_deref();
            let read = crate::verify::mirror::read(dir, key, &settings.object_store);
            let m = rt
                .block_on(read)
                .map_err(|e| format!("could not verify against the mirror: {e}"))?;
            Some(m)
        }
        None => None,
    };
    let Some(archive) = archive else {
        return Ok((mirror, None, None));
    };
    let (dir, staged) = rt
        .block_on(super::archive_at(archive, &settings.object_store))
        .map_err(|e| format!("could not verify the archive: {e}"))?;
    crate::archive::read::preflight(&dir)
        .map_err(|e| format!("could not verify the archive: {e}"))?;
    Ok((mirror, Some(dir), staged))
}

/// The chain's one-line summary: the log's real counts, and which rows were not rehashed.
fn chain_line(report: &crate::verify::VerifyReport, skipped: Option<u64>) -> String {
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
