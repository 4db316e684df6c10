//! A label's proof built from the index's stored depths: the nodes at depth 8, those at depth
//! 16 under the label's first byte, and the labels under its first two bytes (what a reader of
//! the stored index fetches, three reads); a path that ends at a lone label above depth 16 asks
//! for that one label. Pure.

use super::{band, bit, subtree, Label, Node, Proof, Terminal, Value};
use crate::merkle::Hash;

/// What a proof of one label is built from.
#[derive(Debug, Clone, Copy)]
pub struct Levels<'a> {
    /// The nonempty nodes at depth 8, by their byte, sorted.
    pub top: &'a [(u8, Node)],
    /// The nonempty nodes at depth 16 under the label's first byte, by the second byte, sorted.
    pub mid: &'a [(u8, Node)],
    /// The labels under the label's first two bytes, sorted, with their values.
    pub bucket: &'a [(Label, Value)],
}

/// Why no proof was built yet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path ends at the one label within `lo..=hi`: read it and call again with it.
    #[error("the path ends at the one label between the bounds given")]
    Lone { lo: Label, hi: Label },
    /// The levels given do not make one another's hashes (a store that changed under the read).
    #[error("the stored index levels do not agree with one another")]
    Inconsistent,
}

/// The labels sharing `label`'s first `depth` bits: the lowest and the highest.
pub fn range(label: &Label, depth: usize) -> (Label, Label) {
    let (mut lo, mut hi) = ([0u8; 32], [0xffu8; 32]);
    for d in 0..depth.min(256) {
        let m = 0x80u8 >> (d % 8);
        if bit(label, d) {
            lo[d / 8] |= m;
        } else {
            hi[d / 8] &= !m;
        }
    }
    (lo, hi)
}

/// Walks one band of 8 levels from `base`: pushes the siblings; `Ok(Some(node))` is the child
/// at the band's bottom the path goes on into; `Ok(None)` the path ended (the terminal set).
fn walk_band(
    label: &Label,
    base: usize,
    children: &[(u8, Node)],
    lone: Option<&(Label, Value)>,
    siblings: &mut Vec<Hash>,
    terminal: &mut Option<Terminal>,
) -> Result<Option<Node>, PathError> {
    let byte = label[base / 8];
    let mut set = children;
    for level in 0..=8 {
        let node = band(set, level);
        match node.count {
            0 => {
                *terminal = Some(Terminal::Empty);
                return Ok(None);
            }
            1 => {
                let depth = base + level;
                let (lo, hi) = range(label, depth);
                return match lone {
                    Some((l, v)) if *l >= lo && *l <= hi => {
                        if Node::leaf(l, v).hash != node.hash {
                            return Err(PathError::Inconsistent);
                        }
                        *terminal = Some(Terminal::Leaf {
                            label: *l,
                            value: *v,
                        });
                        Ok(None)
                    }
                    _ => Err(PathError::Lone { lo, hi }),
                };
            }
            _ if level == 8 => break,
            _ => {}
        }
        let mask = 0x80u8 >> level;
        let split = set.partition_point(|(b, _)| b & mask == 0);
        let (left, right) = set.split_at(split);
        let (same, other) = if byte & mask == 0 {
            (left, right)
        } else {
            (right, left)
        };
        siblings.push(band(other, level + 1).hash);
        set = same;
    }
    match set {
        [(b, n)] if *b == byte => Ok(Some(*n)),
        _ => Err(PathError::Inconsistent),
    }
}

/// The proof of `label` from `levels` (and, when the path ends at a lone label above depth 16,
/// that label: `lone`, read after a [`PathError::Lone`]).
pub fn prove(
    label: &Label,
    levels: &Levels<'_>,
    lone: Option<&(Label, Value)>,
) -> Result<Proof, PathError> {
    let mut siblings = Vec::new();
    let mut terminal = None;
    if let Some(mid_node) = walk_band(label, 0, levels.top, lone, &mut siblings, &mut terminal)? {
        if band(levels.mid, 0) != mid_node {
            return Err(PathError::Inconsistent);
        }
        let bottom = walk_band(label, 8, levels.mid, lone, &mut siblings, &mut terminal)?;
        if let Some(bucket_node) = bottom {
            if subtree(levels.bucket, 16) != bucket_node {
                return Err(PathError::Inconsistent);
            }
            terminal = Some(walk_labels(label, levels.bucket, 16, &mut siblings));
        }
    }
    let terminal = terminal.ok_or(PathError::Inconsistent)?;
    Ok(Proof { siblings, terminal })
}

/// Walks the labels below a stored depth down to the path's end.
fn walk_labels(
    label: &Label,
    mut set: &[(Label, Value)],
    mut depth: usize,
    siblings: &mut Vec<Hash>,
) -> Terminal {
    loop {
        match set {
            [] => return Terminal::Empty,
            [(l, v)] => {
                return Terminal::Leaf {
                    label: *l,
                    value: *v,
                }
            }
            _ if depth >= super::MAX_DEPTH => return Terminal::Empty,
            _ => {}
        }
        let split = set.partition_point(|(l, _)| !bit(l, depth));
        let (left, right) = set.split_at(split);
        let (same, other) = if bit(label, depth) {
            (right, left)
        } else {
            (left, right)
        };
        siblings.push(subtree(other, depth + 1).hash);
        set = same;
        depth += 1;
    }
}
