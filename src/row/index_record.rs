//! An account index record: the index root after an update and the log size it covers, written
//! as a row of the log itself (stream [`STREAM`]), so the checkpoint that covers it commits the
//! index, and the witnesses cosign it like any row. Its raw message is the record's compact
//! JSON, in field order. Pure.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::record::Record;

/// The stream of index records: it holds a dot, which no JetStream stream name can.
pub(crate) const STREAM: &str = "event-audit.index";
/// The subject and the event type of an index record.
pub(crate) const SUBJECT: &str = "event-audit.index";
/// The event version of an index record.
pub(crate) const VERSION: &str = "v1";

/// The record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct IndexRecord {
    /// The index format (`event-audit-account-index/1`).
    pub(crate) index: String,
    /// The record's number: its stream sequence in [`STREAM`], from 1.
    pub(crate) seq: i64,
    /// The log's leaves `[0, tree_size)` are indexed.
    pub(crate) tree_size: u64,
    /// The index root, lowercase hex.
    pub(crate) root: String,
    /// How many labels the index holds.
    pub(crate) labels: u64,
    /// The index key's public half (base64 of 32 bytes): each label is its VRF output of an
    /// identifier (ECVRF-EDWARDS25519-SHA512-TAI), which its proof shows to anyone.
    pub(crate) vrf_key: String,
}

impl IndexRecord {
    /// The record's JSON (the row's raw message).
    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The row of the log that holds this record, made at `now`.
    pub(crate) fn row(&self, now: DateTime<Utc>) -> Record {
        Record::own_record(STREAM, self.seq, now, (SUBJECT, VERSION), self.to_json())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_a_v3_row_that_reads_back() {
        let r = IndexRecord {
            index: crate::tlog::index::FORMAT.into(),
            seq: 2,
            tree_size: 40,
            root: "ab".repeat(32),
            labels: 7,
            vrf_key: "AAAA".into(),
        };
        let rec = r.row(Utc::now());
        assert_eq!(rec.canon().version(), 3);
        assert_eq!(rec.payload_text(), Some(r.to_json().as_str()));
        assert_eq!(
            r.to_json(),
            format!(
                "{{\"index\":\"event-audit-account-index/1\",\"seq\":2,\"tree_size\":40,\"root\":\"{}\",\"labels\":7,\"vrf_key\":\"AAAA\"}}",
                "ab".repeat(32)
            )
        );
    }
}
