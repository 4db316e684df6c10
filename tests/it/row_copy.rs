//! One definition of the row, against PostgreSQL: rows written through the writer's binary COPY
//! (`RowView::encode`, what the sink sends) are read back through the walk's COPY parser
//! (`Tuples`, what `verify` reads) and through the row read by name (`StoredRow`, what `prove`
//! reads), and each is the row written, field by field.

use crate::support::TestDb;
use event_audit::test_support::db::Db;
use event_audit::test_support::row::columns;
use event_audit::test_support::row::pgcopy::CopyBuf;
use event_audit::test_support::row::view::RowView;
use event_audit::test_support::verify::copy::Tuples;
use event_audit::test_support::verify::store::stored_row;
use futures::StreamExt;
use sqlx::postgres::PgPoolCopyExt;

/// Two rows: every column set (jsonb as PostgreSQL prints it, so that its text comes back
/// byte for byte), and every NULL-able column NULL.
fn rows<'a>(hash: &'a [u8; 32]) -> Vec<RowView<'a>> {
    let full = RowView {
        stream: "ROWCOPY",
        stream_seq: 1,
        published_at_us: 1_764_000_000_123_456,
        received_at_us: 1_764_000_001_000_000,
        subject: "rowcopy.account.created",
        delivery_count: 2,
        headers: Some(r#"{"Nats-Msg-Id": ["m-1"]}"#),
        envelope: Some("cloudevents"),
        event_id: Some("id-1"),
        event_type: Some("account.created"),
        event_version: Some("v1"),
        status: "decoded",
        errors: Some(r#"[{"code": "x", "path": "a"}]"#),
        unknown_fields: Some(r#"["a.b"]"#),
        payload: Some(r#"{"account_number": "A-1"}"#),
        account_number: Some("A-1"),
        occurred_at_us: Some(1_763_999_999_000_001),
        payload_error: Some("why"),
        catalogue: Some("fingerprint"),
        raw: b"\x00\x01raw bytes\xff",
        salt: Some(&[3; 32]),
        commitment: Some(&[4; 32]),
        batch_id: 5,
        row_hash: hash,
    };
    let nulls = RowView {
        stream_seq: 2,
        headers: None,
        envelope: None,
        event_id: None,
        event_type: None,
        event_version: None,
        status: "malformed",
        errors: None,
        unknown_fields: None,
        payload: None,
        account_number: None,
        occurred_at_us: None,
        payload_error: None,
        catalogue: None,
        salt: None,
        commitment: None,
        ..full
    };
    vec![full, nulls]
}

#[tokio::test]
async fn rows_written_by_the_writer_read_back_the_same_through_both_readers() {
    let db = TestDb::create().await;
    let hash = [7u8; 32];
    let written = rows(&hash);
    let mut buf = CopyBuf::with_capacity(0);
    for r in &written {
        r.encode(&mut buf);
    }
    let mut copy = db
        .pool
        .copy_in_raw(&format!(
            "COPY audit.events ({}) FROM STDIN WITH (FORMAT binary)",
            columns::copy_list()
        ))
        .await
        .expect("start COPY");
    copy.send(buf.finish()).await.expect("COPY");
    copy.finish().await.expect("finish COPY");

    // The walk's reader: `link_seq`, then the row, as `verify` streams them.
    let cols: Vec<String> = columns::EVENTS
        .iter()
        .map(|c| format!("e.{}", c.name))
        .collect();
    let sql = format!(
        "COPY (SELECT 0::int8, {} FROM audit.events e WHERE e.stream = 'ROWCOPY' \
         ORDER BY e.stream_seq) TO STDOUT (FORMAT binary)",
        cols.join(", ")
    );
    let mut out = db.pool.copy_out_raw(&sql).await.expect("COPY out");
    let mut tuples = Tuples::new();
    while let Some(chunk) = out.next().await {
        tuples.push(&chunk.expect("chunk"));
    }
    let mut read = 0;
    while let Some((link_seq, row)) = tuples.next_row().expect("a tuple") {
        assert_eq!(link_seq, 0);
        assert_eq!(row, written[read], "the COPY reader, row {read}");
        read += 1;
    }
    tuples.finish().expect("whole stream");
    assert_eq!(read, written.len(), "rows read back");

    // The reader by name.
    let store = Db::from_pool(db.pool.clone());
    for r in &written {
        let stored = stored_row(&store, r.stream, r.stream_seq)
            .await
            .expect("read by name")
            .expect("the row");
        assert_eq!(stored.view(), *r, "the reader by name");
    }
}
