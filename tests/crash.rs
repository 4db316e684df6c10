//! Crash safety against real NATS JetStream and Postgres: a daemon killed with SIGKILL again and
//! again loses and duplicates nothing, and a daemon stopped with SIGTERM exits 0 having written
//! exactly what it acked.

mod common;

use std::time::{Duration, Instant};

use rand::Rng;
use sqlx::PgPool;

use common::{
    assert_verifies, count_rows, db_url, run_until_idle, seq_stats, wait_for_rows, Daemon, RunOpts,
    TestStream,
};

const N: i64 = 20_000;

/// No envelope id repeats in the load mix, so any id finding would be a redelivery mistaken
/// for a duplicate.
async fn assert_no_id_findings(pool: &PgPool) {
    let findings: i64 = sqlx::query_scalar("SELECT count(*) FROM audit.id_findings")
        .fetch_one(pool)
        .await
        .expect("findings");
    assert_eq!(
        findings, 0,
        "redeliveries were recorded as duplicate envelope ids"
    );
}

#[sqlx::test]
async fn sigkill_at_random_moments_loses_and_duplicates_nothing(pool: PgPool) {
    let started = Instant::now();
    let ts = TestStream::create("crash").await;
    let url = db_url(&pool);
    let mut rng = rand::thread_rng();
    ts.publish_load(N as usize, rng.gen_range(1..1000)).await;
    eprintln!("published {N} in {:?}", started.elapsed());

    let opts = RunOpts {
        batch_size: 500,
        exit_when_idle: false,
        ..RunOpts::default()
    };
    for kill in 1..=3 {
        let mut d = Daemon::spawn(&url, &ts, &opts);
        let before = count_rows(&pool).await;
        let threshold = before + rng.gen_range(500..3000);
        let at = wait_for_rows(&pool, &mut d, threshold, Duration::from_secs(60)).await;
        // A random moment within the next batch or two.
        tokio::time::sleep(Duration::from_millis(rng.gen_range(0..120))).await;
        assert!(
            d.running(),
            "the daemon exited by itself; its log:\n{}",
            d.log()
        );
        d.kill9().await;
        let after = count_rows(&pool).await;
        eprintln!(
            "kill {kill}: rows {before} -> {at} (threshold {threshold}) -> {after} at the kill"
        );
        assert!(
            after < N,
            "the daemon finished before kill {kill}: no crash was tested"
        );
    }

    let d = run_until_idle(
        &url,
        &ts,
        &RunOpts {
            batch_size: 500,
            ..RunOpts::default()
        },
    )
    .await;
    assert_eq!(
        seq_stats(&pool, &ts.name).await,
        (N, N, Some(1), Some(N)),
        "log of the last run:\n{}",
        d.log()
    );
    let info = ts.consumer_info().await;
    assert_eq!((info.num_pending, info.num_ack_pending), (0, 0));
    assert_eq!(info.delivered.stream_sequence, N as u64);
    assert_no_id_findings(&pool).await;
    let redelivered: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit.events WHERE delivery_count > 1")
            .fetch_one(&pool)
            .await
            .expect("redelivered rows");
    eprintln!("{redelivered} rows were first recorded on a redelivery");
    let (links, batches): (i64, i64) =
        sqlx::query_as("SELECT (SELECT count(*) FROM audit.chain_links), count(DISTINCT batch_id) FROM audit.events")
            .fetch_one(&pool)
            .await
            .expect("links");
    assert_eq!(links, batches, "one chain link per committed batch");
    assert_verifies(&url, N).await;
    eprintln!("crash test took {:?}", started.elapsed());
}

#[sqlx::test]
async fn sigterm_stops_cleanly_having_written_what_it_acked(pool: PgPool) {
    let started = Instant::now();
    let ts = TestStream::create("sigterm").await;
    let url = db_url(&pool);
    let mut rng = rand::thread_rng();
    ts.publish_load(N as usize, rng.gen_range(1..1000)).await;

    let opts = RunOpts {
        batch_size: 500,
        exit_when_idle: false,
        ..RunOpts::default()
    };
    let mut d = Daemon::spawn(&url, &ts, &opts);
    let threshold = rng.gen_range(1000..6000);
    wait_for_rows(&pool, &mut d, threshold, Duration::from_secs(60)).await;
    assert!(
        d.running(),
        "the daemon exited by itself; its log:\n{}",
        d.log()
    );
    d.term().await;
    let status = d.wait(Duration::from_secs(30)).await;
    assert_eq!(
        status.code(),
        Some(0),
        "SIGTERM exit status; log:\n{}",
        d.log()
    );

    let written = count_rows(&pool).await;
    assert!(
        written < N,
        "the daemon finished before SIGTERM: no stop was tested"
    );
    // Every message is acked, pending delivery, or delivered and not acked.
    let info = ts.consumer_info().await;
    let acked = N - info.num_pending as i64 - info.num_ack_pending as i64;
    eprintln!(
        "SIGTERM at >= {threshold} rows: {written} written, {acked} acked (pending {}, ack pending {})",
        info.num_pending, info.num_ack_pending
    );
    assert_eq!(written, acked, "rows written == messages acked");
    let (rows, distinct, min, _) = seq_stats(&pool, &ts.name).await;
    assert_eq!((rows, distinct, min), (written, written, Some(1)));

    let log = d.log();
    let errors = d.errors();
    assert!(
        errors.is_empty(),
        "the stopped daemon logged errors:\n{}",
        errors.join("\n")
    );
    assert!(log.contains("shutdown requested"), "{log}");
    assert!(log.contains("\"stopped\""), "{log}");
    assert_verifies(&url, written).await;

    let d = run_until_idle(
        &url,
        &ts,
        &RunOpts {
            batch_size: 500,
            ..RunOpts::default()
        },
    )
    .await;
    assert_eq!(
        seq_stats(&pool, &ts.name).await,
        (N, N, Some(1), Some(N)),
        "log of the last run:\n{}",
        d.log()
    );
    assert_no_id_findings(&pool).await;
    assert_verifies(&url, N).await;
    eprintln!("SIGTERM test took {:?}", started.elapsed());
}
