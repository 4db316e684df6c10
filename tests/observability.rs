//! The operations surface against real components: `promtool` on the alert rules and on a live
//! daemon's `/metrics`, a real Prometheus scraping the daemon while the platform simulator plays a
//! batch (every dashboard panel's query must return data), and the HTML reconciliation report in
//! headless Chromium.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use common::*;
use sqlx::PgPool;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs a tool that CI installs (`.ci/run`); a missing tool fails the test, it is not skipped.
fn tool(name: &str) -> StdCommand {
    let found = StdCommand::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        found,
        "`{name}` is not installed: run .ci/run (it installs the Debian package)"
    );
    StdCommand::new(name)
}

#[test]
fn alert_rules_pass_promtool_check_and_unit_tests() {
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
    assert!(out.contains("SUCCESS: 7 rules found"), "{out}");
    let test = tool("promtool")
        .args(["test", "rules", "alerts.test.yml"])
        .current_dir(&dir)
        .output()
        .expect("promtool test rules");
    assert!(
        test.status.success(),
        "promtool test rules: {}{}",
        String::from_utf8_lossy(&test.stdout),
        String::from_utf8_lossy(&test.stderr)
    );
}

async fn get(url: &str) -> Option<String> {
    let r = reqwest::get(url).await.ok()?;
    if !r.status().is_success() {
        return None;
    }
    r.text().await.ok()
}

/// Waits until `GET url` answers 200.
async fn wait_http(url: &str, limit: Duration) -> String {
    let start = Instant::now();
    loop {
        if let Some(body) = get(url).await {
            return body;
        }
        assert!(
            start.elapsed() < limit,
            "{url} did not answer within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn promtool_check_metrics(text: &str) -> std::process::Output {
    let mut child = tool("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn promtool");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write metrics");
    child.wait_with_output().expect("promtool output")
}

#[sqlx::test]
async fn live_metrics_pass_promtool_check_metrics(pool: PgPool) {
    let ts = TestStream::create("metrics").await;
    ts.publish_load(400, 11).await;
    let opts = RunOpts {
        batch_size: 200,
        exit_when_idle: false,
        ..RunOpts::default()
    };
    let s = Daemon::spawn(&db_url(&pool), &ts, &opts);
    wait_http(
        &format!("http://{}/readyz", s.addr),
        Duration::from_secs(30),
    )
    .await;
    let start = Instant::now();
    while count_rows(&pool).await < 400 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "ingest did not finish"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let text = wait_http(
        &format!("http://{}/metrics", s.addr),
        Duration::from_secs(5),
    )
    .await;
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
    let total: f64 = text
        .lines()
        .filter(|l| l.starts_with("event_audit_ingest_messages_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(total, 400.0, "messages counted in /metrics");
    let out = promtool_check_metrics(&text);
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    drop(s);
}

/// Every `expr` of a Grafana dashboard file.
pub fn panel_queries(path: &Path) -> Vec<(String, String)> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("dashboard file"))
            .expect("dashboard JSON");
    assert_eq!(
        v["__inputs"][0]["name"],
        "DS_PROMETHEUS",
        "{}",
        path.display()
    );
    assert!(v["schemaVersion"].as_i64().is_some(), "schemaVersion set");
    let mut out = Vec::new();
    for p in v["panels"].as_array().expect("panels") {
        assert_eq!(
            p["datasource"]["uid"], "${DS_PROMETHEUS}",
            "panel {}",
            p["title"]
        );
        for t in p["targets"].as_array().expect("targets") {
            out.push((
                p["title"].as_str().unwrap_or_default().to_owned(),
                t["expr"].as_str().expect("expr").to_owned(),
            ));
        }
    }
    out
}

/// The `event_audit_*` metric names a query refers to (histogram suffixes stripped).
pub fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let bytes = expr.as_bytes();
    let mut i = 0;
    while let Some(pos) = expr[i..].find("event_audit_") {
        let start = i + pos;
        let mut end = start;
        while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
            end += 1;
        }
        names.push(expr[start..end].to_owned());
        i = end;
    }
    names
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

/// A real Prometheus (Debian package) scraping `target` every second, on a free port, with its
/// data in a temporary directory. Killed when dropped.
pub struct Prometheus {
    _child: tokio::process::Child,
    _dir: tempfile::TempDir,
    pub url: String,
}

impl Prometheus {
    pub async fn start(target: &str) -> Prometheus {
        let dir = tempfile::tempdir().expect("prometheus dir");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: event-audit\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .expect("write prometheus.yml");
        let addr = http_addr();
        let _ = tool("prometheus");
        let child = tokio::process::Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn prometheus");
        let url = format!("http://{addr}");
        wait_http(&format!("{url}/-/ready"), Duration::from_secs(30)).await;
        Prometheus {
            _child: child,
            _dir: dir,
            url,
        }
    }

    /// The result vector of an instant query (`Err` when Prometheus rejects it).
    pub async fn query(&self, expr: &str) -> Result<Vec<serde_json::Value>, String> {
        let r = reqwest::Client::new()
            .get(format!("{}/api/v1/query", self.url))
            .query(&[("query", expr)])
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let v: serde_json::Value = r.json().await.map_err(|e| e.to_string())?;
        if v["status"] != "success" {
            return Err(format!("{v}"));
        }
        Ok(v["data"]["result"].as_array().cloned().unwrap_or_default())
    }
}

/// Headless Chromium (Debian package) on `url`: a PNG screenshot at `png` and the rendered DOM.
pub fn chromium_render(url: &str, png: &Path) -> String {
    let profile = tempfile::tempdir().expect("chromium profile");
    let common = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--window-size=1280,1600",
    ];
    let profile_arg = format!("--user-data-dir={}", profile.path().display());
    let shot = tool("chromium")
        .args(common)
        .arg(&profile_arg)
        .arg(format!("--screenshot={}", png.display()))
        .arg(url)
        .output()
        .expect("chromium --screenshot");
    assert!(
        shot.status.success(),
        "chromium screenshot failed: {}",
        String::from_utf8_lossy(&shot.stderr)
    );
    let dom = tool("chromium")
        .args(common)
        .arg(&profile_arg)
        .arg("--dump-dom")
        .arg(url)
        .output()
        .expect("chromium --dump-dom");
    assert!(
        dom.status.success(),
        "chromium --dump-dom failed: {}",
        String::from_utf8_lossy(&dom.stderr)
    );
    String::from_utf8_lossy(&dom.stdout).into_owned()
}

/// A platform simulator subprocess playing a batch into the test's stream; killed when dropped.
pub struct Simulator {
    _child: tokio::process::Child,
    pub url: String,
}

/// A simulated migration batch with anomalies, a mixed catalogue load, and a daemon that ingests
/// both and reconciles every 2 s against the simulator.
pub struct Scenario {
    pub ts: TestStream,
    pub sim: Simulator,
    pub daemon: Daemon,
    _dir: tempfile::TempDir,
}

pub async fn simulated_batch(pool: &PgPool, tag: &str, supplier: &str) -> Scenario {
    let ts = TestStream::create(tag).await;
    let dir = tempfile::tempdir().expect("token dir");
    let token = dir.path().join("token");
    std::fs::write(&token, "observability-test-token").expect("token file");
    let addr = http_addr();
    let child = tokio::process::Command::new(BIN)
        .args([
            "simulate-platform",
            "--listen",
            &addr,
            "--supplier",
            supplier,
            "--accounts",
            "60",
        ])
        .args([
            "--seed",
            "3",
            "--nats-url",
            &nats_url(),
            "--stream",
            &ts.name,
        ])
        .args([
            "--subjects",
            &ts.subjects(),
            "--subject",
            &ts.subject("platform"),
        ])
        .args(["--token-file", &token.to_string_lossy()])
        .args([
            "--drop-completion",
            "0.1",
            "--wrong-identifier",
            "0.05",
            "--left-pending",
            "0.05",
        ])
        .args(["--rest-5xx", "0.1"])
        .env_remove("EVENT_AUDIT_REST_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn simulate-platform");
    let url = format!("http://{addr}");
    // Any answer (401 without the token) means it is serving, i.e. the batch was played.
    let start = Instant::now();
    while reqwest::get(&url).await.is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "simulator did not start"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    ts.publish_load(1000, 5).await;
    let opts = RunOpts {
        batch_size: 200,
        exit_when_idle: false,
        extra: [
            "--reconcile-supplier",
            supplier,
            "--rest-url",
            &url,
            "--reconcile-interval",
            "2s",
            "--rest-token-file",
            &token.to_string_lossy(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        ..RunOpts::default()
    };
    let daemon = Daemon::spawn(&db_url(pool), &ts, &opts);
    let run_seen = Instant::now();
    loop {
        let runs: i64 = sqlx::query_scalar("SELECT count(*) FROM audit.reconcile_runs")
            .fetch_one(pool)
            .await
            .unwrap_or(0);
        if runs > 0 && count_rows(pool).await >= 1000 {
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
        ts,
        sim: Simulator { _child: child, url },
        daemon,
        _dir: dir,
    }
}

#[sqlx::test]
async fn prometheus_scrapes_a_batch_and_every_panel_query_returns_data(pool: PgPool) {
    let sc = simulated_batch(&pool, "prom", "PROM").await;
    let prom = Prometheus::start(&sc.daemon.addr).await;
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

#[sqlx::test]
async fn html_report_renders_in_headless_chromium(pool: PgPool) {
    let sc = simulated_batch(&pool, "html", "HTML").await;
    let url = format!(
        "http://{}/reports/reconciliation?format=html",
        sc.daemon.addr
    );
    wait_http(&url, Duration::from_secs(10)).await;
    let artifacts = repo().join("target").join("test-artifacts");
    std::fs::create_dir_all(&artifacts).expect("artifacts dir");
    let png = artifacts.join("reconciliation-report.png");
    let _ = std::fs::remove_file(&png);
    let dom = chromium_render(&url, &png);
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
