//! `event-audit mirror --log-url URL --public-key FILE [--witness-policy FILE] --dir
//! DIR|s3://BUCKET/PREFIX [--config FILE] [--follow INTERVAL] [--metrics-listen ADDR]`: the
//! auditor's copy of every leaf of a log (no PostgreSQL, no NATS), in a directory or an S3
//! bucket (`[object_store]` of the settings file: endpoint, region, credential files). One pull: exit 0 with the origin and size on stdout; 1 when the log
//! signs a tree that contradicts the copy (rollback or fork), both signed notes printed in full
//! and the copy untouched; 2 when it could not mirror (unreachable, a bad key, tiles or bundles
//! that are not the signed tree). `--follow` pulls at the interval until SIGTERM or SIGINT.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use crate::config::Dur;
use crate::mirror::follow::{self, Follow};
use crate::mirror::source::Source;
use crate::mirror::{pull, Log, PullError, Pulled, Split};
use crate::signal::shutdown_signal;
use crate::tiles::Tiles;

/// Options of `event-audit mirror`.
#[derive(clap::Args, Debug, Clone)]
pub struct MirrorArgs {
    /// The log's tlog-tiles prefix: `http(s)://host:port/log` (the daemon's), a directory or
    /// a `file://` URL (a copied log).
    #[arg(long, value_name = "URL")]
    pub log_url: String,
    /// The log's public key file (`<name>+<key id>+<base64 key>`).
    #[arg(long, value_name = "FILE")]
    pub public_key: PathBuf,
    /// A witness policy: every checkpoint mirrored must carry its quorum of cosignatures.
    #[arg(long, value_name = "FILE")]
    pub witness_policy: Option<PathBuf>,
    /// Where the copies are kept: one per log, in `<dir>/<hex SHA-256 of the origin>/`; a
    /// directory or s3://BUCKET/PREFIX (with the settings file's `[object_store]`).
    #[arg(long, value_name = "DIR|s3://BUCKET/PREFIX")]
    pub dir: String,
    /// A settings file: its `[object_store]` is read for an s3:// --dir, its `[witness]` TLS for
    /// an https:// --log-url.
    #[command(flatten)]
    pub config: super::args::ConfigArg,
    #[command(flatten)]
    pub tls: super::witness_args::WitnessTlsArgs,
    /// Pull again every INTERVAL (e.g. 10s) until stopped, never exiting on a failure.
    #[arg(long, value_name = "INTERVAL")]
    pub follow: Option<Dur>,
    /// With --follow: serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR", requires = "follow")]
    pub metrics_listen: Option<SocketAddr>,
    /// How long each request to the log may take (connecting and the whole body included).
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub timeout: Dur,
    /// The most leaves one pull adds: a log that signs more beyond the copy is refused before
    /// anything is fetched (a pull holds about 70 bytes a new leaf until it is checked).
    #[arg(long, value_name = "N", default_value_t = crate::mirror::MAX_LEAVES_PER_PULL)]
    pub max_leaves_per_pull: u64,
}

pub fn run(args: MirrorArgs) -> anyhow::Result<ExitCode> {
    let key = crate::keys::load_public_key(&args.public_key)?;
    let policy = args
        .witness_policy
        .as_deref()
        .map(|p| crate::keys::load_policy(p, Some(&key)))
        .transpose()?;
    let settings = args.config.load()?;
    let source = Source::parse(
        &args.log_url,
        args.timeout.into(),
        &Source::tls_of(&settings.witness),
    )
    .map_err(anyhow::Error::msg)?;
    let log = Log {
        source,
        key,
        policy,
        max_leaves: args.max_leaves_per_pull,
    };
    let dir = super::tiles_at(&args.dir, args.config.config.as_deref())?;
    super::runtime()?.block_on(async {
        dir.store().prove("mirror").await?;
        match args.follow {
            Some(every) => follow(log, dir, every, args.metrics_listen).await,
            None => once(&log, &dir).await,
        }
    })
}

/// One pull, its outcome as the exit code.
async fn once(log: &Log, dir: &Tiles) -> anyhow::Result<ExitCode> {
    match pull::pull(log, dir, true).await {
        Ok(Pulled::Added { origin, from, size }) => {
            println!(
                "{origin}: mirrored at tree size {size} ({} leaves added)",
                size - from
            );
            Ok(ExitCode::SUCCESS)
        }
        Ok(Pulled::Unchanged { origin, size }) => {
            println!("{origin}: up to date at tree size {size} (0 leaves added)");
            Ok(ExitCode::SUCCESS)
        }
        Err(e @ PullError::Inconsistent { .. }) => {
            if let PullError::Inconsistent { split, mirror, log } = &e {
                let what = match split {
                    Split::Rollback => "rollback",
                    Split::Fork => "fork",
                };
                println!("{e}");
                println!(
                    "\nthe mirror's checkpoint (tree size {}):\n{}",
                    mirror.cp.size, mirror.note
                );
                println!(
                    "the log's checkpoint (tree size {}):\n{}",
                    log.cp.size, log.note
                );
                eprintln!(
                    "event-audit: {what}: the log signs tree size {}, the mirror holds {}; both signed notes on stdout are the evidence",
                    log.cp.size, mirror.cp.size
                );
            }
            Ok(ExitCode::from(1))
        }
        Err(e) => {
            Err(anyhow::Error::new(e).context(format!("could not mirror {}", log.source.shown(""))))
        }
    }
}

/// Pulls at every `every` until SIGTERM or SIGINT.
async fn follow(
    log: Log,
    dir: Tiles,
    every: Dur,
    metrics_listen: Option<SocketAddr>,
) -> anyhow::Result<ExitCode> {
    let metrics = match metrics_listen {
        Some(addr) => {
            let l = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr} for --metrics-listen"))?;
            // The address on stdout, for scripts that listen on port 0.
            println!("metrics: http://{}/metrics", l.local_addr()?);
            Some(l)
        }
        None => None,
    };
    let stop = shutdown_signal("stopping the mirror");
    let f = Follow {
        log,
        dir,
        every: every.into(),
        metrics,
    };
    follow::run(f, stop).await;
    Ok(ExitCode::SUCCESS)
}
