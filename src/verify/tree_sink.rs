//! The witness pass fed by the walk (one read of the table): the rows' recomputed hashes, link
//! by link in log order, made into the Merkle tree and held, as they come, against every link's
//! stored tree, every stored subtree and every checkpoint to meet (the witnessed ones and the
//! one checked last time).
//!
//! A row edited in place (its stored hash left alone) recomputes to another hash, so every
//! stored subtree and link tree above it disagrees with the recomputed tree although nobody
//! touched them: the chain's own report names that row. Such a stored tree is a break of its
//! own only when it disagrees with the rows' *stored* hashes too (so a tree rebuilt, from the
//! first row whose hashes differ on, from the stored hashes is kept beside the recomputed one);
//! the witnessed checkpoints are held against the recomputed tree alone.

use std::collections::HashMap;

use super::walk::LeafSink;
use crate::log::read::LinkRow;
use crate::tlog::merkle::{self, Frontier, Node};

/// The walk's leaves, made into the tree and held against links, stored subtrees and
/// checkpoints as they come.
pub(crate) struct TreeSink {
    pub(super) tree: Frontier,
    /// (size, root, name) of the checkpoints to meet, in size order.
    pub(super) pending: Vec<(u64, merkle::Hash, String)>,
    pub(super) next: usize,
    stored: HashMap<Node, Vec<u8>>,
    pub(super) breaks: Vec<(Option<String>, String)>,
    pub(super) rows: u64,
    /// The tree at the newest checkpoint met.
    pub(super) at_newest: Option<Frontier>,
    /// The tree of the rows' stored hashes, from the first row whose recomputed hash is another
    /// (until then, `tree` is that tree too).
    kept: Option<Frontier>,
    /// Whether a link so far held another number of rows than it counts (rows removed or
    /// added, which the chain reports): the stored trees after it are shifted.
    shifted: bool,
}

impl TreeSink {
    /// A sink starting from `start`, to meet `pending` ((size, root, name), in size order),
    /// holding the stored subtrees against the rows.
    pub(crate) fn new(
        start: Frontier,
        pending: Vec<(u64, merkle::Hash, String)>,
        stored: HashMap<Node, Vec<u8>>,
    ) -> TreeSink {
        TreeSink {
            tree: start,
            pending,
            next: 0,
            stored,
            breaks: Vec::new(),
            rows: 0,
            at_newest: None,
            kept: None,
            shifted: false,
        }
    }
}

impl LeafSink for TreeSink {
    fn link(&mut self, link: &LinkRow, row_hashes: &[[u8; 32]], stored_hashes: &[[u8; 32]]) {
        let (Some(size), Some(root)) = (link.tree_size, link.tree_root.as_deref()) else {
            return;
        };
        self.shifted |= usize::try_from(link.row_count).ok() != Some(row_hashes.len());
        for (h, s) in row_hashes.iter().zip(stored_hashes) {
            if self.kept.is_none() && h != s {
                self.kept = Some(self.tree.clone());
            }
            // The stored subtrees the rows' stored hashes make (only once they differ).
            let mut kept_nodes = Vec::new();
            if let Some(k) = self.kept.as_mut() {
                k.append(merkle::leaf_hash(s), |node, hash| {
                    if crate::tlog::tile::is_stored(&node) {
                        kept_nodes.push((node, *hash));
                    }
                });
            }
            let stored = &self.stored;
            let matches = |node: &Node, hash: &merkle::Hash| {
                stored.get(node).map(Vec::as_slice) == Some(&hash[..])
            };
            let shifted = self.shifted;
            let mut bad = None;
            self.tree.append(merkle::leaf_hash(h), |node, hash| {
                if !crate::tlog::tile::is_stored(&node) || matches(&node, hash) {
                    return;
                }
                // Made by the rows' stored hashes: it follows from the row break the chain names.
                if kept_nodes.iter().any(|(n, k)| *n == node && matches(n, k)) {
                    return;
                }
                let why = if shifted {
                    "rows removed or added before it, or the tree edited"
                } else {
                    "tree edited"
                };
                bad = Some(format!(
                    "stored subtree height {} index {} does not match the rows ({why})",
                    node.level, node.index
                ));
            });
            if let Some(b) = bad {
                self.breaks.push((None, b));
            }
            self.rows += 1;
            while let Some((s, r, name)) = self.pending.get(self.next) {
                if *s != self.tree.size() {
                    break;
                }
                if self.tree.root() != *r {
                    self.breaks.push((Some(name.clone()), format!("{name}: the database's tree at size {s} has another root (rows changed, added or removed before it)")));
                }
                self.at_newest = Some(self.tree.clone());
                self.next += 1;
            }
        }
        let holds = |t: &Frontier| i64::try_from(t.size()).ok() == Some(size) && root == t.root();
        // A link whose tree the rows' stored hashes make follows from the rows' break.
        if !holds(&self.tree) && !self.kept.as_ref().is_some_and(holds) {
            self.breaks.push((None, format!("link {}: its tree (size and root) does not match its rows (tree or rows edited)", link.link_seq)));
        }
    }
}
