//! The operations surface against real components: `promtool` on the alert rules and on a live
//! daemon's `/metrics`, a real Prometheus scraping the daemon while the platform simulator plays a
//! batch (every dashboard panel's query must return data), and the HTML reconciliation report in
//! headless Chromium. The daemon and the simulator run in-process; the tools
//! (`tests/it/support/observe.rs`) are the real ones.

use std::time::{Duration, Instant};

use crate::support::app::reconciling;
use crate::support::observe::{
    chromium_render, metric_names, panel_queries, promtool_check_metrics, repo, tool, wait_http,
    Prometheus,
};
use crate::support::sim::Sim;
use crate::support::{count_rows, settings, spawn_app, TestApp, TestDb, TestStream};
use event_audit::config::{Dur, SimRates};

/// The rules parse; their unit tests (`promtool test rules`, 30 s of CPU) run once, in
/// `operations_files::every_alert_has_a_runbook_and_tests_that_fire_it_and_keep_it_quiet`.
#[test]
fn alert_rules_pass_promtool_check() {
    let dir = repo().join("dashboards");
    let check = tool("promtool")
        .args(["check", "rules", "alerts.yml"])
        .current_dir(&dir)
        .output()
        .expect("promtool check rules");
    let out = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success(),
        "promtool check rules: {out}{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let rules = std::fs::read_to_string(dir.join("alerts.yml"))
        .expect("alerts.yml")
        .lines()
        .filter(|l| l.trim_start().starts_with("- alert:"))
        .count();
    assert!(
        out.contains(&format!("SUCCESS: {rules} rules found")),
        "{out}"
    );
}

#[tokio::test]
async fn live_metrics_pass_promtool_check_metrics() {
    let db = TestDb::create().await;
    let ts = TestStream::create("metrics").await;
    ts.publish_load(400, 11).await;
    let mut conf = settings(&db, &ts);
    conf.ingest.batch_size = 200;
    let s = spawn_app(conf).await;
    wait_http(&format!("{}/readyz", s.base), Duration::from_secs(30)).await;
    let start = Instant::now();
    while count_rows(&db.pool).await < 400 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "ingest did not finish"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let text = wait_http(&format!("{}/metrics", s.base), Duration::from_secs(5)).await;
    // The families the dashboards rely on are there, with the message counts of this run.
    for family in [
        "event_audit_ingest_messages_total",
        "event_audit_ingest_lag_seconds_bucket",
        "event_audit_consumer_pending_messages",
        "event_audit_catalogue_seen_event_versions",
        "event_audit_chain_head_link",
        "event_audit_build_info",
    ] {
        assert!(text.contains(family), "{family} missing from /metrics");
    }
    // Every family a dashboard or an alert reads is there from start-up (zero, or the label
    // values known at start), so no panel says "No data" on a healthy daemon; only the families
    // labelled by a reconciliation scope wait for that scope's first stored run (the scenario
    // test below checks them).
    let mut wanted: Vec<String> = Vec::new();
    for file in ["migration-health.json", "audit-log.json"] {
        let queries = panel_queries(&repo().join("dashboards").join(file));
        wanted.extend(queries.iter().flat_map(|(_, e)| metric_names(e)));
    }
    let alerts = std::fs::read_to_string(repo().join("dashboards/alerts.yml")).expect("alerts.yml");
    wanted.extend(metric_names(&alerts));
    wanted.sort();
    wanted.dedup();
    let absent: Vec<&String> = wanted
        .iter()
        .filter(|n| {
            !n.starts_with("event_audit_reconcile_") && n.as_str() != "event_audit_batch_accounts"
        })
        .filter(|n| !text.lines().any(|l| l.starts_with(n.as_str())))
        .collect();
    assert!(
        absent.is_empty(),
        "families read by dashboards or alerts but not exported from start-up: {absent:?}"
    );
    let total: f64 = text
        .lines()
        .filter(|l| l.starts_with("event_audit_ingest_messages_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(total, 400.0, "messages counted in /metrics");
    let out = promtool_check_metrics(&text).await;
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    drop(s);
}

#[test]
fn dashboards_are_importable_and_name_daemon_metrics() {
    for file in ["migration-health.json", "audit-log.json"] {
        let queries = panel_queries(&repo().join("dashboards").join(file));
        assert!(queries.len() >= 10, "{file}: {} queries", queries.len());
        for (title, expr) in &queries {
            assert!(
                !metric_names(expr).is_empty(),
                "{file}: panel {title} queries no event-audit metric"
            );
        }
    }
}

/// A simulated migration batch with anomalies, a mixed catalogue load, and a daemon that ingests
/// both and reconciles every 2 s against the simulator.
/// Its guards are held for their `Drop` (the database, the stream, the simulator).
#[allow(dead_code)]
pub(crate) struct Scenario {
    pub db: TestDb,
    pub ts: TestStream,
    pub sim: Sim,
    pub daemon: TestApp,
}

pub(crate) async fn simulated_batch(tag: &str, supplier: &str) -> Scenario {
    let db = TestDb::create().await;
    let ts = TestStream::create(tag).await;
    // Started once its batch is played.
    let sim = Sim::start_with(&ts, supplier, 60, 3, |s| {
        s.simulator.rates = SimRates {
            drop_completion: 0.1,
            wrong_identifier: 0.05,
            left_pending: 0.05,
            registration_stalled: 0.05,
            ..SimRates::default()
        };
        s.simulator.rest_5xx = 0.1;
    })
    .await;
    // The batch is registered: the daemon reconciles it (registrations followed up) besides
    // the whole supplier.
    let store = event_audit::test_support::reconcile::store::ReconcileStore::new(
        event_audit::test_support::db::Db::from_pool(db.pool.clone()),
    );
    store
        .register_batch(supplier, "b1", &sim.manifest, &[])
        .await
        .expect("register the batch");
    ts.publish_load(1000, 5).await;
    let mut s = reconciling(settings(&db, &ts), supplier, &sim.url, &sim.token_file);
    s.ingest.batch_size = 200;
    s.reconcile.interval = Dur::secs(2);
    let daemon = spawn_app(s).await;
    let run_seen = Instant::now();
    loop {
        let runs: i64 = sqlx::query_scalar("SELECT count(*) FROM audit.reconcile_runs")
            .fetch_one(&db.pool)
            .await
            .unwrap_or(0);
        if runs > 0 && count_rows(&db.pool).await >= 1000 {
            break;
        }
        assert!(
            run_seen.elapsed() < Duration::from_secs(60),
            "no ingest or reconcile run: {}",
            daemon.log()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    Scenario {
        db,
        ts,
        sim,
        daemon,
    }
}

#[tokio::test]
async fn prometheus_scrapes_a_batch_and_every_panel_query_returns_data() {
    let sc = simulated_batch("prom", "PROM").await;
    let prom = Prometheus::start(&sc.daemon.addr.to_string()).await;
    // Several scrapes, so that rate() and increase() over the panels' windows have two points.
    let start = Instant::now();
    loop {
        // At least four samples of an ingest counter and two of the reconcile counter.
        let scrapes = prom
            .query("count_over_time(event_audit_ingest_batches_total[1m]) >= 4")
            .await
            .unwrap_or_default();
        let runs = prom
            .query("count_over_time(event_audit_reconcile_runs_total[1m]) >= 2")
            .await
            .unwrap_or_default();
        if !scrapes.is_empty() && !runs.is_empty() {
            break;
        }
        let up = prom.query("up").await;
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "Prometheus did not scrape the daemon four times: up = {up:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let mut queries = Vec::new();
    for file in ["migration-health.json", "audit-log.json"] {
        queries.extend(panel_queries(&repo().join("dashboards").join(file)));
    }
    let alerts = std::fs::read_to_string(repo().join("dashboards/alerts.yml")).expect("alerts.yml");
    let mut names: Vec<String> = queries.iter().flat_map(|(_, e)| metric_names(e)).collect();
    names.extend(metric_names(&alerts));
    names.sort();
    names.dedup();
    let mut missing = Vec::new();
    for name in &names {
        let base = name
            .strip_suffix("_bucket")
            .or_else(|| name.strip_suffix("_sum"))
            .or_else(|| name.strip_suffix("_count"))
            .unwrap_or(name);
        let q = format!("count({{__name__=~\"{base}(_bucket|_sum|_count)?\"}})");
        if prom.query(&q).await.map(|r| r.is_empty()).unwrap_or(true) {
            missing.push(name.clone());
        }
    }
    assert!(
        missing.is_empty(),
        "metrics named by dashboards or alerts that the daemon does not export: {missing:?}"
    );
    let mut empty = Vec::new();
    for (title, expr) in &queries {
        match prom.query(expr).await {
            Ok(r) if !r.is_empty() => {}
            Ok(_) => empty.push(format!("{title}: {expr} (no data)")),
            Err(e) => empty.push(format!("{title}: {expr} ({e})")),
        }
    }
    assert!(
        empty.is_empty(),
        "panel queries without data:\n{}",
        empty.join("\n")
    );
    drop(sc);
}

#[tokio::test]
async fn html_report_renders_in_headless_chromium() {
    let sc = simulated_batch("html", "HTML").await;
    let url = format!("{}/reports/reconciliation?format=html", sc.daemon.base);
    wait_http(&url, Duration::from_secs(10)).await;
    let artifacts = repo().join("target").join("test-artifacts");
    std::fs::create_dir_all(&artifacts).expect("artifacts dir");
    let png = artifacts.join("reconciliation-report.png");
    let _ = std::fs::remove_file(&png);
    let dom = chromium_render(&url, &png).await;
    let meta = std::fs::metadata(&png).expect("screenshot written");
    assert!(meta.len() > 10_000, "screenshot is {} bytes", meta.len());
    assert!(
        dom.contains("id=\"verdicts\""),
        "no verdict table in the rendered page"
    );
    for verdict in ["matched", "missing_event", "identifier_mismatch", "pending"] {
        assert!(dom.contains(verdict), "verdict {verdict} not shown");
    }
    let rows = dom.matches("<tr").count();
    assert!(
        rows > 60,
        "the verdict table has {rows} rows for 60 accounts"
    );
    drop(sc);
}
