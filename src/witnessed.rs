//! The witnessed log at work, its I/O in one room: the daemon's checkpoint signer with its
//! queue, publication and witness client ([`signer`]), the tile writer ([`tile_writer`]), the
//! repair pass over what it published ([`repair`]), the independent witness server
//! ([`witness`]), and their metrics ([`metrics`]). The tree's store in PostgreSQL and the
//! signer's memory are the log's ([`crate::log::tree`], [`crate::log::signed`]); the formats they
//! read and write are [`crate::tlog`]'s; `verify` and `prove` read through [`signer`]'s readers.

pub(crate) mod metrics;
pub(crate) mod repair;
pub(crate) mod signer;
pub(crate) mod tile_writer;
pub(crate) use event_audit_witness as witness;
