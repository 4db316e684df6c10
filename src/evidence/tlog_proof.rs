//! `prove --format tlog-proof`: a C2SP tlog-proof per row from the database's stored tree,
//! against one signed (and cosigned) checkpoint. The proof's entry is the row's row hash, the
//! entry the log's tiles hold; each proof is checked (its leaf under the signed root) before it
//! is handed out, and a row whose stored columns no longer make its row hash is refused, as
//! `prove` refuses it. An erased or pruned row keeps its row hash and is proven all the same.

use crate::evidence::prove::{places, witnessed_row, ProveError, Query};
use crate::log::tree::TreeStore;
use crate::tlog::merkle::Hash;
use crate::tlog::note::Checkpoint;
use crate::tlog::proof::{entry_leaf, TlogProof};
use crate::verify::rows::Check;

/// One row's proof.
#[derive(Debug, Clone)]
pub(crate) struct RowProof {
    pub(crate) stream: String,
    pub(crate) stream_seq: i64,
    /// The row hash: the entry the proof is for (`verify-proof --entry`).
    pub(crate) entry: Hash,
    pub(crate) proof: TlogProof,
}

/// The tlog-proof of every row `query` names against the checkpoint `cp` (signed note `note`).
pub(crate) async fn tlog_proofs(
    store: &TreeStore,
    query: Query<'_>,
    cp: &Checkpoint,
    note: &str,
) -> Result<Vec<RowProof>, ProveError> {
    let mut out = Vec::new();
    for p in places(store, &query).await? {
        let (what, index, row) = witnessed_row(store, cp, &p).await?;
        let entry = Hash::try_from(row.row_hash.as_slice())
            .map_err(|_| ProveError::Mismatch(what.clone()))?;
        let made = match crate::verify::rows::check(&row.view()) {
            Check::Ok(h)
            | Check::PayloadDiffers { hash: h, .. }
            | Check::Erased { hash: h, .. } => Some(h),
            Check::Broken(_) => None,
        };
        if made != Some(entry) {
            return Err(ProveError::Mismatch(what));
        }
        let proof = TlogProof {
            extra: None,
            index,
            hashes: store.inclusion(index, cp.size).await?,
            checkpoint: note.to_owned(),
        };
        proof
            .included(&entry_leaf(&entry), cp)
            .map_err(|_| ProveError::Mismatch(what))?;
        out.push(RowProof {
            stream: row.stream.clone(),
            stream_seq: row.stream_seq,
            entry,
            proof,
        });
    }
    Ok(out)
}
