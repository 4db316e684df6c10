//! The sink end to end against real NATS JetStream and Postgres: redeliveries add nothing
//! (through the in-process daemon, and batch by batch through `write_batch`), and duplicate and
//! conflicting envelope ids are told apart.

use chrono::{DateTime, Utc};

use crate::support::records::{now_us, records};
use crate::support::{
    assert_verifies, count_rows, ingest_load, run_until_idle, seq_stats, settings, verify, TestDb,
    TestStream,
};
use event_audit::test_support::db::Db;
use event_audit::test_support::ingest::sink::Sink;
use event_audit::test_support::log::Reader;
use event_audit::test_support::verify::verify as verify_chain;

#[tokio::test]
async fn redelivery_to_a_recreated_consumer_adds_nothing() {
    let db = TestDb::create().await;
    let ts = TestStream::create("redeliver").await;
    ingest_load(&db, &ts, 300, 7, 100).await;
    let (links_before, last_received): (i64, DateTime<Utc>) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM audit.chain_links), max(received_at) FROM audit.events",
    )
    .fetch_one(&db.pool)
    .await
    .expect("links");
    assert!(
        links_before >= 3,
        "{links_before} links for 300 messages in batches of 100"
    );

    // New messages, and a consumer recreated under the same name: DeliverPolicy::All hands
    // every message over again, each with delivery count 1, mixed with the new ones.
    ts.publish_load(100, 8).await;
    ts.delete_consumer().await;
    let mut s = settings(&db, &ts);
    s.ingest.batch_size = 500;
    let d = run_until_idle(s).await;
    let info = ts.consumer_info().await;
    assert_eq!(
        (info.num_pending, info.num_ack_pending),
        (0, 0),
        "everything acked"
    );
    assert_eq!(info.delivered.stream_sequence, 400);

    assert_eq!(
        seq_stats(&db.pool, &ts.name).await,
        (400, 400, Some(1), Some(400)),
        "log:\n{}",
        d.log
    );
    let (old_rows, old_received, redelivered): (i64, DateTime<Utc>, i64) = sqlx::query_as(
        "SELECT count(*), max(received_at), count(*) FILTER (WHERE delivery_count <> 1) \
         FROM audit.events WHERE stream_seq <= 300",
    )
    .fetch_one(&db.pool)
    .await
    .expect("old rows");
    assert_eq!(
        (old_rows, old_received, redelivered),
        (300, last_received, 0),
        "the first 300 rows are untouched"
    );
    let findings: i64 = sqlx::query_scalar("SELECT count(*) FROM audit.id_findings")
        .fetch_one(&db.pool)
        .await
        .expect("findings");
    assert_eq!(findings, 0, "a redelivery is not a duplicate envelope id");
    let links_after: i64 = sqlx::query_scalar("SELECT count(*) FROM audit.chain_links")
        .fetch_one(&db.pool)
        .await
        .expect("links");
    assert!(links_after > links_before, "the new rows are linked");
    assert_verifies(&db.url, 400).await;
}

#[tokio::test]
async fn write_batch_twice_inserts_once() {
    let db = TestDb::create().await;
    let sink = Sink::new(Db::from_pool(db.pool.clone()), "test");
    let t0 = now_us();
    let n = 50;

    let first = sink
        .write_batch(&mut records("LIB", n, 1, t0))
        .await
        .expect("first write");
    assert_eq!(
        (
            first.inserted,
            first.redelivered,
            first.duplicates,
            first.conflicts
        ),
        (n, 0, 0, 0)
    );
    assert_eq!(first.link_seq, 1);

    // The same messages redelivered (delivery count 2): nothing added, no link.
    let second = sink
        .write_batch(&mut records("LIB", n, 2, t0))
        .await
        .expect("second write");
    assert_eq!(
        (
            second.inserted,
            second.redelivered,
            second.duplicates,
            second.conflicts
        ),
        (0, n, 0, 0)
    );
    assert_eq!(second.link_seq, 0, "no chain link for an empty batch");

    // Delivered afresh (count 1, as to a recreated consumer) together with new messages: only
    // the new ones are written.
    let mut mixed = records("LIB", n + 5, 1, t0);
    let third = sink.write_batch(&mut mixed).await.expect("third write");
    assert_eq!(
        (
            third.inserted,
            third.redelivered,
            third.duplicates,
            third.conflicts
        ),
        (5, n, 0, 0)
    );
    assert_eq!(third.link_seq, 2);

    // Two deliveries of one message in one batch: the first is kept.
    let mut twice = records("LIB2", 1, 1, t0);
    twice.extend(records("LIB2", 1, 2, t0));
    let fourth = sink.write_batch(&mut twice).await.expect("fourth write");
    assert_eq!((fourth.inserted, fourth.redelivered), (1, 1));

    assert_eq!(
        seq_stats(&db.pool, "LIB").await,
        (n as i64 + 5, n as i64 + 5, Some(1), Some(n as i64 + 5))
    );
    let counts: Vec<i32> = sqlx::query_scalar("SELECT DISTINCT delivery_count FROM audit.events")
        .fetch_all(&db.pool)
        .await
        .expect("delivery counts");
    assert_eq!(
        counts,
        [1],
        "rows keep the delivery count they were first written with"
    );
    let report = verify_chain(&Reader::new(Db::from_pool(db.pool.clone())))
        .await
        .expect("verify");
    assert!(report.ok, "{report:?}");
    assert_eq!(
        (report.rows, report.links, report.head_link_seq),
        (n as i64 + 6, 3, 3)
    );
}

/// A CloudEvents `account.created-v1` with this id and data text.
fn ce_with(id: &str, data: &str) -> Vec<u8> {
    format!(r#"{{"specversion":"1.0","type":"account.created-v1","source":"/kraken/events","id":"{id}","time":"2026-01-05T10:00:00Z","data":{data}}}"#).into_bytes()
}

#[tokio::test]
async fn duplicate_and_conflicting_envelope_ids() {
    let db = TestDb::create().await;
    let ts = TestStream::create("dupes").await;
    let subject = ts.subject("in");
    let data = r#"{"account_number":"A-1","account_user_emails":["jo@example.com"]}"#;
    let other = r#"{"account_number":"A-1","account_user_emails":["sam@example.com"]}"#;
    let reordered = r#"{ "account_user_emails" : [ "jo@example.com" ],
        "account_number" : "A-1" }"#;

    // Id X: the first occurrence in an earlier batch (and daemon run) than its repeats.
    let x1 = ts.publish(&subject, &[], &ce_with("X", data)).await;
    run_until_idle(settings(&db, &ts)).await;
    let x2 = ts.publish(&subject, &[], &ce_with("X", data)).await;
    let x3 = ts.publish(&subject, &[], &ce_with("X", other)).await;
    let x4 = ts.publish(&subject, &[], &ce_with("X", reordered)).await;
    // Id Y: all four occurrences published together (typically one batch).
    let y1 = ts.publish(&subject, &[], &ce_with("Y", data)).await;
    let y2 = ts.publish(&subject, &[], &ce_with("Y", data)).await;
    let y3 = ts.publish(&subject, &[], &ce_with("Y", other)).await;
    let y4 = ts.publish(&subject, &[], &ce_with("Y", reordered)).await;
    run_until_idle(settings(&db, &ts)).await;

    assert_eq!(count_rows(&db.pool).await, 8, "every message is recorded");
    let expect = [
        (x1, "first", None),
        (x2, "duplicate", Some(x1)),
        (x3, "conflict", Some(x1)),
        (x4, "duplicate", Some(x1)),
        (y1, "first", None),
        (y2, "duplicate", Some(y1)),
        (y3, "conflict", Some(y1)),
        (y4, "duplicate", Some(y1)),
    ];
    #[allow(clippy::type_complexity)] // one row of a five-column query
    let rows: Vec<(i64, Option<String>, Option<String>, Option<i64>, String)> = sqlx::query_as(
        "SELECT stream_seq, id_status, duplicate_of_stream, duplicate_of_seq, status FROM event_log ORDER BY stream_seq",
    )
    .fetch_all(&db.pool)
    .await
    .expect("event_log");
    let got: Vec<(u64, &str, Option<u64>)> = rows
        .iter()
        .map(|(seq, st, _, of, _)| {
            (
                *seq as u64,
                st.as_deref().unwrap_or("NULL"),
                of.map(|s| s as u64),
            )
        })
        .collect();
    assert_eq!(got, expect);
    for (seq, _, of_stream, of, status) in &rows {
        assert_eq!(status, "decoded", "seq {seq}");
        assert_eq!(of_stream.is_some(), of.is_some(), "seq {seq}");
        if let Some(s) = of_stream {
            assert_eq!(s, &ts.name);
        }
    }
    assert_verifies(&db.url, 8).await;

    // The findings are not chained: verify recomputes them from the rows. A superuser (triggers
    // off) deletes one (a conflict turned into a first sighting), points one elsewhere, turns a
    // byte-identical duplicate into a conflict, relabels a conflict a duplicate and a duplicate
    // up to formatting a conflict, and adds one on a first occurrence.
    let mut tx = db.pool.begin().await.expect("begin");
    for sql in [
        format!("DELETE FROM audit.id_findings WHERE stream_seq = {x3}"),
        format!("UPDATE audit.id_findings SET first_stream_seq = {y1} WHERE stream_seq = {x2}"),
        format!("UPDATE audit.id_findings SET finding = 'conflict' WHERE stream_seq = {y2}"),
        format!("UPDATE audit.id_findings SET finding = 'duplicate' WHERE stream_seq = {y3}"),
        format!("UPDATE audit.id_findings SET finding = 'conflict' WHERE stream_seq = {y4}"),
        format!(
            "INSERT INTO audit.id_findings SELECT e.stream, e.stream_seq, e.published_at, f.event_id, \
             'duplicate', f.first_stream, f.first_stream_seq, f.first_published_at, f.batch_id \
             FROM audit.id_findings f, audit.events e WHERE f.stream_seq = {x4} AND e.stream_seq = {x1}"
        ),
    ] {
        sqlx::query("SET LOCAL session_replication_role = replica")
            .execute(&mut *tx)
            .await
            .expect("replica mode");
        sqlx::query(&sql).execute(&mut *tx).await.expect(&sql);
    }
    tx.commit().await.expect("commit");
    let v = verify(&db.url).await;
    assert_eq!(v.code, Some(1), "{v:?}");
    let whys: Vec<&str> = v.report["breaks"]
        .as_array()
        .expect("breaks")
        .iter()
        .filter_map(|b| b["why"].as_str())
        .collect();
    let named = |seq: u64, says: &str| {
        whys.iter()
            .any(|w| w.contains(&format!("stream_seq={seq}:")) && w.contains(says))
    };
    assert!(
        named(x3, "has no id finding (finding deleted)"),
        "{whys:#?}"
    );
    assert!(named(x2, "points to"), "{whys:#?}");
    assert!(named(y2, "says conflict"), "{whys:#?}");
    assert!(
        named(
            y3,
            "says duplicate, but the first occurrence carries another payload"
        ),
        "{whys:#?}"
    );
    assert!(
        named(
            y4,
            "says conflict, but the first occurrence is the same event and payload"
        ),
        "{whys:#?}"
    );
    assert!(named(x1, "on the first occurrence"), "{whys:#?}");
    assert_eq!(whys.len(), 6, "{whys:#?}");
    assert!(v.first_break().contains("finding"), "{v:?}");
}

/// A replay storm, as a publisher replaying its outbox after an outage: every id of four earlier
/// batches again, in another order (so one new batch repeats ids of several earlier ones), some
/// with another payload, one id repeated 40 times (a stuck publisher), and a few new ids among
/// them; about half the claims are as a log migrated from before claims kept their place holds
/// them. Every later occurrence points to the first, as duplicate or conflict, and the log
/// verifies (verify recomputes the findings).
#[tokio::test]
async fn a_replay_storm_keeps_every_finding_right() {
    let db = TestDb::create().await;
    let ts = TestStream::create("replay").await;
    let subject = ts.subject("in");
    let payload = |id: &str, v: u32| {
        format!(r#"{{"account_number":"{id}","account_user_emails":["u{v}@example.com"]}}"#)
    };
    let ids: Vec<String> = (0..40).map(|i| format!("R{i:02}")).collect();
    let mut first_seq = std::collections::HashMap::new();
    for id in &ids {
        let seq = ts
            .publish(&subject, &[], &ce_with(id, &payload(id, 0)))
            .await;
        first_seq.insert(id.clone(), seq);
    }
    let mut s = settings(&db, &ts);
    s.ingest.batch_size = 10;
    run_until_idle(s.clone()).await;
    // Claims made before claims kept their first occurrence's place (a migrated log): every
    // other id's first occurrence is then found among its batch's rows.
    let mut tx = db.pool.begin().await.expect("begin");
    for sql in [
        "SET LOCAL session_replication_role = replica",
        "UPDATE audit.event_claims SET first_stream = NULL, first_stream_seq = NULL, \
         first_published_at = NULL, first_digest = NULL WHERE get_byte(id_key, 0) % 2 = 0",
    ] {
        sqlx::query(sql).execute(&mut *tx).await.expect(sql);
    }
    tx.commit().await.expect("commit");

    // (seq, expected finding, first occurrence's seq)
    let mut expect: Vec<(u64, &str, Option<u64>)> = first_seq
        .values()
        .map(|&seq| (seq, "first", None))
        .collect();
    for (k, id) in ids.iter().rev().enumerate() {
        let v = u32::from(k % 5 == 0);
        let seq = ts
            .publish(&subject, &[], &ce_with(id, &payload(id, v)))
            .await;
        let kind = if v == 0 { "duplicate" } else { "conflict" };
        expect.push((seq, kind, Some(first_seq[id])));
        if k % 7 == 0 {
            let new = format!("N{k:02}");
            let seq = ts
                .publish(&subject, &[], &ce_with(&new, &payload(&new, 0)))
                .await;
            expect.push((seq, "first", None));
        }
    }
    let stuck = &ids[3];
    for n in 0..40 {
        let v = u32::from(n == 17);
        let seq = ts
            .publish(&subject, &[], &ce_with(stuck, &payload(stuck, v)))
            .await;
        let kind = if v == 0 { "duplicate" } else { "conflict" };
        expect.push((seq, kind, Some(first_seq[stuck])));
    }
    run_until_idle(s).await;
    expect.sort();

    let rows: Vec<(i64, Option<String>, Option<i64>)> = sqlx::query_as(
        "SELECT stream_seq, id_status, duplicate_of_seq FROM event_log ORDER BY stream_seq",
    )
    .fetch_all(&db.pool)
    .await
    .expect("event_log");
    let got: Vec<(u64, &str, Option<u64>)> = rows
        .iter()
        .map(|(seq, st, of)| {
            (
                *seq as u64,
                st.as_deref().unwrap_or("NULL"),
                of.map(|s| s as u64),
            )
        })
        .collect();
    assert_eq!(got, expect);
    assert_verifies(&db.url, expect.len() as i64).await;
}

/// Every index of `audit.events` is one ARCHITECTURE.md lists with the commands that read it
/// ("Indexes of the log"), and no other: an index no command reads costs every row for nothing.
/// Each listed index is also one PostgreSQL can use for the kind of read it is listed for.
#[tokio::test]
async fn every_index_of_the_log_is_listed_with_its_readers_and_usable_for_them() {
    let db = TestDb::create().await;
    let mut present: Vec<String> = sqlx::query_scalar(
        "SELECT c.relname::text FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid \
         WHERE x.indrelid = 'audit.events'::regclass",
    )
    .fetch_all(&db.pool)
    .await
    .expect("indexes of audit.events");
    present.sort();

    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/ARCHITECTURE.md"))
        .expect("ARCHITECTURE.md");
    let section = doc
        .split("- **Indexes of the log.**")
        .nth(1)
        .expect("ARCHITECTURE.md has \"Indexes of the log\"");
    let mut listed: Vec<String> = section
        .lines()
        .skip(1)
        .take_while(|l| l.trim().is_empty() || l.starts_with("  "))
        .filter_map(|l| l.trim().strip_prefix("| "))
        .filter_map(|row| row.split(" | ").next())
        .filter(|first| *first != "index" && !first.starts_with("---"))
        .map(|first| match first {
            "primary key" => "events_pkey".to_owned(),
            name => name.trim_matches('`').to_owned(),
        })
        .collect();
    listed.sort();
    assert_eq!(
        present, listed,
        "the log's indexes and ARCHITECTURE.md's list differ"
    );

    // 10,000 rows a millisecond apart, so that the planner weighs real statistics.
    let sink = Sink::new(Db::from_pool(db.pool.clone()), "test");
    let t0 = now_us();
    let mut all = records("IDX", 10_000, 1, t0);
    while !all.is_empty() {
        let mut batch: Vec<_> = all.drain(..2_000.min(all.len())).collect();
        sink.write_batch(&mut batch).await.expect("write a batch");
    }
    sqlx::query("ANALYZE audit.events")
        .execute(&db.pool)
        .await
        .expect("analyze");
    let second = (t0 + chrono::Duration::seconds(1)).to_rfc3339();
    let third = (t0 + chrono::Duration::seconds(2)).to_rfc3339();
    let by_time = format!(
        "SELECT row_hash FROM audit.events \
         WHERE published_at >= '{second}' AND published_at < '{third}'"
    );

    // The partition indexes a plan names, by the index of audit.events they belong to.
    let reads = [
        (
            "events_batch_idx",
            "SELECT row_hash FROM audit.events WHERE batch_id = 7",
        ),
        (
            "events_account_idx",
            "SELECT stream_seq FROM audit.events WHERE account_number = 'A-1'",
        ),
        (
            "events_data_import_ext_idx",
            "SELECT stream_seq FROM audit.events e WHERE e.event_type LIKE 'data_import.%' \
             AND e.payload ->> 'external_identifier' = 'X-1'",
        ),
        ("events_published_brin", by_time.as_str()),
        (
            "events_pkey",
            "SELECT row_hash FROM audit.events WHERE stream = 'S' AND stream_seq = 3 \
             AND published_at = now()",
        ),
    ];
    let mut conn = db.pool.acquire().await.expect("connection");
    sqlx::query("SET enable_seqscan = off")
        .execute(&mut *conn)
        .await
        .expect("no sequential scans");
    for (index, sql) in reads {
        let plan: serde_json::Value = sqlx::query_scalar(&format!("EXPLAIN (FORMAT JSON) {sql}"))
            .fetch_one(&mut *conn)
            .await
            .expect("plan");
        let text = plan.to_string();
        let used: Vec<String> = text
            .split("\"Index Name\":\"")
            .skip(1)
            .filter_map(|s| s.split('"').next())
            .map(str::to_owned)
            .collect();
        let mut parents = Vec::new();
        for u in &used {
            let parent: Option<String> = sqlx::query_scalar(
                "SELECT i.inhparent::regclass::text FROM pg_inherits i \
                 WHERE i.inhrelid = ('audit.' || quote_ident($1))::regclass",
            )
            .bind(u)
            .fetch_optional(&mut *conn)
            .await
            .expect("the index's parent");
            parents.extend(parent);
        }
        assert!(
            parents.iter().any(|p| p == &format!("audit.{index}")),
            "{index} is not used by `{sql}`: {used:?} ({parents:?})"
        );
    }
}
