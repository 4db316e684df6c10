//! A re-verdict: a stored event whose verdict changed when judged again by another catalogue
//! (`reprocess`). Its canonical encoding and hash, the digest of a run's re-verdicts, and the
//! hash chaining the runs' ends — shared by `reprocess` (which writes them) and `verify` (which
//! recomputes them). Pure.
//!
//! Encoding v1: the tag `reverdict v1`, then each field length-prefixed (u32 big-endian; a
//! missing value is length `u32::MAX`): run id, stream, stream sequence, bus time (µs), catalogue
//! fingerprint, old status, new status, errors (canonical JSON), unknown fields (canonical JSON).

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

/// One re-verdict row of `audit.reverdicts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reverdict {
    pub(crate) run_id: i64,
    pub(crate) stream: String,
    pub(crate) stream_seq: i64,
    pub(crate) published_at: DateTime<Utc>,
    pub(crate) catalogue: String,
    pub(crate) old_status: String,
    pub(crate) status: String,
    /// Canonical JSON of `[FieldError]`, `None` when there are none.
    pub(crate) errors: Option<String>,
    /// Canonical JSON of `[path]`, `None` when there are none.
    pub(crate) unknown_fields: Option<String>,
}

fn field(h: &mut Sha256, v: Option<&[u8]>) {
    match v {
        None => h.update(u32::MAX.to_be_bytes()),
        Some(b) => {
            h.update(u32::try_from(b.len()).unwrap_or(u32::MAX - 1).to_be_bytes());
            h.update(b);
        }
    }
}

impl Reverdict {
    /// SHA-256 of the canonical encoding.
    pub(crate) fn hash(&self) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(b"reverdict v1");
        field(&mut h, Some(&self.run_id.to_be_bytes()));
        field(&mut h, Some(self.stream.as_bytes()));
        field(&mut h, Some(&self.stream_seq.to_be_bytes()));
        field(
            &mut h,
            Some(&self.published_at.timestamp_micros().to_be_bytes()),
        );
        field(&mut h, Some(self.catalogue.as_bytes()));
        field(&mut h, Some(self.old_status.as_bytes()));
        field(&mut h, Some(self.status.as_bytes()));
        field(&mut h, self.errors.as_deref().map(str::as_bytes));
        field(&mut h, self.unknown_fields.as_deref().map(str::as_bytes));
        h.finalize().into()
    }
}

/// The hash closing a run: `SHA-256(prev ‖ run_id ‖ rows ‖ changed ‖ digest)`, where `rows` is
/// how many rows the run judged, `changed` how many re-verdicts it stored, `digest` the SHA-256
/// over those re-verdicts' hashes in (stream, sequence, bus time) order and `prev` the previous
/// closed run's hash (32 zero bytes for the first).
pub(crate) fn run_hash(
    prev: &[u8],
    run_id: i64,
    rows: i64,
    changed: i64,
    digest: &[u8],
) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(prev);
    h.update(run_id.to_be_bytes());
    h.update(rows.to_be_bytes());
    h.update(changed.to_be_bytes());
    h.update(digest);
    h.finalize().into()
}

/// The closed runs' end hashes in chain order (from the zero hash, each run following the one
/// whose hash it names as previous): the leaves of the re-verdict log's Merkle tree. The walk
/// stops where the chain does (a fork or a gap leaves the rest out; `verify` reports those).
pub(crate) fn chain_order(ends: &[(Vec<u8>, Vec<u8>)]) -> Vec<[u8; 32]> {
    let by_prev: std::collections::HashMap<&[u8], &[u8]> = ends
        .iter()
        .map(|(p, h)| (p.as_slice(), h.as_slice()))
        .collect();
    let mut out = Vec::new();
    let mut prev: &[u8] = &[0u8; 32];
    while let Some(h) = by_prev.get(prev) {
        let Ok(hash) = <[u8; 32]>::try_from(*h) else {
            break;
        };
        if out.len() >= ends.len() {
            break;
        }
        out.push(hash);
        prev = h;
    }
    out
}

/// Canonical text of a jsonb errors or unknown-fields value read back from PostgreSQL (key order
/// and spacing are jsonb's): parsed and written again the way the writer wrote it.
pub(crate) fn recanonical_errors(jsonb_text: Option<&str>) -> Option<String> {
    let errors: Vec<crate::decode::catalogue::rt::FieldError> =
        serde_json::from_str(jsonb_text?).ok()?;
    super::canon::canonical_errors(&errors)
}

/// See [`recanonical_errors`].
pub(crate) fn recanonical_strings(jsonb_text: Option<&str>) -> Option<String> {
    let items: Vec<String> = serde_json::from_str(jsonb_text?).ok()?;
    super::canon::canonical_strings(&items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_covers_every_field() {
        let r = Reverdict {
            run_id: 1,
            stream: "S".into(),
            stream_seq: 2,
            published_at: DateTime::UNIX_EPOCH,
            catalogue: "abc".into(),
            old_status: "invalid".into(),
            status: "decoded".into(),
            errors: None,
            unknown_fields: Some(r#"["x"]"#.into()),
        };
        let base = r.hash();
        let mut o = r.clone();
        o.status = "invalid".into();
        assert_ne!(o.hash(), base);
        let mut o = r.clone();
        o.errors = Some(String::new());
        assert_ne!(o.hash(), base);
        let mut o = r.clone();
        o.catalogue = "abd".into();
        assert_ne!(o.hash(), base);
        assert_eq!(r.hash(), base);
        let text = r#"[{"code": "missing_field", "path": "a", "message": "a: required field is missing"}]"#;
        assert_eq!(
            recanonical_errors(Some(text)).as_deref(),
            Some(
                r#"[{"path":"a","code":"missing_field","message":"a: required field is missing"}]"#
            )
        );
        // A key added to a stored errors object does not vanish in the re-canonicalisation: the
        // text no longer reads as errors at all (so the row or re-verdict no longer hashes).
        let injected = r#"[{"code": "missing_field", "path": "a", "message": "m", "note": "x"}]"#;
        assert_eq!(recanonical_errors(Some(injected)), None);
    }
}
