//! A proof that the account index only grew between two updates: the index of the first, pruned
//! to the paths of the labels that changed (every subtree off those paths given by its hash and
//! whether it holds one label or more), and each changed label's leaves added since. The
//! verifier folds the pruned tree to the first root, reads each changed label's old value on its
//! path, folds the added leaves onto it (so the new value commits to the old leaves and then the
//! new ones: nothing removed, nothing rewritten), puts it back, and folds the tree again to the
//! second root. A label left out of the changes, or one whose leaves changed otherwise, makes
//! another root. Pure.
//!
//! The pruned tree as bytes, in pre-order: `0x00 ‖ hash ‖ u64be(count)` a subtree off the paths
//! (count 0 for an empty one), `0x01 ‖ label ‖ u64be(n) ‖ acc` a label, `0x02` a split at the
//! next bit followed by its two halves.

use super::{bit, Label, Node, Value, EMPTY, MAX_DEPTH};
use crate::merkle::Hash;

/// The pruned index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pruned {
    /// A subtree no changed label's path enters.
    Off(Node),
    /// A label alone in its subtree.
    Label(Label, Value),
    /// A subtree split at the bit of its depth.
    Split(Box<Pruned>, Box<Pruned>),
}

/// Why a consistency proof does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConsistencyError {
    #[error("its pruned tree is not one ({0})")]
    Malformed(&'static str),
    #[error("its pruned tree does not make the first update's root")]
    FirstRoot,
    #[error("the path of changed label {0} ends in a subtree given only by its hash")]
    Hidden(usize),
    #[error("changed label {0}: its added leaves are not ascending, or not of the leaves the second update indexed")]
    Leaves(usize),
    #[error("the changed labels are not in ascending order without repeats (at {0})")]
    Order(usize),
    #[error("the index the changes make has another root than the second update's: a label changed otherwise than by leaves added, or one left out")]
    SecondRoot,
    #[error("the changes add {added} labels to {before}, the second update holds {after}")]
    Labels { before: u64, added: u64, after: u64 },
}

impl Pruned {
    /// The node this subtree makes (at any depth: a lone label is lifted to where it is alone).
    pub fn node(&self) -> Node {
        match self {
            Pruned::Off(n) => *n,
            Pruned::Label(l, v) => Node::leaf(l, v),
            Pruned::Split(a, b) => Node::join(a.node(), b.node()),
        }
    }

    /// The pruned tree of the sorted `labels` (the whole index) at `depth`, open along the paths
    /// of the sorted `changed` labels.
    pub fn of(labels: &[(Label, Value)], changed: &[Label], depth: usize) -> Pruned {
        match labels {
            [] => return Pruned::Off(Node::EMPTY),
            [(l, v)] => return Pruned::Label(*l, *v),
            _ if changed.is_empty() || depth >= MAX_DEPTH => {
                return Pruned::Off(super::subtree(labels, depth))
            }
            _ => {}
        }
        let split = labels.partition_point(|(l, _)| !bit(l, depth));
        let at = changed.partition_point(|l| !bit(l, depth));
        Pruned::Split(
            Box::new(Pruned::of(&labels[..split], &changed[..at], depth + 1)),
            Box::new(Pruned::of(&labels[split..], &changed[at..], depth + 1)),
        )
    }

    /// What `label` maps to here, `Err` when its path ends in a subtree off the paths.
    fn get(&self, label: &Label, depth: usize) -> Result<Option<Value>, ()> {
        match self {
            Pruned::Off(n) if n.count == 0 => Ok(None),
            Pruned::Off(_) => Err(()),
            Pruned::Label(l, v) => Ok((l == label).then_some(*v)),
            Pruned::Split(_, b) if bit(label, depth) => b.get(label, depth + 1),
            Pruned::Split(a, _) => a.get(label, depth + 1),
        }
    }

    /// Sets `label` to `value` here (at `depth`); `Err` when its path ends off the paths.
    fn set(&mut self, label: &Label, value: Value, depth: usize) -> Result<(), ()> {
        if depth > MAX_DEPTH {
            return Err(());
        }
        match self {
            Pruned::Off(n) if n.count == 0 => *self = Pruned::Label(*label, value),
            Pruned::Off(_) => return Err(()),
            Pruned::Label(l, v) if l == label => *v = value,
            Pruned::Label(l, v) => {
                let (other, old) = (*l, *v);
                let mut s = Pruned::Split(
                    Box::new(Pruned::Off(Node::EMPTY)),
                    Box::new(Pruned::Off(Node::EMPTY)),
                );
                s.set(&other, old, depth)?;
                s.set(label, value, depth)?;
                *self = s;
            }
            Pruned::Split(a, b) => {
                let side = if bit(label, depth) { b } else { a };
                side.set(label, value, depth + 1)?;
            }
        }
        Ok(())
    }

    /// The bytes.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Pruned::Off(n) => {
                out.push(0);
                out.extend_from_slice(&n.hash);
                out.extend_from_slice(&n.count.to_be_bytes());
            }
            Pruned::Label(l, v) => {
                out.push(1);
                out.extend_from_slice(l);
                out.extend_from_slice(&v.count.to_be_bytes());
                out.extend_from_slice(&v.acc);
            }
            Pruned::Split(a, b) => {
                out.push(2);
                a.encode(out);
                b.encode(out);
            }
        }
    }

    /// Reads the bytes: exactly one tree, at most [`MAX_DEPTH`] splits deep.
    pub fn parse(b: &[u8]) -> Result<Pruned, ConsistencyError> {
        let mut at = 0usize;
        let t = read(b, &mut at, 0)?;
        if at != b.len() {
            return Err(ConsistencyError::Malformed("bytes after the tree"));
        }
        Ok(t)
    }
}

fn take<'a>(b: &'a [u8], at: &mut usize, n: usize) -> Result<&'a [u8], ConsistencyError> {
    let s = b
        .get(*at..at.saturating_add(n))
        .ok_or(ConsistencyError::Malformed("it ends early"))?;
    *at += n;
    Ok(s)
}

fn u64_at(b: &[u8], at: &mut usize) -> Result<u64, ConsistencyError> {
    let mut x = [0u8; 8];
    x.copy_from_slice(take(b, at, 8)?);
    Ok(u64::from_be_bytes(x))
}

fn hash_at(b: &[u8], at: &mut usize) -> Result<Hash, ConsistencyError> {
    let mut x = [0u8; 32];
    x.copy_from_slice(take(b, at, 32)?);
    Ok(x)
}

fn read(b: &[u8], at: &mut usize, depth: usize) -> Result<Pruned, ConsistencyError> {
    match take(b, at, 1)?[0] {
        0 => {
            let hash = hash_at(b, at)?;
            let count = u64_at(b, at)?;
            if (count == 0) != (hash == EMPTY) {
                return Err(ConsistencyError::Malformed(
                    "an empty subtree has another hash",
                ));
            }
            Ok(Pruned::Off(Node { hash, count }))
        }
        1 => {
            let label = hash_at(b, at)?;
            let count = u64_at(b, at)?;
            let acc = hash_at(b, at)?;
            Ok(Pruned::Label(label, Value { count, acc }))
        }
        2 if depth < MAX_DEPTH => {
            let a = read(b, at, depth + 1)?;
            let c = read(b, at, depth + 1)?;
            Ok(Pruned::Split(Box::new(a), Box::new(c)))
        }
        2 => Err(ConsistencyError::Malformed(
            "deeper than a label's 256 bits",
        )),
        _ => Err(ConsistencyError::Malformed("a node of no known kind")),
    }
}

/// One update of the index as the indexes of two updates: `(root, size, labels)` each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Side {
    pub root: Hash,
    /// The log's leaves `[0, size)` are indexed.
    pub size: u64,
    pub labels: u64,
}

/// Checks that the index `to` is the index `from` with exactly `changes` (each label's leaves
/// added, with their row hashes, in ascending label order) folded on, `tree` the pruned index of
/// `from`.
pub fn check(
    from: &Side,
    to: &Side,
    mut tree: Pruned,
    changes: &[(Label, Vec<(u64, Hash)>)],
) -> Result<(), ConsistencyError> {
    if tree.node().hash != from.root {
        return Err(ConsistencyError::FirstRoot);
    }
    let mut added = 0u64;
    for (i, (label, leaves)) in changes.iter().enumerate() {
        if i > 0 && changes[i - 1].0 >= *label {
            return Err(ConsistencyError::Order(i));
        }
        let in_range = leaves.iter().all(|(l, _)| *l >= from.size && *l < to.size);
        if leaves.is_empty() || !in_range || leaves.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(ConsistencyError::Leaves(i));
        }
        let old = tree
            .get(label, 0)
            .map_err(|()| ConsistencyError::Hidden(i))?;
        added += u64::from(old.is_none());
        let new = leaves
            .iter()
            .fold(old.unwrap_or(Value::NONE), |v, (l, h)| v.push(*l, h));
        tree.set(label, new, 0)
            .map_err(|()| ConsistencyError::Hidden(i))?;
    }
    if tree.node().hash != to.root {
        return Err(ConsistencyError::SecondRoot);
    }
    if from.labels.saturating_add(added) != to.labels {
        return Err(ConsistencyError::Labels {
            before: from.labels,
            added,
            after: to.labels,
        });
    }
    Ok(())
}

#[cfg(test)]
#[path = "consistency_tests.rs"]
mod tests;
