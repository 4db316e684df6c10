//! `event-audit drift`: what live traffic carries that the catalogue does not declare, per event
//! version, from the aggregates ingest writes (a reader: never creates the database, never
//! migrates). `--suggest` prints a patch to catalogue/ (events.toml, shapes.toml), never applies
//! it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::args::{ConfigArg, DatabaseArgs};
use super::catalogue::ListFormat;
use crate::db::Db;
use crate::decode::catalogue::FINGERPRINT;
use crate::evolution::drift::{self, store::DriftStore, Range};

/// Options of `event-audit drift`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct DriftArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) database: DatabaseArgs,
    /// From this bus time (RFC 3339, or a date: 2026-11-01).
    #[arg(long, value_parser = drift::parse_time)]
    pub(crate) since: Option<chrono::DateTime<chrono::Utc>>,
    /// Until this bus time, excluded (RFC 3339, or a date).
    #[arg(long, value_parser = drift::parse_time)]
    pub(crate) until: Option<chrono::DateTime<chrono::Utc>>,
    #[arg(long, value_enum, default_value = "table")]
    pub(crate) format: ListFormat,
    /// Print a patch to catalogue/ adding the observed optional fields (never applied).
    #[arg(long)]
    pub(crate) suggest: bool,
    /// The catalogue directory the patch is made against.
    #[arg(long, default_value = "catalogue")]
    pub(crate) catalogue_dir: PathBuf,
}

pub(super) fn run(args: DriftArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load()?;
    let range = Range {
        since: args.since,
        until: args.until,
    };
    let report = super::runtime()?.block_on(async {
        let db = Db::open_existing(&settings.database, 2).await?;
        let rows = DriftStore::new(db).rows(&range, FINGERPRINT).await?;
        anyhow::Ok(drift::assemble(&rows, FINGERPRINT))
    })?;
    if args.suggest {
        let read = |file: &str| {
            let path = args.catalogue_dir.join(file);
            std::fs::read_to_string(&path)
                .with_context(|| format!("read {} (set --catalogue-dir)", path.display()))
        };
        let (events, shapes) = (read("events.toml")?, read("shapes.toml")?);
        let cat = crate::evolution::compat::load(&args.catalogue_dir)?;
        let s = drift::suggest::suggest(&report, &cat, &events, &shapes);
        print!("{}", s.patch);
        for n in &s.notes {
            eprintln!("note: {n}");
        }
        if s.patch.is_empty() {
            eprintln!("nothing to suggest: no undeclared field with one observed type");
        }
        return Ok(ExitCode::SUCCESS);
    }
    match args.format {
        ListFormat::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        ListFormat::Table => print!("{}", drift::report::table(&report)),
    }
    Ok(ExitCode::SUCCESS)
}
