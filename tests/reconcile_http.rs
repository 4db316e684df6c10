//! Reconciliation's secrets and HTTP surface against real NATS JetStream, Postgres and the
//! platform simulator: the REST token never shows (command output, daemon log, stored runs), a
//! wrong token stops the run with a clear message, an answer of no known shape names its field,
//! and the report endpoints serve the stored runs behind a bearer token with bounded requests.

mod common;
#[path = "common/sim.rs"]
mod sim;

use std::time::{Duration, Instant};

use serde_json::Value;
use sqlx::PgPool;

use common::{db_url, run_until_idle, Daemon, RunOpts, TestStream};
use sim::{counts, reconcile, Sim, TOKEN};

#[sqlx::test]
async fn the_token_never_shows(pool: PgPool) {
    let ts = TestStream::create("rec_token").await;
    let db = db_url(&pool);
    let sim = Sim::start(&ts, "TOK", 30, 5, &["--failed".into(), "0.2".into()]).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let token_file = dir.path().join("rest-token");
    std::fs::write(&token_file, TOKEN).expect("token file");
    // The daemon reconciles after draining the stream (--exit-when-idle).
    let opts = RunOpts {
        extra: vec![
            "--reconcile-supplier".into(),
            "TOK".into(),
            "--rest-url".into(),
            sim.url.clone(),
            "--rest-token-file".into(),
            token_file.to_string_lossy().into_owned(),
        ],
        ..RunOpts::default()
    };
    let daemon = run_until_idle(&db, &ts, &opts).await;
    let log = daemon.log();
    assert!(
        log.contains("outcome mismatches"),
        "no scheduled run logged:\n{log}"
    );
    assert!(!log.contains(TOKEN), "the daemon logged the token");

    let mut outputs = Vec::new();
    for format in ["json", "table", "csv", "html"] {
        let run = reconcile(
            &db,
            &sim.url,
            TOKEN,
            &["--supplier", "TOK", "--format", format],
        )
        .await;
        assert_eq!(run.code, Some(1), "{run:?}");
        outputs.push(run);
    }
    let run = reconcile(
        &db,
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
        &db,
        &sim.url,
        wrong,
        &["--supplier", "TOK", "--format", "json"],
    )
    .await;
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(
        run.stderr.contains("refused the token (HTTP 401)"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains(wrong) && !run.stdout.contains(wrong),
        "{run:?}"
    );
    assert_eq!(run.json()["outcome"], "incomplete");

    // An answer of no known shape: a clear error naming the endpoint and the field.
    let odd = Sim::start(
        &ts,
        "ODD",
        5,
        6,
        &["--naming".into(), "unrecognised".into()],
    )
    .await;
    let run = reconcile(
        &db,
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
    .fetch_all(&pool)
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
    .fetch_one(&pool)
    .await
    .expect("details");
    assert_eq!(details, 0);
    assert!(!sim.log().contains(TOKEN), "the simulator logged the token");
}

#[sqlx::test]
async fn report_endpoints_serve_the_runs_behind_a_bearer_token(pool: PgPool) {
    let ts = TestStream::create("rec_http").await;
    let db = db_url(&pool);
    let sim = Sim::start(
        &ts,
        "WEB",
        40,
        9,
        &["--wrong-identifier".into(), "0.1".into()],
    )
    .await;
    // Ingest first, then a CLI run to report on.
    run_until_idle(&db, &ts, &RunOpts::default()).await;
    let cli = reconcile(
        &db,
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
    let opts = RunOpts {
        exit_when_idle: false,
        extra: [
            "--reconcile-supplier",
            "WEB",
            "--reconcile-interval",
            "1s",
            "--rest-url",
            &sim.url,
            "--rest-token-file",
            &rest_file.to_string_lossy(),
            "--report-token-file",
            &report_file.to_string_lossy(),
        ]
        .map(String::from)
        .to_vec(),
        ..RunOpts::default()
    };
    let mut daemon = Daemon::spawn(&db, &ts, &opts);
    let started = Instant::now();
    loop {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM audit.reconcile_runs WHERE trigger = 'daemon'",
        )
        .fetch_one(&pool)
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
    let base = format!("http://{}", daemon.addr);
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
            "account.created-v1"
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

    let metrics = get("/metrics", None)
        .await
        .expect("request")
        .text()
        .await
        .expect("metrics");
    assert!(
        metrics.contains("event_audit_reconcile_accounts{supplier=\"WEB\",verdict=\"matched\"} 36"),
        "{metrics}"
    );
    assert!(metrics.contains("event_audit_rest_requests_total{class=\"2xx\",endpoint=\"imported-account-import-processes\"}"));

    daemon.term().await;
    let status = daemon.wait(Duration::from_secs(30)).await;
    assert!(status.success(), "{}", daemon.log());
    assert!(!daemon.log().contains(TOKEN) && !daemon.log().contains(bearer));
}
