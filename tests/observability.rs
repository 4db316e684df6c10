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
