//! Configuration that cannot work is refused at start-up, by flag, environment or file, naming
//! the key, the value and the allowed range (exit 2, never clamped); credentials never go on
//! the command line; a server that never answers or refuses is reported in one line naming its
//! host and port, within the connect timeout; reading commands never create a database; and a
//! batch never exceeds `--batch-size`.

use std::time::Duration;

use crate::daemon::{command, drain};
use crate::env::Env;
use crate::harness::proxy::Mode;

struct Outcome {
    code: Option<i32>,
    stderr: String,
    took: Duration,
}

async fn run(args: &[&str], vars: &[(&str, &str)]) -> Outcome {
    let started = std::time::Instant::now();
    let mut cmd = command();
    cmd.args(args).env("RUST_LOG", "error");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("the command ended within a minute")
        .expect("run event-audit");
    Outcome {
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: started.elapsed(),
    }
}

/// `run` with `args` against servers that do not exist: validation must refuse first.
async fn refused(args: &[&str], vars: &[(&str, &str)], says: &[&str]) {
    let mut all = vec!["run", "--http-addr", "127.0.0.1:0"];
    all.extend_from_slice(args);
    let o = run(&all, vars).await;
    assert_eq!(o.code, Some(2), "{args:?} {vars:?}: {}", o.stderr);
    for s in says {
        assert!(
            o.stderr.contains(s),
            "{args:?} {vars:?}: `{s}` missing from: {}",
            o.stderr
        );
    }
}

#[tokio::test]
async fn every_invalid_setting_is_refused_naming_key_value_and_range() {
    let range = "must be between 1 and 100000";
    refused(
        &["--batch-size", "0"],
        &[],
        &["`ingest.batch_size` = 0", range],
    )
    .await;
    refused(
        &[],
        &[("EVENT_AUDIT_BATCH_SIZE", "0")],
        &["`ingest.batch_size` = 0", range],
    )
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let toml = dir.path().join("c.toml");
    std::fs::write(&toml, "[ingest]\nbatch_size = 0\n").expect("write");
    let toml = toml.display().to_string();
    refused(
        &["--config", &toml],
        &[],
        &["`ingest.batch_size` = 0", range],
    )
    .await;
    refused(
        &["--batch-size", "10000000"],
        &[],
        &["`ingest.batch_size` = 10000000", range],
    )
    .await;
    refused(
        &["--writers", "0"],
        &[],
        &["`ingest.writers` = 0", "between 1 and 16"],
    )
    .await;
    refused(
        &["--ack-wait", "0s"],
        &[],
        &["`stream.ack_wait` = 0s", "between 1s and"],
    )
    .await;
    refused(
        &["--shutdown-timeout", "0s"],
        &[],
        &["`ingest.shutdown_timeout` = 0s"],
    )
    .await;
    refused(
        &["--stall-timeout", "0s"],
        &[],
        &["`ingest.stall_timeout` = 0s"],
    )
    .await;
    refused(
        &["--db-write-timeout", "0s"],
        &[],
        &["`database.write_timeout` = 0s"],
    )
    .await;
    refused(
        &["--db-statement-timeout", "0s"],
        &[],
        &["`database.statement_timeout` = 0s"],
    )
    .await;
    refused(
        &["--http-max-connections", "1"],
        &[],
        &["`http.max_connections` = 1"],
    )
    .await;
    refused(
        &["--http-max-header-bytes", "10"],
        &[],
        &["`http.max_header_bytes` = 10"],
    )
    .await;
    refused(
        &["--http-header-timeout", "0s"],
        &[],
        &["`http.header_timeout` = 0s"],
    )
    .await;
    refused(
        &["--nats-password-file", "/x"],
        &[],
        &["`nats.password_file`", "needs `nats.user`"],
    )
    .await;
    refused(
        &["--nats-tls-cert", "/x"],
        &[],
        &["`nats.tls_cert_file`", "nats.tls_key_file"],
    )
    .await;
    refused(
        &["--nats-token-file", "/x", "--nats-creds", "/y"],
        &[],
        &["only one way of authenticating"],
    )
    .await;
    for url in [
        "postgresql:/127.0.0.1/x",
        "mysql://u@127.0.0.1/db",
        "postgres://127.0.0.1:5432",
    ] {
        refused(&[], &[("DATABASE_URL", url)], &["`database.url`"]).await;
    }
}

#[tokio::test]
async fn credentials_are_refused_on_the_command_line_and_never_echoed() {
    for (flag, url, env) in [
        (
            "--database-url",
            "postgres://u:Hunter2Secret@127.0.0.1:1/db",
            "DATABASE_URL",
        ),
        (
            "--nats-url",
            "nats://u:Hunter2Secret@127.0.0.1:1",
            "NATS_URL",
        ),
        ("--nats-url", "nats://Hunter2Secret@127.0.0.1:1", "NATS_URL"),
    ] {
        let o = run(&["run", flag, url], &[]).await;
        assert_eq!(o.code, Some(2), "{}", o.stderr);
        assert!(o.stderr.contains(env), "{}", o.stderr);
        assert!(!o.stderr.contains("Hunter2Secret"), "{}", o.stderr);
    }
}

#[tokio::test]
async fn servers_that_never_answer_or_refuse_are_reported_in_one_line_naming_host_and_port() {
    let env = Env::start().await;
    let base = [
        "run",
        "--http-addr",
        "127.0.0.1:0",
        "--stream",
        "EVENTS",
        "--consumer",
        "c",
    ];
    let nats = env.nats_url();
    let db = env.db_url();
    // PostgreSQL accepts TCP and never answers.
    env.pg_proxy.set_mode(Mode::Blackhole).await;
    let mut args = base.to_vec();
    args.extend(["--db-connect-timeout", "1s"]);
    let o = run(&args, &[("DATABASE_URL", &db), ("NATS_URL", &nats)]).await;
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(o.took < Duration::from_secs(10), "{:?}", o.took);
    assert_eq!(o.stderr.trim().lines().count(), 1, "one line: {}", o.stderr);
    assert!(
        o.stderr.contains(&env.pg_proxy.addr().to_string()),
        "{}",
        o.stderr
    );
    // PostgreSQL refuses.
    env.pg_proxy.set_mode(Mode::Refuse).await;
    let o = run(&base, &[("DATABASE_URL", &db), ("NATS_URL", &nats)]).await;
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(o.took < Duration::from_secs(5), "{:?}", o.took);
    assert!(
        o.stderr.contains(&env.pg_proxy.addr().to_string()),
        "{}",
        o.stderr
    );
    env.pg_proxy.set_mode(Mode::Pass).await;
    // NATS accepts TCP and never answers.
    env.nats_proxy.set_mode(Mode::Blackhole).await;
    let mut args = base.to_vec();
    args.extend(["--nats-connect-timeout", "1s"]);
    let o = run(&args, &[("DATABASE_URL", &db), ("NATS_URL", &nats)]).await;
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(o.took < Duration::from_secs(10), "{:?}", o.took);
    assert_eq!(o.stderr.trim().lines().count(), 1, "one line: {}", o.stderr);
    assert!(
        o.stderr.contains(&env.nats_proxy.addr().to_string()),
        "{}",
        o.stderr
    );
    // NATS refuses.
    env.nats_proxy.set_mode(Mode::Refuse).await;
    let o = run(&base, &[("DATABASE_URL", &db), ("NATS_URL", &nats)]).await;
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(o.took < Duration::from_secs(5), "{:?}", o.took);
    assert!(
        o.stderr.contains(&env.nats_proxy.addr().to_string()),
        "{}",
        o.stderr
    );
}

#[tokio::test]
async fn reading_commands_never_create_a_database() {
    let env = Env::start().await;
    let missing = env.pg.url_at(env.pg.addr(), "never_created");
    let o = run(&["verify"], &[("DATABASE_URL", &missing)]).await;
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(o.stderr.contains("does not exist"), "{}", o.stderr);
    let o = run(
        &[
            "reconcile",
            "--supplier",
            "X",
            "--rest-url",
            "http://127.0.0.1:1/",
        ],
        &[("DATABASE_URL", &missing), ("EVENT_AUDIT_REST_TOKEN", "t")],
    )
    .await;
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    let mut admin = env.pg.admin().await;
    let exists: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'never_created')",
    )
    .fetch_one(&mut admin)
    .await
    .expect("query");
    assert!(!exists, "a reading command created the database");
}

#[tokio::test]
async fn a_batch_never_exceeds_the_batch_size() {
    let env = Env::start().await;
    env.publish_load(3000, 51).await;
    drain(&env, &["--batch-size", "37", "--writers", "2"]).await;
    env.assert_exact(3000).await;
    let (max, sum): (i32, i64) =
        sqlx::query_as("SELECT max(row_count), sum(row_count)::int8 FROM audit.chain_links")
            .fetch_one(&env.pool().await)
            .await
            .expect("links");
    assert!(max <= 37, "a batch of {max} rows with --batch-size 37");
    assert_eq!(sum, 3000);
}
