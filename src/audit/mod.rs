//! The audit row, pure: a bus message and its verdict become a row ([`record`]), its canonical
//! encoding and row hash ([`canon`]), the column list of `audit.events` ([`columns`]), the row
//! generated from it with its binary COPY writer and parser ([`row`], [`pgcopy`]), and the
//! chain-link hashing the writer and `verify` share ([`chain`]), and what PostgreSQL's jsonb
//! stores for a payload or why it refuses it ([`jsonb`]), the Merkle tree over the rows
//! ([`tlog`]), signed checkpoints of it ([`note`]), witnesses' cosignatures and the witness policy
//! ([`cosign`]), the checking of evidence bundles
//! ([`bundle`]) and a re-verdict of `reprocess` with its hash ([`reverdict`]). No I/O.

pub mod bundle;
pub mod canon;
pub mod chain;
pub mod columns;
pub mod cosign;
pub mod jsonb;
pub mod note;
pub mod pgcopy;
pub mod record;
pub(crate) mod reverdict;
pub mod row;
pub mod tlog;
