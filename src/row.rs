//! The audit row, pure: a bus message and its verdict become a row ([`record`]), its canonical
//! encoding and row hash ([`canon`]), the column list of `audit.events` written once
//! ([`columns`]), the row view generated from it with its binary COPY writer and parser
//! ([`view`], [`pgcopy`]), what PostgreSQL's jsonb stores for a payload or why it refuses it
//! ([`jsonb`]), the chain-link hashing the writer and `verify` share ([`chain`]), and a
//! re-verdict of `reprocess` with its hash ([`reverdict`]), the erasure, restore and account index records
//! ([`erasure`], [`restore`], [`index_record`]) written as the log's own rows ([`own`]). No I/O.

pub(crate) mod canon;
pub(crate) mod chain;
pub mod columns;
pub(crate) mod copy;
pub(crate) mod erasure;
pub(crate) mod index_record;
pub(crate) mod jsonb;
pub(crate) mod own;
pub(crate) mod pgcopy;
pub(crate) mod record;
pub(crate) mod restore;
pub(crate) mod reverdict;
pub(crate) mod view;

pub(crate) use event_audit_proof::hex;
