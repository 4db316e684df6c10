//! Registration follow-through and expiring tokens, end to end against real NATS JetStream,
//! Postgres and the platform simulator (in process): each registration anomaly alone gives its
//! meter-point verdict (the import verdict stays `matched`); a REST token that expires after N
//! requests is renewed from its file (an external rotator) or from the simulated GraphQL token
//! mutation, once per 401, counted in `event_audit_rest_token_refreshes_total`.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;

use crate::support::app::reconciling;
use crate::support::cli::{reconcile, register_batch};
use crate::support::sim::{
    counts, one_anomaly, rfc3339, stated, Sim, REGISTRATION_ANOMALIES, TOKEN,
};
use crate::support::{run_until_idle, settings, spawn_app, TestDb, TestStream};
use event_audit::app::metrics::Metrics;
use event_audit::config::{AuthScheme, Dur};
use event_audit::test_support::reconcile::rest::client::{Endpoint, RestClient};
use event_audit::test_support::reconcile::rest::token::{TokenSource, Tokens};
use event_audit::test_support::reconcile::rest::RestConfig;

#[tokio::test]
async fn each_registration_anomaly_alone_gives_its_meter_point_verdict() {
    let test_db = TestDb::create().await;
    let db = test_db.url.as_str();
    let ts = TestStream::create("reg_each").await;
    // One batch per anomaly, each its own supplier and slot, two hours old; 5 of 20 accounts.
    let base = Utc::now() - chrono::Duration::hours(12);
    let sims = futures::future::join_all(REGISTRATION_ANOMALIES.iter().enumerate().map(
        |(k, (flag, _))| {
            let ts = &ts;
            async move {
                Sim::start_with(ts, &format!("R{k}"), 20, 200 + k as u64, |s| {
                    s.simulator.rates = one_anomaly(flag, 0.25);
                    s.simulator.start = Some(rfc3339(base + chrono::Duration::hours(2 * k as i64)));
                })
                .await
            }
        },
    ))
    .await;
    run_until_idle(settings(&test_db, &ts)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    for (k, ((flag, want), sim)) in REGISTRATION_ANOMALIES.iter().zip(&sims).enumerate() {
        let supplier = format!("R{k}");
        let file = sim.manifest_file(dir.path(), &supplier);
        assert_eq!(
            register_batch(db, &supplier, "b", &file).await.code,
            Some(0)
        );
        // A registration grace below the batches' age: requests made with the import stall.
        let args = [
            "--supplier",
            &supplier,
            "--batch",
            "b",
            "--registration-grace",
            "1h",
            "--format",
            "json",
        ];
        let run = reconcile(db, &sim.url, TOKEN, &args).await;
        assert_eq!(
            run.code,
            Some(0),
            "{flag}: the import verdicts all match: {run:?}"
        );
        let report = run.json();
        assert_eq!(counts(&report), stated(&[("matched", 20)]), "{flag}");
        let regs: std::collections::BTreeMap<String, u64> =
            serde_json::from_value(report["registration_counts"].clone()).expect("counts");
        let nonzero: Vec<(&str, u64)> = regs
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(k, &n)| (k.as_str(), n))
            .collect();
        let mut expect = vec![("registered", 15), (*want, 5)];
        expect.sort();
        assert_eq!(nonzero, expect, "{flag}");
        assert_eq!(
            report["registration_counts"], sim.expected["registration_counts"],
            "{flag}"
        );
        let truth: std::collections::BTreeMap<&str, &str> = sim.expected["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|r| {
                (
                    r["external_account_number"].as_str().unwrap_or(""),
                    r["registration"].as_str().unwrap_or(""),
                )
            })
            .collect();
        for r in report["results"].as_array().expect("results") {
            let ext = r["external_account_number"].as_str().expect("ext");
            let reg = r["registration"].as_str().expect("a registration");
            assert_eq!(reg, truth[ext], "{flag} {ext}");
            assert_eq!(
                r["verdict"], "matched",
                "{flag} {ext}: the import verdict stays"
            );
            let points = r["meter_points"].as_array().expect("meter points");
            assert!(!points.is_empty());
            for p in points {
                assert_eq!(p["registration"], reg, "{flag} {ext}: every meter point");
                assert_eq!(p["status"], "PRE_REGISTRATION");
            }
            if reg != "registered" {
                let detail = r["detail"].as_str().unwrap_or("");
                assert!(detail.contains(&format!(" {reg}: ")), "{flag}: {detail}");
            }
        }
    }
}

fn config(url: &str, token: TokenSource) -> RestConfig {
    RestConfig {
        base_url: url::Url::parse(url).expect("url"),
        token,
        scheme: AuthScheme::Token,
        timeout: Duration::from_secs(5),
        list_timeout: Duration::from_secs(5),
        concurrency: 1,
        rate: 0.0,
        retries: 0,
        backoff: Duration::from_millis(10),
        tls: Default::default(),
    }
}

/// A token from the simulator's GraphQL mutation.
async fn obtain(sim: &Sim, key: &str) -> String {
    let v: serde_json::Value = reqwest::Client::new()
        .post(format!("{}/graphql", sim.url))
        .json(&serde_json::json!({
            "query": "mutation ObtainToken($input: ObtainJSONWebTokenInput!) { obtainKrakenToken(input: $input) { token } }",
            "variables": {"input": {"APIKey": key}},
        }))
        .send()
        .await
        .expect("graphql")
        .json()
        .await
        .expect("json");
    v["data"]["obtainKrakenToken"]["token"]
        .as_str()
        .expect("a token")
        .to_owned()
}

#[tokio::test]
async fn an_expired_token_is_read_again_from_its_file_once_per_401() {
    let ts = TestStream::create("tok_file").await;
    let dir = tempfile::tempdir().expect("tempdir");
    let key = "org-API-k3y-9c1";
    let key_file = dir.path().join("api-key");
    std::fs::write(&key_file, key).expect("key");
    let sim = Sim::start_with(&ts, "TOKF", 5, 51, |s| {
        s.simulator.token_uses = 3;
        s.simulator.api_key_file = Some(key_file.clone());
    })
    .await;
    let file = dir.path().join("rest-token");
    std::fs::write(&file, TOKEN).expect("token");
    let metrics = Metrics::new();
    let cfg = config(&sim.url, TokenSource::File(file.clone()));
    let tokens = Tokens::new(
        cfg.token.clone(),
        cfg.scheme,
        cfg.timeout,
        &cfg.tls,
        Some(metrics.rest.clone()),
    )
    .expect("tokens");
    let client =
        RestClient::with_tokens(cfg, Arc::new(tokens), Some(metrics.rest.clone())).expect("client");
    client.begin_run().await.expect("read the file");
    for _ in 0..3 {
        assert_eq!(
            client
                .list(Endpoint::AllAccountImportProcesses, "TOKF")
                .await
                .expect("listed")
                .len(),
            5
        );
    }
    // The token is spent; nobody rotated the file: the one re-read gives the same token.
    let err = client
        .list(Endpoint::AllAccountImportProcesses, "TOKF")
        .await
        .expect_err("expired");
    let host = sim.url.trim_start_matches("http://");
    assert!(
        err.to_string().contains(&format!(
            "at {host}: the REST service refused the token (HTTP 401)"
        )),
        "{err}"
    );
    // An external rotator writes a fresh token: the next 401 reads it and the request succeeds.
    std::fs::write(&file, obtain(&sim, key).await).expect("rotate");
    assert_eq!(
        client
            .list(Endpoint::PendingAccountImportProcesses, "TOKF")
            .await
            .expect("renewed")
            .len(),
        0
    );
    assert!(
        metrics
            .render()
            .contains(r#"event_audit_rest_token_refreshes_total{source="file"} 1"#),
        "{}",
        metrics.render()
    );
    assert!(!metrics.render().contains(TOKEN));
}

#[tokio::test]
async fn the_daemon_obtains_tokens_from_graphql_and_renews_them_after_a_401() {
    let test_db = TestDb::create().await;
    let (pool, db) = (&test_db.pool, test_db.url.as_str());
    let ts = TestStream::create("tok_graphql").await;
    let dir = tempfile::tempdir().expect("tempdir");
    let key = "org-API-k3y-7d2";
    let key_file = dir.path().join("api-key");
    std::fs::write(&key_file, format!("{key}\n")).expect("key");
    // Each token lasts 4 requests; a run makes 3 list requests plus the meter points of 10
    // imported accounts, so every run renews its token several times.
    let sim = Sim::start_with(&ts, "GQL", 10, 61, |s| {
        s.simulator.token_uses = 4;
        s.simulator.api_key_file = Some(key_file.clone());
    })
    .await;
    run_until_idle(settings(&test_db, &ts)).await;
    let file = sim.manifest_file(dir.path(), "gql.txt");
    assert_eq!(register_batch(db, "GQL", "g1", &file).await.code, Some(0));
    let mut s = reconciling(settings(&test_db, &ts), "GQL", &sim.url, &sim.token_file);
    s.reconcile.whole_supplier = false;
    s.rest.token_file = None;
    s.rest.graphql_url = Some(format!("{}/graphql", sim.url));
    s.rest.api_key_file = Some(key_file.clone());
    s.reconcile.interval = Dur::secs(1);
    s.reconcile.poll = Dur::secs(1);
    // Tokens spent by use, not time: with more requests in flight than a token's uses, a
    // renewed token could be spent by the others before its retry.
    s.rest.concurrency = 2;
    let daemon = spawn_app(s).await;
    let started = std::time::Instant::now();
    loop {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM audit.reconcile_runs")
            .fetch_one(pool)
            .await
            .expect("runs");
        if n >= 3 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(45),
            "{}",
            daemon.log()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let text = daemon
        .metrics_with(
            r#"event_audit_reconcile_runs_total{batch="g1",outcome="ok",supplier="GQL"}"#,
            Duration::from_secs(5),
        )
        .await;
    let refreshes: u64 = text
        .lines()
        .find_map(|l| {
            l.strip_prefix(r#"event_audit_rest_token_refreshes_total{source="graphql"} "#)
        })
        .and_then(|v| v.trim().parse().ok())
        .expect("refreshes counted");
    assert!(refreshes >= 3, "{refreshes} refreshes:\n{text}");
    let stopped = daemon.stop().await;
    assert!(
        !stopped.log.contains(key) && !stopped.log.contains("sim-1-"),
        "a secret was logged"
    );
    // Every run completed: no 401 stopped one.
    let bad: Vec<(String, Option<String>)> =
        sqlx::query_as("SELECT outcome, error FROM audit.reconcile_runs WHERE outcome <> 'ok'")
            .fetch_all(pool)
            .await
            .expect("runs");
    assert!(bad.is_empty(), "{bad:?}");
    let issued = sim
        .platform
        .issued
        .load(std::sync::atomic::Ordering::Relaxed);
    let expired = sim
        .platform
        .expired
        .load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        issued >= 4 && expired >= 3,
        "issued {issued}, expired {expired}"
    );
    // A wrong key: the run stops with a clear error naming the mutation, never the key.
    let wrong = dir.path().join("wrong-key");
    std::fs::write(&wrong, "not-the-key").expect("key");
    let run = reconcile(
        db,
        &sim.url,
        TOKEN,
        &[
            "--batch",
            "g1",
            "--graphql-url",
            &format!("{}/graphql", sim.url),
            "--api-key-file",
            wrong.to_str().expect("path"),
        ],
    )
    .await;
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(
        run.stderr.contains("GraphQL token mutation at") && run.stderr.contains("KT-CT-1139"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("not-the-key"), "{}", run.stderr);
}
