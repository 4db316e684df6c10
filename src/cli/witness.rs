//! `event-audit witness serve`: the independent witness (C2SP tlog-witness) as a process of its
//! own, for an auditor's machine: no PostgreSQL, no NATS; stops on SIGTERM or SIGINT.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;

use super::args::ConfigArg;
use crate::app::shutdown_signal;
use crate::witnessed::witness::WitnessServer;

#[derive(clap::Subcommand, Debug)]
pub enum WitnessAction {
    /// Serve POST /add-checkpoint (cosign checkpoints that extend the last one cosigned per
    /// log) and GET /metrics.
    Serve(ServeArgs),
}

/// Options of `event-audit witness serve`.
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct ServeArgs {
    #[command(flatten)]
    #[serde(skip)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) witness_server: ServerArgs,
}

/// The witness's own settings (`witness_server.*`).
#[serde_with::skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct ServerArgs {
    /// The witness's private key file (`keygen --witness`; mode 0600).
    #[arg(
        long = "key",
        id = "witness_server.key_file",
        env = "EVENT_AUDIT_WITNESS_KEY_FILE"
    )]
    pub(crate) key_file: Option<PathBuf>,
    /// A log's public key file (`keygen`'s .pub); repeat for each log. The key is trusted for
    /// its name as origin and for `<name>/reverdicts`.
    #[arg(long = "log-key", id = "witness_server.log_keys")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) log_keys: Vec<PathBuf>,
    /// Where the latest checkpoint cosigned per log is kept (one witness process per directory).
    #[arg(long = "state-dir", id = "witness_server.state_dir")]
    pub(crate) state_dir: Option<PathBuf>,
    /// Listen address.
    #[arg(
        long = "listen",
        id = "witness_server.listen",
        env = "EVENT_AUDIT_WITNESS_LISTEN"
    )]
    pub(crate) listen: Option<SocketAddr>,
    /// How long one connection may stay open; then it closes after its request in progress.
    #[arg(
        long = "max-connection-age",
        id = "witness_server.max_connection_age",
        env = "EVENT_AUDIT_WITNESS_MAX_CONNECTION_AGE"
    )]
    pub(crate) max_connection_age: Option<crate::config::Dur>,
}

pub fn run(action: WitnessAction) -> anyhow::Result<ExitCode> {
    let WitnessAction::Serve(args) = action;
    let settings = args.config.load(&args)?;
    super::runtime()?.block_on(async {
        let server = WitnessServer::build(&settings).await?;
        // The address on stdout, for scripts that start it on port 0.
        println!("{}", server.address());
        server
            .run_until_stopped(shutdown_signal(
                "answering the requests in progress, accepting no more",
            ))
            .await;
        Ok(ExitCode::SUCCESS)
    })
}
