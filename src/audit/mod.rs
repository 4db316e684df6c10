//! The evidence's formats, pure: the Merkle tree over the rows ([`tlog`]), signed checkpoints
//! of it ([`note`]), witnesses' cosignatures and the witness policy ([`cosign`]), and the
//! checking of evidence bundles ([`bundle`]). No I/O.

pub mod bundle;
pub mod cosign;
pub mod note;
pub mod tlog;
