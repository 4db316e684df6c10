//! The log as C2SP tlog-tiles in a directory, written by the daemon's signer and by an
//! auditor's mirror alike: tiles and bundles first, each replaced atomically (a full tile that
//! is already there is never rewritten with other bytes), then the file system synced, then the
//! checkpoint, renamed into place last, so that a checkpoint is never there without its tiles.
//! The same directory served by any static web server is a valid log. The signer's
//! `witnessed::tile_writer` extends it from the database at each published checkpoint; an
//! auditor's mirror writes its copy through it too.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::tlog::merkle::Hash;
use crate::tlog::note::MAX_NOTE;
use crate::tlog::tile::build::{ResumeError, TileBuilder};
use crate::tlog::tile::{self, parse_hashes, Kind, TileError, TileId, TILE_WIDTH};

/// The name of the checkpoint file under a log's prefix.
pub const CHECKPOINT_FILE: &str = "checkpoint";

/// The lowercase hex SHA-256 of a log's origin: the directory of its copy under a mirror's
/// prefix (C2SP tlog-mirror).
pub(crate) fn origin_dir(origin: &str) -> String {
    use sha2::{Digest, Sha256};
    crate::row::hex(&Sha256::digest(origin.as_bytes()))
}

/// Why a tile directory could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum TilesError {
    #[error("tile directory {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A file of the directory that cannot be read as what it should hold.
    #[error("{path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} holds other bytes than the tree's: a full tile is never rewritten (another log's tiles in this directory, or the database no longer holds what was published); kept as it is")]
    Rewrite { path: String },
    #[error(transparent)]
    Tile(#[from] TileError),
    #[error("tile directory {path}: its tiles do not resume at size {size}: {source}")]
    Resume {
        path: String,
        size: u64,
        #[source]
        source: ResumeError,
    },
    #[error("tile directory {path}: {tile} is missing (needed to go on from size {size})")]
    Missing {
        path: String,
        tile: String,
        size: u64,
    },
}

/// What [`TileDir::write`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrote {
    New,
    /// The same bytes were already there.
    Same,
}

/// A tlog-tiles log in a directory.
#[derive(Debug, Clone)]
pub struct TileDir {
    root: PathBuf,
}

impl TileDir {
    pub fn new(root: impl Into<PathBuf>) -> TileDir {
        TileDir { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn io(&self, source: std::io::Error) -> TilesError {
        TilesError::Io {
            path: self.root.display().to_string(),
            source,
        }
    }

    /// Where `id` is kept.
    pub fn path_of(&self, id: &TileId) -> PathBuf {
        self.root.join(id.path())
    }

    /// A tile's bytes, `None` when it is not there: a regular file inside the directory (a
    /// symlink that leads out, a device or a FIFO is refused), at most the bytes its width holds.
    pub fn read(&self, id: &TileId) -> Result<Option<Vec<u8>>, TilesError> {
        let rel = id.path();
        crate::files::bounded::read_beneath(&self.root, Path::new(&rel), id.max_bytes(), "tile")
            .map_err(|source| TilesError::Read {
                path: self.path_of(id).display().to_string(),
                source,
            })
    }

    /// A hash tile's hashes, checked against its width; `None` when it is not there.
    pub fn read_hashes(&self, id: &TileId) -> Result<Option<Vec<Hash>>, TilesError> {
        match self.read(id)? {
            Some(b) => Ok(Some(parse_hashes(id, &b)?)),
            None => Ok(None),
        }
    }

    /// Writes a tile or bundle. A full one already there is kept when it holds the same bytes
    /// and refused otherwise; a partial one is replaced (a temporary file renamed over it).
    pub fn write(&self, id: &TileId, bytes: &[u8]) -> Result<Wrote, TilesError> {
        let path = self.path_of(id);
        if id.is_full() {
            match self.read(id) {
                Ok(Some(old)) if old == bytes => return Ok(Wrote::Same),
                Ok(None) => {}
                Ok(Some(_)) => {
                    return Err(TilesError::Rewrite {
                        path: path.display().to_string(),
                    })
                }
                Err(e) => return Err(e),
            }
        }
        self.put(&path, bytes).map_err(|e| self.io(e))?;
        Ok(Wrote::New)
    }

    /// Writes `bytes` at `path` through a temporary file renamed into place (not fsynced: the
    /// checkpoint's write syncs the file system first).
    fn put(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
        let written = (|| {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(bytes)?;
            std::fs::rename(&tmp, path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }

    /// The checkpoint served, `None` before the first: a regular file inside the directory, at
    /// most a note's bytes.
    pub fn checkpoint(&self) -> Result<Option<String>, TilesError> {
        let rel = Path::new(CHECKPOINT_FILE);
        let io = |source| TilesError::Read {
            path: self.root.join(CHECKPOINT_FILE).display().to_string(),
            source,
        };
        let Some(bytes) =
            crate::files::bounded::read_beneath(&self.root, rel, MAX_NOTE, "checkpoint")
                .map_err(io)?
        else {
            return Ok(None);
        };
        String::from_utf8(bytes).map(Some).map_err(|_| {
            io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "not UTF-8 text, not a checkpoint",
            ))
        })
    }

    /// Makes every tile written so far durable (one sync of the file system: cheaper than an
    /// fsync per tile, which costs a journal commit each), then replaces the checkpoint (renamed
    /// into place, the directory fsynced): the last step of a publication.
    pub fn write_checkpoint(&self, note: &str) -> Result<(), TilesError> {
        std::fs::create_dir_all(&self.root).map_err(|e| self.io(e))?;
        self.sync().map_err(|e| self.io(e))?;
        let path = self.root.join(CHECKPOINT_FILE);
        crate::files::replace(&path, note.as_bytes(), 0o644).map_err(|e| self.io(e))
    }

    /// Syncs the file system the directory is on (every tile written before, in one call).
    fn sync(&self) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        let dir = std::fs::File::open(&self.root)?;
        // SAFETY: `syncfs` reads the descriptor, which `dir` keeps open for the call.
        if unsafe { libc::syncfs(dir.as_raw_fd()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// A builder that goes on from the tree of `size` leaves kept here: each level's partial
    /// tile of that size is read, or rebuilt from the full tiles below it when a later write
    /// replaced it; the partial bundle likewise.
    pub fn builder_at(&self, size: u64) -> Result<TileBuilder, TilesError> {
        let mut rows = Vec::new();
        let mut bundle = Vec::new();
        for id in tile::partial_tiles(size) {
            match id.kind {
                Kind::Hashes(level) => {
                    let hashes = match self.read_hashes(&id)? {
                        Some(h) => h,
                        None => self.rebuilt_row(level, id, size)?,
                    };
                    let level = usize::from(level);
                    if rows.len() <= level {
                        rows.resize_with(level + 1, Vec::new);
                    }
                    rows[level] = hashes;
                }
                Kind::Entries => bundle = self.partial_bundle(id, size)?,
            }
        }
        TileBuilder::resume(size, rows, bundle).map_err(|source| TilesError::Resume {
            path: self.root.display().to_string(),
            size,
            source,
        })
    }

    /// The first `id.width` hashes of a level's tile, from a wider tile at the same place or
    /// (above level 0) the roots of the full tiles below.
    fn rebuilt_row(&self, level: u8, id: TileId, size: u64) -> Result<Vec<Hash>, TilesError> {
        if let Some(wider) = self.wider(&id)? {
            return Ok(parse_hashes(&wider.0, &wider.1)?[..usize::from(id.width)].to_vec());
        }
        if level == 0 {
            return Err(self.missing(&id, size));
        }
        (0..u64::from(id.width))
            .map(|i| {
                let below = TileId::hashes(level - 1, id.index * TILE_WIDTH + i, TILE_WIDTH as u16);
                self.read_hashes(&below)?
                    .map(|h| crate::tlog::merkle::root_of(&h))
                    .ok_or_else(|| self.missing(&below, size))
            })
            .collect()
    }

    /// The partial bundle of `size`: its own file, or the first entries of a wider one.
    fn partial_bundle(&self, id: TileId, size: u64) -> Result<Vec<u8>, TilesError> {
        if let Some(b) = self.read(&id)? {
            return Ok(b);
        }
        let (wider, bytes) = self.wider(&id)?.ok_or_else(|| self.missing(&id, size))?;
        let entries = tile::parse_bundle(&wider, &bytes)?;
        let mut out = Vec::new();
        for e in entries.iter().take(usize::from(id.width)) {
            tile::push_entry(&mut out, e)?;
        }
        Ok(out)
    }

    /// The full tile at `id`'s place, or the widest partial one written after it.
    fn wider(&self, id: &TileId) -> Result<Option<(TileId, Vec<u8>)>, TilesError> {
        for width in (id.width + 1..=TILE_WIDTH as u16).rev() {
            let w = TileId { width, ..*id };
            if let Some(b) = self.read(&w)? {
                return Ok(Some((w, b)));
            }
        }
        Ok(None)
    }

    fn missing(&self, id: &TileId, size: u64) -> TilesError {
        TilesError::Missing {
            path: self.root.display().to_string(),
            tile: id.path(),
            size,
        }
    }
}
