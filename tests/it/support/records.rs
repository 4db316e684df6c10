//! Audit rows built as ingest builds them, without the bus: the one place tests write a
//! message's bus metadata ([`meta`]).

use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Utc};

use event_audit::test_support::dev::sample::Mix;
use event_audit::test_support::row::record::{record, Meta, Naming, Record};

/// Bus metadata of message `seq` of `stream` on subject `STREAM.load`, published at
/// `published_at`, delivered `delivery_count` times, without headers.
pub(crate) fn meta(
    stream: &str,
    seq: u64,
    published_at: DateTime<Utc>,
    delivery_count: i64,
) -> Meta {
    Meta {
        stream: Arc::from(stream),
        stream_seq: seq,
        published_at,
        subject: format!("{stream}.load"),
        delivery_count,
        headers: vec![],
    }
}

/// Records of the load mix (seed 11) as `ingest` builds them, for stream `stream`, sequences
/// `1..=n`, published a millisecond apart from `t0` and received a second after it.
pub(crate) fn records(
    stream: &str,
    n: usize,
    delivery_count: i64,
    t0: DateTime<Utc>,
) -> Vec<Record> {
    let naming = Naming::default();
    Mix::new(n, 11)
        .enumerate()
        .map(|(i, s)| {
            let published = t0 + chrono::Duration::milliseconds(i as i64);
            record(
                meta(stream, i as u64 + 1, published, delivery_count),
                Bytes::from(s.bytes),
                &naming,
                t0 + chrono::Duration::seconds(1),
            )
        })
        .collect()
}

/// Now, at the microsecond precision JetStream metadata and the column have.
pub(crate) fn now_us() -> DateTime<Utc> {
    DateTime::from_timestamp_micros(Utc::now().timestamp_micros()).expect("now")
}
