//! The whole index in memory: every label's value and the nodes at the stored depths, updated
//! a set of labels at a time (only the nodes above them recomputed) and proving any label.
//! What `verify` rebuilds from the rows, and the tests' and benchmarks' index. Pure.

use std::collections::{BTreeMap, BTreeSet};

use super::path::{self, Levels};
use super::{band, subtree, Label, Node, Proof, Value};
use crate::merkle::Hash;

/// The index.
#[derive(Debug, Clone, Default)]
pub struct Index {
    labels: BTreeMap<Label, Value>,
    /// Nonempty nodes at depth 16, by the labels' first two bytes.
    mid: BTreeMap<u16, Node>,
    /// Nonempty nodes at depth 8, by the labels' first byte.
    top: BTreeMap<u8, Node>,
    root: Node,
}

/// The first two bytes of a label: its bucket.
pub fn bucket(label: &Label) -> u16 {
    u16::from_be_bytes([label[0], label[1]])
}

impl Index {
    pub fn new() -> Index {
        Index::default()
    }

    /// The root hash.
    pub fn root(&self) -> Hash {
        self.root.hash
    }

    /// The root node (its hash and how many labels).
    pub fn root_node(&self) -> Node {
        self.root
    }

    /// How many labels.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// What `label` maps to.
    pub fn get(&self, label: &Label) -> Option<Value> {
        self.labels.get(label).copied()
    }

    /// The labels and values under bucket `b`, sorted.
    pub fn bucket_labels(&self, b: u16) -> Vec<(Label, Value)> {
        let mut lo = [0u8; 32];
        lo[..2].copy_from_slice(&b.to_be_bytes());
        let mut hi = [0xffu8; 32];
        hi[..2].copy_from_slice(&b.to_be_bytes());
        self.labels.range(lo..=hi).map(|(l, v)| (*l, *v)).collect()
    }

    fn mid_under(&self, first: u8) -> Vec<(u8, Node)> {
        let lo = u16::from(first) << 8;
        self.mid
            .range(lo..=lo | 0xff)
            .map(|(b, n)| (b.to_be_bytes()[1], *n))
            .collect()
    }

    /// Sets each label's new value, then recomputes the nodes above the labels changed.
    /// Returns the stored-depth nodes that changed: `(depth, prefix, node)` (prefix the
    /// label's first byte at depth 8, first two bytes at 16, 0 for the root).
    pub fn update(
        &mut self,
        changes: impl IntoIterator<Item = (Label, Value)>,
    ) -> Vec<(usize, u16, Node)> {
        let mut buckets = BTreeSet::new();
        for (l, v) in changes {
            self.labels.insert(l, v);
            buckets.insert(bucket(&l));
        }
        let mut changed = Vec::new();
        let mut firsts = BTreeSet::new();
        for b in buckets {
            let n = subtree(&self.bucket_labels(b), 16);
            self.mid.insert(b, n);
            changed.push((16, b, n));
            firsts.insert(b.to_be_bytes()[0]);
        }
        for f in firsts {
            let n = band(&self.mid_under(f), 0);
            self.top.insert(f, n);
            changed.push((8, u16::from(f), n));
        }
        let top: Vec<(u8, Node)> = self.top.iter().map(|(b, n)| (*b, *n)).collect();
        self.root = band(&top, 0);
        changed.push((0, 0, self.root));
        changed
    }

    /// The proof of what `label` maps to.
    pub fn prove(&self, label: &Label) -> Proof {
        let top: Vec<(u8, Node)> = self.top.iter().map(|(b, n)| (*b, *n)).collect();
        let mid = self.mid_under(label[0]);
        let bucket = self.bucket_labels(bucket(label));
        let levels = Levels {
            top: &top,
            mid: &mid,
            bucket: &bucket,
        };
        match path::prove(label, &levels, None) {
            Ok(p) => p,
            Err(path::PathError::Lone { lo, hi }) => {
                let lone = self.labels.range(lo..=hi).next().map(|(l, v)| (*l, *v));
                // The index's own levels always agree, and a lone label is in its range.
                path::prove(label, &levels, lone.as_ref()).unwrap_or(Proof {
                    siblings: Vec::new(),
                    terminal: super::Terminal::Empty,
                })
            }
            Err(path::PathError::Inconsistent) => Proof {
                siblings: Vec::new(),
                terminal: super::Terminal::Empty,
            },
        }
    }
}
