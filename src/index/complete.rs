//! What a completeness proof claims for each identifier of a person, read from the stored index
//! at one version: the identifier's label and VRF proof (stored, found by its keyed hash; or,
//! for an identifier the index does not know or an erasure forgot, made with the log's index
//! key when the caller has it), the leaves the index holds for it, and its index proof. Each
//! claim is checked with `tlog::index::check_complete` before it is handed out.

use sha2::{Digest, Sha256};
use sqlx::PgConnection;

use super::prove::proof_at;
use crate::db::DbError;
use crate::log::index::{self as store, VersionRow};
use crate::tlog::index::{alpha, check_complete, label_of, Proof};
use crate::tlog::merkle::Hash;
use crate::tlog::vrf::VrfKey;

/// One identifier's claim.
#[derive(Debug, Clone)]
pub(crate) struct Claim {
    /// The identifier itself (personal data: shown in the bundle, never logged).
    pub(crate) identifier: String,
    pub(crate) vrf_proof: Vec<u8>,
    /// The leaves the index holds for it at the version, ascending.
    pub(crate) leaves: Vec<u64>,
    pub(crate) proof: Proof,
}

/// Why no claim could be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClaimError {
    #[error("the account index holds no label for one of the person's identifiers (never seen in the log, or forgotten by an erasure): proving that it maps to no row needs its label, which only the log's key makes; run `prove` where the daemon's signing key is (`--signing-key-file`)")]
    NoLabel,
    #[error("the stored account index does not make the root of its version {0} for one of the person's identifiers (its stored nodes or values changed); run `event-audit verify`")]
    Inconsistent(i64),
    #[error(transparent)]
    Db(#[from] DbError),
}

/// The claims for `ids` in the index of `version`; `key` makes the labels the index does not
/// store.
pub(crate) async fn claims(
    tx: &mut PgConnection,
    version: &VersionRow,
    ids: &[String],
    key: Option<&VrfKey>,
) -> Result<Vec<Claim>, ClaimError> {
    let pepper = store::pepper(tx).await?;
    let subjects: Vec<[u8; 32]> = ids
        .iter()
        .map(|id| {
            let mut h = Sha256::new();
            h.update(&pepper);
            h.update(id.as_bytes());
            h.finalize().into()
        })
        .collect();
    let stored = store::labels_of_subjects(tx, &subjects).await?;
    let root: Hash = <Hash>::try_from(version.root.as_slice()).map_err(|_| DbError::Corrupt {
        what: "audit.index_versions",
        why: "a root is not 32 bytes",
    })?;
    let size = u64::try_from(version.version).unwrap_or(0);
    let mut out = Vec::with_capacity(ids.len());
    for (id, subject) in ids.iter().zip(&subjects) {
        let (label, vrf_proof) = match stored.iter().find(|s| &s.subject == subject) {
            Some(s) => (s.label, s.proof.clone()),
            None => {
                let key = key.ok_or(ClaimError::NoLabel)?;
                let (proof, beta) = key.prove(&alpha(id));
                (label_of(&beta), proof.to_vec())
            }
        };
        let leaves = store::leaves_of(tx, &label, version.version).await?;
        let proof = proof_at(tx, &label, version.version)
            .await?
            .ok_or(ClaimError::Inconsistent(version.version))?;
        let rows = crate::log::tree::rows_at(tx, &leaves).await?;
        let listed: Vec<(u64, Hash)> = leaves
            .iter()
            .copied()
            .zip(rows.iter().map(|r| r.1))
            .collect();
        if check_complete(&root, &label, &proof, &listed, size).is_err() {
            return Err(ClaimError::Inconsistent(version.version));
        }
        out.push(Claim {
            identifier: id.clone(),
            vrf_proof,
            leaves,
            proof,
        });
    }
    Ok(out)
}
