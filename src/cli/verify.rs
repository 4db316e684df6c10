//! `event-audit verify`: walks the chain as a reader (never creates the database, never
//! migrates), rehashing every row over `--db-connections` connections, then reports
//! completeness against the streams' state on NATS (unless `--skip-completeness`); prints the
//! report as JSON, a summary on stderr; exit 0 intact, 1 broken, 2 could not verify.

use std::process::ExitCode;

use serde::Serialize;

use super::args::{is_false, ConfigArg, DatabaseArgs, NatsArgs};
use super::witness_args::ReaderArgs;
use crate::db::Db;
use crate::ingest::source::Bus;
use crate::verify::{gaps, VerifyStore, WalkOptions};

/// Options of `event-audit verify`.
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct VerifyArgs {
    #[command(flatten)]
    #[serde(skip)]
    pub config: ConfigArg,
    #[command(flatten)]
    pub database: DatabaseArgs,
    #[command(flatten)]
    pub nats: NatsArgs,
    #[command(flatten)]
    pub verify: VerifyGroup,
    #[command(flatten)]
    pub witness: ReaderArgs,
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
    pub skip_completeness: bool,
}

pub fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load(&args)?;
    super::runtime()?.block_on(async {
        let workers = settings.database.connections.max(1);
        // One more connection than workers: a payload compared by PostgreSQL itself.
        let db = Db::open_existing(&settings.database, workers + 1).await?;
        let store = VerifyStore::new(db.clone());
        // With the witness and a state from an earlier run: only the rows after the last
        // checked checkpoint are rehashed (`--full`: all of them).
        let from_link = match &settings.witness.public_key {
            Some(key) => {
                let trees = crate::tree::TreeStore::new(db.clone());
                crate::verify::witness::resume_link(&settings, &trees, key).await
            }
            None => None,
        };
        let opts = WalkOptions {
            workers: workers as usize,
            from_link,
        };
        let started = std::time::Instant::now();
        let mut report = store.walk(opts, None).await?;
        if !settings.verify.skip_completeness {
            let bus = Bus::connect(&settings.nats).await?;
            let c = gaps::check(&store, &bus).await?;
            report.add_completeness(c);
        }
        // Re-verdicts of `reprocess` (their own hashes and run chain).
        if let Some(why) = crate::verify::reverdicts::check(&db).await? {
            report.add_break(why);
        }
        report.duration_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        println!("{}", serde_json::to_string(&report)?);
        if let (true, Some(key)) = (report.ok, &settings.witness.public_key) {
            eprintln!("chain intact: {} links, {} rows", report.links, report.rows);
            // The one call of the witness checks (verify/witness.rs).
            let (code, witness_ok) = super::verify_witness::run(&settings, db, key).await?;
            store.record(&report, witness_ok).await?;
            return Ok(code);
        }
        store.record(&report, None).await?;
        if report.ok {
            eprintln!("chain intact: {} links, {} rows", report.links, report.rows);
            Ok(ExitCode::SUCCESS)
        } else {
            eprintln!(
                "chain BROKEN: {} ({} break(s) in all)",
                report.first_break.as_deref().unwrap_or("?"),
                report.breaks_total
            );
            Ok(ExitCode::from(1))
        }
    })
}
