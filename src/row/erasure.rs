//! An erasure record: when, why and which rows had their personal data erased, written as a
//! row of the log itself (stream [`STREAM`], a name JetStream cannot give a stream), so the
//! chain, the Merkle tree, the signed checkpoints, the witnesses and the mirrors hold it like
//! any event. Its raw message is the record's JSON; `verify` reads the rows it names from there
//! and accepts their missing contents only because of it. Pure.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::record::Record;

/// The stream of erasure records: it holds a dot, which no JetStream stream name can.
pub(crate) const STREAM: &str = "event-audit.erasures";
/// The subject and the event type of an erasure record.
pub(crate) const SUBJECT: &str = "event-audit.erasure";
/// The event version of an erasure record.
pub(crate) const VERSION: &str = "v1";

/// One erased row, as the record names it: its place in the log and the row hash it had.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Erased {
    pub(crate) stream: String,
    pub(crate) stream_seq: i64,
    /// The row hash, lowercase hex.
    pub(crate) row_hash: String,
}

/// The record (its raw message is this, as compact JSON in field order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Erasure {
    /// The record's number: its stream sequence in [`STREAM`], from 1.
    pub(crate) erasure: i64,
    /// When it was made (RFC 3339, UTC, microseconds).
    pub(crate) at: String,
    /// Why, as the operator gave it.
    pub(crate) reason: String,
    /// What was asked for, never the account number itself: `account` or
    /// `stream <S> seq <A>..<B>`.
    pub(crate) selector: String,
    /// The rows it names one by one (empty for an erasure by publication time).
    pub(crate) rows: Vec<Erased>,
    /// An erasure of a person: one commitment per identifier erased, lowercase hex of
    /// SHA-256(`event-audit erasure subject v1\n` ‖ opening ‖ identifier), the 32-byte opening
    /// handed to whoever made the request; never the identifier itself ([`commit`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) subjects: Vec<String>,
    /// An erasure by publication time (payload retention, or a pruned partition): every row
    /// published in the range is covered, whether named or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) published: Option<Published>,
    /// A pruned partition: where its rows were archived before the database dropped them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) archive: Option<Archived>,
}

/// The rows of an erasure by publication time: published at or after `from` (when given) and
/// before `before`, how many there were and a digest of their row hashes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Published {
    /// RFC 3339, UTC, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) from: Option<String>,
    /// RFC 3339, UTC, microseconds.
    pub(crate) before: String,
    /// How many rows the erasure changed.
    pub(crate) count: i64,
    /// SHA-256 of their 32-byte row hashes in order of batch, stream and sequence, lowercase
    /// hex (for a pruned partition, the archive's `row_hashes_sha256`).
    pub(crate) row_hashes_sha256: String,
}

impl Published {
    /// The range in Unix microseconds: `[from, before)`, `None` when a bound does not parse.
    pub(crate) fn range_us(&self) -> Option<(Option<i64>, i64)> {
        let us = |t: &str| {
            DateTime::parse_from_rfc3339(t)
                .ok()
                .map(|d| d.timestamp_micros())
        };
        let from = match &self.from {
            Some(f) => Some(us(f)?),
            None => None,
        };
        Some((from, us(&self.before)?))
    }
}

/// A pruned partition's archive: the archive manifest's SHA-256 and the partition's name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Archived {
    pub(crate) partition: String,
    /// SHA-256 of the partition's archive file (the manifest's `sha256`), lowercase hex.
    pub(crate) file_sha256: String,
    /// The file's name in the archive directory.
    pub(crate) file: String,
}

/// The domain of a subject's commitment.
pub(crate) const SUBJECT_DOMAIN: &[u8] = b"event-audit erasure subject v1\n";

/// The commitment to one erased identifier: SHA-256(domain ‖ opening ‖ identifier).
pub(crate) fn commit(opening: &[u8; 32], identifier: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(SUBJECT_DOMAIN);
    h.update(opening);
    h.update(identifier.as_bytes());
    h.finalize().into()
}

/// A time as records write it: RFC 3339, UTC, microseconds.
pub(crate) fn stamp(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

impl Erasure {
    /// The record's JSON (the erasure row's raw message).
    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The record a raw message holds, if it is one.
    pub(crate) fn parse(raw: &[u8]) -> Option<Erasure> {
        serde_json::from_slice(raw).ok()
    }

    /// The row of the log that records this erasure, made at `now` (a version 3 row, its raw
    /// message the record, the payload its whole text).
    pub(crate) fn row(&self, now: DateTime<Utc>) -> Record {
        let name = (SUBJECT, VERSION);
        Record::own_record(STREAM, self.erasure, now, name, self.to_json())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_a_v3_row_that_reads_back() {
        let e = Erasure {
            erasure: 3,
            at: "2026-11-26T00:00:00.000000Z".into(),
            reason: "request 7".into(),
            selector: "account".into(),
            rows: vec![Erased {
                stream: "S".into(),
                stream_seq: 9,
                row_hash: "ab".repeat(32),
            }],
            subjects: Vec::new(),
            published: None,
            archive: None,
        };
        let rec = e.row(Utc::now());
        assert_eq!(rec.canon().version(), 3);
        assert_eq!(rec.payload_text(), Some(e.to_json().as_str()));
        assert_eq!(Erasure::parse(&rec.raw), Some(e.clone()));
        assert_eq!(Erasure::parse(b"{\"erasure\":1}"), None);
        // A record without the newer fields is the same JSON as before them.
        assert!(!e.to_json().contains("published"));
    }

    #[test]
    fn an_erasure_by_time_reads_back_with_its_range() {
        let e = Erasure {
            erasure: 4,
            at: "2026-11-26T00:00:00.000000Z".into(),
            reason: "retention: payloads_for 400d".into(),
            selector: "published before 2025-10-22T00:00:00.000000Z".into(),
            rows: Vec::new(),
            subjects: Vec::new(),
            published: Some(Published {
                from: None,
                before: "2025-10-22T00:00:00.000000Z".into(),
                count: 12,
                row_hashes_sha256: "cd".repeat(32),
            }),
            archive: None,
        };
        let back = Erasure::parse(e.to_json().as_bytes()).expect("parses");
        assert_eq!(back, e);
        let (from, before) = back.published.and_then(|p| p.range_us()).expect("range");
        assert_eq!(from, None);
        assert_eq!(before, 1_761_091_200_000_000);
    }
}
