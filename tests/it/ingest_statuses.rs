//! Ingest end to end against real NATS JetStream and Postgres, in-process: every status lands
//! in `event_log` with the right columns; each row is received when its message was read, never
//! before it was published (the bus and this machine share a clock here).

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::support::{
    assert_verifies, count_rows, run_until_idle, settings, spawn_app, TestDb, TestStream,
};

fn time(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .expect("RFC 3339")
        .with_timezone(&Utc)
}

/// One row of `event_log`, by column name.
#[derive(sqlx::FromRow)]
struct LogRow {
    stream: String,
    subject: String,
    envelope: Option<String>,
    event_id: Option<String>,
    event: Option<String>,
    event_type: Option<String>,
    event_version: Option<String>,
    status: String,
    errors: Value,
    unknown_fields: Value,
    payload: Option<Value>,
    account_number: Option<String>,
    occurred_at: Option<DateTime<Utc>>,
    received_at: DateTime<Utc>,
    published_at: DateTime<Utc>,
    delivery_count: i32,
    headers: Option<Value>,
    id_status: Option<String>,
    duplicate_of_seq: Option<i64>,
    raw: Vec<u8>,
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

#[tokio::test]
async fn every_status_lands_in_event_log_with_its_columns() {
    let db = TestDb::create().await;
    let ts = TestStream::create("statuses").await;

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

    let mut s = settings(&db, &ts);
    s.stream.subject_prefix = ts.prefix();
    run_until_idle(s).await;

    assert_eq!(count_rows(&db.pool).await, cases.len() as i64);
    let statuses: Vec<String> =
        sqlx::query_scalar("SELECT DISTINCT status FROM event_log ORDER BY 1")
            .fetch_all(&db.pool)
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
        let row: LogRow = sqlx::query_as(
            "SELECT stream, stream_seq, event_id, event, event_type, event_version, status, errors, \
             unknown_fields, payload, account_number, occurred_at, received_at, published_at, subject, \
             envelope, delivery_count, headers, id_status, duplicate_of_seq, raw \
             FROM event_log WHERE stream = $1 AND stream_seq = $2",
        )
        .bind(&ts.name)
        .bind(i64::try_from(*seq).expect("seq"))
        .fetch_one(&db.pool)
        .await
        .unwrap_or_else(|e| panic!("{}: no row for stream_seq {seq}: {e}", c.what));
        let w = c.what;
        assert_eq!(row.stream, ts.name, "{w}");
        assert_eq!(row.subject, c.subject, "{w}");
        assert_eq!(row.envelope.as_deref(), c.envelope, "{w}");
        assert_eq!(row.event_id.as_deref(), c.event_id, "{w}");
        assert_eq!(row.event.as_deref(), c.event, "{w}");
        assert_eq!(row.event_type.as_deref(), c.event_type, "{w}");
        assert_eq!(row.event_version.as_deref(), c.event_version, "{w}");
        assert_eq!(row.status, c.status, "{w}");

        let errors = row
            .errors
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
        assert_eq!(row.unknown_fields, json!(c.unknown_fields), "{w}");

        assert_eq!(row.payload, c.payload, "{w}");
        assert_eq!(row.account_number.as_deref(), c.account_number, "{w}");
        assert_eq!(row.occurred_at, c.occurred_at, "{w}");
        let (received, published) = (row.received_at, row.published_at);
        let now = Utc::now();
        assert!(
            published <= received && received <= now,
            "{w}: published {published} received {received}"
        );
        assert!(
            (now - published).num_seconds() < 120,
            "{w}: published_at {published} is JetStream's time"
        );
        assert_eq!(row.raw, c.raw, "{w}: raw bytes");
        assert_eq!(row.delivery_count, 1, "{w}");

        if c.headers.is_empty() {
            assert_eq!(row.headers, None, "{w}");
        } else {
            let mut want = serde_json::Map::new();
            for (k, v) in &c.headers {
                want.insert((*k).to_owned(), json!([v]));
            }
            assert_eq!(row.headers, Some(Value::Object(want)), "{w}");
        }
        let want_id_status = c.event_id.map(|_| "first");
        assert_eq!(row.id_status.as_deref(), want_id_status, "{w}");
        assert_eq!(row.duplicate_of_seq, None, "{w}");
    }
    assert_verifies(&db.url, cases.len() as i64).await;
}

/// With no name from outside (no Event-Type header, a subject outside the prefix), a native
/// name without its payload is stored as `no_payload` with the event's name and version, not
/// as a nameless message; a message that is not JSON says so in plain words, quoting nothing.
#[tokio::test]
async fn a_name_without_payload_and_plain_not_json_are_stored_as_decode_says() {
    let db = TestDb::create().await;
    let ts = TestStream::create("no_payload").await;
    let no_payload = ts
        .publish(
            &ts.subject("x"),
            &[],
            br#"{"event": "account.created-v1", "id": "np-1"}"#,
        )
        .await;
    let junk = ts
        .publish(&ts.subject("y"), &[], b"Jo Smith lives here")
        .await;
    run_until_idle(settings(&db, &ts)).await;

    type Text = Option<String>;
    let row: (Text, Text, Text, String, Value) = sqlx::query_as(
        "SELECT envelope, event_type, event_version, status, errors FROM event_log \
         WHERE stream = $1 AND stream_seq = $2",
    )
    .bind(&ts.name)
    .bind(i64::try_from(no_payload).expect("seq"))
    .fetch_one(&db.pool)
    .await
    .expect("row");
    assert_eq!(row.0.as_deref(), Some("native"));
    assert_eq!(
        (row.1.as_deref(), row.2.as_deref()),
        (Some("account.created"), Some("v1"))
    );
    assert_eq!(row.3, "malformed");
    assert_eq!(row.4[0]["code"], "no_payload", "{}", row.4);
    assert_eq!(row.4[0]["path"], "payload", "{}", row.4);

    let errors: Value =
        sqlx::query_scalar("SELECT errors FROM event_log WHERE stream = $1 AND stream_seq = $2")
            .bind(&ts.name)
            .bind(i64::try_from(junk).expect("seq"))
            .fetch_one(&db.pool)
            .await
            .expect("row");
    let m = errors[0]["message"].as_str().expect("message");
    assert_eq!(errors[0]["code"], "not_json");
    assert!(
        m.starts_with("not JSON: an unquoted word at line 1, column 1"),
        "{m}"
    );
    assert!(!m.contains("Smith") && !m.contains("Jo"), "{m}");
    assert_verifies(&db.url, 2).await;
}

#[tokio::test]
async fn messages_published_while_a_batch_fills_are_received_after_they_were_published() {
    let db = TestDb::create().await;
    let ts = TestStream::create("received").await;
    let mut s = settings(&db, &ts);
    s.ingest.linger = event_audit::config::Dur::millis(1500);
    let app = spawn_app(s).await;
    // One message every 40 ms while the daemon's batch (500) waits up to 1.5 s to fill.
    for i in 0..20 {
        let body = format!(r#"{{"event":"nothing.v1","id":"received-{i}"}}"#);
        ts.publish(&ts.subject("late"), &[], body.as_bytes()).await;
        tokio::time::sleep(std::time::Duration::from_millis(40)).await;
    }
    while count_rows(&db.pool).await < 20 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let stopped = app.stop().await;
    assert!(stopped.errors().is_empty(), "{:?}", stopped.errors());
    let (early, batches, stamps): (i64, i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE received_at < published_at), count(DISTINCT batch_id), \
           count(DISTINCT received_at) FROM audit.events",
    )
    .fetch_one(&db.pool)
    .await
    .expect("rows");
    assert!(
        batches < 20,
        "the messages shared batches ({batches} batches)"
    );
    assert!(
        stamps > batches,
        "each read its own time, not the batch's ({stamps} times)"
    );
    assert_eq!(early, 0, "rows received before they were published");
}
