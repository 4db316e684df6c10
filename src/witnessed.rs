//! The witnessed log at work, its I/O in one room: the tree's store in PostgreSQL
//! ([`tree`]), the daemon's checkpoint signer with its memory, queue, publication and witness
//! client ([`signer`]), the independent witness server ([`witness`]), and their metrics
//! ([`metrics`]). The formats they read and write are [`crate::tlog`]'s; `verify` and `prove`
//! read through [`signer`]'s readers.

pub mod metrics;
pub mod repair;
pub mod signer;
pub mod tile_writer;
pub(crate) use event_audit_witness as witness;
