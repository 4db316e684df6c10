//! NATS under the daemon: a server restart, and the durable consumer deleted while the daemon
//! is connected and while it is cut off (nats.rs #1584). A deleted consumer is recreated where
//! the log ends and counted, or, with `--bind-only`, the daemon exits non-zero saying so.

use std::time::Duration;

use async_nats::jetstream::consumer::DeliverPolicy;

use crate::daemon::Daemon;
use crate::env::{metric, Env, CONSUMER, STREAM};
use crate::harness::proxy::Mode;

async fn delete_consumer(env: &Env) {
    env.js()
        .await
        .get_stream(STREAM)
        .await
        .expect("stream")
        .delete_consumer(CONSUMER)
        .await
        .expect("delete the consumer");
}

async fn start_sequence(env: &Env) -> u64 {
    let info = env
        .js()
        .await
        .get_stream(STREAM)
        .await
        .expect("stream")
        .consumer_info(CONSUMER)
        .await
        .expect("consumer info");
    match info.config.deliver_policy {
        DeliverPolicy::ByStartSequence { start_sequence } => start_sequence,
        DeliverPolicy::All => 1,
        other => panic!("unexpected deliver policy {other:?}"),
    }
}

async fn recreated(d: &Daemon) -> f64 {
    metric(
        &d.metrics().await,
        "event_audit_consumer_recreated_total",
        "",
    )
    .unwrap_or(-1.0)
}

#[tokio::test]
async fn nats_restart_loses_and_duplicates_nothing() {
    let mut env = Env::start().await;
    env.publish_load(3000, 11).await;
    let mut d = Daemon::spawn(&env, &[]);
    env.wait_rows(500, Duration::from_secs(60), || d.log())
        .await;
    env.nats.restart().await;
    env.wait_rows(3000, Duration::from_secs(90), || d.log())
        .await;
    d.wait_ready(200, Duration::from_secs(20)).await;
    d.stop_cleanly(Duration::from_secs(30)).await;
    env.assert_exact(3000).await;
}

#[tokio::test]
async fn a_deleted_consumer_is_recreated_where_the_log_ends() {
    let env = Env::start().await;
    env.publish_load(1000, 12).await;
    let mut d = Daemon::spawn(&env, &[]);
    env.wait_rows(1000, Duration::from_secs(60), || d.log())
        .await;
    // Deleted while connected: the message stream reports it and ends.
    delete_consumer(&env).await;
    env.publish_load(500, 13).await;
    env.wait_rows(1500, Duration::from_secs(60), || d.log())
        .await;
    assert!(d.running(), "the daemon stopped; log:\n{}", d.log());
    assert_eq!(
        start_sequence(&env).await,
        1001,
        "recreated after the last sequence the log holds, not from 1"
    );
    assert_eq!(recreated(&d).await, 1.0);
    // Deleted while cut off from NATS: only missing heartbeats tell (nats.rs #1584).
    env.nats_proxy.set_mode(Mode::Refuse).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    delete_consumer(&env).await;
    env.publish_load(500, 14).await;
    env.nats_proxy.set_mode(Mode::Pass).await;
    env.wait_rows(2000, Duration::from_secs(90), || d.log())
        .await;
    assert_eq!(start_sequence(&env).await, 1501);
    assert_eq!(recreated(&d).await, 2.0);
    let redelivered: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit.events WHERE delivery_count > 1")
            .fetch_one(&env.pool().await)
            .await
            .expect("count");
    assert_eq!(redelivered, 0, "nothing was read twice");
    d.stop_cleanly(Duration::from_secs(30)).await;
    env.assert_exact(2000).await;
}

#[tokio::test]
async fn a_deleted_consumer_under_bind_only_stops_the_daemon_non_zero() {
    let env = Env::start().await;
    env.publish_load(300, 15).await;
    let mut d = Daemon::spawn(&env, &["--bind-only"]);
    env.wait_rows(300, Duration::from_secs(60), || d.log())
        .await;
    delete_consumer(&env).await;
    let status = d.wait(Duration::from_secs(30)).await;
    assert_eq!(status.code(), Some(2), "log:\n{}", d.log());
    let log = d.log();
    assert!(
        log.contains("was deleted and --bind-only forbids recreating it"),
        "{log}"
    );
    env.assert_exact(300).await;
}
