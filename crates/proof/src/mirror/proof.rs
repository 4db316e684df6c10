//! The tiles `verify-proof --tiles` checks a bundle against, in place of the bundle's own proof
//! hashes: from a log's read path or a mirror's copy (a mirror's directory or prefix holds one
//! copy per origin, `<hex SHA-256 of the origin>/`), the checkpoint signed by the log's key, of
//! the bundle's origin and at least the bundle's size, and every hash tile of that tree needed
//! for the root at the bundle's size, each entry's leaf hash and its inclusion proof; the
//! tiles must make the root their own checkpoint signs. The bundle's check reads them with a
//! `TileReader` (`evidence::bundle::check_against_tiles`).

use std::collections::HashMap;
use std::time::Duration;

use super::pull::{fetch_hashes, opened};
use super::source::Source;
use super::{Log, PullError};
use crate::tlog::merkle::{Hash, Node};
use crate::tlog::note::PublicKey;
use crate::tlog::tile::read::{nodes_of_inclusion, nodes_of_root, tiles_for, TileReader};
use crate::tlog::tile::TileId;

/// The hash tiles of a tree of `size` leaves that a bundle's check reads.
#[derive(Debug, Clone)]
pub struct TreeTiles {
    pub size: u64,
    pub hashes: HashMap<TileId, Vec<Hash>>,
    /// Where they were read, as shown.
    pub at: String,
}

impl TreeTiles {
    pub fn reader(&self) -> TileReader<'_> {
        TileReader::new(self.size, &self.hashes)
    }
}

/// The tiles at `at` (a URL or a directory) for a bundle of log `origin` at tree size `size`
/// proving the leaves `leaves`; each request may take `timeout`.
pub async fn tiles_for_bundle(
    at: &str,
    key: &PublicKey,
    origin: &str,
    size: u64,
    leaves: &[u64],
    timeout: Duration,
) -> Result<TreeTiles, PullError> {
    let top = Source::parse(at, timeout, &Default::default()).map_err(PullError::Refused)?;
    // One fetch of the checkpoint: at the prefix, or in a mirror's copy of the bundle's log.
    let (source, note) = top.locate(origin).await.map_err(PullError::served)?;
    let log = Log {
        source,
        key: key.clone(),
        policy: None,
        max_leaves: 0,
    };
    let shown = log.source.shown("checkpoint");
    let theirs = opened(&log, note)?;
    if theirs.cp.origin != origin {
        return Err(PullError::Refused(format!(
            "{shown}: a checkpoint of log {}, not of the bundle's log {origin}",
            theirs.cp.origin
        )));
    }
    let n = theirs.cp.size;
    if n < size {
        return Err(PullError::Refused(format!(
            "{shown}: the tiles' tree has {n} leaves, fewer than the bundle's {size}; pull the mirror (event-audit mirror) and try again"
        )));
    }
    let mut nodes = nodes_of_root(n);
    nodes.extend(nodes_of_root(size));
    for &leaf in leaves.iter().filter(|&&l| l < size) {
        nodes.extend(nodes_of_inclusion(leaf, size));
        nodes.push(Node {
            level: 0,
            index: leaf,
        });
    }
    let needed = tiles_for(&nodes, n).map_err(|e| PullError::Refused(e.to_string()))?;
    let tiles = TreeTiles {
        size: n,
        hashes: fetch_hashes(&log, needed).await?,
        at: log.source.shown(""),
    };
    let root = tiles
        .reader()
        .root(n)
        .map_err(|e| PullError::Refused(e.to_string()))?;
    if root != theirs.cp.root {
        return Err(PullError::Refused(format!(
            "the tiles at {} do not make the root their own checkpoint signs at size {n}: the copy is damaged",
            tiles.at
        )));
    }
    Ok(tiles)
}
