//! Poison messages of every kind among innocent neighbours: each gets its row (raw kept, the
//! reason recorded), is acked, and costs no neighbour its payload; the log verifies intact.
//! A message whose NATS header block the client cannot parse is found by its sequence and
//! recorded as `malformed` (`invalid_headers`), instead of stalling the consumer for ever.

use std::time::Duration;

use sqlx::Row;

use crate::daemon::{drain, Daemon};
use crate::env::{metric, Env};
use crate::raw::RawConn;

fn native(id: &str, payload: &str) -> Vec<u8> {
    format!(r#"{{"event":"account.occupied-v1","id":"{id}","payload":{payload}}}"#).into_bytes()
}

/// `(label, message, payload column kept)`.
fn poisons() -> Vec<(&'static str, Vec<u8>, bool)> {
    let deep = format!(
        r#"{{"account_number":"A","x":{}{}}}"#,
        "[".repeat(400_000),
        "]".repeat(400_000)
    );
    let blob = format!(
        r#"{{"account_number":"A","blob":"{}"}}"#,
        "x".repeat(900 * 1024)
    );
    let mut bad_utf8 =
        br#"{"event":"account.occupied-v1","id":"u","payload":{"account_number":""#.to_vec();
    bad_utf8.extend_from_slice(b"\xff\xfe\"}}");
    vec![
        ("deep nesting", native("deep", &deep), false),
        (
            "lone surrogate",
            native("sur", r#"{"account_number":"A","x":"\ud800"}"#),
            false,
        ),
        (
            "number beyond numeric",
            native("big", r#"{"account_number":"A","x":1e999999}"#),
            false,
        ),
        (
            "numbers jsonb normalises",
            native(
                "num",
                r#"{"account_number":"A","n":[-0,1e3,1.0E7,1E2,0.10,-0.0e-5]}"#,
            ),
            true,
        ),
        ("invalid UTF-8", bad_utf8, false),
        ("900 KB", native("blob", &blob), true),
        ("empty", Vec::new(), false),
        ("array", b"[1,2]".to_vec(), false),
        ("string", br#""text""#.to_vec(), false),
        ("number", b"42".to_vec(), false),
        ("null", b"null".to_vec(), false),
    ]
}

#[tokio::test]
async fn poison_of_every_kind_gets_its_row_and_spares_its_neighbours() {
    let env = Env::start().await;
    let mut expect = Vec::new();
    let mut n = 0u64;
    for (i, (label, bytes, kept)) in poisons().into_iter().enumerate() {
        for k in 0..50 {
            let id = format!("n-{i}-{k}");
            env.publish(
                "events.load",
                native(&id, &format!(r#"{{"account_number":"A-{i}-{k}"}}"#)),
            )
            .await;
            n += 1;
        }
        let seq = env.publish("events.poison", bytes).await;
        n += 1;
        expect.push((label, seq, kept));
    }
    let d = drain(&env, &[]).await;
    assert!(d.errors().is_empty(), "{:?}", d.errors());
    env.assert_exact(n as i64).await;
    let pool = env.pool().await;
    for (label, seq, kept) in expect {
        let row = sqlx::query(
            "SELECT payload IS NOT NULL AS kept, payload_error, status, length(raw) AS raw_len \
             FROM audit.events WHERE stream_seq = $1",
        )
        .bind(seq as i64)
        .fetch_one(&pool)
        .await
        .unwrap_or_else(|e| panic!("{label}: no row ({e})"));
        let got: bool = row.get("kept");
        let error: Option<String> = row.get("payload_error");
        let status: String = row.get("status");
        assert_eq!(got, kept, "{label}: payload kept? ({status}, {error:?})");
        match label {
            "lone surrogate" => assert!(
                error
                    .as_deref()
                    .is_some_and(|e| e.starts_with("lone_surrogate")),
                "{error:?}"
            ),
            "number beyond numeric" => {
                assert!(
                    error
                        .as_deref()
                        .is_some_and(|e| e.starts_with("number_out_of_range")),
                    "{error:?}"
                )
            }
            "deep nesting" => assert!(
                status == "malformed"
                    || error.as_deref().is_some_and(|e| e.starts_with("too_deep")),
                "{status} {error:?}"
            ),
            _ => {}
        }
    }
    let (neighbours_kept,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM audit.events WHERE subject = 'events.load' AND payload IS NOT NULL",
    )
    .fetch_one(&pool)
    .await
    .expect("count");
    assert_eq!(
        neighbours_kept, 550,
        "every neighbour keeps its payload column"
    );
}

/// Header blocks nats-server 2.9 stores and async-nats cannot parse.
const BAD_HEADERS: &[&[u8]] = &[b"BOGUS/1.0\r\n\r\n", b"NATS/1.0\r\nno colon here\r\n\r\n"];

#[tokio::test]
async fn a_message_with_a_malformed_header_block_is_recorded_by_its_sequence() {
    let env = Env::start().await;
    env.publish_load(20, 21).await;
    let mut raw = RawConn::connect(env.nats.addr()).await;
    let mut poison = Vec::new();
    for (i, hdr) in BAD_HEADERS.iter().enumerate() {
        let ack = raw
            .hpub_stored(
                "events.load",
                hdr,
                &native(&format!("h{i}"), r#"{"account_number":"H"}"#),
            )
            .await;
        assert!(ack.contains("\"seq\""), "JetStream stored it: {ack}");
        poison.push(ack);
        env.publish_load(20, 22 + i as u64).await;
    }
    let n = 20 + 2 * 21;
    let mut d = Daemon::spawn(&env, &[]);
    env.wait_rows(n, Duration::from_secs(60), || d.log()).await;
    // Acked: the consumer is left with nothing pending.
    let mut backlog = env.consumer_backlog().await;
    for _ in 0..50 {
        if backlog == (0, 0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        backlog = env.consumer_backlog().await;
    }
    assert_eq!(backlog, (0, 0), "log:\n{}", d.log());
    let pool = env.pool().await;
    let rows = sqlx::query(
        "SELECT stream_seq, status, errors->0->>'code' AS code, headers::text AS headers, \
         payload IS NOT NULL AS kept, delivery_count FROM audit.events \
         WHERE errors @> '[{\"code\": \"invalid_headers\"}]' ORDER BY stream_seq",
    )
    .fetch_all(&pool)
    .await
    .expect("rows");
    assert_eq!(rows.len(), BAD_HEADERS.len(), "log:\n{}", d.log());
    for r in &rows {
        assert_eq!(r.get::<String, _>("status"), "malformed");
        assert_eq!(r.get::<String, _>("code"), "invalid_headers");
        assert!(r
            .get::<String, _>("headers")
            .contains("Nats-Unparsed-Header-Block-Base64"));
        assert!(
            r.get::<bool, _>("kept"),
            "the payload itself is fine and kept"
        );
        assert_eq!(r.get::<i32, _>("delivery_count"), 0);
    }
    let m = d.metrics().await;
    assert_eq!(
        metric(&m, "event_audit_ingest_unparsable_messages_total", ""),
        Some(BAD_HEADERS.len() as f64)
    );
    d.stop_cleanly(Duration::from_secs(30)).await;
    env.assert_exact(n).await;
}
