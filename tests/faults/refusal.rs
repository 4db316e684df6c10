//! PostgreSQL refusing a batch. A data error is the message's fault: a payload it refuses
//! although the daemon's own check passed costs only that message its jsonb column; any other
//! row it refuses as data is recorded as its bus facts and raw bytes; neither stalls the
//! pipeline. A permanent error (a permission revoked) is not retried: readiness fails, nothing
//! more is acked, and the daemon exits non-zero naming the reason.

use std::time::Duration;

use sqlx::Row;

use crate::daemon::{drain, Daemon};
use crate::env::{metric, Env};
use crate::harness::nats::NatsConfig;
use crate::harness::postgres::PgOptions;

fn native(id: &str, payload: &str) -> Vec<u8> {
    format!(r#"{{"event":"account.occupied-v1","id":"{id}","payload":{payload}}}"#).into_bytes()
}

#[tokio::test]
async fn a_payload_postgres_refuses_after_our_check_costs_only_its_own_jsonb() {
    // At its minimum stack, PostgreSQL refuses nesting the daemon's check lets through.
    let env = Env::start_with(
        PgOptions {
            settings: vec![("max_stack_depth".into(), "100kB".into())],
            ..PgOptions::default()
        },
        NatsConfig::default(),
    )
    .await;
    let deep = format!(
        r#"{{"account_number":"A","x":{}1{}}}"#,
        "[".repeat(900),
        "]".repeat(900)
    );
    let mut poison = 0;
    for i in 0..300 {
        if i == 150 {
            poison = env.publish("events.load", native("deep", &deep)).await;
        } else {
            env.publish(
                "events.load",
                native(&format!("n{i}"), r#"{"account_number":"A"}"#),
            )
            .await;
        }
    }
    let d = drain(&env, &[]).await;
    env.assert_exact(300).await;
    let pool = env.pool().await;
    let row = sqlx::query(
        "SELECT payload IS NULL AS gone, payload_error FROM audit.events WHERE stream_seq = $1",
    )
    .bind(poison as i64)
    .fetch_one(&pool)
    .await
    .expect("the poison's row");
    assert!(row.get::<bool, _>("gone"), "log:\n{}", d.log());
    assert_eq!(
        row.get::<Option<String>, _>("payload_error").as_deref(),
        Some("refused_by_postgres: SQLSTATE 54001")
    );
    let (kept,): (i64,) =
        sqlx::query_as("SELECT count(*) FROM audit.events WHERE payload IS NOT NULL")
            .fetch_one(&pool)
            .await
            .expect("count");
    assert_eq!(kept, 299, "every neighbour keeps its payload");
}

#[tokio::test]
async fn a_row_refused_as_data_outside_its_payload_is_kept_as_raw_and_never_stalls() {
    let env = Env::start().await;
    let mut d = Daemon::spawn(&env, &[]);
    d.wait_ready(200, Duration::from_secs(30)).await;
    // A data error no check can foresee: a trigger refusing rows whose headers name X-Poison.
    let pool = env.pool().await;
    sqlx::raw_sql(
        "CREATE FUNCTION public.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN RAISE EXCEPTION 'refused by a test trigger' USING ERRCODE = '22023'; END $$; \
         CREATE TRIGGER refuse BEFORE INSERT ON audit.events FOR EACH ROW \
         WHEN (NEW.headers ? 'X-Poison') EXECUTE FUNCTION public.refuse();",
    )
    .execute(&pool)
    .await
    .expect("create the trigger");
    let js = env.js().await;
    let mut poison = 0;
    for i in 0..300 {
        let body = native(&format!("n{i}"), r#"{"account_number":"A"}"#);
        if i == 100 {
            let mut h = async_nats::HeaderMap::new();
            h.insert("X-Poison", "yes");
            poison = js
                .publish_with_headers("events.load", h, body.into())
                .await
                .expect("publish")
                .await
                .expect("stored")
                .sequence;
        } else {
            env.publish("events.load", body).await;
        }
    }
    env.wait_rows(300, Duration::from_secs(60), || d.log())
        .await;
    let row = sqlx::query(
        "SELECT headers IS NULL AS no_headers, payload IS NULL AS no_payload, event_type, \
         payload_error, length(raw) > 0 AS has_raw FROM audit.events WHERE stream_seq = $1",
    )
    .bind(poison as i64)
    .fetch_one(&pool)
    .await
    .expect("the refused row");
    assert!(row.get::<bool, _>("no_headers") && row.get::<bool, _>("no_payload"));
    assert!(row.get::<bool, _>("has_raw"));
    assert_eq!(
        row.get::<Option<String>, _>("payload_error").as_deref(),
        Some("row_refused_by_postgres: SQLSTATE 22023")
    );
    let m = d.metrics().await;
    assert_eq!(
        metric(&m, "event_audit_ingest_reduced_rows_total", ""),
        Some(1.0)
    );
    let (kept,): (i64,) =
        sqlx::query_as("SELECT count(*) FROM audit.events WHERE payload IS NOT NULL")
            .fetch_one(&pool)
            .await
            .expect("count");
    assert_eq!(kept, 299, "every neighbour keeps its payload");
    d.stop_cleanly(Duration::from_secs(30)).await;
    env.assert_exact(300).await;
}

#[tokio::test]
async fn a_permanent_error_fails_readiness_and_exits_non_zero_acking_nothing() {
    let env = Env::start().await;
    env.publish_load(400, 31).await;
    let mut d = Daemon::spawn(&env, &[]);
    env.wait_rows(400, Duration::from_secs(60), || d.log())
        .await;
    let pool = env.pool().await;
    sqlx::query("REVOKE INSERT ON audit.events FROM event_audit_writer")
        .execute(&pool)
        .await
        .expect("revoke");
    env.publish_load(300, 32).await;
    let (status, took) = d.wait_timed(Duration::from_secs(30)).await;
    assert_eq!(status.code(), Some(2), "log:\n{}", d.log());
    assert!(took < Duration::from_secs(20), "{took:?}");
    let log = d.log();
    assert!(log.contains("permission denied"), "{log}");
    assert!(log.contains("42501"), "{log}");
    assert!(log.contains("retrying cannot help"), "{log}");
    let retries = log.matches("batch write failed; retrying").count();
    assert_eq!(retries, 0, "a permission error is not retried:\n{log}");
    // Nothing of the refused messages was acked.
    assert_eq!(env.rows().await, 400);
    let (pending, ack_pending) = env.consumer_backlog().await;
    assert_eq!(pending + ack_pending as u64, 300);
    sqlx::query("GRANT INSERT ON audit.events TO event_audit_writer")
        .execute(&pool)
        .await
        .expect("grant");
    drain(&env, &[]).await;
    env.assert_exact(700).await;
}

#[tokio::test]
async fn a_refused_chain_link_stops_the_daemon_non_zero_having_written_nothing() {
    let env = Env::start().await;
    let mut d = Daemon::spawn_with(&env, &[], &[("EVENT_AUDIT_SHUTDOWN_TIMEOUT", "5s")]);
    d.wait_ready(200, Duration::from_secs(30)).await;
    let pool = env.pool().await;
    // The chain link is refused: every batch fails for good.
    sqlx::query("REVOKE UPDATE ON audit.chain_head FROM event_audit_writer")
        .execute(&pool)
        .await
        .expect("revoke");
    env.publish_load(50, 33).await;
    let status = d.wait(Duration::from_secs(30)).await;
    assert_eq!(status.code(), Some(2));
    let log = d.log();
    assert!(log.contains("ingest stops"), "{log}");
    assert_eq!(env.rows().await, 0);
}
