//! Ingest end to end against real NATS JetStream and Postgres: every status lands in
//! `event_log` with the right columns, redeliveries add nothing, duplicate and conflicting
//! envelope ids are told apart, `verify` catches edited and deleted rows, and the roles keep
//! the log append-only.

mod common;

use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use sqlx::{PgPool, Row};

use common::{
    assert_verifies, count_rows, db_url, ingest_load, run_until_idle, seq_stats, verify, RunOpts,
    TestStream,
};
use event_audit::record::{record, Meta, Naming, Record};
use event_audit::sample::Mix;
use event_audit::store::Store;

fn time(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .expect("RFC 3339")
        .with_timezone(&Utc)
}

/// What one hand-made message must become in `event_log`.
struct Case {
    what: &'static str,
    subject: String,
    headers: Vec<(&'static str, &'static str)>,
    raw: Vec<u8>,
    envelope: Option<&'static str>,
    event_id: Option<&'static str>,
    event: Option<&'static str>,
    event_type: Option<&'static str>,
    event_version: Option<&'static str>,
    status: &'static str,
    /// `(path, code)` of each error.
    errors: Vec<(&'static str, &'static str)>,
    unknown_fields: Vec<&'static str>,
    payload: Option<Value>,
    account_number: Option<&'static str>,
    occurred_at: Option<DateTime<Utc>>,
}

#[sqlx::test]
async fn every_status_lands_in_event_log_with_its_columns(pool: PgPool) {
    let ts = TestStream::create("statuses").await;
    let url = db_url(&pool);

    let ce_data = json!({"account_number": "A-1B2C3D4E", "account_user_emails": ["jo@example.com"], "is_imported": false});
    let eb_data = json!({"account_number": "A-2", "account_user_emails": []});
    let invalid_data = json!({
        "account_number": "A-3", "join_supplier_process_number": "JSP-1", "subtype": "GAIN",
        "supply_points": [
            {"external_identifier": "1900001234567", "market_name": "ELECTRICITY", "requested_supply_start_date": "2026-02-01"},
            {"external_identifier": "7412589630", "market_name": 5, "requested_supply_start_date": "2026-02-01"}
        ],
        "requested_at": "2026-01-05T09:00:00Z", "surprise": true
    });
    let cases = vec![
        Case {
            what: "decoded CloudEvents",
            subject: ts.subject("ce"),
            headers: vec![("X-Trace", "t-1")],
            raw: format!(
                r#"{{"specversion":"1.0","type":"account.created-v1","source":"/kraken/events","id":"ce-1","time":"2026-01-05T09:01:00.123456Z","datacontenttype":"application/json","data":{ce_data}}}"#
            )
            .into_bytes(),
            envelope: Some("cloudevents"),
            event_id: Some("ce-1"),
            event: Some("account.created-v1"),
            event_type: Some("account.created"),
            event_version: Some("v1"),
            status: "decoded",
            errors: vec![],
            unknown_fields: vec![],
            payload: Some(ce_data.clone()),
            account_number: Some("A-1B2C3D4E"),
            occurred_at: Some(time("2026-01-05T09:01:00.123456Z")),
        },
        Case {
            what: "decoded EventBridge",
            subject: ts.subject("eb"),
            headers: vec![],
            raw: format!(
                r#"{{"version":"0","id":"eb-2","detail-type":"account.created-v1","source":"kraken","account":"123456789012","time":"2026-01-05T09:02:00Z","region":"eu-west-2","resources":[],"detail":{eb_data}}}"#
            )
            .into_bytes(),
            envelope: Some("eventbridge"),
            event_id: Some("eb-2"),
            event: Some("account.created-v1"),
            event_type: Some("account.created"),
            event_version: Some("v1"),
            status: "decoded",
            errors: vec![],
            unknown_fields: vec![],
            payload: Some(eb_data.clone()),
            account_number: Some("A-2"),
            occurred_at: Some(time("2026-01-05T09:02:00Z")),
        },
        Case {
            what: "invalid, nested path",
            subject: ts.subject("invalid"),
            headers: vec![],
            raw: format!(
                r#"{{"specversion":"1.0","type":"lifecycle.join-supplier.requested-v1","source":"/kraken/events","id":"ce-3","time":"2026-01-05T09:03:00+01:00","data":{invalid_data}}}"#
            )
            .into_bytes(),
            envelope: Some("cloudevents"),
            event_id: Some("ce-3"),
            event: Some("lifecycle.join-supplier.requested-v1"),
            event_type: Some("lifecycle.join-supplier.requested"),
            event_version: Some("v1"),
            status: "invalid",
            errors: vec![("supply_points.1.market_name", "invalid_type")],
            unknown_fields: vec!["surprise"],
            payload: Some(invalid_data.clone()),
            account_number: Some("A-3"),
            // The envelope's offset is applied: 09:03 at +01:00 is 08:03 UTC.
            occurred_at: Some(time("2026-01-05T08:03:00Z")),
        },
        Case {
            what: "unknown version",
            subject: ts.subject("v99"),
            headers: vec![],
            raw: br#"{"specversion":"1.0","type":"account.created-v99","source":"/kraken/events","id":"ce-4","time":"2026-01-05T09:04:00Z","data":{"account_number":"A-4","whatever":[1,2]}}"#.to_vec(),
            envelope: Some("cloudevents"),
            event_id: Some("ce-4"),
            event: Some("account.created-v99"),
            event_type: Some("account.created"),
            event_version: Some("v99"),
            status: "unknown_version",
            errors: vec![],
            unknown_fields: vec![],
            payload: Some(json!({"account_number": "A-4", "whatever": [1, 2]})),
            account_number: Some("A-4"),
            occurred_at: Some(time("2026-01-05T09:04:00Z")),
        },
        Case {
            what: "unknown type",
            subject: ts.subject("sms"),
            headers: vec![],
            raw: br#"{"version":"0","id":"eb-5","detail-type":"comms.sms.sent-v1","source":"kraken","time":"2026-01-05T09:05:00Z","detail":{"account_number":"A-5","to":"+44"}}"#.to_vec(),
            envelope: Some("eventbridge"),
            event_id: Some("eb-5"),
            event: Some("comms.sms.sent-v1"),
            event_type: Some("comms.sms.sent"),
            event_version: Some("v1"),
            status: "unknown_type",
            errors: vec![],
            unknown_fields: vec![],
            payload: Some(json!({"account_number": "A-5", "to": "+44"})),
            account_number: Some("A-5"),
            occurred_at: Some(time("2026-01-05T09:05:00Z")),
        },
        Case {
            what: "malformed, not JSON",
            subject: ts.subject("junk"),
            headers: vec![],
            raw: b"this is not json {".to_vec(),
            envelope: None,
            event_id: None,
            event: None,
            event_type: None,
            event_version: None,
            status: "malformed",
            errors: vec![("", "not_json")],
            unknown_fields: vec![],
            payload: None,
            account_number: None,
            occurred_at: None,
        },
        Case {
            // The header wins over the subject (which names another event).
            what: "bare payload named by the Event-Type header",
            subject: ts.subject("account.created-v1"),
            headers: vec![("Event-Type", "account.occupied-v1")],
            raw: br#"{"account_number":"A-7"}"#.to_vec(),
            envelope: Some("bare"),
            event_id: None,
            event: Some("account.occupied-v1"),
            event_type: Some("account.occupied"),
            event_version: Some("v1"),
            status: "decoded",
            errors: vec![],
            unknown_fields: vec![],
            payload: Some(json!({"account_number": "A-7"})),
            account_number: Some("A-7"),
            occurred_at: None,
        },
        Case {
            what: "bare payload named by the subject",
            subject: ts.subject("account.occupied-v1"),
            headers: vec![],
            raw: br#" {"account_number":"A-8"} "#.to_vec(),
            envelope: Some("bare"),
            event_id: None,
            event: Some("account.occupied-v1"),
            event_type: Some("account.occupied"),
            event_version: Some("v1"),
            status: "decoded",
            errors: vec![],
            unknown_fields: vec![],
            payload: Some(json!({"account_number": "A-8"})),
            account_number: Some("A-8"),
            occurred_at: None,
        },
    ];
    let mut seqs = Vec::new();
    for c in &cases {
        seqs.push(ts.publish(&c.subject, &c.headers, &c.raw).await);
    }

    let opts = RunOpts {
        subject_prefix: Some(ts.prefix()),
        ..RunOpts::default()
    };
    run_until_idle(&url, &ts, &opts).await;

    assert_eq!(count_rows(&pool).await, cases.len() as i64);
    let statuses: Vec<String> =
        sqlx::query_scalar("SELECT DISTINCT status FROM event_log ORDER BY 1")
            .fetch_all(&pool)
            .await
            .expect("statuses");
    assert_eq!(
        statuses,
        [
            "decoded",
            "invalid",
            "malformed",
            "unknown_type",
            "unknown_version"
        ]
    );

    for (c, seq) in cases.iter().zip(&seqs) {
        let row = sqlx::query(
            "SELECT stream, stream_seq, event_id, event, event_type, event_version, status, errors, \
             unknown_fields, payload, account_number, occurred_at, received_at, published_at, subject, \
             envelope, delivery_count, headers, id_status, duplicate_of_seq, raw \
             FROM event_log WHERE stream = $1 AND stream_seq = $2",
        )
        .bind(&ts.name)
        .bind(i64::try_from(*seq).expect("seq"))
        .fetch_one(&pool)
        .await
        .unwrap_or_else(|e| panic!("{}: no row for stream_seq {seq}: {e}", c.what));
        let w = c.what;
        assert_eq!(row.get::<String, _>("stream"), ts.name, "{w}");
        assert_eq!(row.get::<String, _>("subject"), c.subject, "{w}");
        assert_eq!(
            row.get::<Option<String>, _>("envelope").as_deref(),
            c.envelope,
            "{w}"
        );
        assert_eq!(
            row.get::<Option<String>, _>("event_id").as_deref(),
            c.event_id,
            "{w}"
        );
        assert_eq!(
            row.get::<Option<String>, _>("event").as_deref(),
            c.event,
            "{w}"
        );
        assert_eq!(
            row.get::<Option<String>, _>("event_type").as_deref(),
            c.event_type,
            "{w}"
        );
        assert_eq!(
            row.get::<Option<String>, _>("event_version").as_deref(),
            c.event_version,
            "{w}"
        );
        assert_eq!(row.get::<String, _>("status"), c.status, "{w}");

        let errors: Value = row.get("errors");
        let errors = errors
            .as_array()
            .unwrap_or_else(|| panic!("{w}: errors is an array"));
        let got: Vec<(&str, &str)> = errors
            .iter()
            .map(|e| {
                (
                    e["path"].as_str().unwrap_or("?"),
                    e["code"].as_str().unwrap_or("?"),
                )
            })
            .collect();
        assert_eq!(got, c.errors, "{w}: {errors:?}");
        assert!(
            errors
                .iter()
                .all(|e| e["message"].as_str().is_some_and(|m| !m.is_empty())),
            "{w}: {errors:?}"
        );
        let unknown: Value = row.get("unknown_fields");
        assert_eq!(unknown, json!(c.unknown_fields), "{w}");

        assert_eq!(row.get::<Option<Value>, _>("payload"), c.payload, "{w}");
        assert_eq!(
            row.get::<Option<String>, _>("account_number").as_deref(),
            c.account_number,
            "{w}"
        );
        assert_eq!(
            row.get::<Option<DateTime<Utc>>, _>("occurred_at"),
            c.occurred_at,
            "{w}"
        );
        let received: DateTime<Utc> = row.get("received_at");
        let published: DateTime<Utc> = row.get("published_at");
        let now = Utc::now();
        assert!(
            published <= received && received <= now,
            "{w}: published {published} received {received}"
        );
        assert!(
            (now - published).num_seconds() < 120,
            "{w}: published_at {published} is JetStream's time"
        );
        assert_eq!(row.get::<Vec<u8>, _>("raw"), c.raw, "{w}: raw bytes");
        assert_eq!(row.get::<i32, _>("delivery_count"), 1, "{w}");

        let headers: Option<Value> = row.get("headers");
        if c.headers.is_empty() {
            assert_eq!(headers, None, "{w}");
        } else {
            let mut want = serde_json::Map::new();
            for (k, v) in &c.headers {
                want.insert((*k).to_owned(), json!([v]));
            }
            assert_eq!(headers, Some(Value::Object(want)), "{w}");
        }
        let id_status: Option<String> = row.get("id_status");
        let want_id_status = c.event_id.map(|_| "first");
        assert_eq!(id_status.as_deref(), want_id_status, "{w}");
        assert_eq!(row.get::<Option<i64>, _>("duplicate_of_seq"), None, "{w}");
    }
    assert_verifies(&url, cases.len() as i64).await;
}

#[sqlx::test]
async fn redelivery_to_a_recreated_consumer_adds_nothing(pool: PgPool) {
    let ts = TestStream::create("redeliver").await;
    let url = db_url(&pool);
    ingest_load(&pool, &ts, 300, 7, 100).await;
    let (links_before, last_received): (i64, DateTime<Utc>) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM audit.chain_links), max(received_at) FROM audit.events",
    )
    .fetch_one(&pool)
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
    let d = run_until_idle(
        &url,
        &ts,
        &RunOpts {
            batch_size: 500,
            ..RunOpts::default()
        },
    )
    .await;
    let info = ts.consumer_info().await;
    assert_eq!(
        (info.num_pending, info.num_ack_pending),
        (0, 0),
        "everything acked"
    );
    assert_eq!(info.delivered.stream_sequence, 400);

    assert_eq!(
        seq_stats(&pool, &ts.name).await,
        (400, 400, Some(1), Some(400)),
        "log:\n{}",
        d.log()
    );
    let (old_rows, old_received, redelivered): (i64, DateTime<Utc>, i64) = sqlx::query_as(
        "SELECT count(*), max(received_at), count(*) FILTER (WHERE delivery_count <> 1) \
         FROM audit.events WHERE stream_seq <= 300",
    )
    .fetch_one(&pool)
    .await
    .expect("old rows");
    assert_eq!(
        (old_rows, old_received, redelivered),
        (300, last_received, 0),
        "the first 300 rows are untouched"
    );
    let findings: i64 = sqlx::query_scalar("SELECT count(*) FROM audit.id_findings")
        .fetch_one(&pool)
        .await
        .expect("findings");
    assert_eq!(findings, 0, "a redelivery is not a duplicate envelope id");
    let links_after: i64 = sqlx::query_scalar("SELECT count(*) FROM audit.chain_links")
        .fetch_one(&pool)
        .await
        .expect("links");
    assert!(links_after > links_before, "the new rows are linked");
    assert_verifies(&url, 400).await;
}

/// Records as `ingest` builds them, for stream `stream`, sequences `1..=n`.
fn records(stream: &str, n: usize, delivery_count: i64, t0: DateTime<Utc>) -> Vec<Record> {
    let naming = Naming::default();
    Mix::new(n, 11)
        .enumerate()
        .map(|(i, s)| {
            let seq = i as u64 + 1;
            let meta = Meta {
                stream: Arc::from(stream),
                stream_seq: seq,
                published_at: t0 + chrono::Duration::milliseconds(i as i64),
                subject: format!("{stream}.load"),
                delivery_count,
                headers: vec![],
            };
            record(
                meta,
                Bytes::from(s.bytes),
                &naming,
                t0 + chrono::Duration::seconds(1),
            )
        })
        .collect()
}

/// Now, at the microsecond precision JetStream metadata and the column have.
fn now_us() -> DateTime<Utc> {
    DateTime::from_timestamp_micros(Utc::now().timestamp_micros()).expect("now")
}

#[sqlx::test]
async fn write_batch_twice_inserts_once(pool: PgPool) {
    let store = Store::from_pool(pool.clone());
    let t0 = now_us();
    let n = 50;

    let first = store
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
    let second = store
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
    let third = store.write_batch(&mut mixed).await.expect("third write");
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
    let fourth = store.write_batch(&mut twice).await.expect("fourth write");
    assert_eq!((fourth.inserted, fourth.redelivered), (1, 1));

    assert_eq!(
        seq_stats(&pool, "LIB").await,
        (n as i64 + 5, n as i64 + 5, Some(1), Some(n as i64 + 5))
    );
    let counts: Vec<i32> = sqlx::query_scalar("SELECT DISTINCT delivery_count FROM audit.events")
        .fetch_all(&pool)
        .await
        .expect("delivery counts");
    assert_eq!(
        counts,
        [1],
        "rows keep the delivery count they were first written with"
    );
    let report = store.verify().await.expect("verify");
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

#[sqlx::test]
async fn duplicate_and_conflicting_envelope_ids(pool: PgPool) {
    let ts = TestStream::create("dupes").await;
    let url = db_url(&pool);
    let subject = ts.subject("in");
    let data = r#"{"account_number":"A-1","account_user_emails":["jo@example.com"]}"#;
    let other = r#"{"account_number":"A-1","account_user_emails":["sam@example.com"]}"#;
    let reordered = r#"{ "account_user_emails" : [ "jo@example.com" ],
        "account_number" : "A-1" }"#;

    // Id X: the first occurrence in an earlier batch (and daemon run) than its repeats.
    let x1 = ts.publish(&subject, &[], &ce_with("X", data)).await;
    run_until_idle(&url, &ts, &RunOpts::default()).await;
    let x2 = ts.publish(&subject, &[], &ce_with("X", data)).await;
    let x3 = ts.publish(&subject, &[], &ce_with("X", other)).await;
    let x4 = ts.publish(&subject, &[], &ce_with("X", reordered)).await;
    // Id Y: all four occurrences published together (typically one batch).
    let y1 = ts.publish(&subject, &[], &ce_with("Y", data)).await;
    let y2 = ts.publish(&subject, &[], &ce_with("Y", data)).await;
    let y3 = ts.publish(&subject, &[], &ce_with("Y", other)).await;
    let y4 = ts.publish(&subject, &[], &ce_with("Y", reordered)).await;
    run_until_idle(&url, &ts, &RunOpts::default()).await;

    assert_eq!(count_rows(&pool).await, 8, "every message is recorded");
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
    .fetch_all(&pool)
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
    assert_verifies(&url, 8).await;
}

#[sqlx::test]
async fn verify_names_an_edited_row_and_a_deleted_one(pool: PgPool) {
    let ts = TestStream::create("tamper").await;
    let url = db_url(&pool);
    ingest_load(&pool, &ts, 40, 3, 10).await;

    // A superuser edits a row with the triggers off (replica mode): a row of the last link, so
    // that an earlier link exists for the deletion below.
    let k: i64 = sqlx::query_scalar(
        "SELECT min(e.stream_seq) FROM audit.events e JOIN audit.chain_links l ON l.batch_id = e.batch_id \
         WHERE l.link_seq = (SELECT max(link_seq) FROM audit.chain_links)",
    )
    .fetch_one(&pool)
    .await
    .expect("row K");
    let ks = Some(k.to_string());
    let (orig_account, batch_k): (Option<String>, i64) =
        sqlx::query_as("SELECT account_number, batch_id FROM audit.events WHERE stream_seq = $1")
            .bind(k)
            .fetch_one(&pool)
            .await
            .expect("row K");
    // `binds` fills the statement's parameters, in order.
    let as_replica = |sql: &'static str, binds: Vec<Option<String>>| {
        let pool = pool.clone();
        async move {
            let mut tx = pool.begin().await.expect("begin");
            sqlx::query("SET LOCAL session_replication_role = replica")
                .execute(&mut *tx)
                .await
                .expect("replica mode");
            let mut q = sqlx::query(sql);
            for b in binds {
                q = q.bind(b);
            }
            let n = q.execute(&mut *tx).await.expect("tamper").rows_affected();
            tx.commit().await.expect("commit");
            n
        }
    };
    let edited = as_replica(
        "UPDATE audit.events SET account_number = 'X' WHERE stream_seq = $1::text::bigint",
        vec![ks.clone()],
    )
    .await;
    assert_eq!(edited, 1);
    let v = verify(&url).await;
    assert_eq!(v.code, Some(1), "{v:?}");
    assert_eq!(v.report["ok"], false, "{v:?}");
    let at = format!("stream_seq={k} ");
    assert!(
        v.first_break().contains(&at) && v.first_break().contains("row edited"),
        "{v:?}"
    );
    assert!(
        v.stderr.contains("chain BROKEN") && v.stderr.contains(&at),
        "{v:?}"
    );

    // Put it back: the chain is intact again, so the walk really compares the columns.
    let restored = as_replica(
        "UPDATE audit.events SET account_number = $1 WHERE stream_seq = $2::text::bigint",
        vec![orig_account, ks.clone()],
    )
    .await;
    assert_eq!(restored, 1);
    assert_verifies(&url, 40).await;

    // The payload column is checked against the raw message.
    let edited = as_replica(
        "UPDATE audit.events SET payload = '{\"x\": 1}' WHERE stream_seq = $1::text::bigint",
        vec![ks.clone()],
    )
    .await;
    assert_eq!(edited, 1);
    let v = verify(&url).await;
    assert_eq!(v.code, Some(1), "{v:?}");
    assert!(
        v.first_break().contains(&at) && v.first_break().contains("payload edited"),
        "{v:?}"
    );

    // A deleted row in a batch linked earlier than row K's is reported first, naming its batch.
    // (With concurrent writers link order need not follow batch ids, so go by link order.)
    let (d, batch_d): (i64, i64) = sqlx::query_as(
        "SELECT e.stream_seq, e.batch_id FROM audit.events e \
         JOIN audit.chain_links l ON l.batch_id = e.batch_id \
         WHERE l.link_seq < (SELECT l2.link_seq FROM audit.chain_links l2 WHERE l2.batch_id = $1) \
         ORDER BY l.link_seq, e.stream_seq LIMIT 1",
    )
    .bind(batch_k)
    .fetch_one(&pool)
    .await
    .expect("a row linked before row K");
    let deleted = as_replica(
        "DELETE FROM audit.events WHERE stream_seq = $1::text::bigint",
        vec![Some(d.to_string())],
    )
    .await;
    assert_eq!(deleted, 1);
    let v = verify(&url).await;
    assert_eq!(v.code, Some(1), "{v:?}");
    let batch = format!("batch {batch_d} ");
    assert!(
        v.first_break().contains(&batch) && v.first_break().contains("rows deleted"),
        "{v:?}"
    );
    assert!(v.stderr.contains(&batch), "{v:?}");
}

/// Runs `sql` in a transaction as `role` (or as the superuser), then rolls back.
async fn as_role(pool: &PgPool, role: Option<&str>, sql: &str) -> Result<u64, sqlx::Error> {
    let mut tx = pool.begin().await.expect("begin");
    if let Some(r) = role {
        sqlx::query(&format!("SET LOCAL ROLE {r}"))
            .execute(&mut *tx)
            .await
            .expect("set role");
    }
    let res = sqlx::query(sql)
        .execute(&mut *tx)
        .await
        .map(|r| r.rows_affected());
    tx.rollback().await.expect("rollback");
    res
}

/// Asserts `sql` fails as `role` with SQLSTATE 42501, the message containing `says`.
async fn refused(pool: &PgPool, role: Option<&str>, sql: &str, says: &str) {
    match as_role(pool, role, sql).await {
        Ok(n) => panic!("{sql} as {role:?} succeeded ({n} rows)"),
        Err(sqlx::Error::Database(e)) => {
            assert_eq!(e.code().as_deref(), Some("42501"), "{sql} as {role:?}: {e}");
            assert!(e.message().contains(says), "{sql} as {role:?}: {e}");
        }
        Err(e) => panic!("{sql} as {role:?}: {e}"),
    }
}

#[sqlx::test]
async fn the_log_is_append_only_for_writer_owner_and_auditor(pool: PgPool) {
    let store = Store::from_pool(pool.clone());
    let n = 10;
    store
        .write_batch(&mut records("ROLES", n, 1, now_us()))
        .await
        .expect("write");
    let writer = Some("event_audit_writer");
    let owner = Some("event_audit_owner");
    let auditor = Some("event_audit_auditor");
    let denied = "permission denied";
    let append_only = "append-only";
    let insert = "INSERT INTO audit.events (stream, stream_seq, published_at, received_at, subject, \
                  delivery_count, status, raw, batch_id, row_hash) \
                  VALUES ('ROLES', 1000, now(), now(), 'ROLES.x', 1, 'decoded', '\\x00', 0, '\\x00')";

    // The daemon's role: INSERT yes; UPDATE, DELETE, TRUNCATE no, on the table or a partition.
    assert_eq!(
        as_role(&pool, writer, insert)
            .await
            .expect("writer inserts"),
        1
    );
    assert_eq!(
        as_role(&pool, writer, "SELECT * FROM event_log")
            .await
            .expect("writer reads"),
        n as u64
    );
    refused(
        &pool,
        writer,
        "UPDATE audit.events SET account_number = 'X'",
        denied,
    )
    .await;
    refused(&pool, writer, "DELETE FROM audit.events", denied).await;
    refused(&pool, writer, "TRUNCATE audit.events", denied).await;
    refused(&pool, writer, "DELETE FROM audit.events_default", denied).await;
    refused(
        &pool,
        writer,
        "UPDATE audit.chain_links SET row_count = 0",
        denied,
    )
    .await;
    refused(&pool, writer, "DELETE FROM audit.event_ids", denied).await;
    refused(&pool, writer, "DELETE FROM audit.chain_head", denied).await;

    // The owner and a superuser have the privileges; the triggers refuse.
    for role in [owner, None] {
        refused(
            &pool,
            role,
            "UPDATE audit.events SET account_number = 'X'",
            append_only,
        )
        .await;
        refused(&pool, role, "DELETE FROM audit.events", append_only).await;
        refused(&pool, role, "TRUNCATE audit.events", append_only).await;
        refused(&pool, role, "DELETE FROM audit.chain_links", append_only).await;
        refused(
            &pool,
            role,
            "UPDATE audit.chain_head SET link_seq = 0",
            "forward only",
        )
        .await;
    }

    // The auditor reads and writes nothing.
    assert_eq!(
        as_role(&pool, auditor, "SELECT * FROM event_log")
            .await
            .expect("auditor reads"),
        n as u64
    );
    assert_eq!(
        as_role(&pool, auditor, "SELECT * FROM audit.chain_links")
            .await
            .expect("auditor reads links"),
        1
    );
    refused(&pool, auditor, insert, denied).await;
    refused(
        &pool,
        auditor,
        "UPDATE audit.events SET account_number = 'X'",
        denied,
    )
    .await;
    refused(&pool, auditor, "DELETE FROM audit.events", denied).await;

    assert_eq!(count_rows(&pool).await, n as i64);
    let report = store.verify().await.expect("verify");
    assert!(report.ok && report.rows == n as i64, "{report:?}");
}
