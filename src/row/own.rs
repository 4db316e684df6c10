//! The rows the log makes itself (erasure and restore records, restored leaves), made in one
//! place: [`Record::own`] and [`Record::own_record`]. Pure.

use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Utc};

use super::record::{range_in, Record};

/// The streams of the log's own records that no erasure by range or by time empties: the
/// erasure records and the account index's records (they hold no personal data, and what
/// they state is evidence).
pub(crate) const KEPT: [&str; 2] = [super::erasure::STREAM, super::index_record::STREAM];
use crate::decode::catalogue;
use crate::decode::verdict::Status;

impl Record {
    /// A row the log makes itself (an erasure or restore record, a restored leaf), made at
    /// `now` (to the microsecond): named `subject` `version` on `stream` at `seq`, judged an
    /// unknown type, holding `raw` but no payload column. Not sealed.
    pub(crate) fn own(
        stream: &str,
        seq: i64,
        now: DateTime<Utc>,
        (subject, version): (&str, &str),
        raw: Bytes,
    ) -> Record {
        let now = DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now);
        Record {
            stream: Arc::from(stream),
            stream_seq: seq,
            published_at: now,
            received_at: now,
            subject: subject.to_owned(),
            delivery_count: 1,
            headers: None,
            envelope: None,
            event_id: None,
            event_type: Some(subject.to_owned()),
            event_version: Some(version.to_owned()),
            status: Status::UnknownType,
            errors: None,
            unknown_fields: None,
            payload: None,
            payload_error: None,
            catalogue: catalogue::FINGERPRINT,
            account_number: None,
            occurred_at: Some(now),
            raw,
            salt: rand::random(),
            commitment: [0; 32],
            v2: false,
            id_digest: None,
            row_hash: [0; 32],
            catalogue_index: None,
            error_codes: Vec::new(),
            unknown_field_count: 0,
            unknown_kinds: Vec::new(),
            declared_seen: 0,
        }
    }

    /// The row of one of the log's own records ([`Record::own`]): a version 3 row, its raw
    /// message the record's JSON, the payload its whole text. Sealed.
    pub(crate) fn own_record(
        stream: &str,
        seq: i64,
        now: DateTime<Utc>,
        name: (&str, &str),
        json: String,
    ) -> Record {
        let mut rec = Record::own(stream, seq, now, name, Bytes::from(json));
        let text = std::str::from_utf8(&rec.raw).unwrap_or_default();
        rec.payload = range_in(&rec.raw, text);
        rec.seal();
        rec
    }
}
