//! The transparency log's formats and math, pure: the RFC 6962 / RFC 9162 Merkle tree over the
//! rows with its inclusion and consistency proofs and its right edge ([`merkle`]), C2SP signed
//! notes and checkpoints with the log's keys, one private key type for both signature
//! algorithms ([`note`]), witnesses' cosignatures ([`cosign`], with ML-DSA-44's in [`mldsa`]), the
//! C2SP tlog-policy witness policy ([`policy`]), C2SP tlog-proof files ([`proof`]), the newest
//! checkpoint per origin, never lowered, that the signer, the auditor and the witness
//! each remember ([`latest`]), and the tile geometry every stored subtree follows ([`tile`]). No I/O,
//! and no second definition of a note or tile format anywhere else.

pub mod cosign;
pub mod index;
pub mod latest;
pub mod merkle;
pub mod mldsa;
pub mod note;
pub mod policy;
pub mod proof;
pub mod tile;
pub mod vrf;
