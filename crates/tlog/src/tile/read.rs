//! Any subtree hash of a tree of a given size, read back from that size's tiles (the way Go's
//! `tlog.TileHashReader` does, and a C2SP tlog-tiles client must): the tile that holds a node,
//! and a reader that assembles roots and proofs from tiles fetched by the caller. Which tiles a
//! computation needs is known before any is fetched, so an HTTP caller fetches them together.

use std::collections::HashMap;

use super::{TileId, TILE_HEIGHT, TILE_WIDTH};
use crate::merkle::{self, Hash, Node};

/// Why a hash could not be read from the tiles.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("the subtree at level {level} index {index} is not inside a tree of {size} leaves")]
    Outside { level: u32, index: u64, size: u64 },
    #[error("tile {0} is needed but was not fetched")]
    Missing(String),
}

/// The tile of a tree of `size` leaves that holds `node`'s hash (or its children's, hashed
/// together), and where in it: `(tile, first hash, how many)`.
pub fn tile_of(node: Node, size: u64) -> Result<(TileId, usize, usize), ReadError> {
    let outside = ReadError::Outside {
        level: node.level,
        index: node.index,
        size,
    };
    let level = node.level / TILE_HEIGHT;
    let within = node.level % TILE_HEIGHT;
    let first = node.index.checked_shl(within).ok_or(outside.clone())?;
    let span = 1u64 << within;
    let count = size.checked_shr(TILE_HEIGHT * level).unwrap_or(0);
    if level > u32::from(super::MAX_LEVEL) || first.saturating_add(span) > count {
        return Err(outside);
    }
    let index = first / TILE_WIDTH;
    let full = index
        .checked_add(1)
        .and_then(|i| i.checked_mul(TILE_WIDTH))
        .is_some_and(|end| end <= count);
    let width = if full { TILE_WIDTH } else { count % TILE_WIDTH };
    let tile = TileId::hashes(level as u8, index, width as u16);
    Ok((tile, (first % TILE_WIDTH) as usize, span as usize))
}

/// The tiles needed to read `nodes` from a tree of `size` leaves.
pub fn tiles_for(nodes: &[Node], size: u64) -> Result<Vec<TileId>, ReadError> {
    let mut out: Vec<TileId> = nodes
        .iter()
        .map(|n| tile_of(*n, size).map(|t| t.0))
        .collect::<Result<_, _>>()?;
    out.sort();
    out.dedup();
    Ok(out)
}

/// The nodes whose hashes make the root of a tree of `n` leaves, an inclusion proof of leaf `m`
/// in it, or a consistency proof from `m` leaves: every tile they are read from is in the tiles
/// of any size at least `n`.
pub fn nodes_of_root(n: u64) -> Vec<Node> {
    merkle::range_nodes(0, n)
}

pub fn nodes_of_inclusion(m: u64, n: u64) -> Vec<Node> {
    merkle::nodes_needed(&merkle::inclusion_ranges(m, n))
}

pub fn nodes_of_consistency(m: u64, n: u64) -> Vec<Node> {
    merkle::nodes_needed(&merkle::consistency_ranges(m, n))
}

/// Hashes read from the tiles of a tree of `size` leaves that the caller fetched (and checked
/// against their width) beforehand.
pub struct TileReader<'a> {
    size: u64,
    tiles: &'a HashMap<TileId, Vec<Hash>>,
}

impl<'a> TileReader<'a> {
    pub fn new(size: u64, tiles: &'a HashMap<TileId, Vec<Hash>>) -> TileReader<'a> {
        TileReader { size, tiles }
    }

    /// The hash of a perfect subtree inside the tree.
    pub fn node(&self, node: Node) -> Result<Hash, ReadError> {
        let (tile, first, span) = tile_of(node, self.size)?;
        let hashes = self
            .tiles
            .get(&tile)
            .filter(|h| h.len() >= first + span)
            .ok_or_else(|| ReadError::Missing(tile.path()))?;
        Ok(merkle::root_of(&hashes[first..first + span]))
    }

    /// The root of the tree's first `n` leaves (`n` at most the tree's size).
    pub fn root(&self, n: u64) -> Result<Hash, ReadError> {
        let parts = nodes_of_root(n)
            .into_iter()
            .map(|node| self.node(node))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(merkle::range_hash(&parts))
    }

    /// The inclusion proof of leaf `m` in the tree of the first `n` leaves.
    pub fn inclusion(&self, m: u64, n: u64) -> Result<Vec<Hash>, ReadError> {
        merkle::assemble(&merkle::inclusion_ranges(m, n), |node| self.node(node))
    }

    /// The consistency proof from the first `m` leaves to the first `n`.
    pub fn consistency(&self, m: u64, n: u64) -> Result<Vec<Hash>, ReadError> {
        merkle::assemble(&merkle::consistency_ranges(m, n), |node| self.node(node))
    }
}
