//! The account index, the daemon's side (`event-audit-account-index/1`): at each checkpoint
//! round, before the signer signs, the rows the log gained since the last update are indexed by
//! the identifiers the catalogue marks in them, each under its label (the VRF output of the
//! identifier under the log's index key, [`label`]); the stored index grows ([`update`]) and its
//! root is recorded as a row of the log ([`crate::row::index_record`]) in the same transaction,
//! so the checkpoint signed next commits it and the witnesses cosign it. [`prove`] reads a
//! label's proof at a version back from the stored nodes; [`complete`] makes the completeness
//! part of a bundle. The format (hashes, proofs, deltas) is `tlog::index`'s.

pub(crate) mod complete;
pub(crate) mod grow;
pub(crate) mod label;
pub(crate) mod metrics;
pub(crate) mod prove;
pub(crate) mod replay;
pub(crate) mod update;

use crate::db::DbError;

/// Why an update could not be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum IndexError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("the account index's labels could not be made: {0}")]
    Labels(String),
}
