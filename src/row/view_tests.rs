//! The row's COPY writer and parser against each other: every row written and read back is the
//! same row, field by field, NULLs included.

use proptest::prelude::*;

use super::*;

/// The fields of each tuple of a binary COPY body.
fn tuples(body: &[u8]) -> Vec<Vec<Field<'_>>> {
    let mut at = 19;
    let mut out = Vec::new();
    loop {
        let n = i16::from_be_bytes([body[at], body[at + 1]]);
        at += 2;
        if n == -1 {
            assert_eq!(at, body.len(), "bytes after the trailer");
            return out;
        }
        let mut fields = Vec::new();
        for _ in 0..n {
            let len = i32::from_be_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]]);
            at += 4;
            if len < 0 {
                fields.push(None);
            } else {
                let len = len as usize;
                fields.push(Some(&body[at..at + len]));
                at += len;
            }
        }
        out.push(fields);
    }
}

fn round_trip(rows: &[RowView<'_>]) {
    let mut buf = CopyBuf::with_capacity(0);
    for r in rows {
        r.encode(&mut buf);
    }
    let body = buf.finish();
    let got: Vec<RowView<'_>> = tuples(&body)
        .iter()
        .map(|f| RowView::parse(f, 0).expect("parse"))
        .collect();
    assert_eq!(got, rows);
}

fn full<'a>() -> RowView<'a> {
    RowView {
        stream: "EVENTS",
        stream_seq: 42,
        published_at_us: 1_764_000_000_123_456,
        received_at_us: 1_764_000_000_223_456,
        subject: "kraken.account.created",
        delivery_count: 3,
        headers: Some(r#"{"Nats-Msg-Id": ["a"]}"#),
        envelope: Some("cloudevents"),
        event_id: Some("0b5e…"),
        event_type: Some("account.created"),
        event_version: Some("v1"),
        status: "decoded",
        errors: Some("[]"),
        unknown_fields: Some(r#"["x.y"]"#),
        payload: Some(r#"{"account_number": "A-1"}"#),
        account_number: Some("A-1"),
        occurred_at_us: Some(-1),
        payload_error: Some("a reason"),
        catalogue: Some("fp"),
        raw: b"\x00\xffraw",
        salt: Some(&[5; 32]),
        commitment: Some(&[6; 32]),
        batch_id: 7,
        row_hash: &[9; 32],
    }
}

#[test]
fn every_column_set_and_every_optional_one_null() {
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
    round_trip(&[full(), nulls]);
}

#[test]
fn a_null_in_a_required_column_and_a_short_tuple_are_refused() {
    let mut buf = CopyBuf::with_capacity(0);
    full().encode(&mut buf);
    let body = buf.finish();
    let mut fields = tuples(&body).remove(0);
    fields[0] = None;
    let e = RowView::parse(&fields, 1).expect_err("NULL stream");
    assert_eq!(
        e,
        CopyError::Value {
            field: 1,
            why: "NULL in a NOT NULL column"
        }
    );
    fields.pop();
    assert!(matches!(
        RowView::parse(&fields, 1),
        Err(CopyError::Fields { .. })
    ));
}

proptest! {
    #[test]
    fn any_row_round_trips(
        texts in proptest::collection::vec(".{0,12}", 8),
        opts in proptest::collection::vec(proptest::option::of(".{0,12}"), 12),
        ints in proptest::collection::vec(any::<i64>(), 2),
        count in any::<i32>(),
        times in proptest::collection::vec(-3_000_000_000_000_000i64..3_000_000_000_000_000, 3),
        occurred in any::<bool>(),
        raw in proptest::collection::vec(any::<u8>(), 0..40),
    ) {
        let o = |i: usize| opts[i].as_deref();
        let row = RowView {
            stream: &texts[0],
            stream_seq: ints[0],
            published_at_us: times[0],
            received_at_us: times[1],
            subject: &texts[1],
            delivery_count: count,
            headers: o(0),
            envelope: o(1),
            event_id: o(2),
            event_type: o(3),
            event_version: o(4),
            status: &texts[2],
            errors: o(5),
            unknown_fields: o(6),
            payload: o(7),
            account_number: o(8),
            occurred_at_us: occurred.then_some(times[2]),
            payload_error: o(9),
            catalogue: o(10),
            raw: &raw,
            salt: occurred.then_some(&raw[..]),
            commitment: None,
            batch_id: ints[1],
            row_hash: texts[3].as_bytes(),
        };
        round_trip(&[row, full()]);
    }
}

/// A record's canonical encoding, made through its row view, is byte for byte the one its
/// fields give when mapped one by one (encodings 3 and 2, a message with headers, an id and a
/// payload).
#[test]
fn a_records_encoding_through_its_view_is_its_fields_encoding() {
    use crate::row::canon::Canon;
    use crate::row::record::{record, Meta, Naming};
    let raw = bytes::Bytes::from_static(br#"{"specversion":"1.0","type":"account.occupied-v1","id":"i-1","time":"2026-01-02T03:04:05.678901Z","data":{"account_number":"A-1","x":1}}"#);
    let meta = Meta {
        stream: std::sync::Arc::from("S"),
        stream_seq: 41,
        published_at: chrono::DateTime::from_timestamp_micros(1_700_000_000_123_456)
            .unwrap_or_default(),
        subject: "events.account".into(),
        delivery_count: 2,
        headers: vec![("Nats-Msg-Id".into(), "m-1".into())],
    };
    for v2 in [false, true] {
        let mut r = record(
            meta.clone(),
            raw.clone(),
            &Naming::default(),
            chrono::Utc::now(),
        );
        if v2 {
            r.as_encoding_2();
        }
        let mut by_field = Canon {
            stream: &r.stream,
            stream_seq: r.stream_seq,
            published_at_us: r.published_at.timestamp_micros(),
            received_at_us: r.received_at.timestamp_micros(),
            subject: &r.subject,
            delivery_count: r.delivery_count,
            headers: r.headers.as_deref(),
            envelope: r.envelope,
            event_id: r.event_id.as_deref(),
            event_type: r.event_type.as_deref(),
            event_version: r.event_version.as_deref(),
            status: r.status.as_str(),
            errors: r.errors.as_deref(),
            unknown_fields: r.unknown_fields.as_deref(),
            account_number: r.account_number.as_deref(),
            occurred_at_us: r.occurred_at.map(|t| t.timestamp_micros()),
            payload: r.payload.as_ref().map(|p| (p.start as u64, p.end as u64)),
            payload_error: r.payload_error.as_deref(),
            catalogue: Some(r.catalogue),
            raw: &r.raw,
            salt: (!v2).then_some(&r.salt[..]),
            commitment: None,
        };
        by_field.commitment = by_field.committed();
        assert!(r.payload.is_some() && r.event_id.is_some() && r.headers.is_some());
        assert_eq!(r.canon().encode(), by_field.encode(), "encoding 2: {v2}");
        assert_eq!(r.row_hash, by_field.hash(), "encoding 2: {v2}");
    }
}
