//! The tile geometry (C2SP tlog-tiles): the tree is stored and served in tiles of height 8, so
//! a subtree whose height is a multiple of 8 is kept (the stored tree's `audit.tree_nodes`, the
//! writer's frontier, `verify`'s check of them). Defined here once.

use super::merkle::Node;

/// The height of a tile: 256 leaves or hashes.
pub const TILE_HEIGHT: u32 = 8;

/// Whether `node` is the root of a subtree that the stored tree keeps (a full tile's hash).
pub(crate) fn is_stored(node: &Node) -> bool {
    node.level > 0 && node.level % TILE_HEIGHT == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_tile_roots_above_the_leaves_are_stored() {
        let at = |level, index| Node { level, index };
        assert!(!is_stored(&at(0, 0)));
        assert!(!is_stored(&at(7, 3)));
        assert!(is_stored(&at(8, 0)));
        assert!(is_stored(&at(16, 1)));
    }
}
