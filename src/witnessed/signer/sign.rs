//! What the signer may sign, decided with its own code from hashes it has checked: it starts
//! from the tree it remembers (or the empty tree), appends the leaves after it (the rows' hashes
//! in log order, or the closed re-verdict runs' end hashes), meets every checkpoint its key
//! signed on the way (its root must come out at its size), and only then compares the result
//! with what the database claims. So a tree it signs always extends every checkpoint it signed
//! before (C2SP tlog-checkpoint), whatever the database, the bus or another daemon says.

use crate::db::DbError;
use crate::log::tree::TreeStore;
use crate::tlog::merkle::{leaf_hash, Frontier, Hash};
use crate::tlog::note::Checkpoint;

use crate::log::signed::Remembered;

/// A checkpoint signed by this signer's key (its note opened with it), found anywhere.
#[derive(Debug, Clone)]
pub(super) struct Found {
    pub(crate) cp: Checkpoint,
    pub note: String,
}

/// Why nothing is signed (one ERROR line, a metric, an alert; ingest goes on).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Refusal {
    #[error("{log}: the database's tree has {db} leaves, fewer than the checkpoint of size {signed} this key signed: the database was replaced or rows were removed; nothing is signed until it holds that tree again")]
    Smaller { log: String, db: u64, signed: u64 },
    #[error("{log}: the leaves at size {size} do not have the root of the checkpoint this key signed at that size: history was rewritten; nothing is signed")]
    Rewritten { log: String, size: u64 },
    #[error("{log}: two checkpoints of size {size} signed by this key have different roots (a fork); nothing is signed")]
    Forked { log: String, size: u64 },
    #[error("{log}: the chain head's tree at size {size} is not the tree of the rows (the head's right edge or the links were altered); nothing is signed")]
    HeadForged { log: String, size: u64 },
    #[error("{log}: the links after the last checkpoint do not make a tree from their rows ({why}): the links or rows were altered; nothing is signed")]
    Corrupt { log: String, why: &'static str },
    #[error("{log}: the stored tree cannot prove to the witnesses that size {size} extends size {from}: {what} is corrupt ({why}); rows or stored subtrees were removed or altered; nothing is signed (run `event-audit verify` to find what changed)")]
    Unprovable {
        log: String,
        from: u64,
        size: u64,
        what: &'static str,
        why: &'static str,
    },
    #[error("{0}; nothing is signed until it can be read (restore it, or move it away to rebuild it from the checkpoints this key signed)")]
    Memory(String),
    #[error("{log}: {why}; nothing is signed")]
    Witness { log: String, why: String },
}

impl Refusal {
    /// The metric label of this refusal (a fixed vocabulary).
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            Refusal::Smaller { .. } => "smaller",
            Refusal::Rewritten { .. } => "rewritten",
            Refusal::Forked { .. } => "forked",
            Refusal::HeadForged { .. } => "head_forged",
            Refusal::Corrupt { .. } | Refusal::Unprovable { .. } => "corrupt",
            Refusal::Memory(_) => "memory",
            Refusal::Witness { .. } => "witness",
        }
    }
}

/// What one log's check concluded.
#[derive(Debug, Clone, Default)]
pub(super) struct Outcome {
    /// The newest checkpoint signed by this key, with its tree (what to remember).
    pub(crate) remembered: Option<Remembered>,
    /// The tree to sign now, when the log grew past it.
    pub(crate) to_sign: Option<Frontier>,
}

/// The signed checkpoints newer than `tree`, in size order; two of one size must agree.
fn pending(log: &str, tree: &Frontier, found: &[Found]) -> Result<Vec<Found>, Refusal> {
    let mut v: Vec<Found> = found
        .iter()
        .filter(|f| f.cp.size >= tree.size())
        .cloned()
        .collect();
    v.sort_by_key(|f| f.cp.size);
    for w in v.windows(2) {
        if w[0].cp.size == w[1].cp.size && w[0].cp.root != w[1].cp.root {
            return Err(Refusal::Forked {
                log: log.into(),
                size: w[0].cp.size,
            });
        }
    }
    v.dedup_by_key(|f| f.cp.size);
    Ok(v)
}

/// Meets the signed checkpoints on the way as the tree grows leaf by leaf.
struct Meet {
    log: String,
    pending: std::collections::VecDeque<Found>,
    best: Option<Remembered>,
    broken: Option<Refusal>,
}

impl Meet {
    fn new(log: &str, start: Option<&Remembered>, found: &[Found]) -> Result<Meet, Refusal> {
        let tree = start.map(|r| r.tree.clone()).unwrap_or_default();
        let pending = pending(log, &tree, found)?;
        let mut m = Meet {
            log: log.into(),
            pending: pending.into(),
            best: start.cloned(),
            broken: None,
        };
        m.at(&tree);
        Ok(m)
    }

    /// The largest size this key has signed.
    fn signed_size(&self) -> u64 {
        let p = self.pending.back().map_or(0, |f| f.cp.size);
        p.max(self.best.as_ref().map_or(0, Remembered::size))
    }

    fn at(&mut self, tree: &Frontier) {
        while let Some(f) = self.pending.front() {
            if f.cp.size != tree.size() {
                break;
            }
            let Some(f) = self.pending.pop_front() else {
                break;
            };
            if f.cp.root != tree.root() {
                self.broken.get_or_insert(Refusal::Rewritten {
                    log: self.log.clone(),
                    size: f.cp.size,
                });
            } else if self.best.as_ref().is_none_or(|b| b.size() <= f.cp.size) {
                self.best = Some(Remembered::at(tree.clone(), f.note));
            }
        }
    }

    fn finish(self, tree: Frontier) -> Result<Outcome, Refusal> {
        if let Some(r) = self.broken {
            return Err(r);
        }
        let signed = self.best.as_ref().map(Remembered::size);
        let grew = match signed {
            Some(s) => tree.size() > s,
            None => tree.size() > 0,
        };
        Ok(Outcome {
            remembered: self.best,
            to_sign: grew.then_some(tree),
        })
    }
}

/// The events log: the rows' tree, from the remembered tree up to the head (`head_size`, with the
/// head's right edge as the database claims it). The row hashes read on the way are appended to
/// `tap` (the tile writer's, so that it need not read them again).
pub(crate) async fn events(
    trees: &TreeStore,
    log: &str,
    start: Option<&Remembered>,
    found: &[Found],
    (head_size, head_root): (u64, Option<Hash>),
    tap: &mut Vec<Hash>,
) -> Result<Result<Outcome, Refusal>, DbError> {
    let mut meet = match Meet::new(log, start, found) {
        Ok(m) => m,
        Err(r) => return Ok(Err(r)),
    };
    let signed = meet.signed_size();
    if head_size < signed {
        return Ok(Err(Refusal::Smaller {
            log: log.into(),
            db: head_size,
            signed,
        }));
    }
    let mut tree = start.map(|r| r.tree.clone()).unwrap_or_default();
    let read = trees.rows_between(tree.size(), head_size, |row| {
        tree.append(leaf_hash(row), |_, _| {});
        meet.at(&tree);
        tap.extend(Hash::try_from(row).ok());
    });
    match read.await {
        Ok(()) => {}
        Err(DbError::Corrupt { why, .. }) => {
            return Ok(Err(Refusal::Corrupt {
                log: log.into(),
                why,
            }))
        }
        Err(e) => return Err(e),
    }
    if meet.broken.is_none() && head_root != Some(tree.root()) {
        return Ok(Err(Refusal::HeadForged {
            log: log.into(),
            size: head_size,
        }));
    }
    Ok(meet.finish(tree))
}

/// The re-verdict log: the closed runs' end hashes in chain order, all of them (a few rows), so
/// the whole tree is rebuilt and the remembered one is met on the way like any other.
pub(crate) fn reverdicts(
    log: &str,
    start: Option<&Remembered>,
    found: &[Found],
    leaves: &[[u8; 32]],
) -> Result<Outcome, Refusal> {
    let mut all: Vec<Found> = found.to_vec();
    if let Some(r) = start {
        all.push(Found {
            cp: Checkpoint {
                origin: log.into(),
                size: r.size(),
                root: r.root,
            },
            note: r.note.clone(),
        });
    }
    let mut meet = Meet::new(log, None, &all)?;
    let signed = meet.signed_size();
    if (leaves.len() as u64) < signed {
        return Err(Refusal::Smaller {
            log: log.into(),
            db: leaves.len() as u64,
            signed,
        });
    }
    let mut tree = Frontier::new();
    for l in leaves {
        tree.append(leaf_hash(l), |_, _| {});
        meet.at(&tree);
    }
    meet.finish(tree)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlog::note::PrivateKey;

    fn leaves(n: u8) -> Vec<[u8; 32]> {
        (0..n).map(|i| [i; 32]).collect()
    }

    fn signed(k: &PrivateKey, leaves: &[[u8; 32]]) -> (Found, Remembered) {
        let mut t = Frontier::new();
        for l in leaves {
            t.append(leaf_hash(l), |_, _| {});
        }
        let cp = Checkpoint {
            origin: "o/reverdicts".into(),
            size: t.size(),
            root: t.root(),
        };
        let note = k.sign(&cp);
        (
            Found {
                cp,
                note: note.clone(),
            },
            Remembered::at(t, note),
        )
    }

    #[test]
    fn signs_only_extensions_of_what_it_signed() {
        let k = PrivateKey::from_seed("o", &[1; 32]).unwrap();
        let genuine = leaves(5);
        let (f3, r3) = signed(&k, &genuine[..3]);
        // Grown: sign 5, remembering 3.
        let o = reverdicts("o/reverdicts", Some(&r3), &[], &genuine).unwrap();
        assert_eq!(o.to_sign.map(|t| t.size()), Some(5));
        assert_eq!(o.remembered.map(|r| r.size()), Some(3));
        // Nothing new: nothing to sign.
        let o = reverdicts("o/reverdicts", Some(&r3), &[], &genuine[..3]).unwrap();
        assert!(o.to_sign.is_none());
        // Fewer leaves than signed: refused.
        let r = reverdicts("o/reverdicts", Some(&r3), &[], &genuine[..2]);
        assert!(matches!(
            r,
            Err(Refusal::Smaller {
                db: 2,
                signed: 3,
                ..
            })
        ));
        // A leaf before 3 rewritten: refused, also when the memory is lost but a signed
        // checkpoint is found elsewhere.
        let mut forged = genuine.clone();
        forged[1] = [9; 32];
        let r = reverdicts("o/reverdicts", Some(&r3), &[], &forged);
        assert!(matches!(r, Err(Refusal::Rewritten { size: 3, .. })));
        let r = reverdicts("o/reverdicts", None, std::slice::from_ref(&f3), &forged);
        assert!(matches!(r, Err(Refusal::Rewritten { size: 3, .. })));
        // Without any memory and nothing found, the first checkpoint is the whole tree.
        let o = reverdicts("o/reverdicts", None, &[], &forged).unwrap();
        assert_eq!(o.to_sign.map(|t| t.size()), Some(5));
        // A newer checkpoint found (another daemon signed it) is adopted when it holds.
        let (f4, _) = signed(&k, &genuine[..4]);
        let o = reverdicts(
            "o/reverdicts",
            Some(&r3),
            std::slice::from_ref(&f4),
            &genuine,
        )
        .unwrap();
        assert_eq!(o.remembered.map(|r| r.size()), Some(4));
        // Two signed checkpoints of one size with different roots: a fork.
        let (mut f4b, _) = signed(&k, &forged[..4]);
        f4b.cp.size = 4;
        let r = reverdicts("o/reverdicts", Some(&r3), &[f4, f4b], &genuine);
        assert!(matches!(r, Err(Refusal::Forked { size: 4, .. })));
    }
}
