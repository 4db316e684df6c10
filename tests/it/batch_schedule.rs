//! The daemon and batches, against real NATS JetStream, Postgres and the platform simulator (in
//! process): a CLI run of a batch reaches the daemon's `/metrics` within one poll (metrics are
//! derived from the stored runs, whichever process made them) and a closed batch's series go;
//! the daemon reconciles each open batch separately (never the whole supplier unless asked)
//! and closes a batch once it has been settled for `reconcile.close_after`.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::app::reconciling;
use crate::support::cli::{event_audit, reconcile, register_batch};
use crate::support::sim::{verdicts, Sim, TOKEN};
use crate::support::{run_until_idle, settings, spawn_app, TestDb, TestStream};
use event_audit::config::{Dur, SimRates};
use event_audit::test_support::reconcile::Manifest;

#[tokio::test]
async fn a_cli_run_appears_in_the_daemons_metrics_within_one_poll() {
    let test_db = TestDb::create().await;
    let db = test_db.url.as_str();
    let ts = TestStream::create("sched_metrics").await;
    let sim = Sim::start_with(&ts, "MET", 30, 41, |s| {
        s.simulator.rates = SimRates {
            wrong_identifier: 0.1,
            registration_stalled: 0.1,
            ..SimRates::default()
        };
    })
    .await;
    run_until_idle(settings(&test_db, &ts)).await;
    // A daemon that schedules nothing: it only derives the metrics, every second.
    let poll = Duration::from_secs(1);
    let mut s = settings(&test_db, &ts);
    s.reconcile.poll = Dur::secs(1);
    let daemon = spawn_app(s).await;
    let within = poll + Duration::from_millis(1500);

    let dir = tempfile::tempdir().expect("tempdir");
    let file = sim.manifest_file(dir.path(), "m1.txt");
    assert_eq!(register_batch(db, "MET", "m1", &file).await.code, Some(0));
    daemon
        .metrics_with(
            r#"event_audit_batch_accounts{batch="m1",supplier="MET"} 30"#,
            within,
        )
        .await;
    assert!(!daemon
        .get("/metrics")
        .await
        .1
        .contains("event_audit_reconcile_accounts{"));

    let args = [
        "--batch",
        "m1",
        "--registration-grace",
        "30m",
        "--format",
        "json",
    ];
    let run = reconcile(db, &sim.url, TOKEN, &args).await;
    assert_eq!(run.code, Some(1), "{run:?}");
    let done = Instant::now();
    let text = daemon
        .metrics_with(
            r#"event_audit_reconcile_accounts{batch="m1",supplier="MET",verdict="identifier_mismatch"} 3"#,
            within,
        )
        .await;
    assert!(
        done.elapsed() <= within,
        "not within one poll: {:?}",
        done.elapsed()
    );
    for line in [
        r#"event_audit_reconcile_accounts{batch="m1",supplier="MET",verdict="matched"} 27"#,
        r#"event_audit_reconcile_registration_accounts{batch="m1",registration="stalled",supplier="MET"} 3"#,
        r#"event_audit_reconcile_registration_accounts{batch="m1",registration="registered",supplier="MET"} 27"#,
        r#"event_audit_reconcile_runs_total{batch="m1",outcome="mismatches",supplier="MET"} 1"#,
        r#"event_audit_reconcile_last_outcome{batch="m1",outcome="mismatches",supplier="MET"} 1"#,
        r#"event_audit_reconcile_last_outcome{batch="m1",outcome="ok",supplier="MET"} 0"#,
    ] {
        assert!(text.contains(line), "{line} missing:\n{text}");
    }
    let stamp = r#"event_audit_reconcile_last_run_timestamp_seconds{batch="m1",supplier="MET"} "#;
    let at: i64 = text
        .lines()
        .find_map(|l| l.strip_prefix(stamp))
        .and_then(|v| v.trim().parse().ok())
        .expect("the last run's time");
    let finished =
        chrono::DateTime::parse_from_rfc3339(run.json()["finished_at"].as_str().expect("time"))
            .expect("rfc3339")
            .timestamp();
    assert_eq!(at, finished);

    // Closed: the batch's series go within one poll (its runs stay).
    let closed = event_audit(
        &["batch", "close", "--database-url", db, "--name", "m1"],
        &[],
    )
    .await;
    assert_eq!(closed.code, Some(0), "{closed:?}");
    let started = Instant::now();
    loop {
        let (_, text) = daemon.get("/metrics").await;
        if !text.contains(r#"batch="m1""#) {
            break;
        }
        assert!(
            started.elapsed() < within,
            "the closed batch's series stay:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (code, runs) = daemon.get("/reports/reconciliation/runs?batch=m1").await;
    assert_eq!(code, 200);
    let runs: Value = serde_json::from_str(&runs).expect("json");
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(1));
    daemon.stop().await;
}

#[tokio::test]
async fn the_daemon_reconciles_each_open_batch_and_closes_the_settled_one() {
    let test_db = TestDb::create().await;
    let (pool, db) = (&test_db.pool, test_db.url.as_str());
    let ts = TestStream::create("sched_close").await;
    let sim = Sim::start_with(&ts, "SCH", 60, 43, |s| {
        s.simulator.rates.failed = 0.1;
    })
    .await;
    ts.publish_load(500, 9).await;
    run_until_idle(settings(&test_db, &ts)).await;
    let truth = verdicts(&sim.expected);
    let of = |want: bool| -> Vec<String> {
        truth
            .iter()
            .filter(|(_, v)| (v.as_str() == "matched") == want)
            .map(|(ext, _)| ext.clone())
            .collect()
    };
    let (matched, failed) = (of(true), of(false));
    let clean = matched[..20].to_vec();
    let dirty = [failed.clone(), matched[20..34].to_vec()].concat();
    assert_eq!(failed.len(), 6);
    assert_eq!((clean.len(), dirty.len()), (20, 20));
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, accounts) in [("clean", &clean), ("dirty", &dirty)] {
        let m = Manifest {
            name: name.into(),
            accounts: accounts.clone(),
            orders: Vec::new(),
        };
        let file = dir.path().join(name);
        std::fs::write(&file, m.render()).expect("manifest");
        assert_eq!(register_batch(db, "SCH", name, &file).await.code, Some(0));
    }
    let mut s = reconciling(settings(&test_db, &ts), "SCH", &sim.url, &sim.token_file);
    s.reconcile.whole_supplier = false;
    s.reconcile.interval = Dur::secs(1);
    s.reconcile.close_after = Dur::secs(2);
    s.reconcile.poll = Dur::secs(1);
    let daemon = spawn_app(s).await;

    let batches = || async {
        let out = event_audit(&["batch", "list", "--database-url", db, "--json"], &[]).await;
        let v: Value = serde_json::from_str(&out.stdout).expect("json");
        v["batches"].as_array().cloned().expect("batches")
    };
    let started = Instant::now();
    let closed = loop {
        let list = batches().await;
        if let Some(b) = list.iter().find(|b| b["batch"]["closed"].is_object()) {
            break b.clone();
        }
        assert!(daemon.running(), "the daemon stopped:\n{}", daemon.log());
        assert!(
            started.elapsed() < Duration::from_secs(45),
            "no batch closed: {list:?}\n{}",
            daemon.log()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(closed["batch"]["name"], "clean");
    assert_eq!(closed["batch"]["closed"]["reason"], "settled");
    assert_eq!(closed["latest_run"]["outcome"], "ok");

    // Every daemon run covers exactly one batch; no supplier-wide run was made.
    let rows: Vec<(String, i32, String)> = sqlx::query_as(
        "SELECT coalesce(b.name, r.scope), r.accounts, r.outcome FROM audit.reconcile_runs r \
         LEFT JOIN audit.batches b ON b.id = r.batch_id WHERE r.trigger = 'daemon' ORDER BY r.id",
    )
    .fetch_all(pool)
    .await
    .expect("runs");
    assert!(rows.len() >= 4, "{rows:?}");
    for (name, accounts, outcome) in &rows {
        assert_eq!(*accounts, 20, "{name}");
        match name.as_str() {
            "clean" => assert_eq!(outcome, "ok"),
            "dirty" => assert_eq!(outcome, "mismatches"),
            other => panic!("a run of {other}"),
        }
    }
    // The closed batch is no longer reconciled, nor exported; the open one is.
    let count = |name: &'static str| async move {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM audit.reconcile_runs r JOIN audit.batches b ON b.id = r.batch_id \
             WHERE b.name = $1",
        )
        .bind(name)
        .fetch_one(pool)
        .await
        .expect("count")
    };
    let (clean_runs, dirty_runs) = (count("clean").await, count("dirty").await);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(count("clean").await, clean_runs);
    assert!(count("dirty").await > dirty_runs);
    let text = daemon
        .metrics_with(
            r#"event_audit_reconcile_accounts{batch="dirty",supplier="SCH",verdict="failed"}"#,
            Duration::from_secs(5),
        )
        .await;
    assert!(!text.contains(r#"batch="clean""#), "{text}");
    assert!(
        !text.contains(r#"batch="*""#),
        "no supplier-wide run: {text}"
    );
    daemon.stop().await;
}
