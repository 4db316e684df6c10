//! Crash safety against real NATS JetStream and Postgres: a daemon killed with SIGKILL again and
//! again loses and duplicates nothing, and a daemon stopped with SIGTERM exits 0 having written
//! exactly what it acked. The daemon runs as a subprocess here: the process is the point.

use std::time::{Duration, Instant};

use rand::Rng;
use sqlx::PgPool;

use crate::support::process::{run_until_idle, wait_for_rows, Daemon, RunOpts};
use crate::support::witness::{signing_args, verify_witness, write_keys, Witness};
use crate::support::{assert_verifies, count_rows, seq_stats, TestDb, TestStream};

const N: i64 = 20_000;
/// The SIGTERM test's load: large enough that the stop lands mid-stream even when the machine
/// is loaded (the daemon runs one writer there, so the rest of the stream is not all in hand).
const N_TERM: i64 = 60_000;

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

#[tokio::test]
async fn sigkill_at_random_moments_loses_and_duplicates_nothing() {
    let started = Instant::now();
    let db = TestDb::create().await;
    let (pool, url) = (&db.pool, db.url.as_str());
    let ts = TestStream::create("crash").await;
    let mut rng = rand::thread_rng();
    ts.publish_load(N as usize, rng.gen_range(1..1000)).await;
    eprintln!("published {N} in {:?}", started.elapsed());

    let tmp = tempfile::tempdir().expect("tmp");
    let (key, public, _) = write_keys(tmp.path(), &format!("event-audit/{}", db.name), 1);
    let cps = format!("{}_CP", ts.name);
    let _w = Witness(cps.clone());
    let opts = RunOpts {
        batch_size: 500,
        exit_when_idle: false,
        extra: signing_args(&key, &cps),
        ..RunOpts::default()
    };
    for kill in 1..=3 {
        let mut d = Daemon::spawn(url, &ts, &opts);
        let before = count_rows(pool).await;
        let threshold = before + rng.gen_range(500..3000);
        let at = wait_for_rows(pool, &mut d, threshold, Duration::from_secs(60)).await;
        // A random moment within the next batch or two.
        tokio::time::sleep(Duration::from_millis(rng.gen_range(0..120))).await;
        assert!(
            d.running(),
            "the daemon exited by itself; its log:\n{}",
            d.log()
        );
        d.kill9().await;
        let after = count_rows(pool).await;
        eprintln!(
            "kill {kill}: rows {before} -> {at} (threshold {threshold}) -> {after} at the kill"
        );
        assert!(
            after < N,
            "the daemon finished before kill {kill}: no crash was tested"
        );
    }

    let d = run_until_idle(
        url,
        &ts,
        &RunOpts {
            batch_size: 500,
            extra: signing_args(&key, &cps),
            ..RunOpts::default()
        },
    )
    .await;
    assert_eq!(
        seq_stats(pool, &ts.name).await,
        (N, N, Some(1), Some(N)),
        "log of the last run:\n{}",
        d.log()
    );
    // The checkpoints signed across the kills (and the last one, at the end) all hold.
    let w = verify_witness(url, &public, &cps, &["--full"]).await;
    assert_eq!(w.code, Some(0), "{w:?}");
    assert!(
        w.stdout.contains(&format!("\"witnessed_size\":{N}")),
        "{w:?}"
    );
    let info = ts.consumer_info().await;
    assert_eq!((info.num_pending, info.num_ack_pending), (0, 0));
    assert_eq!(info.delivered.stream_sequence, N as u64);
    assert_no_id_findings(pool).await;
    let redelivered: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit.events WHERE delivery_count > 1")
            .fetch_one(pool)
            .await
            .expect("redelivered rows");
    eprintln!("{redelivered} rows were first recorded on a redelivery");
    let (links, batches): (i64, i64) =
        sqlx::query_as("SELECT (SELECT count(*) FROM audit.chain_links), count(DISTINCT batch_id) FROM audit.events")
            .fetch_one(pool)
            .await
            .expect("links");
    assert_eq!(links, batches, "one chain link per committed batch");
    assert_verifies(url, N).await;
    eprintln!("crash test took {:?}", started.elapsed());
}

#[tokio::test]
async fn sigterm_stops_cleanly_having_written_what_it_acked() {
    let started = Instant::now();
    let db = TestDb::create().await;
    let (pool, url) = (&db.pool, db.url.as_str());
    let ts = TestStream::create("sigterm").await;
    let mut rng = rand::thread_rng();
    ts.publish_load(N_TERM as usize, rng.gen_range(1..1000))
        .await;

    // A shutdown bound well above the default: on a loaded 2-core machine PostgreSQL can take
    // seconds per batch, and this test is about a clean stop, not about the bound.
    let tmp = tempfile::tempdir().expect("tmp");
    let (key, public, _) = write_keys(tmp.path(), &format!("event-audit/{}", db.name), 2);
    let cps = format!("{}_CP", ts.name);
    let _w = Witness(cps.clone());
    let mut extra = signing_args(&key, &cps);
    extra.extend(["--shutdown-timeout", "90s", "--writers", "1"].map(String::from));
    let opts = RunOpts {
        batch_size: 500,
        exit_when_idle: false,
        extra,
        ..RunOpts::default()
    };
    let mut d = Daemon::spawn(url, &ts, &opts);
    let threshold = rng.gen_range(1000..6000);
    wait_for_rows(pool, &mut d, threshold, Duration::from_secs(60)).await;
    assert!(
        d.running(),
        "the daemon exited by itself; its log:\n{}",
        d.log()
    );
    d.term().await;
    let status = d.wait(Duration::from_secs(120)).await;
    assert_eq!(
        status.code(),
        Some(0),
        "SIGTERM exit status; log:\n{}",
        d.log()
    );

    let written = count_rows(pool).await;
    assert!(
        written < N_TERM,
        "the daemon finished before SIGTERM: no stop was tested"
    );
    // Every message is acked, pending delivery, or delivered and not acked.
    let info = ts.consumer_info().await;
    let acked = N_TERM - info.num_pending as i64 - info.num_ack_pending as i64;
    eprintln!(
        "SIGTERM at >= {threshold} rows: {written} written, {acked} acked (pending {}, ack pending {})",
        info.num_pending, info.num_ack_pending
    );
    assert_eq!(written, acked, "rows written == messages acked");
    let (rows, distinct, min, _) = seq_stats(pool, &ts.name).await;
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
    assert_verifies(url, written).await;
    // The daemon signed a checkpoint of everything it wrote before it exited.
    let w = verify_witness(url, &public, &cps, &["--full"]).await;
    assert_eq!(w.code, Some(0), "{w:?}");
    assert!(
        w.stdout.contains(&format!("\"witnessed_size\":{written}")),
        "{w:?}"
    );

    let d = run_until_idle(
        url,
        &ts,
        &RunOpts {
            batch_size: 500,
            ..RunOpts::default()
        },
    )
    .await;
    assert_eq!(
        seq_stats(pool, &ts.name).await,
        (N_TERM, N_TERM, Some(1), Some(N_TERM)),
        "log of the last run:\n{}",
        d.log()
    );
    assert_no_id_findings(pool).await;
    assert_verifies(url, N_TERM).await;
    eprintln!("SIGTERM test took {:?}", started.elapsed());
}
