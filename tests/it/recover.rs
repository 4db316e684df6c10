//! Nothing lost that the bus still holds, against real NATS JetStream and PostgreSQL: a
//! database restored from an older `pg_dump` gets back, at the daemon's start, every sequence
//! the stream still holds below the consumer's ack floor, once each, even with two daemons
//! starting together; `event-audit recover` says what it would record and what is lost, and
//! records it; a configured start sequence is respected; an erased person's message still on
//! the bus stays erased; a recreated stream's new messages get rows of their own, and the
//! reset is named.

use crate::support::cli::event_audit;
use crate::support::personal::{created, pg_dump};
use crate::support::{run_until_idle, seq_stats, settings, spawn_app, verify, TestDb, TestStream};

const EMAIL: &str = "hana.recover@example.com";

/// `(rows, distinct sequences)` of a stream in the log.
async fn counts(db: &TestDb, stream: &str) -> (i64, i64) {
    let (rows, distinct, _, _) = seq_stats(&db.pool, stream).await;
    (rows, distinct)
}

#[tokio::test]
async fn a_restored_database_gets_back_what_the_bus_still_holds() {
    let db = TestDb::create().await;
    let ts = TestStream::create("recover_restore").await;
    ts.publish_load(10, 3).await;
    run_until_idle(settings(&db, &ts)).await;
    let nightly = db.backup();
    ts.publish_load(20, 4).await;
    run_until_idle(settings(&db, &ts)).await;
    assert_eq!(counts(&db, &ts.name).await, (30, 30));

    // The database is lost and the backup restored: 10 rows; the consumer acked 30.
    let restored = TestDb::restored(&nightly).await;
    assert_eq!(counts(&restored, &ts.name).await, (10, 10));
    ts.publish_load(5, 5).await;
    // Two daemons start on the same consumer together: no sequence is recorded twice.
    let (a, b) = tokio::join!(
        run_until_idle(settings(&restored, &ts)),
        run_until_idle(settings(&restored, &ts))
    );
    assert_eq!(counts(&restored, &ts.name).await, (35, 35));
    // The recovered rows are in the run's totals and its `stopped` line, apart from the
    // messages the consumer delivered.
    assert_eq!(a.totals.recovered + b.totals.recovered, 20, "{a:?} {b:?}");
    assert_eq!(a.totals.messages + b.totals.messages, 5, "{a:?} {b:?}");
    let log = format!("{}{}", a.log, b.log);
    assert!(log.contains("\"recovered\":20"), "{log}");
    assert!(
        log.contains("the log lacked 20 sequence(s) the stream still holds (11..30)"),
        "{log}"
    );
    let v = verify(&restored.url).await;
    assert_eq!(v.code, Some(0), "{v:?}");
    let gaps = v.report["completeness"].to_string();
    assert!(!gaps.contains("missing"), "{gaps}");
}

#[tokio::test]
async fn recover_says_what_it_would_record_and_names_what_is_lost() {
    let db = TestDb::create().await;
    let ts = TestStream::create("recover_cmd").await;
    ts.publish_load(5, 6).await;
    run_until_idle(settings(&db, &ts)).await;
    // Five more the daemon never read; the stream then loses 7.
    ts.publish_load(5, 7).await;
    let stream = ts.js.get_stream(&ts.name).await.expect("stream");
    assert!(stream.delete_message(7).await.expect("delete 7"));
    let base = [
        "recover",
        "--database-url",
        &db.url,
        "--nats-url",
        &crate::support::nats_url(),
        "--stream",
        &ts.name,
    ];
    let mut dry = base.to_vec();
    dry.push("--dry-run");
    let d = event_audit(&dry, &[]).await;
    assert_eq!(d.code, Some(0), "{d:?}");
    assert!(
        d.stdout
            .contains("the log lacks 4 sequence(s) the stream still holds (6,8..10)")
            && d.stdout
                .contains("1 sequence(s) the log lacks are no longer on the stream (7)"),
        "{d:?}"
    );
    assert_eq!(
        counts(&db, &ts.name).await,
        (5, 5),
        "a dry run records nothing"
    );
    // The stream named by the environment, as the daemon's settings name it.
    let env = [("EVENT_AUDIT_STREAM", ts.name.as_str())];
    let no_stream: Vec<&str> = base
        .iter()
        .copied()
        .filter(|a| *a != "--stream" && *a != ts.name)
        .collect();
    let mut failing = no_stream.clone();
    failing.push("--fail-on-lost");
    let r = event_audit(&failing, &env).await;
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stdout.contains("4 recorded, 0 already there"), "{r:?}");
    assert_eq!(counts(&db, &ts.name).await, (9, 9));
    // Again: nothing left to record, 7 still lost.
    let again = event_audit(&no_stream, &env).await;
    assert_eq!(again.code, Some(0), "{again:?}");
    assert!(!again.stdout.contains("lacked"), "{again:?}");
    assert!(
        again.stdout.contains("no longer on the stream (7)"),
        "{again:?}"
    );
}

#[tokio::test]
async fn a_configured_start_is_respected_and_an_erased_message_stays_erased() {
    let db = TestDb::create().await;
    let ts = TestStream::create("recover_start").await;
    let subject = ts.subject("crafted");
    ts.publish(&subject, &[], &created("rec-1", "A-REC-1", EMAIL))
        .await;
    ts.publish_load(9, 8).await;
    let mut s = settings(&db, &ts);
    s.stream.start_seq = 4;
    run_until_idle(s.clone()).await;
    let (rows, _, first, last) = seq_stats(&db.pool, &ts.name).await;
    assert_eq!((rows, first, last), (7, Some(4), Some(10)));
    // Recovery from sequence 1 is refused by the configured start: nothing below 4.
    let r = event_audit(
        &[
            "recover",
            "--database-url",
            &db.url,
            "--nats-url",
            &crate::support::nats_url(),
            "--stream",
            &ts.name,
            "--start-seq",
            "4",
        ],
        &[],
    )
    .await;
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(counts(&db, &ts.name).await, (7, 7));

    // From 1: the person's message is recorded, then erased; the bus keeps its copy (the
    // stream is not the daemon's to delete from); a recovery does not bring it back.
    let all = [
        "recover",
        "--database-url",
        &db.url,
        "--nats-url",
        &crate::support::nats_url(),
        "--stream",
        &ts.name,
    ];
    assert_eq!(event_audit(&all, &[]).await.code, Some(0));
    assert_eq!(counts(&db, &ts.name).await, (10, 10));
    let erase = event_audit(
        &[
            "erase",
            "--database-url",
            &db.url,
            "--account",
            "A-REC-1",
            "--reason",
            "erasure request",
        ],
        &[],
    )
    .await;
    assert_eq!(erase.code, Some(0), "{erase:?}");
    let again = event_audit(&all, &[]).await;
    assert_eq!(again.code, Some(0), "{again:?}");
    assert_eq!(counts(&db, &ts.name).await, (10, 10));
    assert!(
        !pg_dump(&db).contains(EMAIL),
        "the erased address came back"
    );
    run_until_idle(s).await;
    assert!(
        !pg_dump(&db).contains(EMAIL),
        "the erased address came back"
    );
}

#[tokio::test]
async fn a_recreated_stream_gets_rows_of_its_own_and_is_named() {
    let db = TestDb::create().await;
    let ts = TestStream::create("recover_reset").await;
    ts.publish_load(3, 9).await;
    run_until_idle(settings(&db, &ts)).await;
    // The stream deleted and created again under its name: its sequences start at 1 again.
    ts.js
        .delete_stream(&ts.name)
        .await
        .expect("delete the stream");
    ts.js
        .create_stream(async_nats::jetstream::stream::Config {
            name: ts.name.clone(),
            subjects: vec![ts.subjects()],
            ..Default::default()
        })
        .await
        .expect("create it again");
    ts.publish_load(2, 10).await;
    let mut s = settings(&db, &ts);
    s.ingest.exit_when_idle = true;
    let app = spawn_app(s).await;
    let metrics = app.metrics.clone();
    let stopped = app.wait(std::time::Duration::from_secs(60)).await;
    let (rows, distinct) = counts(&db, &ts.name).await;
    assert_eq!(
        (rows, distinct),
        (5, 3),
        "seq 1 and 2 twice, each its own row"
    );
    assert!(
        stopped
            .log
            .contains("it was recreated and its sequences started again"),
        "{}",
        stopped.log
    );
    assert!(metrics
        .render()
        .contains("event_audit_stream_resets_total 1"));
}
