//! `event-audit run`: the daemon's options; builds the settings, then the app, and runs it
//! until SIGTERM or SIGINT.

use std::process::ExitCode;

use super::args::{
    ConfigArg, ConsumerArgs, HttpArgs, IngestArgs, NatsArgs, RestArgs, RetentionArgs, ScheduleArgs,
    WriterDatabaseArgs,
};
use super::witness_args::SignerArgs;
use crate::app::{shutdown_signal, App};

/// Options of `event-audit run`.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) database: WriterDatabaseArgs,
    #[command(flatten)]
    pub(crate) nats: NatsArgs,
    #[command(flatten)]
    pub(crate) stream: ConsumerArgs,
    #[command(flatten)]
    pub(crate) ingest: IngestArgs,
    #[command(flatten)]
    pub(crate) http: HttpArgs,
    #[command(flatten)]
    pub(crate) rest: RestArgs,
    #[command(flatten)]
    pub(crate) reconcile: ScheduleArgs,
    #[command(flatten)]
    pub(crate) retention: RetentionArgs,
    #[command(flatten)]
    pub(crate) witness: SignerArgs,
}

pub(super) fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load()?;
    super::runtime()?.block_on(async {
        let app = App::build(settings).await?;
        let stop = app.stop_token();
        let signal = shutdown_signal("finishing the batches in hand");
        tokio::spawn(async move {
            signal.cancelled().await;
            stop.cancel();
        });
        app.run_until_stopped().await?;
        Ok(ExitCode::SUCCESS)
    })
}
