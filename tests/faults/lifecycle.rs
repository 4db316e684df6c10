//! The daemon's own life under faults: killed again and again, stopped during an outage
//! (bounded by the shutdown timeout, nothing uncommitted acked, exit non-zero naming what is
//! left), and two daemons sharing one consumer with one of them killed.

use std::time::Duration;

use rand::Rng;

use crate::daemon::{drain, Daemon};
use crate::env::{metric, Env};
use crate::harness::proxy::Mode;

#[tokio::test]
async fn a_crash_loop_of_five_sigkills_loses_and_duplicates_nothing() {
    let env = Env::start().await;
    let n = 12_000;
    env.publish_load(n, 41).await;
    let mut rng = rand::thread_rng();
    for kill in 1..=5 {
        let mut d = Daemon::spawn(&env, &[]);
        let before = env.rows().await;
        let at = before + rng.gen_range(100..600);
        env.wait_rows(at, Duration::from_secs(60), || d.log()).await;
        tokio::time::sleep(Duration::from_millis(rng.gen_range(0..80))).await;
        assert!(d.running(), "exited by itself; log:\n{}", d.log());
        d.kill9().await;
        let after = env.rows().await;
        assert!(
            after < n as i64,
            "finished before kill {kill}: no crash was tested"
        );
    }
    drain(&env, &[]).await;
    env.assert_exact(n as i64).await;
    let findings: i64 = sqlx::query_scalar("SELECT count(*) FROM audit.id_findings")
        .fetch_one(&env.pool().await)
        .await
        .expect("findings");
    assert_eq!(
        findings, 0,
        "a redelivery was mistaken for a duplicate envelope id"
    );
}

#[tokio::test]
async fn sigterm_during_an_outage_exits_within_the_shutdown_timeout_acking_nothing_uncommitted() {
    let env = Env::start().await;
    env.publish_load(2000, 42).await;
    let mut d = Daemon::spawn_with(
        &env,
        &[],
        &[
            ("EVENT_AUDIT_SHUTDOWN_TIMEOUT", "3s"),
            ("EVENT_AUDIT_DB_WRITE_TIMEOUT", "2s"),
            ("EVENT_AUDIT_DB_STATEMENT_TIMEOUT", "2s"),
        ],
    );
    env.wait_rows(400, Duration::from_secs(60), || d.log())
        .await;
    env.pg_proxy.set_mode(Mode::Blackhole).await;
    // Published once the outage is on, so batches are in hand whatever the daemon had written.
    env.publish_load(2000, 44).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    d.signal("TERM");
    let (status, took) = d.wait_timed(Duration::from_secs(20)).await;
    assert_ne!(status.code(), Some(0), "log:\n{}", d.log());
    assert!(took < Duration::from_secs(10), "exit took {took:?}");
    let log = d.log();
    assert!(log.contains("shutdown timeout"), "{log}");
    assert!(log.contains("not committed"), "{log}");
    // Everything acked is in the log: nothing uncommitted was acked.
    let written = env.rows().await;
    let (pending, ack_pending) = env.consumer_backlog().await;
    let acked = 4000 - pending as i64 - ack_pending as i64;
    assert!(acked <= written, "acked {acked} > written {written}");
    env.pg_proxy.set_mode(Mode::Pass).await;
    drain(&env, &[]).await;
    env.assert_exact(4000).await;
}

#[tokio::test]
async fn two_daemons_on_one_consumer_with_one_killed_write_everything_once() {
    let env = Env::start().await;
    let n = 8000;
    env.publish_load(n, 43).await;
    let mut a = Daemon::spawn(&env, &["--instance", "a"]);
    let mut b = Daemon::spawn(&env, &["--instance", "b"]);
    env.wait_rows(2000, Duration::from_secs(60), || a.log())
        .await;
    a.kill9().await;
    env.wait_rows(n as i64, Duration::from_secs(120), || b.log())
        .await;
    let m = b.metrics().await;
    assert_eq!(
        metric(&m, "event_audit_instance_info", "audit_instance=\"b\""),
        Some(1.0)
    );
    b.stop_cleanly(Duration::from_secs(30)).await;
    env.assert_exact(n as i64).await;
    let pool = env.pool().await;
    let who: Vec<String> =
        sqlx::query_scalar("SELECT DISTINCT instance FROM audit.chain_links ORDER BY 1")
            .fetch_all(&pool)
            .await
            .expect("instances");
    assert!(who.iter().all(|w| w == "a" || w == "b"), "{who:?}");
    assert!(who.contains(&"b".to_string()), "{who:?}");
}
