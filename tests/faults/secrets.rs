//! NATS authentication as deployments use it (user and password, token, NKey seed, `.creds`
//! JWT, TLS with a CA and with client certificates), each from a file or the environment and
//! each against a private nats-server configured for it; and no secret in any log line at any
//! level, in either format, with PostgreSQL (scram), NATS (user/password), the REST token and
//! the report token all set.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::daemon::{run_args, Daemon};
use crate::env::{get, Env};
use crate::harness::nats::NatsConfig;
use crate::harness::postgres::{PgAuth, PgOptions};
use crate::harness::{random_secret, url_encode};

async fn publish_some(env: &Env, n: usize) {
    for i in 0..n {
        let body = format!(
            r#"{{"event":"account.occupied-v1","id":"s{i}-{}","payload":{{"account_number":"A-{i}"}}}}"#,
            random_secret(6)
        );
        env.publish("events.load", body.into_bytes()).await;
    }
}

/// Drains the env's stream with `extra` arguments and `vars`; asserts exit 0 and every row.
async fn drain_with(env: &Env, n: i64, extra: &[&str], vars: &[(&str, &str)]) -> Daemon {
    let mut args = vec!["--exit-when-idle"];
    args.extend_from_slice(extra);
    let mut d = Daemon::spawn_with(env, &args, vars);
    let status = d.wait(Duration::from_secs(60)).await;
    assert_eq!(status.code(), Some(0), "log:\n{}", d.log());
    env.assert_exact(n).await;
    d
}

#[tokio::test]
async fn every_nats_authentication_mode_works_from_files_or_the_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).expect("write");
        p.display().to_string()
    };
    // User and password in NATS_URL (taken out of the URL, never passed on in it).
    let pw = random_secret(20);
    let env = Env::start_with(
        PgOptions::default(),
        NatsConfig::user_password("ingest", &pw),
    )
    .await;
    publish_some(&env, 30).await;
    let url = format!(
        "nats://ingest:{}@{}",
        url_encode(&pw),
        env.nats_proxy.addr()
    );
    drain_with(&env, 30, &[], &[("NATS_URL", &url)]).await;

    // User in NATS_USER, password in a file.
    let pw = random_secret(20);
    let env = Env::start_with(
        PgOptions::default(),
        NatsConfig::user_password("ingest", &pw),
    )
    .await;
    publish_some(&env, 30).await;
    let pw_file = file("password", &format!("{pw}\n"));
    drain_with(
        &env,
        30,
        &["--nats-password-file", &pw_file],
        &[("NATS_USER", "ingest")],
    )
    .await;

    // A token in the environment.
    let token = random_secret(24);
    let env = Env::start_with(PgOptions::default(), NatsConfig::token(&token)).await;
    publish_some(&env, 30).await;
    drain_with(&env, 30, &[], &[("NATS_TOKEN", &token)]).await;

    // An NKey seed in a file.
    let env = Env::start_with(PgOptions::default(), NatsConfig::nkey()).await;
    publish_some(&env, 30).await;
    let seed = file("nkey", env.nats.nkey_seed().expect("seed"));
    drain_with(&env, 30, &["--nats-nkey-file", &seed], &[]).await;

    // A .creds file (JWT), through NATS_CREDS.
    let env = Env::start_with(PgOptions::default(), NatsConfig::jwt()).await;
    publish_some(&env, 30).await;
    let creds = env.nats.creds_path().display().to_string();
    drain_with(&env, 30, &[], &[("NATS_CREDS", &creds)]).await;

    // TLS verified with a CA file, and a user and password.
    let pw = random_secret(20);
    let env = Env::start_with(
        PgOptions::default(),
        NatsConfig::user_password("ingest", &pw).tls(false),
    )
    .await;
    publish_some(&env, 30).await;
    let ca = env.nats.ca_path().display().to_string();
    drain_with(
        &env,
        30,
        &["--nats-tls-ca", &ca],
        &[("NATS_USER", "ingest"), ("NATS_PASSWORD", &pw)],
    )
    .await;

    // TLS with client certificates required, and a .creds file.
    let env = Env::start_with(PgOptions::default(), NatsConfig::jwt().tls(true)).await;
    publish_some(&env, 30).await;
    let (cert, key) = env.nats.client_cert_paths();
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let (ca, creds) = (
        env.nats.ca_path().display().to_string(),
        env.nats.creds_path().display().to_string(),
    );
    drain_with(
        &env,
        30,
        &[
            "--nats-tls-ca",
            &ca,
            "--nats-tls-cert",
            &cert,
            "--nats-tls-key",
            &key,
            "--nats-creds",
            &creds,
        ],
        &[],
    )
    .await;
}

#[tokio::test]
async fn refused_credentials_stop_the_daemon_at_once_naming_the_server() {
    let pw = random_secret(20);
    let env = Env::start_with(
        PgOptions::default(),
        NatsConfig::user_password("ingest", &pw),
    )
    .await;
    let wrong = random_secret(20);
    let mut d = Daemon::spawn_with(
        &env,
        &[],
        &[("NATS_USER", "ingest"), ("NATS_PASSWORD", &wrong)],
    );
    let (status, took) = d.wait_timed(Duration::from_secs(30)).await;
    assert_eq!(status.code(), Some(2));
    assert!(took < Duration::from_secs(5), "{took:?}");
    let log = d.log();
    assert!(log.contains("authorization violation"), "{log}");
    assert!(log.contains(&env.nats_proxy.addr().to_string()), "{log}");
    assert!(!log.contains(&wrong), "the password was printed:\n{log}");
}

#[tokio::test]
async fn no_secret_appears_in_any_log_line_at_trace_level_in_either_format() {
    let pg_pw = random_secret(24);
    let nats_pw = random_secret(24);
    let rest_token = random_secret(24);
    let report_token = random_secret(24);
    let env = Env::start_with(
        PgOptions {
            auth: PgAuth::Scram {
                user: "ea".into(),
                password: pg_pw.clone(),
            },
            ..PgOptions::default()
        },
        NatsConfig::user_password("ingest", &nats_pw),
    )
    .await;
    // The platform simulator plays a small batch onto the stream and serves the REST API.
    let dir = tempfile::tempdir().expect("tempdir");
    let token_file = dir.path().join("rest-token");
    std::fs::write(&token_file, &rest_token).expect("token file");
    let mut s = env.direct_settings();
    s.nats.url = format!("nats://ingest:{}@{}", url_encode(&nats_pw), env.nats.addr());
    s.simulator.supplier = "SEC".into();
    s.simulator.accounts = 5;
    s.simulator.subject = "events.platform".into();
    s.simulator.token_file = Some(token_file);
    let sim = event_audit::test_support::dev::simulator::Simulator::start(&s)
        .await
        .expect("start the simulator");
    let rest_url = format!("http://{}", sim.addr());
    let stop = CancellationToken::new();
    tokio::spawn(sim.serve(stop.clone()));

    let secrets = [&pg_pw, &nats_pw, &rest_token, &report_token];
    let nats_url = format!(
        "nats://ingest:{}@{}",
        url_encode(&nats_pw),
        env.nats_proxy.addr()
    );
    let common = [
        ("RUST_LOG", "trace"),
        ("EVENT_AUDIT_REST_TOKEN", rest_token.as_str()),
        ("EVENT_AUDIT_REPORT_TOKEN", report_token.as_str()),
    ];
    let schedule = [
        "--reconcile-supplier",
        "SEC",
        "--rest-url",
        &rest_url,
        "--reconcile-interval",
        "1s",
    ];
    let mut logs = Vec::new();
    for json in [true, false] {
        let addr = crate::common::free_addr();
        let mut args = run_args(&addr, &schedule);
        if !json {
            args.retain(|a| a != "--log-json");
        }
        let mut vars = common.to_vec();
        if json {
            vars.push(("NATS_URL", nats_url.as_str()));
        } else {
            vars.extend([("NATS_USER", "ingest"), ("NATS_PASSWORD", nats_pw.as_str())]);
        }
        let published = env.stream_messages().await;
        let mut d = Daemon::spawn_args(&env, addr, args, &vars);
        env.wait_rows(published, Duration::from_secs(60), || d.log())
            .await;
        // Reconnects (where async-nats used to print the credentialed URL each time).
        env.nats_proxy.reset_all().await;
        env.pg_proxy.reset_all().await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        d.wait_ready(200, Duration::from_secs(20)).await;
        let reports = format!("http://{}/reports/reconciliation/runs", d.addr);
        let client = reqwest::Client::new();
        let denied = client
            .get(&reports)
            .bearer_auth("wrong")
            .send()
            .await
            .expect("GET");
        assert_eq!(denied.status().as_u16(), 401);
        // Wait for a scheduled reconciliation (the REST token in use) to be stored.
        for _ in 0..100 {
            let ok = client
                .get(&reports)
                .bearer_auth(&report_token)
                .send()
                .await
                .expect("GET");
            assert_eq!(ok.status().as_u16(), 200);
            if ok.text().await.unwrap_or_default().contains("SEC") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(get(
            &format!("http://{}/metrics", d.addr),
            Duration::from_secs(2)
        )
        .await
        .is_some());
        d.stop_cleanly(Duration::from_secs(30)).await;
        logs.push(d.log());
        publish_some(&env, 5).await;
    }
    stop.cancel();
    for log in &logs {
        assert!(log.contains("NATS disconnected"), "a reconnect happened");
        let verbose_nats = log
            .lines()
            .filter(|l| l.contains("async_nats") && (l.contains("DEBUG") || l.contains("TRACE")))
            .count();
        assert_eq!(verbose_nats, 0, "async-nats is capped at INFO");
        let count = |level: &str| log.lines().filter(|l| l.contains(level)).count();
        assert!(
            count("TRACE") >= 1 && count("DEBUG") > 5,
            "trace level was on: {} TRACE and {} DEBUG lines of {}",
            count("TRACE"),
            count("DEBUG"),
            log.lines().count()
        );
        assert!(log.contains("reconcil"), "a scheduled reconciliation ran");
        for (i, secret) in secrets.iter().enumerate() {
            let hits: Vec<&str> = log
                .lines()
                .filter(|l| l.contains(secret.as_str()))
                .take(3)
                .collect();
            assert!(hits.is_empty(), "secret #{i} appears in the log: {hits:#?}");
        }
    }
}
