//! The archive line's writer and parser against each other: every row written and read back is
//! the same view, field by field, so it rehashes the same (the row hash is recomputed from the
//! view alone; `verify`, a room above this one, holds that function).

use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, SecondsFormat, Utc};
use proptest::prelude::*;

use super::time::{parse_time, push_time};
use super::*;
use crate::row::columns::EVENTS;
use crate::row::record::{record, Meta, Naming, Record};

fn line(row: &RowView<'_>, leaf: u64) -> Vec<u8> {
    let mut out = Vec::new();
    write_line(row, leaf, &mut out);
    out
}

fn round_trip(row: &RowView<'_>, leaf: u64) -> ArchivedRow {
    let text = line(row, leaf);
    assert_eq!(text.iter().filter(|&&b| b == b'\n').count(), 1);
    assert_eq!(text.last(), Some(&b'\n'));
    let back = parse_line(&text).expect("a written line parses");
    assert_eq!(back.view(), *row);
    assert_eq!(back.leaf_index(), leaf);
    back
}

fn full<'a>() -> RowView<'a> {
    RowView {
        stream: "EVENTS",
        stream_seq: 42,
        published_at_us: 1_795_662_000_123_456,
        received_at_us: 1_764_000_000_223_456,
        subject: "kraken.account.created",
        delivery_count: 3,
        headers: Some(r#"{"Nats-Msg-Id": ["a"]}"#),
        envelope: Some("cloudevents"),
        event_id: Some("0b5e\u{2026}"),
        event_type: Some("account.created"),
        event_version: Some("v1"),
        status: "decoded",
        errors: Some("[]"),
        unknown_fields: Some(r#"["x.y"]"#),
        payload: Some(r#"{"account_number": "A-1", "note": "a\nb\u0000"}"#),
        account_number: Some("A-1"),
        occurred_at_us: Some(-1),
        payload_error: Some("a \"reason\"\t\u{1}"),
        catalogue: Some("fp"),
        raw: b"\x00\xffraw",
        salt: Some(&[5; 32]),
        commitment: Some(&[6; 32]),
        batch_id: 7,
        row_hash: &[9; 32],
    }
}

/// A sealed version 3 row, as ingest writes it.
fn rec() -> Record {
    let meta = Meta {
        stream: Arc::from("EVENTS"),
        stream_seq: 17,
        published_at: Utc::now(),
        subject: "kraken.account.occupied".into(),
        delivery_count: 1,
        headers: vec![("X-User".into(), "a@example.com".into())],
    };
    let raw = br#"{"event":"account.occupied-v1","id":"i-1","payload":{"account_number":"A"}}"#;
    record(
        meta,
        Bytes::from_static(raw),
        &Naming::default(),
        Utc::now(),
    )
}

#[test]
fn a_line_names_every_column_in_order_after_the_leaf_index() {
    let text = line(&full(), 9);
    let v: serde_json::Value = serde_json::from_slice(&text).expect("JSON");
    let mut keys: Vec<&str> = v
        .as_object()
        .expect("an object")
        .keys()
        .map(|k| k.as_str())
        .collect();
    let mut want = vec![LEAF_INDEX];
    want.extend(EVENTS.iter().map(|c| c.name));
    let mut sorted = want.clone();
    sorted.sort_unstable();
    keys.sort_unstable();
    assert_eq!(keys, sorted);
    let s = String::from_utf8(text).expect("UTF-8");
    let mut at = 0;
    for name in want {
        let found = s[at..].find(&format!("\"{name}\":")).expect(name);
        at += found;
    }
    assert!(
        s.starts_with("{\"leaf_index\":9,\"stream\":\"EVENTS\","),
        "{s}"
    );
    assert!(
        s.contains(r#""published_at":"2026-11-26T03:00:00.123456Z""#),
        "{s}"
    );
    assert!(
        s.contains(r#""occurred_at":"1969-12-31T23:59:59.999999Z""#),
        "{s}"
    );
    assert!(s.contains(r#""headers":{"Nats-Msg-Id": ["a"]}"#), "{s}");
    assert!(s.contains(r#""raw":"00ff726177""#), "{s}");
    assert_eq!(v["payload"]["note"], "a\nb\u{0}");
    assert_eq!(v["payload_error"], "a \"reason\"\t\u{1}");
    round_trip(&full(), 9);
}

#[test]
fn nulls_round_trip() {
    let nulls = RowView {
        headers: None,
        envelope: None,
        event_id: None,
        event_type: None,
        event_version: None,
        errors: None,
        unknown_fields: None,
        payload: None,
        account_number: None,
        occurred_at_us: None,
        payload_error: None,
        catalogue: None,
        raw: b"",
        salt: None,
        commitment: None,
        ..full()
    };
    let s = String::from_utf8(line(&nulls, 0)).expect("UTF-8");
    assert!(s.contains(r#""headers":null,"envelope":null"#), "{s}");
    assert!(s.contains(r#""raw":"""#), "{s}");
    round_trip(&nulls, u64::MAX);
}

/// A real version 3 row, and the same row erased, read back from its line: the very view its
/// hash was made from.
#[test]
fn a_sealed_v3_row_reads_back_as_the_row_it_was() {
    let r = rec();
    let v = r.view(3);
    let back = round_trip(&v, 1234);
    assert_eq!(back.view().row_hash, r.row_hash);
    assert_eq!(
        back.view().commitment,
        Some(&r.canon().commitment.expect("v3")[..])
    );
    let erased = RowView {
        raw: b"",
        salt: None,
        payload: None,
        headers: None,
        event_id: None,
        account_number: None,
        errors: None,
        ..v
    };
    round_trip(&erased, 1234);
}

#[test]
fn times_are_rfc3339_utc_with_six_digits_over_the_whole_range() {
    let text = |us: i64| {
        let mut out = Vec::new();
        push_time(&mut out, us);
        String::from_utf8(out).expect("ASCII")
    };
    for us in [
        0,
        -1,
        1_795_662_000_123_456,
        -62_135_596_800_000_000,
        253_402_300_799_999_999,
        951_782_400_000_000,
    ] {
        let chrono = DateTime::from_timestamp_micros(us).expect("in chrono's range");
        let want = chrono.to_rfc3339_opts(SecondsFormat::Micros, true);
        assert_eq!(text(us), want);
        assert_eq!(parse_time(&want), Some(us));
    }
    assert_eq!(
        text(253_402_300_800_000_000),
        "+10000-01-01T00:00:00.000000Z"
    );
    assert_eq!(
        text(-62_167_219_200_000_001),
        "-0001-12-31T23:59:59.999999Z"
    );
    for us in [i64::MIN, i64::MAX, i64::MIN + 1, i64::MAX - 1] {
        assert_eq!(parse_time(&text(us)), Some(us), "{}", text(us));
    }
    for bad in [
        "2026-02-29T00:00:00.000000Z",
        "2026-11-26T03:00:00.12345Z",
        "2026-11-26T03:00:00.123456+00:00",
        "2026-11-26 03:00:00.123456Z",
        "+2026-11-26T03:00:00.000000Z",
        "-0000-11-26T03:00:00.000000Z",
        "2026-13-01T00:00:00.000000Z",
        "2026-11-26T24:00:00.000000Z",
        "2026-11-26T23:59:60.000000Z",
        "+999999999-01-01T00:00:00.000000Z",
        "\u{e9}026-11-26T03:00:00.000000Z",
        "",
    ] {
        assert_eq!(parse_time(bad), None, "{bad}");
    }
    assert_eq!(
        parse_time("2024-02-29T00:00:00.000000Z"),
        Some(1_709_164_800_000_000)
    );
}

/// Replaces the first `from` in a written line by `to`.
fn edited(from: &str, to: &str) -> Vec<u8> {
    let s = String::from_utf8(line(&full(), 5)).expect("UTF-8");
    assert!(s.contains(from), "{from}");
    s.replacen(from, to, 1).into_bytes()
}

#[test]
fn what_is_wrong_is_named_and_no_value_is_quoted() {
    use LineError::*;
    let cases: Vec<(Vec<u8>, LineError)> = vec![
        (
            edited(r#""raw":"00ff726177""#, r#""raw":"00FF726177""#),
            Value {
                field: "raw",
                why: "is not lowercase hex of whole bytes",
            },
        ),
        (
            edited(r#""raw":"00ff726177""#, r#""raw":"00ff72617""#),
            Value {
                field: "raw",
                why: "is not lowercase hex of whole bytes",
            },
        ),
        (edited(r#","batch_id":7"#, ""), Missing("batch_id")),
        (
            edited(r#""batch_id":7"#, r#""batch_id":7,"secret@example.com":1"#),
            Unknown { name: None },
        ),
        (
            edited(r#""batch_id":7"#, r#""batch_id":7,"extra":1"#),
            Unknown {
                name: Some("extra".into()),
            },
        ),
        (
            edited(r#""batch_id":7"#, r#""batch_id":7,"stream":"x""#),
            Duplicate("stream"),
        ),
        (
            edited(r#""stream":"EVENTS""#, r#""stream":null"#),
            Value {
                field: "stream",
                why: "is null in a NOT NULL column",
            },
        ),
        (
            edited(r#""delivery_count":3"#, r#""delivery_count":3000000000"#),
            Value {
                field: "delivery_count",
                why: "is not an integer in its column's range",
            },
        ),
        (
            edited(r#""stream_seq":42"#, r#""stream_seq":"42""#),
            Value {
                field: "stream_seq",
                why: "is not an integer in its column's range",
            },
        ),
        (
            edited(r#""subject":"kraken"#, r#""subject":["kraken"#),
            Syntax { column: 0 },
        ),
        (edited("\"A-1\",", "\"A-1\"\n,"), LineBreak),
        (
            edited(".123456Z", ".123456+00:00"),
            Value {
                field: "published_at",
                why: "is not a UTC time written YYYY-MM-DDTHH:MM:SS.ffffffZ",
            },
        ),
        (
            edited(r#""status":"decoded""#, r#""status":1"#),
            Value {
                field: "status",
                why: "is not a string",
            },
        ),
        (b"[1,2]".to_vec(), NotObject),
        (b"".to_vec(), Truncated),
        (b"{\"stream\":\xff}".to_vec(), NotUtf8),
    ];
    for (input, want) in cases {
        let got = parse_line(&input).expect_err("refused");
        match (&got, &want) {
            (Syntax { .. }, Syntax { .. }) => {}
            _ => assert_eq!(got, want),
        }
        let msg = got.to_string();
        for value in ["secret", "EVENTS", "kraken", "A-1", "00FF", "decoded"] {
            assert!(!msg.contains(value), "{msg} quotes {value}");
        }
    }
    let whole = line(&full(), 5);
    for cut in [1, whole.len() / 2, whole.len() - 2] {
        assert_eq!(parse_line(&whole[..cut]), Err(LineError::Truncated));
    }
    let crlf = [&whole[..whole.len() - 1], b"\r\n"].concat();
    assert_eq!(parse_line(&crlf).map(|r| r.leaf_index()), Ok(5));
    assert_eq!(
        parse_line(&whole[..whole.len() - 1]).map(|r| r.leaf_index()),
        Ok(5)
    );
}

/// A jsonb text that is not one compact line (a raw message's payload may be pretty-printed)
/// is written as the same JSON value on one line; text that is not JSON stays a string.
#[test]
fn jsonb_texts_stay_one_line_and_keep_their_value() {
    let pretty = "{\n  \"account_number\": \"A\",\r\n  \"n\": [1,\n 2]\n}";
    let row = RowView {
        payload: Some(pretty),
        headers: Some(" {\"a\":[\"b\"]} "),
        errors: Some("not json"),
        ..full()
    };
    let back = parse_line(&line(&row, 1)).expect("parses");
    let v = back.view();
    let value = |t: &str| serde_json::from_str::<serde_json::Value>(t).expect("JSON");
    assert_eq!(value(v.payload.expect("payload")), value(pretty));
    assert!(!v.payload.expect("payload").contains('\n'));
    assert_eq!(v.headers, Some("{\"a\":[\"b\"]}"));
    assert_eq!(v.errors, Some("\"not json\""));
    // The JSON value null in a jsonb column reads back as NULL (this system never stores one).
    let row = RowView {
        errors: Some("null"),
        ..full()
    };
    assert_eq!(
        parse_line(&line(&row, 1)).expect("parses").view().errors,
        None
    );
}

/// Valid JSON texts of the kinds jsonb columns hold, PostgreSQL's spacing and compact.
fn json_text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(r#"{"Nats-Msg-Id": ["a", "b"]}"#.to_owned()),
        Just("[]".to_owned()),
        "(?s).{0,12}"
            .prop_map(|s| serde_json::json!({ "k": s, "n": [1, 2.5, null, true] }).to_string()),
        "(?s).{0,12}".prop_map(|s| serde_json::json!([s]).to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
    ]
}

proptest! {
    #[test]
    fn any_row_round_trips(
        texts in proptest::collection::vec("(?s).{0,12}", 3),
        opts in proptest::collection::vec(proptest::option::of("(?s).{0,12}"), 7),
        jsons in proptest::collection::vec(proptest::option::of(json_text()), 4),
        ints in proptest::collection::vec(any::<i64>(), 5),
        count in any::<i32>(),
        occurred in any::<bool>(),
        raw in proptest::collection::vec(any::<u8>(), 0..40),
        hash in proptest::collection::vec(any::<u8>(), 32),
        leaf in any::<u64>(),
    ) {
        let o = |i: usize| opts[i].as_deref();
        let j = |i: usize| jsons[i].as_deref();
        let row = RowView {
            stream: &texts[0],
            stream_seq: ints[0],
            published_at_us: ints[1],
            received_at_us: ints[2],
            subject: &texts[1],
            delivery_count: count,
            headers: j(0),
            envelope: o(0),
            event_id: o(1),
            event_type: o(2),
            event_version: o(3),
            status: &texts[2],
            errors: j(1),
            unknown_fields: j(2),
            payload: j(3),
            account_number: o(4),
            occurred_at_us: occurred.then_some(ints[3]),
            payload_error: o(5),
            catalogue: o(6),
            raw: &raw,
            salt: occurred.then_some(&raw[..]),
            commitment: (!occurred).then_some(&hash[..]),
            batch_id: ints[4],
            row_hash: &hash,
        };
        round_trip(&row, leaf);
    }
}
