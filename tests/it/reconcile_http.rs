//! Reconciliation's secrets and HTTP surface against real NATS JetStream, Postgres and the
//! platform simulator: the REST token never shows (command output, daemon log, stored runs), a
//! wrong token stops the run with a clear message, an answer of no known shape names its field,
//! and the report endpoints serve the stored runs behind a bearer token with bounded requests.
//! The daemon and the simulator run in-process; `event-audit reconcile` as a subprocess (its
//! exit codes and output are the point).

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::app::reconciling;
use crate::support::cli::reconcile;
use crate::support::sim::{counts, one_anomaly, Sim, TOKEN};
use crate::support::{run_until_idle, settings, spawn_app, Logs, TestDb, TestStream};
use event_audit::config::{Dur, SimNaming};

#[tokio::test]
async fn the_token_never_shows() {
    // Everything that runs in this test's process: the simulator and the daemon.
    let logs = Logs::capture();
    let test_db = TestDb::create().await;
    let (pool, db) = (&test_db.pool, test_db.url.as_str());
    let ts = TestStream::create("rec_token").await;
    let sim = Sim::start(&ts, "TOK", 30, 5, one_anomaly("--failed", 0.2)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let token_file = dir.path().join("rest-token");
    std::fs::write(&token_file, TOKEN).expect("token file");
    // The daemon reconciles after draining the stream (exit_when_idle).
    let s = reconciling(settings(&test_db, &ts), "TOK", &sim.url, &token_file);
    let log = run_until_idle(s).await.log;
    assert!(
        log.contains("outcome mismatches"),
        "no scheduled run logged:\n{log}"
    );
    assert!(!log.contains(TOKEN), "the daemon logged the token");

    let mut outputs = Vec::new();
    for format in ["json", "table", "csv", "html"] {
        let run = reconcile(
            db,
            &sim.url,
            TOKEN,
            &["--supplier", "TOK", "--format", format],
        )
        .await;
        assert_eq!(run.code, Some(1), "{run:?}");
        outputs.push(run);
    }
    let run = reconcile(
        db,
        &sim.url,
        TOKEN,
        &[
            "--supplier",
            "TOK",
            "--rest-auth",
            "bare",
            "--format",
            "json",
        ],
    )
    .await;
    assert_eq!(run.code, Some(1), "{run:?}");
    outputs.push(run);
    for run in &outputs {
        assert!(
            !run.stdout.contains(TOKEN) && !run.stderr.contains(TOKEN),
            "the token leaked: {run:?}"
        );
    }

    let wrong = "tok-WRONG-d00d";
    let run = reconcile(
        db,
        &sim.url,
        wrong,
        &["--supplier", "TOK", "--format", "json"],
    )
    .await;
    assert_eq!(run.code, Some(2), "{run:?}");
    // Only the error: no report, no summary; the place named, the token not.
    let host = sim.url.trim_start_matches("http://");
    assert!(run.stdout.is_empty(), "{run:?}");
    let said: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("event-audit:"))
        .collect();
    assert_eq!(said.len(), 1, "{}", run.stderr);
    assert!(
        said[0].contains(&format!(
            "at {host}: the REST service refused the token (HTTP 401)"
        )),
        "{}",
        run.stderr
    );
    assert!(said[0].contains("stored as incomplete run"), "{}", said[0]);
    assert!(
        !run.stderr.contains("reconciled 0 accounts"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains(wrong) && !run.stdout.contains(wrong),
        "{run:?}"
    );

    // An answer of no known shape: a clear error naming the endpoint and the field.
    let odd = Sim::start_with(&ts, "ODD", 5, 6, |s| {
        s.simulator.naming = SimNaming::Unrecognised;
    })
    .await;
    let run = reconcile(
        db,
        &odd.url,
        TOKEN,
        &["--supplier", "ODD", "--format", "json"],
    )
    .await;
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(
        run.stderr.contains("-account-import-processes: unexpected answer, field `[0].external_account_number`: is missing"),
        "{}",
        run.stderr
    );

    let stored: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT trigger, parameters::text, coalesce(error, '') FROM audit.reconcile_runs ORDER BY id",
    )
    .fetch_all(pool)
    .await
    .expect("runs");
    assert_eq!(stored.len(), 8);
    assert_eq!(stored[0].0, "daemon");
    for (_, params, error) in &stored {
        assert!(
            !params.contains(TOKEN) && !params.contains(wrong) && !error.contains(wrong),
            "{params} {error}"
        );
    }
    let details: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit.reconcile_results WHERE detail LIKE '%' || $1 || '%'",
    )
    .bind(TOKEN)
    .fetch_one(pool)
    .await
    .expect("details");
    assert_eq!(details, 0);
    assert!(
        !logs.text().contains(TOKEN),
        "the simulator logged the token"
    );
}

#[tokio::test]
async fn report_endpoints_serve_the_runs_behind_a_bearer_token() {
    let test_db = TestDb::create().await;
    let (pool, db) = (&test_db.pool, test_db.url.as_str());
    let ts = TestStream::create("rec_http").await;
    let sim = Sim::start(&ts, "WEB", 40, 9, one_anomaly("--wrong-identifier", 0.1)).await;
    // Ingest first, then a CLI run to report on.
    run_until_idle(settings(&test_db, &ts)).await;
    let cli = reconcile(
        db,
        &sim.url,
        TOKEN,
        &["--supplier", "WEB", "--format", "json"],
    )
    .await
    .json();
    let cli_run = cli["run_id"].as_i64().expect("run id");

    let dir = tempfile::tempdir().expect("tempdir");
    let (rest_file, report_file) = (dir.path().join("rest"), dir.path().join("report"));
    std::fs::write(&rest_file, TOKEN).expect("rest token");
    let bearer = "report-T0ken-42";
    std::fs::write(&report_file, format!("{bearer}\n")).expect("report token");
    let mut s = reconciling(settings(&test_db, &ts), "WEB", &sim.url, &rest_file);
    s.reconcile.interval = Dur::secs(1);
    s.reconcile.poll = Dur::secs(1);
    s.http.report_token_file = Some(report_file.clone());
    let daemon = spawn_app(s).await;
    let started = Instant::now();
    loop {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM audit.reconcile_runs WHERE trigger = 'daemon'",
        )
        .fetch_one(pool)
        .await
        .expect("runs");
        if n > 0 {
            break;
        }
        assert!(daemon.running(), "the daemon exited:\n{}", daemon.log());
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no scheduled run:\n{}",
            daemon.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let base = daemon.base.clone();
    let http = reqwest::Client::new();
    let get = |path: &str, auth: Option<&str>| {
        let mut req = http.get(format!("{base}{path}"));
        if let Some(a) = auth {
            req = req.header("Authorization", a);
        }
        req.send()
    };
    let ok = format!("Bearer {bearer}");
    let ok = Some(ok.as_str());

    let r = get("/reports/reconciliation", None).await.expect("request");
    assert_eq!(r.status(), 401);
    assert!(r.headers().contains_key("www-authenticate"));
    assert_eq!(
        get("/reports/reconciliation", Some("Bearer nope"))
            .await
            .expect("request")
            .status(),
        401
    );
    assert_eq!(
        get("/accounts/X/events", None)
            .await
            .expect("request")
            .status(),
        401
    );
    assert_eq!(
        get("/reports/reconciliation/runs", Some(bearer))
            .await
            .expect("request")
            .status(),
        401
    );

    let latest: Value = get("/reports/reconciliation", ok)
        .await
        .expect("request")
        .json()
        .await
        .expect("json");
    assert_eq!(latest["trigger"], "daemon");
    assert_eq!(counts(&latest), sim.counts());

    let r = get(
        &format!("/reports/reconciliation?run={cli_run}&format=json"),
        ok,
    )
    .await
    .expect("request");
    assert_eq!(r.headers()["cache-control"], "no-store");
    let one: Value = r.json().await.expect("json");
    assert_eq!(one["run_id"], cli_run);
    assert_eq!(one["results"], cli["results"]);

    let r = get(
        &format!("/reports/reconciliation?run={cli_run}&format=csv"),
        ok,
    )
    .await
    .expect("request");
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap_or_default()
        .starts_with("text/csv"));
    let csv = r.text().await.expect("csv");
    assert!(
        csv.starts_with("external_account_number,supplier,verdict,"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 41);

    let r = get(
        &format!("/reports/reconciliation?run={cli_run}&format=html"),
        ok,
    )
    .await
    .expect("request");
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap_or_default()
        .starts_with("text/html"));
    let html = r.text().await.expect("html");
    assert!(
        html.contains("id=\"verdicts\"") && html.contains("identifier_mismatch"),
        "{html}"
    );
    assert_eq!(html.matches("<tr data-verdict=").count(), 40 + 2);

    assert_eq!(
        get("/reports/reconciliation?run=999999", ok)
            .await
            .expect("request")
            .status(),
        404
    );
    assert_eq!(
        get("/reports/reconciliation?format=xml", ok)
            .await
            .expect("request")
            .status(),
        400
    );
    let long = format!(
        "/reports/reconciliation?format=json&pad={}",
        "a".repeat(3000)
    );
    assert_eq!(get(&long, ok).await.expect("request").status(), 414);
    let with_body = http
        .get(format!("{base}/reports/reconciliation"))
        .header("Authorization", format!("Bearer {bearer}"))
        .body("x".repeat(100))
        .send()
        .await
        .expect("request");
    assert_eq!(with_body.status(), 413);

    let runs: Value = get("/reports/reconciliation/runs?limit=5", ok)
        .await
        .expect("request")
        .json()
        .await
        .expect("json");
    let runs = runs["runs"].as_array().expect("runs");
    assert!(
        runs.iter()
            .any(|r| r["run_id"] == cli_run && r["trigger"] == "cli"),
        "{runs:?}"
    );
    assert!(runs.iter().any(|r| r["trigger"] == "daemon"), "{runs:?}");

    // A matched account's timeline: its complete event, then the platform's account.created.
    let matched = cli["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|r| r["verdict"] == "matched")
        .expect("a matched account");
    let ext = matched["external_account_number"].as_str().expect("number");
    let t: Value = get(&format!("/accounts/{ext}/events"), ok)
        .await
        .expect("request")
        .json()
        .await
        .expect("json");
    let events: Vec<&str> = t["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["event"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        events,
        vec![
            "data_import.import_process.complete-v1",
            "account.created-v1",
            "lifecycle.join-supplier.requested-v1",
            "lifecycle.join-supplier.completed-v1"
        ]
    );
    let t: Value = get("/accounts/NOBODY/events?limit=50000", ok)
        .await
        .expect("request")
        .json()
        .await
        .expect("json");
    assert_eq!(
        (t["events"].as_array().map(Vec::len), t["limit"].as_i64()),
        (Some(0), Some(10_000))
    );

    let metrics = daemon
        .metrics_with(
            "event_audit_reconcile_accounts{batch=\"*\",supplier=\"WEB\",verdict=\"matched\"} 36",
            Duration::from_secs(10),
        )
        .await;
    assert!(metrics.contains("event_audit_rest_requests_total{class=\"2xx\",endpoint=\"imported-account-import-processes\"}"));

    // Stopped as SIGTERM stops it: gracefully, without error.
    let stopped = daemon.stop().await;
    assert!(!stopped.log.contains(TOKEN) && !stopped.log.contains(bearer));
}
