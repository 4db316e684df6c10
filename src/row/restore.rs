//! A restore of the log's leaves from a copy, and the rows it writes. After a database is
//! restored from a backup that is behind the last checkpoint the log's key signed, the leaves
//! it lost are taken from a copy of the log's tiles (its own tiles directory, or an auditor's
//! mirror) that the signed checkpoint vouches for. Each becomes a row of stream
//! [`LEAVES`] whose contents are lost but whose row hash and leaf index (its sequence) are kept,
//! so the tree is again the tree that was signed and witnessed; then the restore is recorded as
//! a row of its own, of stream [`STREAM`] (a name JetStream cannot give a stream), whose raw
//! message is the record's JSON, so that the witnesses cosign it and `verify` names it. `verify`
//! accepts a restored leaf's row only when a restore record placed after it covers its leaf
//! index. Pure.

use bytes::Bytes;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::record::Record;

/// The stream of restore records.
pub(crate) const STREAM: &str = "event-audit.restores";
/// The subject and the event type of a restore record.
pub(crate) const SUBJECT: &str = "event-audit.restore";
/// The stream of the rows of restored leaves (their sequence is their leaf index).
pub(crate) const LEAVES: &str = "event-audit.restored";
/// The subject and event type of a restored leaf's row.
pub(crate) const LEAF_SUBJECT: &str = "event-audit.restored-leaf";
/// The event version of both.
pub(crate) const VERSION: &str = "v1";

/// The record (its raw message is this, as compact JSON in field order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Restore {
    /// The record's number: its stream sequence in [`STREAM`], from 1.
    pub(crate) restore: i64,
    /// When it was made (RFC 3339, UTC, microseconds).
    pub(crate) at: String,
    /// Why (what the operator or the daemon gave).
    pub(crate) reason: String,
    /// The copy the leaves came from: a directory or a URL, credentials never shown.
    pub(crate) from: String,
    /// The tree the database held before: its size (the first restored leaf's index).
    pub(crate) database_size: u64,
    /// The restored leaves: `[database_size, size)`.
    pub(crate) size: u64,
    /// The signed checkpoint the copy's leaves make, its root in lowercase hex: the tree the
    /// log holds again.
    pub(crate) root: String,
    /// SHA-256 of the restored leaves' row hashes (32 bytes each, in leaf order), lowercase hex.
    pub(crate) row_hashes_sha256: String,
}

impl Restore {
    /// The record's JSON (the record row's raw message).
    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The record a raw message holds, if it is one.
    pub(crate) fn parse(raw: &[u8]) -> Option<Restore> {
        serde_json::from_slice(raw).ok()
    }

    /// The leaf indexes it restored.
    pub(crate) fn leaves(&self) -> std::ops::Range<u64> {
        self.database_size..self.size
    }

    /// The row of the log that records this restore, made at `now` (a version 3 row, its raw
    /// message the record, the payload its whole text).
    pub(crate) fn row(&self, now: DateTime<Utc>) -> Record {
        let name = (SUBJECT, VERSION);
        Record::own_record(STREAM, self.restore, now, name, self.to_json())
    }
}

/// The row of restored leaf `index` whose row hash was `row_hash`, made at `now`: no contents
/// (nothing but its place and its hash is known), written without salt or commitment, its
/// stored row hash the leaf.
pub(crate) fn leaf_row(index: u64, row_hash: [u8; 32], now: DateTime<Utc>) -> Record {
    let seq = i64::try_from(index).unwrap_or(i64::MAX);
    let mut rec = Record::own(LEAVES, seq, now, (LEAF_SUBJECT, VERSION), Bytes::new());
    rec.occurred_at = None;
    rec.delivery_count = 0;
    rec.v2 = true;
    rec.row_hash = row_hash;
    rec
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> Restore {
        Restore {
            restore: 1,
            at: "2026-11-28T00:00:00.000000Z".into(),
            reason: "database restored from the nightly backup".into(),
            from: "/var/lib/event-audit/tiles".into(),
            database_size: 3000,
            size: 5000,
            root: "ab".repeat(32),
            row_hashes_sha256: "cd".repeat(32),
        }
    }

    #[test]
    fn a_record_is_a_v3_row_that_reads_back() {
        let r = record();
        let rec = r.row(Utc::now());
        assert_eq!(rec.canon().version(), 3);
        assert_eq!(rec.payload_text(), Some(r.to_json().as_str()));
        assert_eq!(Restore::parse(&rec.raw), Some(r.clone()));
        assert_eq!(r.leaves(), 3000..5000);
        assert_eq!(Restore::parse(b"{\"restore\":1}"), None);
    }

    #[test]
    fn a_restored_leaf_keeps_its_hash_and_nothing_else() {
        let rec = leaf_row(3001, [7; 32], Utc::now());
        assert_eq!(rec.row_hash, [7; 32]);
        assert_eq!(&*rec.stream, LEAVES);
        assert_eq!(rec.stream_seq, 3001);
        assert!(rec.raw.is_empty() && rec.payload.is_none() && rec.headers.is_none());
        let view = rec.view(1);
        assert!(view.salt.is_none() && view.commitment.is_none());
    }
}
