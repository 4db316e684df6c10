//! `prove --account A --complete`: every row about a person, with the proof that there are no
//! others (an `event-audit-bundle/4`). The person is every identifier the log links to the number
//! given (as erasure resolves them, `erase::identity`); the account index update the checkpoint
//! covers last is its anchor: the row recording it is an entry of its own (`completeness.record`),
//! and for each identifier the bundle carries its VRF proof, the leaves the index holds for its
//! label and the label's index proof (`index::complete`); the entries are exactly the rows at
//! the union of those leaves. Read in one repeatable-read snapshot, checked before it is written.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde::Serialize;

use super::prove::{entry, Entry, ProveError};
use crate::db::Ctx;
use crate::evidence::bundle::FORMAT_V4;
use crate::index::complete::{claims, Claim};
use crate::log::index as store;
use crate::log::tree::{rows_at, TreeStore};
use crate::row::hex;
use crate::tlog::index::{Terminal, FORMAT};
use crate::tlog::note::Checkpoint;
use crate::tlog::vrf::VrfKey;

/// The bundle.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CompleteBundle {
    pub(crate) format: &'static str,
    pub(crate) checkpoint: String,
    pub(crate) entries: Vec<Entry>,
    pub(crate) completeness: Completeness,
}

/// Its completeness part.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Completeness {
    pub(crate) index: &'static str,
    pub(crate) record: Entry,
    pub(crate) identifiers: Vec<ClaimJson>,
}

/// One identifier's claim as the bundle shows it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ClaimJson {
    pub(crate) identifier: String,
    pub(crate) vrf_proof: String,
    pub(crate) leaves: Vec<u64>,
    pub(crate) index_proof: ProofJson,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct ProofJson {
    pub(crate) siblings: Vec<String>,
    pub(crate) terminal: Option<TerminalJson>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct TerminalJson {
    pub(crate) label: String,
    pub(crate) count: u64,
    pub(crate) acc: String,
}

impl From<&Claim> for ClaimJson {
    fn from(c: &Claim) -> ClaimJson {
        ClaimJson {
            identifier: c.identifier.clone(),
            vrf_proof: B64.encode(&c.vrf_proof),
            leaves: c.leaves.clone(),
            index_proof: ProofJson {
                siblings: c.proof.siblings.iter().map(|h| B64.encode(h)).collect(),
                terminal: match &c.proof.terminal {
                    Terminal::Empty => None,
                    Terminal::Leaf { label, value } => Some(TerminalJson {
                        label: hex(label),
                        count: value.count,
                        acc: hex(&value.acc),
                    }),
                },
            },
        }
    }
}

/// What a complete bundle covers, for the command's line.
#[derive(Debug, Clone)]
pub(crate) struct Covered {
    pub(crate) identifiers: usize,
    /// The index's size: rows from here on are not covered yet.
    pub(crate) through: u64,
    /// The index update the bundle is anchored on (its record's number).
    pub(crate) update: i64,
}

/// The complete bundle for the person `given` names (`supplier` for an external number several
/// suppliers use) against the checkpoint `cp` (whose note is `note`); `key` makes the labels
/// the index does not store.
pub(crate) async fn prove_complete(
    store_: &TreeStore,
    (given, supplier): (&str, Option<&str>),
    (cp, note): (&Checkpoint, &str),
    key: Option<&VrfKey>,
    archive: Option<&std::path::Path>,
) -> Result<(CompleteBundle, Covered), ProveError> {
    let mut conn = store_.db().acquire().await?;
    let mut tx = store::snapshot(&mut conn).await?;
    let person = crate::erase::identity::resolve(&mut tx, given, supplier)
        .await
        .map_err(|e| ProveError::Person(e.to_string()))?;
    let version = store::newest_within(&mut tx, cp.size)
        .await?
        .ok_or(ProveError::NoIndex { size: cp.size })?;
    let made = claims(&mut tx, &version, &person.values(), key).await?;
    let mut leaves: Vec<u64> = made.iter().flat_map(|c| c.leaves.iter().copied()).collect();
    leaves.sort_unstable();
    leaves.dedup();
    let record_leaf = u64::try_from(version.record_leaf).unwrap_or(u64::MAX);
    let mut at = leaves.clone();
    at.push(record_leaf);
    at.sort_unstable();
    let places = rows_at(&mut tx, &at).await?;
    tx.commit().await.ctx("end the snapshot")?;
    let mut entries = Vec::with_capacity(leaves.len());
    let mut record = None;
    for (p, _) in &places {
        let e = entry(store_, cp, p, archive).await?;
        if e.leaf_index == record_leaf {
            record = Some(e.clone());
        }
        if leaves.binary_search(&e.leaf_index).is_ok() {
            entries.push(e);
        }
    }
    let record = record.ok_or(ProveError::NoIndex { size: cp.size })?;
    let bundle = CompleteBundle {
        format: FORMAT_V4,
        checkpoint: note.to_owned(),
        entries,
        completeness: Completeness {
            index: FORMAT,
            record,
            identifiers: made.iter().map(ClaimJson::from).collect(),
        },
    };
    let covered = Covered {
        identifiers: made.len(),
        through: u64::try_from(version.version).unwrap_or(0),
        update: version.seq,
    };
    Ok((bundle, covered))
}
