//! `event-audit demo`: the first run. Starts the platform simulator (playing a small migration
//! batch with a few anomalies, registration ones included), registers the batch from the
//! manifest the simulator writes, starts a background load of catalogue events (accounts
//! outside any batch, paced) and the daemon, which reconciles the open batch on a schedule, all
//! in this one process, each from settings built here; prints where to look with each
//! reconciliation's summary; after the second run the platform finishes the accounts it had
//! left pending or in progress, so the third report shows what changed. Stops everything on
//! Ctrl-C. The seed is random unless given, so envelope ids are never reused across runs.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use crate::app::App;
use crate::config::{defaults, redact_url, Dur, Settings, SimRates};
use crate::db::Db;
use crate::dev::simulator::Simulator;
use crate::reconcile::batch::Registered;
use crate::reconcile::model::RunReport;
use crate::reconcile::store::ReconcileStore;

const STREAM: &str = "EVENT_AUDIT_DEMO";
const SUPPLIER: &str = "DEMO";
const DEFAULT_DB: &str = "event_audit_demo";

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

/// The daemon's, the simulator's and the load's settings, from the demo's.
fn plan(base: &Settings, token: &Path, seed: u64) -> Settings {
    let d = &base.demo;
    let mut s = base.clone();
    s.database.url = d.database_url.clone();
    s.stream.name = STREAM.into();
    s.stream.subjects = vec!["demo.>".into()];
    s.stream.consumer = "event-audit-demo".into();
    s.stream.subject_prefix = "demo.".into();
    s.rest.url = Some(format!("http://{}", d.platform_addr));
    s.rest.token_file = Some(token.to_owned());
    s.reconcile.suppliers = vec![SUPPLIER.into()];
    s.reconcile.interval = defaults::DEMO_RECONCILE_INTERVAL;
    s.simulator.listen = d.platform_addr;
    s.simulator.supplier = SUPPLIER.into();
    s.simulator.accounts = d.accounts;
    s.simulator.seed = Some(seed);
    s.simulator.manifest = Some(token.with_file_name("manifest.txt"));
    s.simulator.orders = 20;
    // The batch ran an hour ago: registrations requested then and not completed are stalled.
    s.reconcile.registration_grace = Dur::secs(1800);
    s.simulator.subject = "demo.platform".into();
    s.simulator.token_file = Some(token.to_owned());
    s.simulator.rest_5xx = 0.05;
    s.simulator.rates = SimRates {
        drop_completion: 0.03,
        wrong_identifier: 0.02,
        error_but_created: 0.02,
        cancelled: 0.02,
        dry_run: 0.02,
        duplicate_events: 0.03,
        left_pending: 0.03,
        left_in_progress: 0.02,
        registration_in_flight: 0.02,
        registration_never_requested: 0.02,
        registration_stalled: 0.02,
        registration_cancelled: 0.01,
        registration_reversed: 0.01,
        ..SimRates::default()
    };
    s.publish.count = 10_000_000;
    s.publish.subject = "demo.load".into();
    s.publish.rate = d.load_rate;
    // Another stream of ids than the batch's.
    s.publish.seed = Some(seed ^ 0x5EED_10AD);
    s.publish.window = 64;
    s
}

pub async fn run(base: Settings, stop: CancellationToken) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let token = token_file(dir.path())?;
    let seed = base.demo.seed.unwrap_or_else(rand::random);
    let s = plan(&base, &token, seed);
    let batch_name = format!("demo-{seed}");

    // A fresh batch each time: the demo's stream and (default) database start empty.
    let bus = crate::dev::publish::connect(&s.nats).await?;
    let _ = bus.js.delete_stream(STREAM).await;
    if s.database.url.rsplit('/').next() == Some(DEFAULT_DB) {
        let _ = crate::db::drop_database(&s.database.url).await;
    }

    let simulator = Simulator::start(&s)
        .await
        .context("starting the simulator")?;
    let manifest = simulator.manifest.clone();
    let platform = simulator.platform();
    let fixable: Vec<String> = simulator.expected["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| {
            let a = r["anomaly"].as_str();
            a == Some("left_pending") || a == Some("left_in_progress")
        })
        .filter_map(|r| r["external_account_number"].as_str().map(str::to_owned))
        .collect();
    let sim = tokio::spawn(simulator.serve(stop.clone()));
    let app = App::build(s.clone()).await.context("starting the daemon")?;
    // The batch the simulator played, registered from its manifest: the daemon reconciles
    // exactly these accounts; the background load's accounts belong to no batch.
    let registered = ReconcileStore::new(Db::open_existing(&s.database, 1).await?)
        .register_batch(SUPPLIER, &batch_name, &manifest, &[])
        .await?;
    if let Registered::Conflict(b) = registered {
        anyhow::bail!("batch {} exists with another list", b.label());
    }
    println!(
        "registered batch {SUPPLIER}/{batch_name}: {} accounts, {} orders (manifest {})",
        manifest.accounts.len(),
        manifest.orders.len(),
        token.with_file_name("manifest.txt").display()
    );
    let base_url = format!("http://{}", app.address());
    let daemon_stop = app.stop_token();
    let daemon = tokio::spawn(app.run_until_stopped());
    let load = {
        let (s, stop) = (s.clone(), stop.clone());
        tokio::spawn(async move { crate::dev::publish::run(&s, Some(stop)).await })
    };

    // Each new reconciliation run: its summary, then where to look (so the block never
    // scrolls away for long).
    let mut store = None;
    let mut last = None;
    let mut shown = 0;
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
        }
        if daemon.is_finished() {
            break;
        }
        if store.is_none() {
            store = Db::open_existing(&s.database, 1)
                .await
                .ok()
                .map(ReconcileStore::new);
        }
        let Some(st) = &store else { continue };
        if let Ok(Some(r)) = st.reconcile_run(None).await {
            if r.run_id != last {
                last = r.run_id;
                shown += 1;
                print_block(&s, &base_url, &token, &batch_name, &r);
                if shown == 2 {
                    fix(&s, &platform, &fixable, seed).await?;
                }
            }
        }
    }
    daemon_stop.cancel();
    let daemon = daemon.await.context("daemon task")?;
    let _ = load.await;
    let sim = sim.await.context("simulator task")?;
    daemon?;
    sim
}

/// The platform finishes the accounts it had left pending or in progress; their events go to
/// the bus.
async fn fix(
    s: &Settings,
    platform: &crate::dev::simulator::server::Platform,
    accounts: &[String],
    seed: u64,
) -> anyhow::Result<()> {
    let bus = crate::dev::publish::connect(&s.nats).await?;
    let mut n = 0;
    for ext in accounts {
        for e in platform.fix(ext, seed).unwrap_or_default() {
            bus.js
                .publish(s.simulator.subject.clone(), e.into())
                .await?
                .await?;
            n += 1;
        }
    }
    println!(
        "\nthe platform finished {} account(s) it had left pending or in progress ({n} events): \
         the next report shows them under \"changed since the previous run\"",
        accounts.len()
    );
    Ok(())
}

fn print_block(s: &Settings, base: &str, token: &Path, batch: &str, r: &RunReport) {
    println!(
        "\nreconciliation run {} of batch {SUPPLIER}/{batch}: {} accounts",
        r.run_id.unwrap_or(0),
        r.accounts
    );
    for (verdict, n) in r.nonzero_counts() {
        println!("  {verdict:<24} {n}");
    }
    for (state, n) in r.registration_counts.iter().filter(|(_, &n)| n > 0) {
        println!("  registration {state:<11} {n}");
    }
    for (outcome, n) in &r.order_processes {
        println!("  orders {outcome:<17} {n}");
    }
    println!("\nevent-audit demo is running (Ctrl-C stops everything). Where to look:");
    println!("  index              {base}/");
    println!("  metrics            {base}/metrics");
    println!("  readiness          {base}/readyz");
    println!("  reconciliation     {base}/reports/reconciliation?batch={batch}&format=html   (also json, csv)");
    println!("  changes            {base}/reports/reconciliation/diff?batch={batch}&format=html");
    println!("  run history        {base}/reports/reconciliation/runs?batch={batch}");
    println!("  account timeline   {base}/accounts/<external account number>/events?format=html");
    println!(
        "  audit log          psql '{}' -c 'select status, count(*) from event_log group by 1'",
        redact_url(&s.database.url)
    );
    if let Some(rest) = &s.rest.url {
        println!(
            "  platform (REST)    curl -H \"Authorization: Token $(cat {})\" {rest}/v1/data-import/all-account-import-processes/{SUPPLIER}/",
            token.display()
        );
    }
    println!(
        "(reconciliation every {}; background load: {} events/s)\n",
        s.reconcile.interval, s.publish.rate
    );
}
