//! The log as C2SP tlog-tiles in a store ([`crate::blobs::Store`]: a directory or an S3
//! bucket), written by the daemon's signer and by an auditor's mirror alike: tiles and bundles
//! first (a full one with a create, so that a full tile already there is never rewritten with
//! other bytes; a partial one replaced), then the store synced, then the checkpoint replaced
//! last, so that a checkpoint is never there without its tiles. Each object carries the
//! `Cache-Control` the daemon's `/log/` sends with it. The same directory or bucket served by
//! any static web server is a valid log. The signer's `witnessed::tile_writer` extends it from
//! the database at each published checkpoint; an auditor's mirror writes its copy through it
//! too. Every read is bounded by what the object may hold (a tile's width, a note's bytes).

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;

use crate::blobs::{BlobError, Location, Mode, Put, Store};
use crate::tlog::merkle::Hash;
use crate::tlog::note::MAX_NOTE;
use crate::tlog::tile::build::{ResumeError, TileBuilder};
use crate::tlog::tile::{self, parse_hashes, Kind, TileError, TileId, TILE_WIDTH};

/// The name of the checkpoint file under a log's prefix.
pub const CHECKPOINT_FILE: &str = "checkpoint";

/// The backfill's mark under a log's prefix: every full tile and bundle below this size is
/// written (never served: `/log/` answers tiles and the checkpoint only).
pub const PROGRESS_FILE: &str = ".event-audit-tiles-progress";

/// The checkpoint may be cached this long (as `/log/` sends it).
pub const CHECKPOINT_CACHE: &str = "public, max-age=2";

/// Tiles and bundles never change once written (partial ones are named by their width).
pub const TILE_CACHE: &str = "public, max-age=604800, immutable";

/// The lowercase hex SHA-256 of a log's origin: the directory of its copy under a mirror's
/// prefix (C2SP tlog-mirror).
pub fn origin_dir(origin: &str) -> String {
    use sha2::{Digest, Sha256};
    crate::hex(&Sha256::digest(origin.as_bytes()))
}

/// Why a log's tiles could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum TilesError {
    /// The store failed or refused (its place and the key named).
    #[error(transparent)]
    Store(BlobError),
    /// An object of the store that cannot be read as what it should hold.
    #[error("{path}: {why}")]
    Read { path: String, why: String },
    #[error("{path} holds other bytes than the tree's: a full tile is never rewritten (another log's tiles at this place, or the database no longer holds what was published); kept as it is")]
    Rewrite { path: String },
    #[error(transparent)]
    Tile(#[from] TileError),
    #[error("tiles at {path}: they do not resume at size {size}: {source}")]
    Resume {
        path: String,
        size: u64,
        #[source]
        source: ResumeError,
    },
    #[error("tiles at {path}: {tile} is missing (needed to go on from size {size})")]
    Missing {
        path: String,
        tile: String,
        size: u64,
    },
}

impl From<BlobError> for TilesError {
    fn from(e: BlobError) -> TilesError {
        match e {
            BlobError::Conflict { place, key } => TilesError::Rewrite {
                path: format!("{place}: {key}"),
            },
            other => TilesError::Store(other),
        }
    }
}

/// What [`Tiles::write`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrote {
    New,
    /// The same bytes were already there.
    Same,
}

/// A tlog-tiles log in a store, under a prefix of it.
#[derive(Debug, Clone)]
pub struct Tiles {
    store: Arc<Store>,
    /// Empty, or a relative path ending with `/` (a mirror's copy of one log).
    sub: String,
    place: String,
    /// Full tiles and bundles are put under S3 Object Lock for this long.
    lock_for: Option<std::time::Duration>,
}

/// The tiles at `location`: a directory (`--tiles-dir`) or `s3://bucket/prefix`
/// (`--tiles-url`), with the object store settings for the latter.
pub fn open(
    location: &Location,
    settings: &crate::config::ObjectStoreSettings,
) -> Result<Tiles, TilesError> {
    Ok(Tiles::new(Store::open(location, settings)?))
}

/// The log's tiles the settings name: `witness.tiles_url` (an S3 bucket, with
/// `[object_store]`), else `witness.tiles_dir`; none when neither is set.
pub fn configured(s: &crate::config::Settings) -> Result<Option<Tiles>, TilesError> {
    if let Some(url) = &s.witness.tiles_url {
        let at = Location::parse(url).map_err(|why| {
            TilesError::Store(BlobError::Setup {
                place: url.clone(),
                why,
            })
        })?;
        let lock_for = s.witness.tiles_lock_for.map(|d| d.get());
        return open(&at, &s.object_store).map(|t| Some(t.with_lock(lock_for)));
    }
    Ok(s.witness.tiles_dir.as_ref().map(|d| Tiles::dir(d.clone())))
}

impl Tiles {
    pub fn new(store: Store) -> Tiles {
        Tiles {
            place: match &store {
                Store::Dir(d) => d.root().display().to_string(),
                Store::S3(s) => s.place().to_owned(),
            },
            store: Arc::new(store),
            sub: String::new(),
            lock_for: None,
        }
    }

    /// The same, each full tile and bundle put under S3 Object Lock (compliance mode) for
    /// `lock_for` (`witness.tiles_lock_for`): a bucket that does not keep it is refused.
    pub fn with_lock(self, lock_for: Option<std::time::Duration>) -> Tiles {
        Tiles { lock_for, ..self }
    }

    /// The log in a directory.
    pub fn dir(root: impl Into<PathBuf>) -> Tiles {
        // No fsync per tile: the checkpoint's write syncs the file system once before it.
        let dir = crate::blobs::dir::DirStore::new(root.into(), 0o644).without_fsync_each();
        Tiles::new(Store::Dir(dir))
    }

    /// The log under `sub` of this one's prefix (a mirror's copy of one log: its origin's
    /// directory). `sub` is one plain segment.
    pub fn child(&self, sub: &str) -> Tiles {
        Tiles {
            store: self.store.clone(),
            sub: format!("{}{sub}/", self.sub),
            place: format!("{}/{sub}", self.place.trim_end_matches('/')),
            lock_for: self.lock_for,
        }
    }

    /// Where the log is, for messages (never a credential).
    pub fn place(&self) -> &str {
        &self.place
    }

    /// The store the log is kept in.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The key of `rel` under the log's prefix.
    pub fn key(&self, rel: &str) -> String {
        format!("{}{rel}", self.sub)
    }

    /// Where `id` is kept, for messages.
    pub fn shown(&self, rel: &str) -> String {
        format!("{}/{rel}", self.place.trim_end_matches('/'))
    }

    /// `rel` under the log's prefix, at most `max` bytes; `None` when it is not there. In a
    /// directory, only a regular file inside it (no symlink leading out, no device or FIFO).
    pub async fn get(&self, rel: &str, max: u64) -> Result<Option<Bytes>, TilesError> {
        let key = self.key(rel);
        let Store::Dir(d) = &*self.store else {
            return Ok(self.store.get(&key, max).await?);
        };
        let (root, shown) = (d.root().to_owned(), self.shown(rel));
        let read = tokio::task::spawn_blocking(move || {
            crate::files::bounded::read_beneath(&root, std::path::Path::new(&key), max, "tile")
        });
        match read.await {
            Ok(Ok(b)) => Ok(b.map(Bytes::from)),
            Ok(Err(e)) => Err(TilesError::Read {
                path: shown,
                why: e.to_string(),
            }),
            Err(e) => Err(TilesError::Read {
                path: shown,
                why: format!("the read stopped: {e}"),
            }),
        }
    }

    /// The log's copy in this prefix: here when it holds a checkpoint, else under `origin`'s
    /// folder (a mirror's copy) when one is given; `None` otherwise.
    pub async fn log_in(&self, origin: Option<&str>) -> Result<Option<Tiles>, TilesError> {
        if self.checkpoint().await?.is_some() {
            return Ok(Some(self.clone()));
        }
        Ok(origin.map(|o| self.child(&origin_dir(o))))
    }

    /// A tile's bytes, `None` when it is not there: at most the bytes its width holds (a
    /// directory's: a regular file inside it, no symlink leading out, no device or FIFO).
    pub async fn read(&self, id: &TileId) -> Result<Option<Vec<u8>>, TilesError> {
        Ok(self.get(&id.path(), id.max_bytes()).await?.map(Vec::from))
    }

    /// A hash tile's hashes, checked against its width; `None` when it is not there.
    pub async fn read_hashes(&self, id: &TileId) -> Result<Option<Vec<Hash>>, TilesError> {
        match self.read(id).await? {
            Some(b) => Ok(Some(parse_hashes(id, &b)?)),
            None => Ok(None),
        }
    }

    /// Writes a tile or bundle. A full one is created: the same bytes already there are kept,
    /// other bytes refused ([`TilesError::Rewrite`]); a partial one is replaced.
    pub async fn write(&self, id: &TileId, bytes: &[u8]) -> Result<Wrote, TilesError> {
        let put = self.immutable(id.is_full());
        let wrote = self
            .store
            .put(&self.key(&id.path()), Bytes::copy_from_slice(bytes), &put)
            .await?;
        Ok(match wrote {
            crate::blobs::Wrote::New => Wrote::New,
            crate::blobs::Wrote::Same => Wrote::Same,
        })
    }

    /// The checkpoint served, `None` before the first: at most a note's bytes, UTF-8 text.
    pub async fn checkpoint(&self) -> Result<Option<String>, TilesError> {
        let Some(bytes) = self.get(CHECKPOINT_FILE, MAX_NOTE).await? else {
            return Ok(None);
        };
        String::from_utf8(bytes.to_vec())
            .map(Some)
            .map_err(|_| TilesError::Read {
                path: self.shown(CHECKPOINT_FILE),
                why: "not UTF-8 text, not a checkpoint".into(),
            })
    }

    /// Makes every tile written so far durable ([`Store::sync`]: one sync of a directory's
    /// file system), then replaces the checkpoint: the last step of a publication.
    pub async fn write_checkpoint(&self, note: &str) -> Result<(), TilesError> {
        self.store.sync().await?;
        let put = Put {
            mode: Mode::Replace,
            cache_control: Some(CHECKPOINT_CACHE),
            content_type: Some("text/plain; charset=utf-8"),
            lock_until: None,
        };
        let body = Bytes::copy_from_slice(note.as_bytes());
        self.store
            .put(&self.key(CHECKPOINT_FILE), body, &put)
            .await?;
        Ok(())
    }

    /// How a tile is put: a full one (`full`) created, under Object Lock when asked; a partial
    /// one replaced.
    fn immutable(&self, full: bool) -> Put<'_> {
        let (mode, lock_for) = match full {
            true => (Mode::Create, self.lock_for),
            false => (Mode::Replace, None),
        };
        Put {
            mode,
            cache_control: Some(TILE_CACHE),
            content_type: Some("application/octet-stream"),
            lock_until: lock_for.and_then(|d| {
                chrono::Duration::from_std(d)
                    .ok()
                    .map(|d| chrono::Utc::now() + d)
            }),
        }
    }

    /// Writes account index update `seq`'s delta ([`crate::tlog::index::delta`]): created as
    /// a full tile is (the same bytes kept, other bytes refused; under Object Lock when asked).
    pub async fn write_delta(&self, seq: u64, bytes: &[u8]) -> Result<Wrote, TilesError> {
        let put = self.immutable(true);
        let key = self.key(&crate::tlog::index::delta::path(seq));
        let wrote = self
            .store
            .put(&key, Bytes::copy_from_slice(bytes), &put)
            .await?;
        Ok(match wrote {
            crate::blobs::Wrote::New => Wrote::New,
            crate::blobs::Wrote::Same => Wrote::Same,
        })
    }

    /// Account index update `seq`'s delta, `None` when it is not there (at most
    /// [`crate::tlog::index::delta::MAX_DELTA`] bytes).
    pub async fn delta(&self, seq: u64) -> Result<Option<Bytes>, TilesError> {
        use crate::tlog::index::delta;
        self.get(&delta::path(seq), delta::MAX_DELTA).await
    }

    /// How many account index deltas are published here (0 when none, or the file is not a
    /// number).
    pub async fn deltas_published(&self) -> Result<u64, TilesError> {
        let got = self.get(crate::tlog::index::delta::LATEST, 64).await?;
        Ok(got
            .and_then(|b| std::str::from_utf8(&b).ok()?.trim().parse().ok())
            .unwrap_or(0))
    }

    /// Says that `n` account index deltas are published (after they are).
    pub async fn set_deltas_published(&self, n: u64) -> Result<(), TilesError> {
        self.store.sync().await?;
        let put = Put {
            mode: Mode::Replace,
            cache_control: Some(CHECKPOINT_CACHE),
            content_type: Some("text/plain; charset=utf-8"),
            lock_until: None,
        };
        let key = self.key(crate::tlog::index::delta::LATEST);
        self.store
            .put(&key, Bytes::from(format!("{n}\n")), &put)
            .await?;
        Ok(())
    }

    /// The backfill's mark, when there is one (at most 64 bytes, a number).
    pub async fn mark(&self) -> Option<u64> {
        let bytes = self.get(PROGRESS_FILE, 64).await.ok().flatten()?;
        std::str::from_utf8(&bytes).ok()?.trim().parse().ok()
    }

    /// Records the backfill's progress (a failure only costs a resume from further back).
    pub async fn set_mark(&self, size: u64) {
        let put = Put {
            mode: Mode::Replace,
            ..Put::default()
        };
        let body = Bytes::from(size.to_string());
        if let Err(e) = self.store.put(&self.key(PROGRESS_FILE), body, &put).await {
            tracing::warn!(error = %e, "tiles: could not record the backfill's progress");
        }
    }

    /// Removes the backfill's mark.
    pub async fn clear_mark(&self) {
        let _ = self.store.delete(&self.key(PROGRESS_FILE)).await;
    }

    /// A builder that goes on from the tree of `size` leaves kept here: each level's partial
    /// tile of that size is read, or rebuilt from the full tiles below it when a later write
    /// replaced it; the partial bundle likewise.
    pub async fn builder_at(&self, size: u64) -> Result<TileBuilder, TilesError> {
        let mut rows = Vec::new();
        let mut bundle = Vec::new();
        for id in tile::partial_tiles(size) {
            match id.kind {
                Kind::Hashes(level) => {
                    let hashes = match self.read_hashes(&id).await? {
                        Some(h) => h,
                        None => self.rebuilt_row(level, id, size).await?,
                    };
                    let level = usize::from(level);
                    if rows.len() <= level {
                        rows.resize_with(level + 1, Vec::new);
                    }
                    rows[level] = hashes;
                }
                Kind::Entries => bundle = self.partial_bundle(id, size).await?,
            }
        }
        TileBuilder::resume(size, rows, bundle).map_err(|source| TilesError::Resume {
            path: self.place.clone(),
            size,
            source,
        })
    }

    /// The first `id.width` hashes of a level's tile, from a wider tile at the same place or
    /// (above level 0) the roots of the full tiles below.
    async fn rebuilt_row(&self, level: u8, id: TileId, size: u64) -> Result<Vec<Hash>, TilesError> {
        if let Some(wider) = self.wider(&id).await? {
            return Ok(parse_hashes(&wider.0, &wider.1)?[..usize::from(id.width)].to_vec());
        }
        if level == 0 {
            return Err(self.missing(&id, size));
        }
        let mut row = Vec::with_capacity(usize::from(id.width));
        for i in 0..u64::from(id.width) {
            let below = TileId::hashes(level - 1, id.index * TILE_WIDTH + i, TILE_WIDTH as u16);
            let hashes = self.read_hashes(&below).await?;
            row.push(
                hashes
                    .map(|h| crate::tlog::merkle::root_of(&h))
                    .ok_or_else(|| self.missing(&below, size))?,
            );
        }
        Ok(row)
    }

    /// The partial bundle of `size`: its own file, or the first entries of a wider one.
    async fn partial_bundle(&self, id: TileId, size: u64) -> Result<Vec<u8>, TilesError> {
        if let Some(b) = self.read(&id).await? {
            return Ok(b);
        }
        let (wider, bytes) = self
            .wider(&id)
            .await?
            .ok_or_else(|| self.missing(&id, size))?;
        let entries = tile::parse_bundle(&wider, &bytes)?;
        let mut out = Vec::new();
        for e in entries.iter().take(usize::from(id.width)) {
            tile::push_entry(&mut out, e)?;
        }
        Ok(out)
    }

    /// The full tile at `id`'s place, or the widest partial one written after it.
    async fn wider(&self, id: &TileId) -> Result<Option<(TileId, Vec<u8>)>, TilesError> {
        for width in (id.width + 1..=TILE_WIDTH as u16).rev() {
            let w = TileId { width, ..*id };
            if let Some(b) = self.read(&w).await? {
                return Ok(Some((w, b)));
            }
        }
        Ok(None)
    }

    fn missing(&self, id: &TileId, size: u64) -> TilesError {
        TilesError::Missing {
            path: self.place.clone(),
            tile: id.path(),
            size,
        }
    }
}
