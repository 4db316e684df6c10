//! Retention against real NATS JetStream and PostgreSQL, the daemon in-process. With
//! `retention.payloads_for` it erases the personal data of every row published longer ago than
//! the period on its schedule, never a younger row, one erasure by publication time per run that
//! found any (a second wave, a second erasure); the database no longer holds the address and the
//! log still verifies, `verify` naming each erasure. With `retention.rows_for` it archives a
//! month's partition past the period to `retention.archive_dir` and prunes it, once, leaving the
//! current month's rows whole; the log verifies against the archive.

use std::time::{Duration, Instant};

use crate::support::app::{settings, spawn_app, TestApp};
use crate::support::cli::event_audit;
use crate::support::personal::{created, month_before_last, pg_dump, write_old_rows};
use crate::support::{verify, TestDb, TestStream};

const EMAIL: &str = "carol.retention@example.com";
const EMAIL2: &str = "dave.retention@example.com";
/// The address in the rows of an old month (archived and pruned), and in today's (kept).
const OLD_EMAIL: &str = "erin.retention@example.com";
const LIVE_EMAIL: &str = "frank.retention@example.com";
/// The stream the old month's rows are written under (straight into the log, not the bus).
const OLD_STREAM: &str = "RETOLD";
/// How many rows the old month holds.
const OLD_ROWS: i64 = 4;
/// How long the test waits for a wave to be erased (ingest, the period, a run).
const LIMIT: Duration = Duration::from_secs(60);

/// Three messages holding `email`: in a valid payload, in a header, in an invalid payload.
async fn wave(ts: &TestStream, tag: &str, email: &str) -> Vec<i64> {
    let subject = ts.subject("crafted");
    let valid = created(&format!("{tag}-1"), &format!("R-{tag}-1"), email);
    let header = created(&format!("{tag}-2"), &format!("R-{tag}-2"), "x@example.com");
    let bad = format!(
        r#"{{"event":"account.created-v1","id":"{tag}-3","payload":{{"account_user_emails":"{email}"}}}}"#
    );
    let seqs = [
        ts.publish(&subject, &[], &valid).await,
        ts.publish(&subject, &[("X-User", email)], &header).await,
        ts.publish(&subject, &[], bad.as_bytes()).await,
    ];
    seqs.iter().map(|s| *s as i64).collect()
}

/// Polls until the rows `seqs` of the stream are recorded with no payload, raw message or
/// headers left; at every poll, no row younger than the period (less a margin for the clocks of
/// NATS and of this process) is erased.
async fn wait_erased(db: &TestDb, stream: &str, seqs: &[i64]) {
    let started = Instant::now();
    loop {
        let (recorded, erased): (i64, i64) = sqlx::query_as(
            "SELECT count(*), count(*) FILTER (WHERE payload IS NULL AND octet_length(raw) = 0 \
               AND headers IS NULL) \
             FROM audit.events WHERE stream = $1 AND stream_seq = ANY($2)",
        )
        .bind(stream)
        .bind(seqs)
        .fetch_one(&db.pool)
        .await
        .expect("count the rows");
        let early: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM audit.events WHERE stream = $1 AND octet_length(raw) = 0 \
               AND published_at > now() - interval '1500 milliseconds'",
        )
        .bind(stream)
        .fetch_one(&db.pool)
        .await
        .expect("count the young erased rows");
        assert_eq!(
            early, 0,
            "a row younger than retention.payloads_for was erased"
        );
        if erased == seqs.len() as i64 {
            assert_eq!(recorded, erased);
            return;
        }
        assert!(
            started.elapsed() < LIMIT,
            "rows {seqs:?}: {recorded} recorded, {erased} erased after {LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The erasure records' numbers, in order.
async fn erasures(db: &TestDb) -> Vec<i64> {
    sqlx::query_scalar("SELECT erasure_id FROM audit.erasures ORDER BY erasure_id")
        .fetch_all(&db.pool)
        .await
        .expect("list the erasures")
}

/// The value of one series in the exposition text (0 when absent).
fn series(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test]
async fn payloads_past_retention_are_erased_on_schedule_and_the_log_still_verifies() {
    let db = TestDb::create().await;
    let ts = TestStream::create("retention").await;
    let first = wave(&ts, "ret-a", EMAIL).await;

    let mut s = settings(&db, &ts);
    s.retention.payloads_for = Some("2s".parse().expect("a duration"));
    s.retention.interval = "500ms".parse().expect("a duration");
    let app = spawn_app(s).await;

    wait_erased(&db, &ts.name, &first).await;
    let after_first = erasures(&db).await;
    assert!(!after_first.is_empty(), "no erasure recorded");
    let dump = pg_dump(&db);
    assert!(!dump.contains(EMAIL), "pg_dump still holds the address");
    assert!(
        !dump.contains("ret-a-1"),
        "pg_dump still holds an envelope id"
    );

    // A second wave, published after the first was erased: erased in a later run, recorded as
    // an erasure of its own.
    let second = wave(&ts, "ret-b", EMAIL2).await;
    wait_erased(&db, &ts.name, &second).await;
    let after_second = erasures(&db).await;
    let last_first = after_first.last().copied().unwrap_or_default();
    assert!(
        after_second.iter().any(|&n| n > last_first),
        "the second wave has no erasure of its own: {after_first:?}, then {after_second:?}"
    );
    assert!(
        !pg_dump(&db).contains(EMAIL2),
        "pg_dump still holds the second address"
    );

    let metrics = app.metrics.render();
    assert_eq!(
        series(&metrics, "event_audit_retention_erased_rows_total"),
        6.0,
        "{metrics}"
    );
    assert!(
        series(
            &metrics,
            "event_audit_retention_runs_total{outcome=\"done\"}"
        ) >= 2.0,
        "{metrics}"
    );
    assert_eq!(
        series(
            &metrics,
            "event_audit_retention_runs_total{outcome=\"failed\"}"
        ),
        0.0,
        "{metrics}"
    );
    let stopped = app.stop().await;
    assert!(stopped.errors().is_empty(), "{:?}", stopped.errors());
    assert!(
        stopped.log.contains("retention: erased the personal data"),
        "{}",
        stopped.log
    );
    for secret in [EMAIL, EMAIL2, "ret-a-1", "R-ret-a-1"] {
        assert!(!stopped.log.contains(secret), "the log holds {secret}");
    }

    // The log verifies, naming each erasure by its publication range and reason.
    let v = verify(&db.url).await;
    assert_eq!(v.code, Some(0), "{v:?}");
    assert_eq!(v.report["erasures"]["rows_erased"], 6, "{v:?}");
    let records = v.report["erasures"]["records"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(records.len(), after_second.len(), "{v:?}");
    for r in &records {
        assert_eq!(r["reason"], "retention: payloads_for 2s", "{r}");
        let selector = r["selector"].as_str().unwrap_or_default();
        assert!(selector.starts_with("published before 20"), "{r}");
    }
    let rows: i64 = records.iter().filter_map(|r| r["rows"].as_i64()).sum();
    assert_eq!(rows, 6, "{v:?}");
}

/// The selectors of the recorded prunes (`partition <name>`).
async fn prunes(db: &TestDb) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT selector FROM audit.erasures WHERE selector LIKE 'partition %' ORDER BY erasure_id",
    )
    .fetch_all(&db.pool)
    .await
    .expect("list the prunes")
}

/// Polls until a prune is recorded and logged (and today's `live` rows are ingested); panics with the
/// daemon's log after `LIMIT`.
async fn wait_pruned(db: &TestDb, app: &TestApp, stream: &str, live: usize) -> Vec<String> {
    let started = Instant::now();
    loop {
        let found = prunes(db).await;
        let ingested: i64 =
            sqlx::query_scalar("SELECT count(*) FROM audit.events WHERE stream = $1")
                .bind(stream)
                .fetch_one(&db.pool)
                .await
                .expect("count today's rows");
        // The prune commits before its line is written: wait for both, or stopping in between
        // loses the line.
        let logged = app
            .log()
            .contains("retention: archived a partition past the period and pruned it");
        if !found.is_empty() && ingested == live as i64 && logged {
            return found;
        }
        assert!(
            started.elapsed() < LIMIT,
            "no prune ({found:?}), not every live row ({ingested} of {live}) or no line of the prune after {LIMIT:?}; the log:\n{}",
            app.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The old month's rows of the rows' retention tests, in a partition of their own (its name).
async fn old_month(db: &TestDb) -> String {
    write_old_rows(
        db,
        OLD_STREAM,
        1,
        OLD_ROWS as u64,
        OLD_EMAIL,
        month_before_last(),
    )
    .await
}

#[tokio::test]
async fn rows_past_retention_are_archived_and_pruned_by_the_daemon() {
    let db = TestDb::create().await;
    let ts = TestStream::create("retention-rows").await;
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("archive");
    // An old month's rows, in its own partition; today's, through the bus, in this month's.
    let partition = old_month(&db).await;
    let subject = ts.subject("crafted");
    let mut live = Vec::new();
    for i in 0..3 {
        let bytes = created(&format!("live-{i}"), &format!("R-LIVE-{i}"), LIVE_EMAIL);
        live.push(ts.publish(&subject, &[], &bytes).await);
    }

    let mut s = settings(&db, &ts);
    s.retention.rows_for = Some("1d".parse().expect("a duration"));
    s.retention.archive_dir = Some(dir.clone());
    s.retention.interval = "500ms".parse().expect("a duration");
    let app = spawn_app(s).await;
    let found = wait_pruned(&db, &app, &ts.name, live.len()).await;
    assert_eq!(found, vec![format!("partition {partition}")]);

    // The archive holds the old month, and its rows' payloads.
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).expect("manifest"))
            .expect("json");
    let entries = manifest["partitions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(entries.len(), 1, "{manifest}");
    assert_eq!(entries[0]["partition"], partition.as_str(), "{manifest}");
    assert_eq!(entries[0]["rows"], OLD_ROWS, "{manifest}");
    let file = dir.join(entries[0]["file"].as_str().expect("a file"));
    let text = std::fs::read_to_string(&file).expect("the archive file");
    assert_eq!(text.lines().count(), OLD_ROWS as usize);
    assert!(
        text.contains(OLD_EMAIL),
        "the archive holds the old payloads"
    );
    assert!(!text.contains(LIVE_EMAIL), "the archive holds today's rows");

    // The database: the old month gone, today's rows whole.
    let dump = pg_dump(&db);
    assert!(
        !dump.contains(OLD_EMAIL),
        "pg_dump still holds the old address"
    );
    assert!(dump.contains(LIVE_EMAIL), "pg_dump lost today's address");
    let whole: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit.events WHERE stream = $1 AND payload IS NOT NULL \
           AND octet_length(raw) > 0",
    )
    .bind(&ts.name)
    .fetch_one(&db.pool)
    .await
    .expect("count today's rows");
    assert_eq!(whole, live.len() as i64, "today's rows lost their payloads");

    // Later runs find the partition pruned: nothing archived again, nothing failed.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(prunes(&db).await, found, "the partition was pruned again");
    let metrics = app.metrics.render();
    assert!(
        series(
            &metrics,
            "event_audit_retention_runs_total{outcome=\"done\"}"
        ) >= 1.0,
        "{metrics}"
    );
    assert!(
        series(
            &metrics,
            "event_audit_retention_runs_total{outcome=\"nothing\"}"
        ) >= 1.0,
        "no run after the prune: {metrics}"
    );
    assert_eq!(
        series(
            &metrics,
            "event_audit_retention_runs_total{outcome=\"failed\"}"
        ),
        0.0,
        "{metrics}"
    );
    let stopped = app.stop().await;
    assert!(stopped.errors().is_empty(), "{:?}", stopped.errors());
    assert!(
        stopped
            .log
            .contains("retention: archived a partition past the period and pruned it"),
        "{}",
        stopped.log
    );
    for secret in [OLD_EMAIL, LIVE_EMAIL, "R-OLD-1"] {
        assert!(!stopped.log.contains(secret), "the log holds {secret}");
    }

    // The log verifies against the archive, counting the pruned rows.
    let d = dir.to_str().expect("utf-8");
    let v = event_audit(&["verify", "--database-url", &db.url, "--archive", d], &[]).await;
    assert_eq!(v.code, Some(0), "{v:?}");
    let report = v.json();
    assert_eq!(report["archive"]["rows_pruned"], OLD_ROWS, "{report}");
    let records = report["erasures"]["records"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(records.len(), 1, "{report}");
    assert_eq!(records[0]["reason"], "retention: rows_for 1d", "{report}");
}

/// The same into a bucket: with `retention.archive_dir = "s3://bucket/prefix"` the daemon puts the
/// archive there (staged privately, uploaded before the prune), and `verify --archive s3://...`
/// counts the pruned rows.
#[tokio::test]
async fn rows_past_retention_are_archived_to_a_bucket_and_pruned_by_the_daemon() {
    use crate::support::s3::{Server, TestBucket};
    let db = TestDb::create().await;
    let ts = TestStream::create("retention-s3").await;
    let tmp = tempfile::tempdir().expect("tmp");
    let bucket = TestBucket::new(Server::S3sFs, false).await;
    let partition = old_month(&db).await;
    let bytes = created("live-s3", "R-LIVE-S3", LIVE_EMAIL);
    ts.publish(&ts.subject("crafted"), &[], &bytes).await;

    let mut s = settings(&db, &ts);
    s.object_store = bucket.settings.object_store.clone();
    s.retention.rows_for = Some("1d".parse().expect("a duration"));
    s.retention.archive_dir = Some(std::path::PathBuf::from(bucket.url()));
    s.retention.interval = "500ms".parse().expect("a duration");
    let app = spawn_app(s).await;
    let found = wait_pruned(&db, &app, &ts.name, 1).await;
    assert_eq!(found, vec![format!("partition {partition}")]);
    let stopped = app.stop().await;
    assert!(stopped.errors().is_empty(), "{:?}", stopped.errors());
    assert!(
        stopped.log.contains(&bucket.url()),
        "the line names the bucket: {}",
        stopped.log
    );

    let manifest = bucket
        .store
        .get("manifest.json", 1 << 20)
        .await
        .expect("get the manifest")
        .expect("a manifest in the bucket");
    let manifest: serde_json::Value = serde_json::from_slice(&manifest).expect("json");
    assert_eq!(manifest["partitions"][0]["rows"], OLD_ROWS, "{manifest}");
    let config = bucket.config_file(tmp.path());
    let c = config.to_str().expect("utf-8");
    let url = bucket.url();
    let v = event_audit(
        &[
            "verify",
            "--database-url",
            &db.url,
            "--archive",
            &url,
            "--config",
            c,
        ],
        &[],
    )
    .await;
    assert_eq!(v.code, Some(0), "{v:?}");
    assert_eq!(v.json()["archive"]["rows_pruned"], OLD_ROWS, "{v:?}");
    bucket.name_every_key().await;
    bucket.remove().await.expect("remove the bucket");
}
