//! `prove --index-consistency FROM [--index-to TO]`: the proof that the account index of update
//! FROM only grew into that of update TO (by default the newest the checkpoint covers), an
//! `event-audit-index-consistency/1` (`evidence::bundle::consistency`): both updates' records as
//! entries against the checkpoint, every label changed between them with the leaves it gained,
//! and the index of FROM pruned to their paths (`tlog::index::consistency`). Read in one
//! snapshot, bounded (at most `MAX_CHANGES` labels and as many leaves), checked before it is
//! written.

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde::Serialize;

use super::prove::{entry, Entry, ProveError};
use crate::db::Ctx;
use crate::evidence::bundle::consistency::{FORMAT, MAX_CHANGES};
use crate::log::index as store;
use crate::log::tree::{rows_at, TreeStore};
use crate::row::hex;
use crate::tlog::index::consistency::Pruned;
use crate::tlog::index::Label;
use crate::tlog::merkle::Hash;
use crate::tlog::note::Checkpoint;

/// The proof as written.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ConsistencyProof {
    pub(crate) format: &'static str,
    pub(crate) checkpoint: String,
    pub(crate) from: Entry,
    pub(crate) to: Entry,
    pub(crate) changes: Vec<Change>,
    /// The pruned index of `from`, base64.
    pub(crate) tree: String,
}

/// One label's change.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Change {
    pub(crate) label: String,
    /// `[leaf, row hash]` pairs, in log order.
    pub(crate) added: Vec<(u64, String)>,
}

/// The proof between updates `from` and `to` (`None`: the newest the checkpoint `cp` covers).
pub(crate) async fn prove_consistency(
    trees: &TreeStore,
    (from, to): (i64, Option<i64>),
    (cp, note): (&Checkpoint, &str),
) -> Result<ConsistencyProof, ProveError> {
    let mut conn = trees.db().acquire().await?;
    let mut tx = store::snapshot(&mut conn).await?;
    let none = |what: String| ProveError::NotFound(what);
    let first = store::version_by_seq(&mut tx, from)
        .await?
        .ok_or_else(|| none(format!("account index update {from}")))?;
    let second = match to {
        Some(n) => store::version_by_seq(&mut tx, n).await?,
        None => store::newest_within(&mut tx, cp.size).await?,
    }
    .ok_or_else(|| none(format!("account index update {}", to.unwrap_or(0))))?;
    let leaf = |v: &store::VersionRow| u64::try_from(v.record_leaf).unwrap_or(u64::MAX);
    if second.seq <= first.seq || leaf(&second) >= cp.size {
        return Err(ProveError::Consistency(format!(
            "update {} must come after update {} and be covered by the checkpoint of size {} (its record is at leaf {})",
            second.seq, first.seq, cp.size, leaf(&second)
        )));
    }
    let all = store::values_in(&mut tx, &[([0; 32], [0xff; 32])], first.version).await?;
    let changed = store::changes_between(&mut tx, first.version, second.version).await?;
    let leaves: usize = changed.iter().map(|(_, l)| l.len()).sum();
    if changed.len() > MAX_CHANGES || leaves > MAX_CHANGES {
        return Err(ProveError::Consistency(format!(
            "{} labels gained {leaves} leaves between the two updates, more than {MAX_CHANGES}: prove between closer updates",
            changed.len()
        )));
    }
    let mut at: Vec<u64> = changed
        .iter()
        .flat_map(|(_, l)| l.iter().copied())
        .collect();
    at.sort_unstable();
    at.dedup();
    let hashes: BTreeMap<u64, Hash> = at
        .iter()
        .copied()
        .zip(rows_at(&mut tx, &at).await?.into_iter().map(|(_, h)| h))
        .collect();
    let places = rows_at(&mut tx, &[leaf(&first), leaf(&second)]).await?;
    tx.commit().await.ctx("end the snapshot")?;
    let labels: Vec<Label> = changed.iter().map(|(l, _)| *l).collect();
    let mut bytes = Vec::new();
    Pruned::of(&all, &labels, 0).encode(&mut bytes);
    let changes = changed
        .iter()
        .map(|(l, leaves)| Change {
            label: hex(l),
            added: leaves
                .iter()
                .map(|x| (*x, hashes.get(x).map(|h| hex(h)).unwrap_or_default()))
                .collect(),
        })
        .collect();
    let (p0, p1) = match places.as_slice() {
        [(a, _), (b, _)] => (a, b),
        _ => {
            return Err(ProveError::Consistency(
                "the records' rows are not in the tree".into(),
            ))
        }
    };
    Ok(ConsistencyProof {
        format: FORMAT,
        checkpoint: note.to_owned(),
        from: entry(trees, cp, p0, None).await?,
        to: entry(trees, cp, p1, None).await?,
        changes,
        tree: B64.encode(bytes),
    })
}
