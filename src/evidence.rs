//! The evidence an auditor takes away, writer and checker together: a bundle of rows with their
//! leaf data and inclusion proofs against a signed checkpoint, its format and its strict check
//! ([`bundle`], pure, shared by `verify-proof`), and `prove`, which writes one from the
//! database's stored tree (`evidence::prove`).

pub use event_audit_proof::bundle;
pub(crate) mod complete;
pub(crate) mod index_consistency;
pub(crate) mod prove;
pub(crate) mod tlog_proof;
