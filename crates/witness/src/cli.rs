//! `event-audit-witness serve` (and the daemon's `event-audit witness serve`, the same command): the independent witness (C2SP tlog-witness) as a process of its
//! own, for an auditor's machine: no PostgreSQL, no NATS; stops on SIGTERM or SIGINT.

use std::process::ExitCode;

use crate::args::{ConfigArg, ListenerTlsArgs};
use crate::signal::shutdown_signal;
use crate::WitnessServer;

#[derive(clap::Subcommand, Debug)]
pub enum WitnessAction {
    /// Serve POST /add-checkpoint (cosign checkpoints that extend the last one cosigned per
    /// log) and GET /metrics.
    Serve(ServeArgs),
}

/// Options of `event-audit witness serve`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ServeArgs {
    #[command(flatten)]
    pub config: ConfigArg,
    #[command(flatten)]
    pub witness_server: ServerArgs,
}

event_audit_base::options_group! {
    /// The witness's own settings (`witness_server.*`).
    pub struct ServerArgs = [
        "witness_server.key_file",
        "witness_server.log_keys",
        "witness_server.state_dir",
        "witness_server.listen",
        "witness_server.max_connection_age",
        ListenerTlsArgs,
    ];
}

pub fn run(action: WitnessAction) -> anyhow::Result<ExitCode> {
    let WitnessAction::Serve(args) = action;
    let settings = args.config.load()?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(async {
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
