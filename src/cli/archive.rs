//! `event-audit archive --before T --out DIR [--prune --reason TEXT]`: the dated partitions of
//! the log that end by `T` written to `DIR` as JSON Lines with a manifest (see `archive`), and
//! with `--prune` then dropped from the database, each prune recorded in the log. Exit 0 done,
//! 2 no partition to archive (nothing changed: no directory made, no manifest written). Never
//! creates the database, never migrates.

use std::path::PathBuf;
use std::process::ExitCode;

use super::args::{ConfigArg, StatementDatabaseArgs};
use super::catalogue::ListFormat;
use crate::archive::{self, Retained, STATEMENT_FACTOR};
use crate::db::Db;

/// Options of `event-audit archive`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ArchiveArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) database: StatementDatabaseArgs,
    /// Archive the monthly partitions that end by this time (RFC 3339, e.g.
    /// 2026-01-01T00:00:00Z).
    #[arg(long, value_parser = super::erase::parse_time)]
    pub(crate) before: chrono::DateTime<chrono::Utc>,
    /// The archive directory (created; its manifest.json keeps other partitions' entries).
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Then drop each archived partition's rows from the database (their keys, links and row
    /// hashes stay), recorded in the log as an erasure naming the archive file. Runs as the
    /// eraser role.
    #[arg(long, requires = "reason")]
    pub(crate) prune: bool,
    /// Why (recorded in the log with --prune).
    #[arg(long)]
    pub(crate) reason: Option<String>,
    #[arg(long, value_enum, default_value = "table")]
    pub(crate) format: ListFormat,
}

pub(super) fn run(args: ArchiveArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load()?;
    let instance = settings.ingest.instance_name();
    let bound = settings.database.statement_timeout.get() * STATEMENT_FACTOR;
    let lock_for = settings.retention.archive_lock_for.map(|d| d.get());
    let done = super::runtime()?.block_on(async {
        let db = Db::open_existing(&settings.database, 2).await?;
        let prune = args
            .prune
            .then(|| args.reason.as_deref().unwrap_or_default());
        let run = archive::retain(
            &db,
            args.before,
            &args.out,
            &settings.object_store,
            lock_for,
            prune,
            &instance,
            bound,
        );
        match tokio::time::timeout(bound * 4, run).await {
            Ok(r) => Ok(r?),
            Err(_) => anyhow::bail!(
                "archive did not finish within {:?} at {}; what was pruned is recorded, the rest untouched; try again",
                bound * 4,
                db.place()
            ),
        }
    })?;
    if done.written.partitions.is_empty() {
        eprintln!(
            "no unpruned partition ends by {} (already pruned: {}): nothing archived",
            args.before.to_rfc3339(),
            if done.written.already_pruned.is_empty() {
                "none".to_owned()
            } else {
                done.written.already_pruned.join(", ")
            }
        );
        return Ok(ExitCode::from(2));
    }
    match args.format {
        ListFormat::Json => println!("{}", serde_json::to_string_pretty(&done)?),
        ListFormat::Table => print!("{}", report(&done)),
    }
    Ok(ExitCode::SUCCESS)
}

fn report(r: &Retained) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    for p in &r.written.partitions {
        let _ = writeln!(
            s,
            "archived partition {} ({} rows, published {} to {}) to {} (sha256 {})",
            p.partition,
            p.rows,
            p.published_from,
            p.published_to,
            r.written.dir.join(&p.file).display(),
            p.sha256
        );
    }
    for p in &r.pruned {
        let _ = writeln!(
            s,
            "pruned partition {}: {} rows' contents dropped from the database (keys, links and row hashes kept), recorded as erasure {} in chain link {}; {} envelope-id claims and {} findings removed",
            p.partition, p.rows, p.erasure, p.link_seq, p.claims_removed, p.findings_removed
        );
    }
    if !r.written.already_pruned.is_empty() {
        let _ = writeln!(
            s,
            "already pruned, left as archived before: {}",
            r.written.already_pruned.join(", ")
        );
    }
    s
}
