//! The tile geometry and formats of C2SP tlog-tiles (v0.1.0): the tree is stored and served in
//! tiles of height 8 (`tile/<L>/<N>[.p/<W>]`, concatenated hashes) beside entry bundles
//! (`tile/entries/<N>[.p/<W>]`, uint16-length-prefixed entries); a subtree whose height is a
//! multiple of 8 is kept (the stored tree's `audit.tree_nodes`, the writer's frontier,
//! `verify`'s check of them). Paths, bundles and hash tiles are defined, parsed and checked here
//! once; [`build`] writes a growing tree's tiles, [`read`] reads any subtree hash back from them.

pub mod build;
pub mod read;

use super::merkle::{Hash, Node};

/// The height of a tile: 256 leaves or hashes.
pub const TILE_HEIGHT: u32 = 8;

/// How many hashes (or entries) a full tile holds.
pub const TILE_WIDTH: u64 = 1 << TILE_HEIGHT;

/// The highest level a tile path may name (C2SP: 0 to 63).
pub const MAX_LEVEL: u8 = 63;

/// The longest entry a bundle can hold (its length prefix is a uint16).
pub const MAX_ENTRY: usize = u16::MAX as usize;

/// Whether `node` is the root of a subtree that the stored tree keeps (a full tile's hash).
pub fn is_stored(node: &Node) -> bool {
    node.level > 0 && node.level % TILE_HEIGHT == 0
}

/// What a tile holds: the hashes of one level, or the entries themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Level `L`: the hashes of subtrees of height `8·L` (level 0: the leaf hashes).
    Hashes(u8),
    /// An entry bundle, beside the level-0 tile of the same index.
    Entries,
}

/// One tile or bundle: what it holds, its index in its level, and its width (1 to 256; 256 is
/// a full tile, anything less a partial one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TileId {
    pub kind: Kind,
    pub index: u64,
    pub width: u16,
}

/// Why a path is not a tile's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("not a tile path: it must be tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>]")]
    Shape,
    #[error("the level must be a decimal from 0 to 63 without leading zeroes")]
    Level,
    #[error("the index must be 3-digit elements, all but the last starting with x")]
    Index,
    #[error("the width of a partial tile must be a decimal from 1 to 255 without leading zeroes")]
    Width,
}

/// Why a tile's bytes are not what its path says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TileError {
    #[error("{path}: {len} bytes, but {width} hashes are {want} bytes")]
    HashLength {
        path: String,
        len: usize,
        width: u16,
        want: usize,
    },
    #[error("{path}: the bundle ends inside entry {entry} (its length or its bytes are cut)")]
    Truncated { path: String, entry: usize },
    #[error("{path}: the bundle holds {found} entries or more, but its width is {width}")]
    ExtraEntries {
        path: String,
        found: usize,
        width: u16,
    },
    #[error("{path}: the bundle holds {found} entries, but its width is {width}")]
    FewerEntries {
        path: String,
        found: usize,
        width: u16,
    },
    #[error("an entry of {len} bytes is longer than a bundle can hold (65535)")]
    EntryTooLong { len: usize },
}

impl TileId {
    /// The hash tile `index` of `level`, `width` wide.
    pub fn hashes(level: u8, index: u64, width: u16) -> TileId {
        TileId {
            kind: Kind::Hashes(level),
            index,
            width,
        }
    }

    /// The entry bundle `index`, `width` wide.
    pub fn entries(index: u64, width: u16) -> TileId {
        TileId {
            kind: Kind::Entries,
            index,
            width,
        }
    }

    pub fn is_full(&self) -> bool {
        u64::from(self.width) == TILE_WIDTH
    }

    /// The full tile of the same place.
    pub fn full(self) -> TileId {
        TileId {
            width: TILE_WIDTH as u16,
            ..self
        }
    }

    /// The most bytes the tile can hold at its width: 32 a hash, or for a bundle a uint16
    /// length and up to [`MAX_ENTRY`] bytes an entry.
    pub fn max_bytes(&self) -> u64 {
        let per = match self.kind {
            Kind::Hashes(_) => 32,
            Kind::Entries => 2 + MAX_ENTRY as u64,
        };
        u64::from(self.width) * per
    }

    /// The level whose hashes the tile holds (bundles: 0, the entries' leaves).
    pub fn level(&self) -> u8 {
        match self.kind {
            Kind::Hashes(l) => l,
            Kind::Entries => 0,
        }
    }

    /// The leaves the tile's hashes (or entries) span, `[start, end)`, as far as its width goes;
    /// a bound past `u64::MAX` (a path can name any index at any level) is `u64::MAX`.
    pub fn leaves(&self) -> (u64, u64) {
        let shift = TILE_HEIGHT * u32::from(self.level());
        let scale = |n: u64| match n {
            0 => 0,
            n => 1u64
                .checked_shl(shift)
                .and_then(|unit| n.checked_mul(unit))
                .unwrap_or(u64::MAX),
        };
        let first = self.index.saturating_mul(TILE_WIDTH);
        (
            scale(first),
            scale(first.saturating_add(u64::from(self.width))),
        )
    }

    /// Whether a tree of `size` leaves has this tile (full tiles wholly inside it; partial
    /// tiles as wide as the tree reaches in that place or narrower, for an earlier size).
    pub fn within(&self, size: u64) -> bool {
        let shift = TILE_HEIGHT * u32::from(self.level());
        let Some(count) = size.checked_shr(shift) else {
            return false;
        };
        let first = self.index.saturating_mul(TILE_WIDTH);
        self.width > 0 && first.saturating_add(u64::from(self.width)) <= count
    }

    /// The path of the tile under a log's prefix: `tile/<L>/<N>[.p/<W>]` or
    /// `tile/entries/<N>[.p/<W>]`.
    pub fn path(&self) -> String {
        let level = match self.kind {
            Kind::Hashes(l) => l.to_string(),
            Kind::Entries => "entries".to_owned(),
        };
        let mut out = format!("tile/{level}/{}", index_path(self.index));
        if !self.is_full() {
            out.push_str(&format!(".p/{}", self.width));
        }
        out
    }

    /// The tile a path names, exactly as [`TileId::path`] writes it (nothing else parses:
    /// no leading zeroes, no `..`, no trailing slash).
    pub fn parse(path: &str) -> Result<TileId, PathError> {
        let rest = path.strip_prefix("tile/").ok_or(PathError::Shape)?;
        let (level, rest) = rest.split_once('/').ok_or(PathError::Shape)?;
        let kind = if level == "entries" {
            Kind::Entries
        } else {
            Kind::Hashes(parse_level(level)?)
        };
        let (index, width) = match rest.split_once(".p/") {
            Some((index, width)) => (index, parse_width(width)?),
            None => (rest, TILE_WIDTH as u16),
        };
        Ok(TileId {
            kind,
            index: parse_index(index)?,
            width,
        })
    }
}

/// `1234067` as `x001/x234/067`.
pub fn index_path(mut n: u64) -> String {
    let mut parts = vec![format!("{:03}", n % 1000)];
    n /= 1000;
    while n > 0 {
        parts.push(format!("x{:03}", n % 1000));
        n /= 1000;
    }
    parts.reverse();
    parts.join("/")
}

/// The number an [`index_path`] spells (one spelling per number), if it is one.
pub fn parse_index_path(s: &str) -> Option<u64> {
    parse_index(s).ok()
}

fn parse_level(s: &str) -> Result<u8, PathError> {
    let ok = !s.is_empty()
        && s.len() <= 2
        && s.bytes().all(|b| b.is_ascii_digit())
        && (s == "0" || !s.starts_with('0'));
    let level: u8 = s.parse().ok().filter(|_| ok).ok_or(PathError::Level)?;
    (level <= MAX_LEVEL)
        .then_some(level)
        .ok_or(PathError::Level)
}

fn parse_width(s: &str) -> Result<u16, PathError> {
    let ok = !s.is_empty() && s.len() <= 3 && s.bytes().all(|b| b.is_ascii_digit());
    let width: u16 = s
        .parse()
        .ok()
        .filter(|_| ok && !s.starts_with('0'))
        .ok_or(PathError::Width)?;
    (1..TILE_WIDTH as u16)
        .contains(&width)
        .then_some(width)
        .ok_or(PathError::Width)
}

fn parse_index(s: &str) -> Result<u64, PathError> {
    let parts: Vec<&str> = s.split('/').collect();
    let mut n: u64 = 0;
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let digits = if last {
            *part
        } else {
            part.strip_prefix('x').ok_or(PathError::Index)?
        };
        if digits.len() != 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(PathError::Index);
        }
        let d: u64 = digits.parse().map_err(|_| PathError::Index)?;
        n = n
            .checked_mul(1000)
            .and_then(|n| n.checked_add(d))
            .ok_or(PathError::Index)?;
    }
    // One spelling per index: no leading `x000` element.
    if parts.len() > 1 && parts[0] == "x000" {
        return Err(PathError::Index);
    }
    Ok(n)
}

/// The partial tiles of a tree of `size` leaves, lowest level first: at each level whose
/// count is not a multiple of 256, the tile of the leftover hashes (bundles included).
pub fn partial_tiles(size: u64) -> Vec<TileId> {
    let mut out = Vec::new();
    let mut count = size;
    let mut level = 0u8;
    while count > 0 {
        let width = (count % TILE_WIDTH) as u16;
        if width > 0 {
            out.push(TileId::hashes(level, count / TILE_WIDTH, width));
            if level == 0 {
                out.push(TileId::entries(count / TILE_WIDTH, width));
            }
        }
        count /= TILE_WIDTH;
        level += 1;
    }
    out
}

/// Every tile a tree of `size` leaves has that a tree of `from` leaves lacks: the full tiles
/// completed in between and the partial tiles of `size` (bundles included), in level order.
/// Lazy: each tile is made when it is asked for, so a caller that stops early (at the first
/// tile it cannot fetch) does work for what it fetched, never for the sizes it was told.
pub fn tiles_between(from: u64, size: u64) -> impl Iterator<Item = TileId> {
    let from = from.min(size);
    let full = (0..=MAX_LEVEL)
        .map_while(move |level| {
            let shift = TILE_HEIGHT * u32::from(level);
            let hi = size.checked_shr(shift).filter(|&hi| hi > 0)?;
            let lo = from.checked_shr(shift).unwrap_or(0);
            Some((level, lo / TILE_WIDTH, hi / TILE_WIDTH))
        })
        .flat_map(|(level, first, end)| {
            (first..end).flat_map(move |index| {
                let bundle = (level == 0).then(|| TileId::entries(index, TILE_WIDTH as u16));
                std::iter::once(TileId::hashes(level, index, TILE_WIDTH as u16)).chain(bundle)
            })
        });
    // A partial tile `from` already had (the tree did not grow at that level) is not new.
    let had = partial_tiles(from);
    full.chain(
        partial_tiles(size)
            .into_iter()
            .filter(move |t| !had.contains(t)),
    )
}

/// The hashes of a hash tile, checked against its width.
pub fn parse_hashes(id: &TileId, bytes: &[u8]) -> Result<Vec<Hash>, TileError> {
    let want = usize::from(id.width) * 32;
    if bytes.len() != want {
        return Err(TileError::HashLength {
            path: id.path(),
            len: bytes.len(),
            width: id.width,
            want,
        });
    }
    Ok(bytes
        .chunks_exact(32)
        .map(|c| {
            let mut h = [0u8; 32];
            h.copy_from_slice(c);
            h
        })
        .collect())
}

/// The entries of a bundle, exactly its width of them, nothing after the last.
pub fn parse_bundle<'a>(id: &TileId, bytes: &'a [u8]) -> Result<Vec<&'a [u8]>, TileError> {
    let width = usize::from(id.width);
    let mut out = Vec::with_capacity(width);
    let mut rest = bytes;
    while !rest.is_empty() {
        if out.len() == width {
            return Err(TileError::ExtraEntries {
                path: id.path(),
                found: width + 1,
                width: id.width,
            });
        }
        let truncated = || TileError::Truncated {
            path: id.path(),
            entry: out.len(),
        };
        let (len, tail) = rest.split_first_chunk::<2>().ok_or_else(truncated)?;
        let len = usize::from(u16::from_be_bytes(*len));
        if tail.len() < len {
            return Err(truncated());
        }
        out.push(&tail[..len]);
        rest = &tail[len..];
    }
    if out.len() != width {
        return Err(TileError::FewerEntries {
            path: id.path(),
            found: out.len(),
            width: id.width,
        });
    }
    Ok(out)
}

/// Appends one entry to a bundle's bytes (its uint16 length, then the entry); an entry longer
/// than a uint16 can say is refused.
pub fn push_entry(bundle: &mut Vec<u8>, entry: &[u8]) -> Result<(), TileError> {
    let len =
        u16::try_from(entry.len()).map_err(|_| TileError::EntryTooLong { len: entry.len() })?;
    bundle.extend_from_slice(&len.to_be_bytes());
    bundle.extend_from_slice(entry);
    Ok(())
}

#[cfg(test)]
#[path = "tile_tests.rs"]
mod tests;
