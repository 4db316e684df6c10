//! The witness pass fed by the walk (one read of the table): the rows' recomputed hashes, link
//! by link in log order, made into the Merkle tree and held, as they come, against every link's
//! stored tree, every stored subtree and every checkpoint to meet (the witnessed ones and the
//! one checked last time).

use std::collections::HashMap;

use super::store::LinkRow;
use super::walk::LeafSink;
use crate::tlog::merkle::{self, Frontier, Node};

/// The walk's leaves, made into the tree and held against links, stored subtrees and
/// checkpoints as they come.
pub struct TreeSink {
    pub(super) tree: Frontier,
    /// (size, root, name) of the checkpoints to meet, in size order.
    pub(super) pending: Vec<(u64, merkle::Hash, String)>,
    pub(super) next: usize,
    stored: HashMap<Node, Vec<u8>>,
    pub(super) breaks: Vec<(Option<String>, String)>,
    pub(super) rows: u64,
    /// The tree at the newest checkpoint met.
    pub(super) at_newest: Option<Frontier>,
}

impl TreeSink {
    /// A sink starting from `start`, to meet `pending` ((size, root, name), in size order),
    /// holding the stored subtrees against the rows.
    pub fn new(
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
        }
    }
}

impl LeafSink for TreeSink {
    fn link(&mut self, link: &LinkRow, row_hashes: &[[u8; 32]]) {
        let (Some(size), Some(root)) = (link.tree_size, link.tree_root.as_deref()) else {
            return;
        };
        for h in row_hashes {
            let stored = &self.stored;
            let mut bad = None;
            self.tree.append(merkle::leaf_hash(h), |node, hash| {
                if crate::tlog::tile::is_stored(&node)
                    && stored.get(&node).map(Vec::as_slice) != Some(&hash[..])
                {
                    bad = Some(format!(
                        "stored subtree height {} index {} does not match the rows (tree edited)",
                        node.level, node.index
                    ));
                }
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
        if i64::try_from(self.tree.size()).ok() != Some(size) || root != self.tree.root() {
            self.breaks.push((None, format!("link {}: its tree (size and root) does not match its rows (tree or rows edited)", link.link_seq)));
        }
    }
}
