//! `event-audit demo`: the first run. Starts the platform simulator (playing a small migration
//! batch with a few anomalies, registration ones included), registers the batch from the
//! manifest the simulator writes, starts a background load of catalogue events (accounts
//! outside any batch, paced) and the daemon, which reconciles the open batch on a schedule, all
//! in this one process, each from settings built here; prints where to look once, then a line
//! per reconciliation run, with its counts when they changed; after the second run the platform
//! finishes the accounts it had left pending or in progress, and the run that sees it prints
//! what changed and the link to those accounts. Stops everything on Ctrl-C, then drops the
//! demo's stream and (when it is the default one) its database, unless `--keep`; says which on
//! stdout. Everything it says is on stdout (the simulator's lines included); stderr carries only
//! the log's warnings. The seed is random unless given, so envelope ids are never reused across
//! runs.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::app::App;
use crate::config::{defaults, redact_url, Dur, Settings, SimRates};
use crate::db::Db;
use crate::dev::simulator::server::Platform;
use crate::dev::simulator::Simulator;
use crate::reconcile::batch::Registered;
use crate::reconcile::diff::Diff;
use crate::reconcile::manifest::Manifest;
use crate::reconcile::model::RunReport;
use crate::reconcile::store::ReconcileStore;
pub use leave::leave;
use leave::owned_database;

mod leave;

const STREAM: &str = "EVENT_AUDIT_DEMO";
const SUPPLIER: &str = "DEMO";
const DEFAULT_DB: &str = "event_audit_demo";

/// The demo's suffix: what follows `event_audit_demo` in its database's name (`_2` for
/// `event_audit_demo_2`; empty for the default one), when it is lowercase letters, digits and
/// `_`. Its stream, subjects and consumer carry it, so that two demos, each with its own
/// database, `--http-addr` and `--platform-addr`, share PostgreSQL and NATS without a clash.
pub(crate) fn suffix(db_url: &str) -> Option<String> {
    let name = db_url.rsplit('/').next()?.split('?').next()?;
    let rest = name.strip_prefix(DEFAULT_DB)?;
    rest.bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        .then(|| rest.to_owned())
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

/// The daemon's, the simulator's and the load's settings, from the demo's.
fn plan(base: &Settings, token: &Path, seed: u64) -> Settings {
    let d = &base.demo;
    let mut s = base.clone();
    s.database.url = d.database_url.clone();
    let tail = suffix(&d.database_url).unwrap_or_default();
    let demo = format!("demo{tail}");
    s.stream.name = format!("{STREAM}{}", tail.to_uppercase());
    s.stream.subjects = vec![format!("{demo}.>")];
    s.stream.consumer = format!("event-audit-{demo}");
    s.stream.subject_prefix = format!("{demo}.");
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
    s.simulator.subject = format!("{demo}.platform");
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
    s.publish.subject = format!("{demo}.load");
    s.publish.rate = d.load_rate;
    // Another stream of ids than the batch's.
    s.publish.seed = Some(seed ^ 0x5EED_10AD);
    s.publish.window = 64;
    s
}

pub(crate) async fn run(base: Settings, stop: CancellationToken) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let token = token_file(dir.path())?;
    let seed = base.demo.seed.unwrap_or_else(rand::random);
    let s = plan(&base, &token, seed);
    let played = play(&s, &token, seed, &stop).await;
    let own_db = owned_database(&s.database.url).is_some();
    for line in leave(
        &s.nats,
        &s.stream.name,
        &s.database.url,
        own_db,
        base.demo.keep,
    )
    .await
    {
        match line {
            Ok(said) => println!("{said}"),
            Err(warning) => eprintln!("event-audit demo: {warning}"),
        }
    }
    played
}

/// The demo itself, until it is stopped (or something fails).
async fn play(
    s: &Settings,
    token: &Path,
    seed: u64,
    stop: &CancellationToken,
) -> anyhow::Result<()> {
    let batch_name = format!("demo-{seed}");
    let bus = start_fresh(s).await?;
    let simulator = Simulator::start_telling(s, |line| println!("{line}"))
        .await
        .context("starting the simulator")?;
    let manifest = simulator.manifest.clone();
    let platform = simulator.platform();
    let fixable = left_unfinished(&simulator.expected);
    let sim = tokio::spawn(simulator.serve(stop.clone()));
    // The stream holds the played batch alone until the load starts.
    let played = bus
        .js
        .get_stream(&s.stream.name)
        .await?
        .info()
        .await?
        .state
        .last_sequence;
    let app = App::build(s.clone()).await.context("starting the daemon")?;
    let base_url = format!("http://{}", app.address());
    let daemon_stop = app.stop_token();
    let daemon = tokio::spawn(app.run_until_stopped());
    wait_until_recorded(&bus, s, played, &daemon, stop).await;
    register(s, &batch_name, &manifest, token).await?;
    let load = {
        let (s, stop) = (s.clone(), stop.clone());
        tokio::spawn(async move { crate::dev::publish::run(&s, Some(stop)).await })
    };

    print_where(s, &base_url, token, &batch_name);
    follow_runs(s, &base_url, &daemon, stop, &platform, &fixable, seed).await?;
    daemon_stop.cancel();
    let daemon = daemon.await.context("daemon task")?;
    let _ = load.await;
    let sim = sim.await.context("simulator task")?;
    daemon?;
    sim
}

/// A fresh batch each time: the demo's stream and (default) database start empty. Returns the
/// connection to the bus.
async fn start_fresh(s: &Settings) -> anyhow::Result<crate::bus::Bus> {
    let bus = crate::dev::publish::connect(&s.nats).await?;
    let _ = bus.js.delete_stream(&s.stream.name).await;
    if owned_database(&s.database.url).is_some() {
        let _ = crate::db::drop_database(&s.database.url).await;
    }
    Ok(bus)
}

/// The accounts the platform left pending or in progress (it finishes them after the second
/// run), from the simulator's ground truth.
fn left_unfinished(expected: &serde_json::Value) -> Vec<String> {
    expected["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| {
            let a = r["anomaly"].as_str();
            a == Some("left_pending") || a == Some("left_in_progress")
        })
        .filter_map(|r| r["external_account_number"].as_str().map(str::to_owned))
        .collect()
}

/// Waits until the daemon has recorded the `played` events (or has ended, or two minutes
/// passed, or the demo is stopped), so that the first scheduled run (one interval after the
/// batch is registered) sees every event the platform published.
async fn wait_until_recorded<T>(
    bus: &crate::bus::Bus,
    s: &Settings,
    played: u64,
    daemon: &JoinHandle<T>,
    stop: &CancellationToken,
) {
    let recorded = async {
        loop {
            let floor = match bus.js.get_stream(&s.stream.name).await {
                Ok(st) => st
                    .consumer_info(&s.stream.consumer)
                    .await
                    .map_or(0, |c| c.ack_floor.stream_sequence),
                Err(_) => 0,
            };
            if floor >= played || daemon.is_finished() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    tokio::select! {
        _ = stop.cancelled() => {}
        _ = recorded => {}
        _ = tokio::time::sleep(Duration::from_secs(120)) => {
            println!("the daemon has not recorded the batch's {played} events after 2 minutes; registering it anyway");
        }
    }
}

/// The batch the simulator played, registered from its manifest: the daemon reconciles
/// exactly these accounts; the background load's accounts belong to no batch.
async fn register(
    s: &Settings,
    batch_name: &str,
    manifest: &Manifest,
    token: &Path,
) -> anyhow::Result<()> {
    let registered = ReconcileStore::new(Db::open_existing(&s.database, 1).await?)
        .register_batch(SUPPLIER, batch_name, manifest, &[])
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
    Ok(())
}

/// Each new reconciliation run, until the demo is stopped or the daemon ends: a line, with the
/// counts when they changed (and the link to the accounts that changed). After the second run
/// the platform finishes the `unfinished` accounts.
async fn follow_runs<T>(
    s: &Settings,
    base_url: &str,
    daemon: &JoinHandle<T>,
    stop: &CancellationToken,
    platform: &Platform,
    unfinished: &[String],
    seed: u64,
) -> anyhow::Result<()> {
    let mut store = None;
    let mut last = None;
    let mut runs = 0;
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
        let Ok(Some(r)) = st.reconcile_run(None).await else {
            continue;
        };
        if r.run_id == last {
            continue;
        }
        last = r.run_id;
        runs += 1;
        let changes = crate::reconcile::compare::since_previous(st, &r)
            .await
            .ok()
            .flatten();
        print_run(base_url, &r, changes.as_ref());
        if runs == 2 {
            fix(s, platform, unfinished, seed).await?;
        }
    }
    Ok(())
}

/// The platform finishes the accounts it had left pending or in progress; their events go to
/// the bus.
async fn fix(
    s: &Settings,
    platform: &Platform,
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
        "{} the platform finished {} account(s) it had left pending or in progress ({n} events)",
        clock(chrono::Utc::now()),
        accounts.len()
    );
    Ok(())
}

/// `00:33:47Z`.
fn clock(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%H:%M:%SZ").to_string()
}

/// Where to look, printed once.
fn print_where(s: &Settings, base: &str, token: &Path, batch: &str) {
    println!("\nevent-audit demo is running; Ctrl-C stops everything. Where to look:");
    println!(
        "  report       {base}/reports/reconciliation?batch={batch}&format=html   (also json, csv)"
    );
    println!("  run history  {base}/reports/reconciliation/runs?batch={batch}");
    println!("  endpoints    {base}/   (/metrics, /readyz, each account's events)");
    println!(
        "  audit log    psql '{}' -c 'select status, count(*) from event_log group by 1'",
        redact_url(&s.database.url)
    );
    if let Some(rest) = &s.rest.url {
        println!(
            "  platform     curl -H \"Authorization: Token $(cat {})\" {rest}/v1/data-import/all-account-import-processes/{SUPPLIER}/",
            token.display()
        );
    }
    println!(
        "The batch is reconciled every {}: a line per run, its counts when they change, and a \
         link to the accounts that changed. Background load: {} events/s.\n",
        s.reconcile.interval, s.publish.rate
    );
}

/// A run: one line when nothing changed since the previous run; else its counts, what changed
/// and the link to the accounts that did.
fn print_run(base: &str, r: &RunReport, changes: Option<&Diff>) {
    let head = format!("{} run {}", clock(r.finished_at), r.run_id.unwrap_or(0));
    if let Some(e) = &r.error {
        println!("{head}: could not complete: {e}");
        return;
    }
    // A run with other settings (`reconcile --batch` from the command line) in the history.
    let note = changes.and_then(Diff::settings_warning);
    match changes {
        Some(d) if d.is_empty() => {
            println!("{head}: no change since run {}", d.from_run);
            if let Some(n) = note {
                println!("  note: {n}");
            }
            return;
        }
        Some(d) => {
            let parts: Vec<String> = d
                .transitions
                .iter()
                .map(|(t, n)| format!("{t} {n}"))
                .chain(
                    d.registration_transitions
                        .iter()
                        .map(|(t, n)| format!("registration {t} {n}")),
                )
                .collect();
            println!(
                "{head}: {} account(s) changed since run {}: {}",
                d.changes.len(),
                d.from_run,
                parts.join(", ")
            );
        }
        None => println!("{head}: {} accounts", r.accounts),
    }
    print!(
        "{}",
        columns(&[
            ("import", r.nonzero_counts()),
            ("registration", r.nonzero_registrations()),
            ("orders", r.nonzero_orders()),
        ])
    );
    if let Some(d) = changes {
        println!(
            "  which accounts: {base}/reports/reconciliation/diff?from={}&to={}&format=html",
            d.from_run, d.to_run
        );
    }
    if let Some(n) = note {
        println!("  note: {n}");
    }
}

/// Count tables side by side, each a name column and a right-aligned count column.
fn columns(tables: &[(&str, Vec<(&str, u64)>)]) -> String {
    let tables: Vec<&(&str, Vec<(&str, u64)>)> =
        tables.iter().filter(|(_, rows)| !rows.is_empty()).collect();
    let widths: Vec<(usize, usize)> = tables
        .iter()
        .map(|(head, rows)| {
            let name = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
            let count = rows
                .iter()
                .map(|(_, n)| n.to_string().len())
                .max()
                .unwrap_or(0);
            (name.max(head.len().saturating_sub(count + 1)), count)
        })
        .collect();
    let height = tables.iter().map(|(_, rows)| rows.len()).max().unwrap_or(0);
    let mut out = String::new();
    for line in 0..=height {
        let cells: Vec<String> = tables
            .iter()
            .zip(&widths)
            .map(|((head, rows), (name, count))| {
                if line == 0 {
                    format!("{head:<w$}", w = name + 1 + count)
                } else if let Some((k, n)) = rows.get(line - 1) {
                    format!("{k:<name$} {n:>count$}")
                } else {
                    " ".repeat(name + 1 + count)
                }
            })
            .collect();
        out.push_str("  ");
        out.push_str(cells.join("   ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_second_demo_gets_names_of_its_own() {
        let at = |db: &str| format!("postgres://postgres@127.0.0.1:5432/{db}");
        assert_eq!(super::suffix(&at("event_audit_demo")).as_deref(), Some(""));
        assert_eq!(
            super::suffix(&at("event_audit_demo_2")).as_deref(),
            Some("_2")
        );
        assert_eq!(super::suffix(&at("event_audit")), None);
        assert_eq!(super::suffix(&at("event_audit_demo-x")), None);
        let mut base = crate::config::Settings::default();
        base.demo.database_url = at("event_audit_demo_2");
        let s = super::plan(&base, std::path::Path::new("/tmp/t"), 1);
        assert_eq!(s.stream.name, "EVENT_AUDIT_DEMO_2");
        assert_eq!(s.stream.subjects, vec!["demo_2.>".to_owned()]);
        assert_eq!(s.stream.consumer, "event-audit-demo_2");
        assert_eq!(s.publish.subject, "demo_2.load");
        base.demo.database_url = at("event_audit_demo");
        let s = super::plan(&base, std::path::Path::new("/tmp/t"), 1);
        assert_eq!(
            (s.stream.name.as_str(), s.stream.subjects[0].as_str()),
            ("EVENT_AUDIT_DEMO", "demo.>")
        );
    }

    #[test]
    fn count_tables_sit_side_by_side_aligned() {
        let t = super::columns(&[
            ("import", vec![("matched", 168), ("identifier_mismatch", 4)]),
            (
                "registration",
                vec![("registered", 166), ("never_requested", 4)],
            ),
            ("orders", vec![]),
        ]);
        assert_eq!(
            t,
            "  import                    registration\n  \
             matched             168   registered      166\n  \
             identifier_mismatch   4   never_requested   4\n"
        );
    }
}
