//! What an auditor runs without PostgreSQL or NATS: the evidence bundle and its check
//! ([`bundle`], over the rows' leaf encoding, [`canon`]), the log's tiles in a directory or an
//! S3-compatible store ([`tiles`], [`blobs`]), a mirror that copies and checks them
//! ([`mirror`]), the key and policy files ([`keys`]), and the commands `verify-proof`, `mirror`
//! and `tiles fsck` ([`cli`]) that the binary `event-audit-proof` and the daemon both offer.
//! Its dependency tree holds neither sqlx nor async-nats: Cargo, not a test, keeps it so.

pub use event_audit_base::{config, files, http, logging, metrics, signal, tls};
pub use event_audit_tlog as tlog;

pub mod blobs;
pub mod bundle;
pub mod canon;
pub mod cli;
pub mod keys;
pub mod mirror;
pub mod tiles;

/// Bytes as lowercase hex: row hashes in reports and erasure records, signatures in links, a
/// mirror's origin directory.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
