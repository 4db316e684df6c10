//! The account index (`event-audit-account-index/1`), pure: a sparse Merkle tree from 32-byte
//! labels (each an identifier's VRF output under a key derived from the log's, [`crate::vrf`]) to the list of log leaves about it,
//! its hashing, its nodes at the stored depths 0, 8 and 16, and its proofs of what a label maps
//! to (or that it maps to nothing).
//!
//! Hashing (SHA-256, one domain byte each):
//! - a label's value is its leaf count `n` and the fold `acc` of its leaves in log order:
//!   `acc₀` = 32 zero bytes, `accᵢ₊₁ = SHA-256(0x02 ‖ accᵢ ‖ u64be(leaf index) ‖ row hash)`;
//! - a label's node: `SHA-256(0x00 ‖ label ‖ u64be(n) ‖ acc)`;
//! - an empty subtree: 32 zero bytes; a subtree holding one label: that label's node (at any
//!   depth: a lone label is lifted to where it is alone); a subtree holding two or more:
//!   `SHA-256(0x01 ‖ left ‖ right)`, the left child holding the labels whose bit at that depth
//!   (most significant bit of byte 0 first) is 0.
//!
//! A proof is the terminal met on the label's path (the label's own node, another label's node
//! sharing the path's bits, or an empty subtree) and the siblings from the root down to it;
//! [`verify`] folds them back to the root.

pub mod consistency;
pub mod delta;
pub mod memory;
pub mod path;

use sha2::{Digest, Sha256};

use crate::merkle::Hash;

/// An index key: the VRF output of an identifier, truncated to 32 bytes.
pub type Label = [u8; 32];

/// The index format's name, as its records in the log carry it.
pub const FORMAT: &str = "event-audit-account-index/1";

/// What the log's VRF key is derived from its signing key for
/// ([`crate::note::Signer::derive`]).
pub const VRF_KEY_PURPOSE: &str = "event-audit/account-index/v1 vrf key";

/// The log's index key: its labels are this key's VRF outputs.
pub fn vrf_key(log_key: &crate::note::PrivateKey) -> crate::vrf::VrfKey {
    crate::vrf::VrfKey::from_seed(&log_key.derive(VRF_KEY_PURPOSE))
}

/// The label of `identifier` under the index key whose public half is `vrf_public`, proven by
/// `vrf_proof`; `None` when the proof does not verify.
pub fn label_proven(vrf_public: &[u8; 32], identifier: &str, vrf_proof: &[u8]) -> Option<Label> {
    crate::vrf::verify(vrf_public, &alpha(identifier), vrf_proof)
        .ok()
        .map(|beta| label_of(&beta))
}

/// What the VRF input of an identifier starts with; the identifier's UTF-8 bytes follow.
pub const ALPHA_PREFIX: &[u8] = b"event-audit/account-index/v1\0";

/// The VRF input of an identifier (a platform or external account number, or another
/// identifying field's value, as text).
pub fn alpha(identifier: &str) -> Vec<u8> {
    let mut a = ALPHA_PREFIX.to_vec();
    a.extend_from_slice(identifier.as_bytes());
    a
}

/// The label of a VRF output: its first 32 bytes.
pub fn label_of(beta: &[u8; 64]) -> Label {
    let mut l = [0u8; 32];
    l.copy_from_slice(&beta[..32]);
    l
}

/// The hash of an empty subtree.
pub const EMPTY: Hash = [0; 32];

/// The depths at which nodes are stored (a node per 8 bits of label; below 16, the labels).
pub const STORED_DEPTHS: [usize; 3] = [0, 8, 16];

/// The deepest a path can go (a label's bits).
pub const MAX_DEPTH: usize = 256;

/// What a label maps to: how many leaves, and their fold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Value {
    pub count: u64,
    pub acc: Hash,
}

impl Value {
    /// No leaf yet.
    pub const NONE: Value = Value {
        count: 0,
        acc: [0; 32],
    };

    /// The value once leaf `leaf_index`, whose row hash is `row_hash`, is added (leaves are
    /// added in log order).
    pub fn push(&self, leaf_index: u64, row_hash: &Hash) -> Value {
        let mut h = Sha256::new();
        h.update([0x02]);
        h.update(self.acc);
        h.update(leaf_index.to_be_bytes());
        h.update(row_hash);
        Value {
            count: self.count.saturating_add(1),
            acc: h.finalize().into(),
        }
    }

    /// The value of exactly these leaves (in log order).
    pub fn of<'a>(leaves: impl IntoIterator<Item = (u64, &'a Hash)>) -> Value {
        leaves
            .into_iter()
            .fold(Value::NONE, |v, (i, h)| v.push(i, h))
    }
}

/// A label's node hash.
pub fn leaf_hash(label: &Label, v: &Value) -> Hash {
    let mut h = Sha256::new();
    h.update([0x00]);
    h.update(label);
    h.update(v.count.to_be_bytes());
    h.update(v.acc);
    h.finalize().into()
}

/// An interior node's hash.
pub fn interior(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([0x01]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The bit of `label` at `depth` (0: the most significant bit of byte 0); beyond the label, 0.
pub fn bit(label: &Label, depth: usize) -> bool {
    label
        .get(depth / 8)
        .is_some_and(|b| b & (0x80 >> (depth % 8)) != 0)
}

/// A subtree: its hash and how many labels it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Node {
    pub hash: Hash,
    pub count: u64,
}

impl Node {
    pub const EMPTY: Node = Node {
        hash: EMPTY,
        count: 0,
    };

    /// The node of one label.
    pub fn leaf(label: &Label, v: &Value) -> Node {
        Node {
            hash: leaf_hash(label, v),
            count: 1,
        }
    }

    /// The parent of two children: empty, the lone label lifted, or an interior node.
    pub fn join(left: Node, right: Node) -> Node {
        let count = left.count.saturating_add(right.count);
        let hash = match (left.count, right.count) {
            (0, 0) => EMPTY,
            (_, 0) if left.count == 1 => left.hash,
            (0, 1) => right.hash,
            _ => interior(&left.hash, &right.hash),
        };
        Node { hash, count }
    }
}

/// The subtree at `depth` of `leaves` (sorted by label, sharing their first `depth` bits).
pub fn subtree(leaves: &[(Label, Value)], depth: usize) -> Node {
    match leaves {
        [] => Node::EMPTY,
        [(l, v)] => Node::leaf(l, v),
        _ if depth >= MAX_DEPTH => Node::EMPTY, // distinct sorted labels never get here
        _ => {
            let split = leaves.partition_point(|(l, _)| !bit(l, depth));
            Node::join(
                subtree(&leaves[..split], depth + 1),
                subtree(&leaves[split..], depth + 1),
            )
        }
    }
}

/// The node 8 levels above `children` (sorted by their byte, each the subtree under that
/// byte), within a band of 8 bits; `level` is how many of the band's bits are fixed.
pub fn band(children: &[(u8, Node)], level: usize) -> Node {
    match children {
        [] => Node::EMPTY,
        [(_, n)] if n.count <= 1 || level >= 8 => *n,
        _ if level >= 8 => Node::EMPTY, // distinct sorted bytes never get here
        _ => {
            let mask = 0x80u8 >> level;
            let split = children.partition_point(|(b, _)| b & mask == 0);
            Node::join(
                band(&children[..split], level + 1),
                band(&children[split..], level + 1),
            )
        }
    }
}

/// Where a label's path ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Terminal {
    /// An empty subtree: the label maps to nothing.
    Empty,
    /// A label's node: the label itself (it maps to `value`), or another one sharing the
    /// path's bits (the label maps to nothing).
    Leaf { label: Label, value: Value },
}

/// A proof of what one label maps to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proof {
    /// The siblings on the path, from the root's children down.
    pub siblings: Vec<Hash>,
    pub terminal: Terminal,
}

/// Why a proof does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    #[error("the proof's path is {0} levels deep, more than a label's 256 bits")]
    TooDeep(usize),
    #[error("the proof ends at another label that does not share the path's first {0} bits")]
    OffPath(usize),
    #[error("the proof does not lead to the index root")]
    Root,
}

/// What `proof` shows `label` maps to under `root`: `Some(value)`, or `None` (nothing).
pub fn verify(root: &Hash, label: &Label, proof: &Proof) -> Result<Option<Value>, IndexError> {
    let depth = proof.siblings.len();
    if depth > MAX_DEPTH {
        return Err(IndexError::TooDeep(depth));
    }
    let (mut h, found) = match &proof.terminal {
        Terminal::Empty => (EMPTY, None),
        Terminal::Leaf {
            label: other,
            value,
        } => {
            if (0..depth).any(|d| bit(other, d) != bit(label, d)) {
                return Err(IndexError::OffPath(depth));
            }
            let found = (other == label).then_some(*value);
            (leaf_hash(other, value), found)
        }
    };
    for (d, sib) in proof.siblings.iter().enumerate().rev() {
        h = if bit(label, d) {
            interior(sib, &h)
        } else {
            interior(&h, sib)
        };
    }
    if &h != root {
        return Err(IndexError::Root);
    }
    Ok(found)
}

/// Why a claim that a label maps to exactly some leaves does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompleteError {
    #[error("its index proof: {0}")]
    Proof(IndexError),
    #[error("its leaves are not listed in ascending order without repeats (at leaf {0})")]
    Order(u64),
    #[error("leaf {leaf} is not below the index's size {size}")]
    Beyond { leaf: u64, size: u64 },
    #[error("the index holds {indexed} leaves for it, the bundle lists {listed}")]
    Count { indexed: u64, listed: u64 },
    #[error("the leaves listed are not the ones the index holds (their fold differs)")]
    Fold,
}

/// Checks that the index of root `root`, which covers the log's leaves `[0, size)`, maps
/// `label` to exactly `leaves` (leaf index and row hash, ascending): none when `proof` shows
/// the label absent.
pub fn check_complete(
    root: &Hash,
    label: &Label,
    proof: &Proof,
    leaves: &[(u64, Hash)],
    size: u64,
) -> Result<(), CompleteError> {
    for w in leaves.windows(2) {
        if w[0].0 >= w[1].0 {
            return Err(CompleteError::Order(w[1].0));
        }
    }
    if let Some((leaf, _)) = leaves.iter().find(|(l, _)| *l >= size) {
        return Err(CompleteError::Beyond { leaf: *leaf, size });
    }
    let indexed = verify(root, label, proof)
        .map_err(CompleteError::Proof)?
        .unwrap_or(Value::NONE);
    let listed = Value::of(leaves.iter().map(|(i, h)| (*i, h)));
    if indexed.count != listed.count {
        return Err(CompleteError::Count {
            indexed: indexed.count,
            listed: listed.count,
        });
    }
    if indexed != listed {
        return Err(CompleteError::Fold);
    }
    Ok(())
}

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
