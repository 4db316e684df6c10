//! PostgreSQL going away under the daemon, through the fault proxy: refused, blackholed,
//! silently stalled (existing connections silent, new ones fine), and slow. Each loses and
//! duplicates nothing (exact sequences, `verify`), and readiness says what is happening at once.

use std::time::{Duration, Instant};

use crate::daemon::Daemon;
use crate::env::{metric, Env};
use crate::harness::proxy::Mode;

/// Short bounds so that an outage is noticed within seconds (in the environment, which an
/// older build ignores: `FAULTS_BIN` then shows what the fix changed).
const FAST: &[(&str, &str)] = &[
    ("EVENT_AUDIT_DB_WRITE_TIMEOUT", "2s"),
    ("EVENT_AUDIT_DB_STATEMENT_TIMEOUT", "2s"),
    ("EVENT_AUDIT_STALL_TIMEOUT", "2s"),
];

/// Waits until `/metrics` shows `connection_up{component="postgres"}` = `up`; returns how long.
async fn wait_postgres_up(d: &mut Daemon, up: f64, limit: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let m = d.metrics().await;
        if metric(&m, "event_audit_connection_up", "component=\"postgres\"") == Some(up) {
            return started.elapsed();
        }
        assert!(d.running(), "the daemon exited; log:\n{}", d.log());
        assert!(
            started.elapsed() < limit,
            "connection_up{{postgres}} not {up} after {limit:?}; log:\n{}",
            d.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// An outage in `mode` while messages arrive, then healing: exactly every message, once.
async fn outage(mode: Mode) -> (Env, Daemon) {
    let env = Env::start().await;
    env.publish_load(2000, 3).await;
    let mut d = Daemon::spawn_with(&env, &[], FAST);
    env.wait_rows(400, Duration::from_secs(60), || d.log())
        .await;
    env.pg_proxy.set_mode(mode).await;
    env.publish_load(1000, 4).await;
    // Readiness reads state only: it answers at once, and says the database is down.
    d.wait_ready_saying(503, "postgres down", Duration::from_secs(15))
        .await;
    let (code, _) = d
        .get("/readyz", Duration::from_secs(1))
        .await
        .expect("/readyz answers within a second during the outage");
    assert_eq!(code, 503);
    wait_postgres_up(&mut d, 0.0, Duration::from_secs(10)).await;
    env.pg_proxy.set_mode(Mode::Pass).await;
    env.wait_rows(3000, Duration::from_secs(90), || d.log())
        .await;
    d.wait_ready(200, Duration::from_secs(20)).await;
    (env, d)
}

async fn stop_and_check(env: &Env, mut d: Daemon, n: i64) {
    d.stop_cleanly(Duration::from_secs(30)).await;
    env.assert_exact(n).await;
    let (pending, ack_pending) = env.consumer_backlog().await;
    assert_eq!((pending, ack_pending), (0, 0));
}

#[tokio::test]
async fn postgres_refused_then_back_loses_and_duplicates_nothing() {
    let (env, d) = outage(Mode::Refuse).await;
    stop_and_check(&env, d, 3000).await;
}

#[tokio::test]
async fn postgres_blackholed_then_back_loses_and_duplicates_nothing() {
    let (env, d) = outage(Mode::Blackhole).await;
    stop_and_check(&env, d, 3000).await;
}

/// Existing connections go silent (no RST: a NAT or firewall drop) while new ones work: the
/// write timeout drops the silent connections and ingest goes on over new ones, without any
/// healing of the old sockets.
#[tokio::test]
async fn silently_stalled_connections_are_dropped_and_ingest_goes_on() {
    let env = Env::start().await;
    env.publish_load(1500, 5).await;
    let mut d = Daemon::spawn_with(&env, &[], FAST);
    env.wait_rows(300, Duration::from_secs(60), || d.log())
        .await;
    env.pg_proxy.set_mode(Mode::Stall).await;
    env.publish_load(1500, 6).await;
    // Never healed: every old socket stays silent for good. Each retry may meet another of
    // the pool's silent sockets (2 s each, with the writer's backoff up to 10 s between), so
    // on a loaded machine the last rows can take a minute or more to land.
    env.wait_rows(3000, Duration::from_secs(150), || d.log())
        .await;
    // Readiness answers at once, and is ready again once the health probe's own silent
    // connection has been dropped too (on a loaded machine that can trail the last row).
    d.get("/readyz", Duration::from_secs(1))
        .await
        .expect("/readyz answers at once");
    d.wait_ready(200, Duration::from_secs(10)).await;
    let m = d.metrics().await;
    assert!(
        metric(&m, "event_audit_db_errors_total", "class=\"transient\"").unwrap_or(0.0) >= 1.0,
        "the stalled writes timed out and were retried:\n{m}"
    );
    stop_and_check(&env, d, 3000).await;
}

/// A write that cannot commit fails readiness after the stall timeout, however healthy the
/// pings look (here every write blocks on a lock held by another session).
#[tokio::test]
async fn readiness_fails_when_no_batch_commits_while_batches_wait() {
    let env = Env::start().await;
    let mut d = Daemon::spawn_with(
        &env,
        &[],
        &[
            ("EVENT_AUDIT_STALL_TIMEOUT", "2s"),
            ("EVENT_AUDIT_DB_WRITE_TIMEOUT", "30s"),
        ],
    );
    d.wait_ready(200, Duration::from_secs(30)).await;
    let pool = env.pool().await;
    let mut tx = pool.begin().await.expect("begin");
    sqlx::query("LOCK TABLE audit.chain_head IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *tx)
        .await
        .expect("lock the chain head");
    env.publish_load(300, 7).await;
    let body = d.wait_ready(503, Duration::from_secs(20)).await;
    assert!(body.contains("ingest stalled"), "{body}");
    assert!(body.contains("postgres ok"), "{body}");
    let m = d.metrics().await;
    assert!(
        metric(&m, "event_audit_ingest_uncommitted_batches", "").unwrap_or(0.0) >= 1.0,
        "{m}"
    );
    tx.rollback().await.expect("release the lock");
    env.wait_rows(300, Duration::from_secs(30), || d.log())
        .await;
    d.wait_ready(200, Duration::from_secs(10)).await;
    stop_and_check(&env, d, 300).await;
}

#[tokio::test]
async fn added_latency_slows_but_loses_nothing_and_readiness_stays_prompt() {
    let env = Env::start().await;
    env.publish_load(1000, 8).await;
    let mut d = Daemon::spawn(&env, &[]);
    env.wait_rows(100, Duration::from_secs(30), || d.log())
        .await;
    env.pg_proxy
        .set_mode(Mode::Latency(Duration::from_millis(200)))
        .await;
    // The first load may already be in the log by now: publish more once the latency is on,
    // so the daemon certainly writes through the slow path.
    env.publish_load(300, 9).await;
    env.wait_rows(1100, Duration::from_secs(90), || d.log())
        .await;
    assert!(d.running());
    for _ in 0..5 {
        let (code, body) = d
            .get("/readyz", Duration::from_millis(500))
            .await
            .expect("/readyz answers within 0.5 s under 200 ms of latency");
        assert_eq!(code, 200, "{body}");
    }
    env.wait_rows(1300, Duration::from_secs(120), || d.log())
        .await;
    env.pg_proxy.set_mode(Mode::Pass).await;
    stop_and_check(&env, d, 1300).await;
}
