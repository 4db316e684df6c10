//! Record: one bus message plus its verdict becomes one audit-log row, with the canonical
//! encoding and SHA-256 that the hash chain covers. Pure: no I/O.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use super::canon::{
    canonical_errors, canonical_headers, canonical_strings, clean, Canon, SALT_LEN,
};
use super::jsonb;
use crate::decode::catalogue;
use crate::decode::catalogue::kind::JsonKind;
use crate::decode::catalogue::rt::{ErrorCode, FieldError};
use crate::decode::verdict::{self, Status};

/// Where a message came from on the bus.
#[derive(Debug, Clone)]
pub struct Meta {
    pub stream: Arc<str>,
    pub stream_seq: u64,
    /// JetStream's time for the message (microsecond precision, like the column).
    pub published_at: DateTime<Utc>,
    pub subject: String,
    pub delivery_count: i64,
    pub headers: Vec<(String, String)>,
}

/// How a message becomes a record: the name of a message without an envelope, and the row
/// encoding.
#[derive(Debug, Clone, Default)]
pub struct Naming {
    /// Subject prefix to strip (`events.` makes `events.account.created-v1` name the event).
    pub(crate) subject_prefix: Option<String>,
    /// Write rows in encoding 2, as before version 3: set only by development builds, for the
    /// benchmark that compares the two (`app`, `EVENT_AUDIT_DEV_ROW_ENCODING=2`).
    pub(crate) encoding_2: bool,
}

/// The header that names a message without an envelope.
pub(crate) const EVENT_TYPE_HEADER: &str = "Event-Type";

/// The key under which the headers column keeps, base64-encoded, a header block the bus
/// client cannot parse.
pub(crate) const UNPARSED_HEADER_BLOCK: &str = "Nats-Unparsed-Header-Block-Base64";

/// Headers kept with the row: at most this many, each value cut to `MAX_HEADER_VALUE` bytes.
const MAX_HEADERS: usize = 32;
const MAX_HEADER_VALUE: usize = 1024;

/// One row of `audit.events`, ready to be written. Its own type, not the row view, because it
/// owns what the decoding produced and carries what the sink needs beside the columns (the
/// envelope id's digest, the drift observations, the catalogue entry); [`Record::view`] is
/// where it becomes the row.
#[derive(Debug, Clone)]
pub struct Record {
    pub(crate) stream: Arc<str>,
    pub(crate) stream_seq: i64,
    pub(crate) published_at: DateTime<Utc>,
    pub(crate) received_at: DateTime<Utc>,
    pub(crate) subject: String,
    pub(crate) delivery_count: i32,
    /// Canonical JSON: `{"name": ["value", ...]}`, keys sorted.
    pub(crate) headers: Option<String>,
    pub(crate) envelope: Option<&'static str>,
    pub(crate) event_id: Option<String>,
    pub(crate) event_type: Option<String>,
    pub(crate) event_version: Option<String>,
    pub(crate) status: Status,
    /// Canonical JSON of `[FieldError]`, `None` when there are none.
    pub(crate) errors: Option<String>,
    /// Canonical JSON of `[path]`, `None` when there are none.
    pub(crate) unknown_fields: Option<String>,
    /// The payload object's byte range in `raw`, when it is stored as jsonb.
    pub(crate) payload: Option<std::ops::Range<usize>>,
    /// Why a payload is not stored as jsonb (`code: reason`), never quoting it.
    pub(crate) payload_error: Option<String>,
    /// The fingerprint of the catalogue that gave the verdict.
    pub(crate) catalogue: &'static str,
    pub(crate) account_number: Option<String>,
    pub(crate) occurred_at: Option<DateTime<Utc>>,
    pub(crate) raw: Bytes,
    /// The salt of the row's commitment: 32 random bytes, stored beside `raw`.
    pub(crate) salt: [u8; SALT_LEN],
    /// The commitment to the personal columns (`Canon::opening`), set with the row hash.
    pub(crate) commitment: [u8; 32],
    /// Written in row encoding 2, as before version 3 (no salt, no commitment): only for tests
    /// of logs that hold rows of both ([`Record::as_encoding_2`]).
    pub(crate) v2: bool,
    /// SHA-256 of the event name and payload text: tells a duplicate id from a conflict.
    pub(crate) id_digest: Option<[u8; 32]>,
    pub(crate) row_hash: [u8; 32],
    /// For metrics: index of the known event version.
    pub(crate) catalogue_index: Option<u16>,
    /// For metrics: the codes of `errors` (empty, without allocating, for most messages).
    pub(crate) error_codes: Vec<ErrorCode>,
    pub(crate) unknown_field_count: usize,
    /// For drift: the JSON kind of each unknown field (same order as `unknown_fields`). Not
    /// stored in the row: aggregated per batch into `audit.field_observations`.
    pub(crate) unknown_kinds: Vec<JsonKind>,
    /// For drift: which declared top-level fields the payload has (bit = catalogue order).
    pub(crate) declared_seen: u64,
}

impl Record {
    /// The row's identity in the log and the order rows are written and chained in:
    /// (stream, stream sequence, bus time). A redelivery has the same key.
    pub(crate) fn log_key(&self) -> (&str, i64, DateTime<Utc>) {
        (&self.stream, self.stream_seq, self.published_at)
    }

    pub(crate) fn payload_text(&self) -> Option<&str> {
        let range = self.payload.clone()?;
        std::str::from_utf8(self.raw.get(range)?).ok()
    }

    /// The full event name, as `event_log.event` shows it.
    pub(crate) fn event_name(&self) -> Option<String> {
        match (&self.event_type, &self.event_version) {
            (Some(t), Some(v)) => Some(format!("{t}-{v}")),
            (Some(t), None) => Some(t.clone()),
            _ => None,
        }
    }

    /// The row as the hash covers it (encoding version 3), its commitment made from its
    /// opening.
    pub fn canon(&self) -> Canon<'_> {
        let mut c = self.canon_open();
        if self.v2 {
            c.salt = None;
        }
        c.commitment = c.committed();
        c
    }

    /// The record as row encoding 2 wrote it (a log holding rows written before version 3).
    pub fn as_encoding_2(&mut self) {
        self.v2 = true;
        self.seal();
    }

    /// Sets the commitment and the row hash from the record's columns.
    pub(crate) fn seal(&mut self) {
        let c = self.canon();
        let (commitment, hash) = (c.commitment.unwrap_or_default(), c.hash());
        self.commitment = commitment;
        self.row_hash = hash;
    }

    fn canon_open(&self) -> Canon<'_> {
        let payload = self
            .payload
            .as_ref()
            .map(|r| (r.start as u64, r.end as u64));
        Canon {
            salt: Some(&self.salt),
            commitment: None,
            ..self.columns(0, None).canon(payload)
        }
    }

    /// Keeps the payload out of the jsonb column (PostgreSQL refused it: `reason`), in `raw`
    /// only, and rehashes the row.
    pub(crate) fn refuse_payload(&mut self, reason: String) {
        self.payload = None;
        self.payload_error = Some(reason);
        self.seal();
    }

    /// Keeps only what PostgreSQL cannot refuse (it refused this row although its payload
    /// passed): the bus facts, the status and `raw`. Every column derived from the message's
    /// content is dropped; `reason` goes to `payload_error`; the row is rehashed.
    pub(crate) fn reduce_to_raw(&mut self, reason: String) {
        self.headers = None;
        self.event_id = None;
        self.event_type = None;
        self.event_version = None;
        self.errors = None;
        self.unknown_fields = None;
        self.unknown_kinds.clear();
        self.payload = None;
        self.account_number = None;
        self.occurred_at = None;
        self.id_digest = None;
        self.payload_error = Some(reason);
        self.seal();
    }
}

impl Record {
    /// The row this record is written as, in batch `batch_id`: the one place where a record's
    /// fields become the columns of `audit.events`.
    pub fn view(&self, batch_id: i64) -> super::view::RowView<'_> {
        self.columns(batch_id, self.payload_text())
    }

    /// The row with the payload column `payload` (the hash covers the payload's place, not its
    /// text: the canonical encoding reads the record's columns with none).
    fn columns<'a>(&'a self, batch_id: i64, payload: Option<&'a str>) -> super::view::RowView<'a> {
        super::view::RowView {
            stream: &self.stream,
            stream_seq: self.stream_seq,
            published_at_us: self.published_at.timestamp_micros(),
            received_at_us: self.received_at.timestamp_micros(),
            subject: &self.subject,
            delivery_count: self.delivery_count,
            headers: self.headers.as_deref(),
            envelope: self.envelope,
            event_id: self.event_id.as_deref(),
            event_type: self.event_type.as_deref(),
            event_version: self.event_version.as_deref(),
            status: self.status.as_str(),
            errors: self.errors.as_deref(),
            unknown_fields: self.unknown_fields.as_deref(),
            payload,
            account_number: self.account_number.as_deref(),
            occurred_at_us: self.occurred_at.map(|t| t.timestamp_micros()),
            payload_error: self.payload_error.as_deref(),
            catalogue: Some(self.catalogue),
            raw: &self.raw,
            salt: (!self.v2).then_some(&self.salt[..]),
            commitment: (!self.v2).then_some(&self.commitment[..]),
            batch_id,
            row_hash: &self.row_hash,
        }
    }
}

/// A message whose NATS header block the bus client cannot parse, fetched by its stream
/// sequence: its payload is judged as usual, but the row is `malformed` with an
/// `invalid_headers` error first, and the headers column keeps the raw block, base64-encoded,
/// under [`UNPARSED_HEADER_BLOCK`].
pub(crate) fn record_unparsed(
    meta: Meta,
    header_block: &[u8],
    raw: Bytes,
    naming: &Naming,
    received_at: DateTime<Utc>,
) -> Record {
    use base64::Engine;
    let mut rec = record(meta, raw, naming, received_at);
    let mut errors: Vec<FieldError> = rec
        .errors
        .as_deref()
        .and_then(|e| serde_json::from_str(e).ok())
        .unwrap_or_default();
    errors.insert(
        0,
        FieldError {
            path: String::new(),
            code: ErrorCode::InvalidHeaders,
            message: "the NATS header block cannot be parsed by the bus client; it is kept \
                      base64-encoded in the headers column"
                .into(),
        },
    );
    rec.status = Status::Malformed;
    rec.errors = canonical_errors(&errors);
    rec.error_codes.insert(0, ErrorCode::InvalidHeaders);
    let block = base64::engine::general_purpose::STANDARD.encode(header_block);
    let headers = BTreeMap::from([(UNPARSED_HEADER_BLOCK.to_owned(), vec![block])]);
    rec.headers = canonical_headers(&headers);
    rec.seal();
    rec
}

/// The byte range of `part` within `whole`, when it is a slice of it.
pub(crate) fn range_in(whole: &[u8], part: &str) -> Option<std::ops::Range<usize>> {
    let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    let end = start + part.len();
    (end <= whole.len()).then_some(start..end)
}

/// Decides the event name for a message that has no envelope.
fn fallback_name<'a>(meta: &'a Meta, naming: &Naming) -> Option<&'a str> {
    if let Some((_, v)) = meta
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(EVENT_TYPE_HEADER))
    {
        return Some(v.as_str());
    }
    let prefix = naming.subject_prefix.as_deref()?;
    meta.subject
        .strip_prefix(prefix)
        .filter(|rest| !rest.is_empty())
}

/// Decodes one message and builds its row.
pub fn record(meta: Meta, raw: Bytes, naming: &Naming, received_at: DateTime<Utc>) -> Record {
    let name = fallback_name(&meta, naming).map(str::to_owned);
    let mut v = verdict::decode(&raw, name.as_deref());
    let unknown_kinds = std::mem::take(&mut v.unknown_kinds);
    let (event_type, event_version) = v.type_and_version();
    // What jsonb would refuse stays in `raw` only, with the reason.
    let (payload, payload_error) = match v.payload {
        None => (None, None),
        Some(p) => match jsonb::refusal(p) {
            Some(r) => (None, Some(format!("{}: {r}", r.code()))),
            None => (range_in(&raw, p), None),
        },
    };
    let id_digest = match (v.id.as_deref(), v.name.as_deref(), v.payload) {
        (Some(_), Some(name), Some(p)) => {
            let mut h = Sha256::new();
            h.update(name.as_bytes());
            h.update([0]);
            h.update(p.as_bytes());
            Some(h.finalize().into())
        }
        _ => None,
    };
    let mut headers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (k, val) in meta.headers.iter().take(MAX_HEADERS) {
        let mut val = val.as_str();
        if val.len() > MAX_HEADER_VALUE {
            let mut cut = MAX_HEADER_VALUE;
            while !val.is_char_boundary(cut) {
                cut -= 1;
            }
            val = &val[..cut];
        }
        headers.entry(clean(k)).or_default().push(clean(val));
    }
    let occurred_at = v
        .time
        .as_deref()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
        .and_then(|t| DateTime::from_timestamp_micros(t.timestamp_micros()));
    let mut rec = Record {
        stream: meta.stream,
        stream_seq: i64::try_from(meta.stream_seq).unwrap_or(i64::MAX),
        published_at: meta.published_at,
        received_at,
        subject: clean(&meta.subject),
        delivery_count: i32::try_from(meta.delivery_count).unwrap_or(i32::MAX),
        headers: canonical_headers(&headers),
        envelope: v.envelope.map(|e| e.as_str()),
        event_id: v.id.as_deref().map(clean),
        event_type: event_type.map(clean),
        event_version: event_version.map(clean),
        status: v.status,
        errors: canonical_errors(&v.errors),
        unknown_fields: canonical_strings(&v.unknown_fields),
        payload,
        payload_error,
        catalogue: catalogue::FINGERPRINT,
        account_number: v.account_number.as_deref().map(clean),
        occurred_at,
        id_digest,
        row_hash: [0; 32],
        catalogue_index: v.catalogue_index,
        error_codes: v.errors.iter().map(|e| e.code).collect(),
        unknown_field_count: v.unknown_fields.len(),
        unknown_kinds,
        declared_seen: v.declared_seen,
        raw: Bytes::new(),
        salt: rand::random(),
        commitment: [0; 32],
        v2: naming.encoding_2,
    };
    drop(v);
    rec.raw = raw;
    rec.seal();
    rec
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(subject: &str, headers: Vec<(String, String)>) -> Meta {
        Meta {
            stream: Arc::from("S"),
            stream_seq: 7,
            published_at: DateTime::from_timestamp_micros(1_700_000_000_000_000)
                .unwrap_or_default(),
            subject: subject.into(),
            delivery_count: 1,
            headers,
        }
    }

    #[test]
    fn bare_payload_named_by_header_or_subject() {
        let naming = Naming {
            subject_prefix: Some("events.".into()),
            ..Naming::default()
        };
        let raw = Bytes::from_static(br#"{"account_number":"A-1"}"#);
        let r = record(
            meta("events.account.occupied-v1", vec![]),
            raw.clone(),
            &naming,
            Utc::now(),
        );
        assert_eq!(r.status, Status::Decoded);
        assert_eq!(r.event_name().as_deref(), Some("account.occupied-v1"));
        assert_eq!(r.payload_text(), Some(r#"{"account_number":"A-1"}"#));
        let h = vec![("Event-Type".to_string(), "account.occupied-v1".to_string())];
        let r = record(meta("other", h), raw, &Naming::default(), Utc::now());
        assert_eq!(r.status, Status::Decoded);
        assert!(r
            .headers
            .as_deref()
            .is_some_and(|h| h.contains("Event-Type")));
    }

    #[test]
    fn hash_changes_with_any_column() {
        let raw = Bytes::from_static(br#"{"specversion":"1.0","type":"account.occupied-v1","id":"i","data":{"account_number":"A"}}"#);
        let r = record(meta("x", vec![]), raw, &Naming::default(), Utc::now());
        let base = r.canon().hash();
        assert_eq!(base, r.row_hash);
        // Version 3: a personal column is covered through the commitment.
        assert_eq!(r.canon().version(), 3);
        let mut c = r.canon();
        c.account_number = Some("B");
        assert_eq!(
            c.hash(),
            base,
            "the encoding holds the commitment, not the column"
        );
        assert_ne!(c.committed(), c.commitment);
        c.commitment = c.committed();
        assert_ne!(c.hash(), base);
        let mut c = r.canon();
        c.salt = None;
        assert_eq!(c.hash(), base, "erased: the hash still holds");
        assert!(c.opening().is_none());
        let mut c = r.canon();
        c.stream_seq += 1;
        assert_ne!(c.hash(), base);
        assert!(r.id_digest.is_some());
    }

    #[test]
    fn nul_payloads_stay_out_of_jsonb() {
        let raw = Bytes::from_static(br#"{"specversion":"1.0","type":"account.occupied-v1","id":"i","data":{"account_number":"A\u0000"}}"#);
        let r = record(meta("x", vec![]), raw, &Naming::default(), Utc::now());
        assert!(r.payload.is_none());
        assert!(r
            .payload_error
            .as_deref()
            .is_some_and(|e| e.starts_with("nul_character")));
        assert_eq!(r.account_number.as_deref(), Some("A\u{FFFD}"));
    }
}
