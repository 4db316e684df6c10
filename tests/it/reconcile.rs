//! Reconciliation end to end against real NATS JetStream, Postgres and the platform simulator
//! serving real HTTP (in-process, as the daemon that ingests its batch): a clean batch is all
//! `matched`; each anomaly alone gives exactly its verdict counts, all together their sum; REST
//! 5xx bursts and outages give `unverified` or succeed after retries, never a false mismatch.
//! `event-audit reconcile` runs as a subprocess: its exit codes and output are the point. The
//! token and the report endpoints: `tests/it/reconcile_http.rs`.

use std::collections::BTreeMap;

use chrono::Utc;

use crate::support::cli::reconcile;
use crate::support::sim::{
    assert_per_account, counts, every_anomaly, one_anomaly, rfc3339, stated, verdicts, Sim,
    ANOMALIES, TOKEN,
};
use crate::support::{run_until_idle, settings, TestDb, TestStream};
use event_audit::config::{Dur, SimNaming, SimRates};

#[tokio::test]
async fn a_clean_batch_is_all_matched_and_stored() {
    let test_db = TestDb::create().await;
    let (pool, db) = (&test_db.pool, test_db.url.as_str());
    let ts = TestStream::create("rec_clean").await;
    let sim = Sim::start(&ts, "CLEAN", 60, 1, SimRates::default()).await;
    run_until_idle(settings(&test_db, &ts)).await;

    let run = reconcile(
        db,
        &sim.url,
        TOKEN,
        &["--supplier", "CLEAN", "--format", "json"],
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let report = run.json();
    assert_eq!(counts(&report), stated(&[("matched", 60)]));
    assert_eq!(counts(&report), sim.counts());
    assert_per_account(&report, &sim);
    for r in report["results"].as_array().expect("results") {
        assert_eq!(r["event_outcome"], "complete");
        assert_eq!(r["platform_status"], "imported");
        assert_eq!(r["event_identifier"], r["platform_account_number"]);
        assert_eq!(r["account_created_event"], true);
    }
    // Lists only: every account is settled by them.
    assert_eq!(report["rest"]["calls"], 3, "{}", run.stderr);
    assert!(run.stderr.contains("REST calls: 3"), "{}", run.stderr);

    let run_id = report["run_id"].as_i64().expect("stored");
    let (outcome, stored): (String, i64) = sqlx::query_as(
        "SELECT r.outcome, (SELECT count(*) FROM audit.reconcile_results WHERE run_id = r.id) \
         FROM audit.reconcile_runs r WHERE id = $1",
    )
    .bind(run_id)
    .fetch_one(pool)
    .await
    .expect("the run is stored");
    assert_eq!((outcome.as_str(), stored), ("ok", 60));

    // A manifest with two accounts the platform never heard of.
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = dir.path().join("batch.txt");
    let mut lines: Vec<String> = verdicts(&sim.expected).into_keys().collect();
    lines.extend([
        "# not migrated".into(),
        "NOPE-1".into(),
        "NOPE-2".into(),
        "NOPE-1".into(),
    ]);
    std::fs::write(&manifest, lines.join("\n")).expect("manifest");
    let m = manifest.to_str().expect("path");
    let run = reconcile(
        db,
        &sim.url,
        TOKEN,
        &["--supplier", "CLEAN", "--accounts", m, "--format", "json"],
    )
    .await;
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(
        counts(&run.json()),
        stated(&[("matched", 60), ("not_found", 2)])
    );
    let tolerated = [
        "--supplier",
        "CLEAN",
        "--accounts",
        m,
        "--tolerate",
        "not_found=2",
        "--format",
        "table",
    ];
    let run = reconcile(db, &sim.url, TOKEN, &tolerated).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stdout.contains("not_found") && run.stdout.contains("NOPE-2"),
        "{}",
        run.stdout
    );
}

#[tokio::test]
async fn each_anomaly_alone_gives_exactly_its_verdicts() {
    let test_db = TestDb::create().await;
    let (pool, db) = (&test_db.pool, test_db.url.as_str());
    let ts = TestStream::create("rec_each").await;
    // One batch per anomaly, each its own supplier, seed and two-hour slot in the past; 10 of
    // its 40 accounts get the anomaly.
    let base = Utc::now() - chrono::Duration::hours(30);
    let sims = futures::future::join_all(ANOMALIES.iter().enumerate().map(|(k, (flag, _))| {
        let start = base + chrono::Duration::hours(2 * k as i64);
        let ts = &ts;
        async move {
            let sim = Sim::start_with(ts, &format!("S{k}"), 40, 100 + k as u64, |s| {
                s.simulator.rates = one_anomaly(flag, 0.25);
                s.simulator.start = Some(rfc3339(start));
            })
            .await;
            (start, sim)
        }
    }))
    .await;
    run_until_idle(settings(&test_db, &ts)).await;

    let runs = futures::future::join_all(sims.iter().enumerate().map(|(k, (start, sim))| {
        let since = rfc3339(*start - chrono::Duration::minutes(1));
        let until = rfc3339(*start + chrono::Duration::hours(1));
        let supplier = format!("S{k}");
        async move {
            let args = [
                "--supplier",
                &supplier,
                "--since",
                &since,
                "--until",
                &until,
                "--format",
                "json",
            ];
            reconcile(db, &sim.url, TOKEN, &args).await
        }
    }))
    .await;
    for (((flag, verdict), (_, sim)), run) in ANOMALIES.iter().zip(&sims).zip(&runs) {
        let report = run.json();
        let want = if *verdict == "matched" {
            stated(&[("matched", 40)])
        } else {
            stated(&[("matched", 30), (verdict, 10)])
        };
        assert_eq!(sim.counts(), want, "{flag}: the simulator's ground truth");
        assert_eq!(counts(&report), want, "{flag}: {}", run.stderr);
        assert_per_account(&report, sim);
        assert_eq!(
            run.code,
            Some(if *verdict == "matched" { 0 } else { 1 }),
            "{flag}"
        );
    }
    // Duplicates are recorded as such, and ignored.
    let dups: i64 =
        sqlx::query_scalar("SELECT count(*) FROM event_log WHERE id_status = 'duplicate'")
            .fetch_one(pool)
            .await
            .expect("duplicates");
    assert_eq!(dups, 10);
}

#[tokio::test]
async fn all_anomalies_together_give_their_sum() {
    let test_db = TestDb::create().await;
    let db = test_db.url.as_str();
    let ts = TestStream::create("rec_all").await;
    let sim = Sim::start_with(&ts, "ALL", 240, 7, |s| {
        s.simulator.rates = every_anomaly(0.05);
        // Deployed variants of the list answers; order-process events.
        s.simulator.naming = SimNaming::Kraken;
        s.simulator.wrap_imported = true;
        s.simulator.orders = 9;
    })
    .await;
    run_until_idle(settings(&test_db, &ts)).await;

    let run = reconcile(
        db,
        &sim.url,
        TOKEN,
        &["--supplier", "ALL", "--format", "json"],
    )
    .await;
    assert_eq!(run.code, Some(1), "{run:?}");
    let report = run.json();
    // 12 accounts per anomaly; duplicates and late events are matched.
    let mut want = vec![("matched", 240 - 12 * 12 + 2 * 12)];
    want.extend(
        ANOMALIES
            .iter()
            .filter(|(_, v)| *v != "matched")
            .map(|(_, v)| (*v, 12)),
    );
    assert_eq!(counts(&report), stated(&want));
    assert_eq!(counts(&report), sim.counts());
    assert_per_account(&report, &sim);
    assert_eq!(report["order_processes"], sim.expected["order_processes"]);
    for r in report["results"].as_array().expect("results") {
        let imported = r["platform_status"] == "imported";
        let named = r["event_outcome"] == "complete";
        // account.created is published exactly for the accounts the platform created.
        assert_eq!(r["account_created_event"], imported, "{r}");
        if !imported && !named {
            assert!(r["platform_account_number"].is_null(), "{r}");
        }
    }
    // Per-account requests only for what the lists do not settle: cancelled and missing in
    // platform (404), dry runs and failed (pending with an event), in progress (all list only).
    assert_eq!(report["rest"]["list_calls"], 3);
    assert_eq!(report["rest"]["account_calls"], 5 * 12);

    // Within a longer grace period the dropped completions are awaited, not missing.
    let run = reconcile(
        db,
        &sim.url,
        TOKEN,
        &["--supplier", "ALL", "--grace", "3h", "--format", "json"],
    )
    .await;
    let c = counts(&run.json());
    assert_eq!((c["awaiting_event"], c["missing_event"]), (12, 0));

    // Asking about every pending account and reading meter points changes no verdict.
    let args = [
        "--supplier",
        "ALL",
        "--check-pending",
        "--meter-points",
        "--format",
        "json",
    ];
    let run = reconcile(db, &sim.url, TOKEN, &args).await;
    let again = run.json();
    assert_eq!(counts(&again), sim.counts());
    let results = again["results"].as_array().expect("results");
    let imported = results
        .iter()
        .filter(|r| r["platform_status"] == "imported")
        .count();
    for r in results
        .iter()
        .filter(|r| r["platform_status"] == "imported")
    {
        let points = r["meter_points"]
            .as_array()
            .expect("meter points of an imported account");
        assert!(
            !points.is_empty() && points.iter().all(|p| p["status"] == "PRE_REGISTRATION"),
            "{r}"
        );
    }
    // The left-pending accounts are asked too, and every imported account's meter points.
    assert_eq!(again["rest"]["account_calls"], 5 * 12 + 12 + imported);
}

#[tokio::test]
async fn rest_5xx_bursts_give_unverified_or_retry_never_a_false_mismatch() {
    let test_db = TestDb::create().await;
    let db = test_db.url.as_str();
    let ts = TestStream::create("rec_5xx").await;
    let sim = Sim::start_with(&ts, "FLAKY", 150, 11, |s| {
        let r = &mut s.simulator.rates;
        (
            r.failed,
            r.dry_run,
            r.left_in_progress,
            r.missing_in_platform,
        ) = (0.1, 0.1, 0.1, 0.1);
        s.simulator.rest_5xx = 0.3;
        s.simulator.rest_down = 0.15;
        s.simulator.rest_slow = 0.05;
        s.simulator.rest_slow_delay = Dur::millis(1500);
    })
    .await;
    run_until_idle(settings(&test_db, &ts)).await;

    let args = [
        "--supplier",
        "FLAKY",
        "--rest-timeout",
        "500ms",
        "--format",
        "json",
    ];
    let run = reconcile(db, &sim.url, TOKEN, &args).await;
    let report = run.json();
    let want = verdicts(&sim.expected);
    let down: BTreeMap<String, bool> = sim.expected["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            (
                r["external_account_number"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                r["rest_down"] == true,
            )
        })
        .collect();
    // The verdicts that need the per-account endpoint in this batch.
    let asked = [
        "failed",
        "dry_run_only",
        "in_progress",
        "missing_in_platform",
    ];
    let (mut unverified, mut answered) = (0, 0);
    for (ext, got) in verdicts(&report) {
        if got == "unverified" {
            unverified += 1;
        } else {
            // Whatever the 503s and timeouts, an answer is never a false verdict.
            assert_eq!(&got, &want[&ext], "{ext}: a false verdict under 5xx");
            if asked.contains(&want[&ext].as_str()) {
                answered += 1;
            }
        }
        if down[&ext] && asked.contains(&want[&ext].as_str()) {
            assert_eq!(got, "unverified", "{ext}: its endpoint never answers");
        }
    }
    assert!(unverified > 0, "no account was unverified: {}", run.stderr);
    assert!(
        answered > 30,
        "only {answered} asked accounts answered: {}",
        run.stderr
    );
    assert!(
        report["rest"]["retries"].as_u64().unwrap_or(0) > 0,
        "no retries: {}",
        run.stderr
    );
    assert_eq!(run.code, Some(1), "real mismatches remain: {run:?}");

    // Nothing but unverified left over: could not complete (2), never a mismatch (1).
    let tolerated = [
        "--supplier",
        "FLAKY",
        "--rest-timeout",
        "500ms",
        "--format",
        "json",
        "--tolerate",
        "failed",
        "--tolerate",
        "dry_run_only",
        "--tolerate",
        "in_progress",
        "--tolerate",
        "missing_in_platform",
    ];
    let run = reconcile(db, &sim.url, TOKEN, &tolerated).await;
    assert_eq!(run.code, Some(2), "{run:?}");
    assert_eq!(run.json()["outcome"], "incomplete");
}
