//! `event-audit demo`: the first run. Starts the platform simulator (playing a small migration
//! batch with a few anomalies), a background load of catalogue events, and the daemon with a
//! scheduled reconciliation, all in this one process; prints where to look and the
//! reconciliation summary; stops everything on Ctrl-C.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use tokio::sync::watch;

use crate::cli::{Cli, Command};
use crate::store::Store;

/// Options of `event-audit demo`.
#[derive(clap::Args, Debug, Clone)]
pub struct DemoArgs {
    /// The demo's own database; dropped and recreated at start when it is the default one.
    #[arg(
        long,
        env = "EVENT_AUDIT_DEMO_DATABASE_URL",
        hide_env_values = true,
        default_value = "postgres://postgres@127.0.0.1:5432/event_audit_demo"
    )]
    pub database_url: String,
    #[arg(long, env = "NATS_URL", default_value = crate::config::DEFAULT_NATS_URL, hide_env_values = true)]
    pub nats_url: String,
    /// The daemon's HTTP listener (/metrics, /readyz, reports).
    #[arg(long, default_value = "127.0.0.1:9187")]
    pub http_addr: SocketAddr,
    /// The platform simulator's REST listener.
    #[arg(long, default_value = "127.0.0.1:9188")]
    pub platform_addr: SocketAddr,
    /// Accounts in the simulated migration batch.
    #[arg(long, default_value_t = 200)]
    pub accounts: usize,
    /// Background catalogue events per second (a realistic mix, ~2% bad).
    #[arg(long, default_value_t = 20)]
    pub load_rate: u64,
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
}

const STREAM: &str = "EVENT_AUDIT_DEMO";
const SUPPLIER: &str = "DEMO";
const DEFAULT_DB: &str = "event_audit_demo";

fn parse(argv: &[String]) -> anyhow::Result<Command> {
    let mut full = vec!["event-audit".to_owned()];
    full.extend_from_slice(argv);
    Ok(Cli::try_parse_from(full)?.command)
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// A random token for the simulator and the daemon, in a file only this user can read.
fn token_file(dir: &Path) -> anyhow::Result<std::path::PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join("rest-token");
    let token: String = (0..32)
        .map(|_| format!("{:02x}", rand::random::<u8>()))
        .collect();
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    f.write_all(token.as_bytes())?;
    Ok(path)
}

pub async fn run(args: DemoArgs, shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let token = token_file(dir.path())?;
    let token = token.to_string_lossy().into_owned();
    let nats = args.nats_url.clone();

    // A fresh batch each time: the demo's stream and (default) database start empty.
    let bus = crate::bus::Bus::connect(&nats).await?;
    let _ = bus.js.delete_stream(STREAM).await;
    if args.database_url.rsplit('/').next() == Some(DEFAULT_DB) {
        let _ = crate::store::drop_database(&args.database_url).await;
    }

    let rest_url = format!("http://{}", args.platform_addr);
    let sim = parse(&strings(&[
        "simulate-platform",
        "--listen",
        &args.platform_addr.to_string(),
        "--supplier",
        SUPPLIER,
        "--accounts",
        &args.accounts.to_string(),
        "--seed",
        &args.seed.to_string(),
        "--nats-url",
        &nats,
        "--stream",
        STREAM,
        "--subjects",
        "demo.>",
        "--subject",
        "demo.platform",
        "--token-file",
        &token,
        "--drop-completion",
        "0.03",
        "--wrong-identifier",
        "0.02",
        "--error-but-created",
        "0.02",
        "--cancelled",
        "0.02",
        "--dry-run",
        "0.02",
        "--duplicate-events",
        "0.03",
        "--left-pending",
        "0.03",
        "--left-in-progress",
        "0.02",
        "--rest-5xx",
        "0.05",
    ]))?;
    let Command::SimulatePlatform(sim) = sim else {
        anyhow::bail!("simulator arguments")
    };
    let sim_task = tokio::spawn(crate::simulator::run(sim, shutdown.clone()));

    let daemon = parse(&strings(&[
        "run",
        "--database-url",
        &args.database_url,
        "--nats-url",
        &nats,
        "--stream",
        STREAM,
        "--subjects",
        "demo.>",
        "--consumer",
        "event-audit-demo",
        "--subject-prefix",
        "demo.",
        "--http-addr",
        &args.http_addr.to_string(),
        "--reconcile-supplier",
        SUPPLIER,
        "--rest-url",
        &rest_url,
        "--rest-token-file",
        &token,
        "--reconcile-interval",
        "15s",
    ]))?;
    let Command::Run(daemon) = daemon else {
        anyhow::bail!("daemon arguments")
    };
    let cfg = daemon.resolve()?;
    let daemon_run = crate::daemon::run(cfg, shutdown.clone());
    tokio::pin!(daemon_run);

    let load = crate::publish::PublishArgs {
        nats_url: nats.clone(),
        count: 10_000_000,
        subject: "demo.load".into(),
        rate: args.load_rate,
        seed: args.seed,
        stream: crate::publish::StreamArgs {
            name: STREAM.into(),
            subjects: vec!["demo.>".into()],
        },
        window: 64,
    };
    let load_stop = shutdown.clone();
    let load_task =
        tokio::spawn(async move { crate::publish::run_until(&load, Some(load_stop)).await });

    // Wait for the first scheduled reconciliation (the daemon runs meanwhile), then say where
    // to look.
    let base = format!("http://{}", args.http_addr);
    let report = tokio::select! {
        done = &mut daemon_run => {
            load_task.abort();
            done?;
            return sim_task.await.context("simulator task")?;
        }
        r = first_run(&args.database_url, shutdown.clone()) => r,
    };
    if let Some(r) = report {
        println!("\nevent-audit demo is running (Ctrl-C stops everything).\n");
        println!("  metrics            {base}/metrics");
        println!("  readiness          {base}/readyz");
        println!(
            "  reconciliation     {base}/reports/reconciliation?format=html   (also json, csv)"
        );
        println!("  run history        {base}/reports/reconciliation/runs");
        println!("  account timeline   {base}/accounts/<external account number>/events");
        println!(
            "  audit log          psql {} -c 'select status, count(*) from event_log group by 1'",
            crate::store::redact_url(&args.database_url)
        );
        println!(
            "  platform (REST)    {rest_url}  (supplier {SUPPLIER}, token in a temporary file)"
        );
        println!(
            "\nreconciliation run {} of supplier {SUPPLIER}: {} accounts",
            r.run_id.unwrap_or(0),
            r.accounts
        );
        for (verdict, n) in r.nonzero_counts() {
            println!("  {verdict:<24} {n}");
        }
        println!(
            "(the daemon reconciles again every 15 s; background load: {} events/s)\n",
            args.load_rate
        );
    }
    let daemon = daemon_run.await;
    let _ = load_task.await;
    let sim = sim_task.await.context("simulator task")?;
    daemon?;
    sim
}

/// The first stored reconciliation run, or `None` after two minutes or on shutdown.
async fn first_run(
    database_url: &str,
    shutdown: watch::Receiver<bool>,
) -> Option<crate::reconcile::model::RunReport> {
    let started = Instant::now();
    let mut store = None;
    loop {
        if *shutdown.borrow() {
            return None;
        }
        if started.elapsed() > Duration::from_secs(120) {
            eprintln!("no reconciliation run after 2 minutes; see the daemon's log above");
            return None;
        }
        if store.is_none() {
            store = Store::open(database_url, 1).await.ok();
        }
        if let Some(s) = &store {
            if let Ok(Some(r)) = s.reconcile_run(None).await {
                return Some(r);
            }
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}
