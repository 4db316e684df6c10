//! `event-audit recover --stream S [--seq A..B] [--dry-run]`: records every sequence the stream
//! still holds and the log lacks (see `ingest::recover`), in stream order, through the same
//! sink as the daemon (a row another daemon wrote meanwhile is skipped), and names what the
//! stream no longer holds as lost. Without `--seq`, from `stream.start_seq` to the stream's
//! last sequence. Exit 0 when the log lacks nothing the stream holds afterwards (lost sequences
//! are named, and reported by exit 1 with `--fail-on-lost`), 2 when it could not recover. Never
//! creates the database, never migrates.

use std::process::ExitCode;

use super::args::{ConfigArg, ConsumerArgs, IngestArgs, NatsArgs, StatementDatabaseArgs};
use super::catalogue::ListFormat;
use crate::db::Db;
use crate::ingest::recover::{Recover, Window};
use crate::ingest::sink::Sink;
use crate::row::record::Naming;

/// Options of `event-audit recover`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct RecoverArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) database: StatementDatabaseArgs,
    #[command(flatten)]
    pub(crate) nats: NatsArgs,
    /// The stream (`--stream`, or `stream.name` of the settings), where the log starts
    /// (`--start-seq`) and how messages without an envelope are named (`--subject-prefix`).
    #[command(flatten)]
    pub(crate) stream: ConsumerArgs,
    #[command(flatten)]
    pub(crate) ingest: IngestArgs,
    /// Stream sequences A..B (inclusive); default from `stream.start_seq` to the stream's last.
    #[arg(long, value_parser = super::reprocess::parse_range)]
    pub(crate) seq: Option<(i64, i64)>,
    /// Say what would be recorded and what is lost; record nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Exit 1 when sequences are lost (the stream no longer holds what the log lacks).
    #[arg(long)]
    pub(crate) fail_on_lost: bool,
    #[arg(long, value_enum, default_value = "table")]
    pub(crate) format: ListFormat,
}

pub(super) fn run(args: RecoverArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load()?;
    let stream = settings.stream.name.clone();
    let window = match args.seq {
        Some((a, b)) => Window {
            from: u64::try_from(a.max(1))
                .unwrap_or(1)
                .max(settings.stream.start_seq),
            to: Some(u64::try_from(b.max(0)).unwrap_or(0)),
        },
        None => Window {
            from: settings.stream.start_seq.max(1),
            to: None,
        },
    };
    let naming = Naming {
        subject_prefix: Some(settings.stream.subject_prefix.clone()).filter(|p| !p.is_empty()),
        encoding_2: false,
    };
    let done = super::runtime()?.block_on(async {
        let db = Db::open_existing(&settings.database, 2).await?;
        let bus = crate::bus::Bus::connect(&settings.nats).await?;
        let sink = Sink::new(db, &settings.ingest.instance_name());
        let r = Recover {
            bus: &bus,
            sink: &sink,
            naming: &naming,
            batch_size: settings.ingest.batch_size,
            metrics: None,
        };
        anyhow::Ok(r.run(&stream, window, args.dry_run).await?)
    })?;
    match args.format {
        ListFormat::Json => println!("{}", serde_json::to_string_pretty(&done)?),
        ListFormat::Table => println!("{}", done.line()),
    }
    Ok(if args.fail_on_lost && !done.lost.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
