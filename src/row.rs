//! The audit row, pure: a bus message and its verdict become a row ([`record`]), its canonical
//! encoding and row hash ([`canon`]), the column list of `audit.events` written once
//! ([`columns`]), the row view generated from it with its binary COPY writer and parser
//! ([`view`], [`pgcopy`]), what PostgreSQL's jsonb stores for a payload or why it refuses it
//! ([`jsonb`]), the chain-link hashing the writer and `verify` share ([`chain`]), and a
//! re-verdict of `reprocess` with its hash ([`reverdict`]), the erasure and restore records
//! ([`erasure`], [`restore`]) written as the log's own rows ([`own`]). No I/O.

pub mod canon;
pub mod chain;
pub mod columns;
pub mod copy;
pub(crate) mod erasure;
pub mod jsonb;
pub(crate) mod own;
pub mod pgcopy;
pub mod record;
pub(crate) mod restore;
pub(crate) mod reverdict;
pub mod view;

pub(crate) use event_audit_proof::hex;
