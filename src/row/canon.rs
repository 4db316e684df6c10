//! The leaf encoding of a row (versions 1, 2 and 3) is the auditor's crate's
//! ([`event_audit_proof::canon`]), so that the daemon and the offline verifier share one
//! definition; here, the daemon's side of it: the errors column's canonical JSON from the
//! decoder's field errors.

pub use event_audit_proof::canon::*;

use crate::decode::catalogue::rt::FieldError;

/// Canonical JSON for the errors column.
pub(crate) fn canonical_errors(errors: &[FieldError]) -> Option<String> {
    if errors.is_empty() {
        return None;
    }
    serde_json::to_string(errors).ok()
}
