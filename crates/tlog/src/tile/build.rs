//! A growing tree's tiles, written as it grows: entries go in one by one; every tile and bundle
//! that fills is handed out once, and the partial ones of the current size on demand. Resumed at
//! any size from that size's partial tiles (checked against each other), so a writer that
//! stopped goes on from its files without reading the tree again.

use super::{parse_bundle, push_entry, TileError, TileId, TILE_WIDTH};
use crate::merkle::{leaf_hash, range_hash, root_of, Hash};

/// The tiles of a tree being extended.
#[derive(Debug, Clone, Default)]
pub struct TileBuilder {
    size: u64,
    /// `rows[l]`: the hashes of level `l`'s tile being filled (fewer than 256).
    rows: Vec<Vec<Hash>>,
    /// The bytes of the bundle being filled.
    bundle: Vec<u8>,
    /// Full tiles and bundles completed since the last [`TileBuilder::take_full`].
    done: Vec<(TileId, Vec<u8>)>,
}

/// Why the partial tiles given to [`TileBuilder::resume`] are not those of the size.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResumeError {
    #[error("level {level} has {found} hashes, but a tree of {size} leaves leaves {want} in its partial tile")]
    Width {
        level: usize,
        found: usize,
        want: u64,
        size: u64,
    },
    #[error(transparent)]
    Bundle(#[from] TileError),
    #[error(
        "entry {index} of the partial bundle does not hash to the partial level-0 tile's hash"
    )]
    Mismatch { index: u64 },
}

impl TileBuilder {
    /// The tiles of the empty tree.
    pub fn new() -> TileBuilder {
        TileBuilder::default()
    }

    /// Goes on from a tree of `size` leaves, given the hashes of its partial tile at each level
    /// (`rows[l]`, empty where the level's count is a multiple of 256) and its partial bundle's
    /// bytes; the bundle's entries must hash to the level-0 row.
    pub fn resume(
        size: u64,
        rows: Vec<Vec<Hash>>,
        bundle: Vec<u8>,
    ) -> Result<TileBuilder, ResumeError> {
        let mut count = size;
        let levels = rows.len().max(levels_of(size));
        for level in 0..levels {
            let want = count % TILE_WIDTH;
            let found = rows.get(level).map_or(0, Vec::len);
            if found as u64 != want {
                return Err(ResumeError::Width {
                    level,
                    found,
                    want,
                    size,
                });
            }
            count /= TILE_WIDTH;
        }
        let width = size % TILE_WIDTH;
        if width > 0 {
            let id = TileId::entries(size / TILE_WIDTH, width as u16);
            for (i, e) in parse_bundle(&id, &bundle)?.iter().enumerate() {
                if rows[0][i] != leaf_hash(e) {
                    return Err(ResumeError::Mismatch {
                        index: size - width + i as u64,
                    });
                }
            }
        } else if !bundle.is_empty() {
            return Err(ResumeError::Bundle(TileError::ExtraEntries {
                path: "tile/entries (none at this size)".into(),
                found: 1,
                width: 0,
            }));
        }
        Ok(TileBuilder {
            size,
            rows,
            bundle,
            done: Vec::new(),
        })
    }

    /// The tree's size.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Appends one entry; returns its leaf hash.
    pub fn push(&mut self, entry: &[u8]) -> Result<Hash, TileError> {
        push_entry(&mut self.bundle, entry)?;
        let leaf = leaf_hash(entry);
        let index = self.size / TILE_WIDTH;
        self.size += 1;
        if self.size % TILE_WIDTH == 0 {
            let full = std::mem::take(&mut self.bundle);
            self.done
                .push((TileId::entries(index, TILE_WIDTH as u16), full));
        }
        self.add(0, leaf);
        Ok(leaf)
    }

    /// Adds a hash to level `level`'s row; a row that fills becomes a full tile, and its root
    /// a hash of the level above.
    fn add(&mut self, level: usize, hash: Hash) {
        if self.rows.len() <= level {
            self.rows.resize_with(level + 1, Vec::new);
        }
        self.rows[level].push(hash);
        if self.rows[level].len() as u64 == TILE_WIDTH {
            let row = std::mem::take(&mut self.rows[level]);
            let index = (self.size >> (super::TILE_HEIGHT * level as u32)) / TILE_WIDTH - 1;
            let root = root_of(&row);
            self.done.push((
                TileId::hashes(level as u8, index, TILE_WIDTH as u16),
                row.concat(),
            ));
            self.add(level + 1, root);
        }
    }

    /// The full tiles and bundles completed since the last call, in the order they filled.
    pub fn take_full(&mut self) -> Vec<(TileId, Vec<u8>)> {
        std::mem::take(&mut self.done)
    }

    /// The partial tiles and bundle of the current size, lowest level first.
    pub fn partials(&self) -> Vec<(TileId, Vec<u8>)> {
        let mut out = Vec::new();
        let mut count = self.size;
        for (level, row) in self.rows.iter().enumerate() {
            if !row.is_empty() {
                let id = TileId::hashes(level as u8, count / TILE_WIDTH, row.len() as u16);
                out.push((id, row.concat()));
                if level == 0 {
                    out.push((
                        TileId::entries(count / TILE_WIDTH, row.len() as u16),
                        self.bundle.clone(),
                    ));
                }
            }
            count /= TILE_WIDTH;
        }
        out
    }

    /// The tree's root hash.
    pub fn root(&self) -> Hash {
        // The perfect subtrees left to right: the highest level's row first, each row split by
        // the binary digits of its length.
        let mut parts = Vec::new();
        for row in self.rows.iter().rev() {
            let mut at = 0;
            for bit in (0..super::TILE_HEIGHT).rev() {
                let len = 1usize << bit;
                if row.len() - at >= len {
                    parts.push(root_of(&row[at..at + len]));
                    at += len;
                }
            }
        }
        range_hash(&parts)
    }
}

/// How many levels a tree of `size` leaves has tiles at.
fn levels_of(size: u64) -> usize {
    let mut n = 0;
    let mut count = size;
    while count > 0 {
        n += 1;
        count /= TILE_WIDTH;
    }
    n
}
