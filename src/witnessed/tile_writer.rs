//! The daemon's tiles: at each round the signer in office (under its advisory lock, so one
//! daemon of a log writes at a time) brings the tile directory to the newest checkpoint it
//! published. It goes on from what the directory serves (or from a backfill's progress mark),
//! reads the row hashes after it from the database in chunks of whole links, writes the full
//! tiles and bundles of each chunk, and, once the tree it built has the checkpoint's root, the
//! partial tiles and then the checkpoint. A log that had no tiles gets them on its first round
//! (the backfill), resumable chunk by chunk; a takeover never rewrites a full tile with other
//! bytes ([`crate::log::tiles::Tiles::write`]). The tiles are in a directory (`--tiles-dir`) or
//! an S3 bucket (`--tiles-url`), through the same interface.

use std::sync::Arc;

use crate::db::DbError;
use crate::log::tiles::{Tiles, TilesError};
use crate::log::tree::TreeStore;
use crate::tlog::merkle::Hash;
use crate::tlog::note::{self, Checkpoint, PublicKey};
use crate::tlog::tile::build::TileBuilder;
use crate::tlog::tile::{TileId, TILE_WIDTH};
use crate::witnessed::metrics::WitnessMetrics;

/// How many leaves one chunk reads at most before its tiles are written (then rounded up to
/// the end of a link).
pub(crate) const CHUNK_LEAVES: u64 = 65_536;

/// Account index deltas published in one round at most (a backfill goes on next round).
const DELTAS_A_ROUND: u64 = 64;

/// Tiles written at once (an object store answers each put in a round trip; a directory's
/// puts are each an fsync).
const WRITES_AT_ONCE: usize = 8;

/// Why the tiles of a checkpoint could not be written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WriteError {
    #[error(transparent)]
    Tiles(#[from] TilesError),
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("the tiles at {path} serve a checkpoint that does not open with this log's key ({why}): another log's tiles? Point --tiles-dir or --tiles-url at an empty place or this log's own")]
    Foreign { path: String, why: String },
    #[error("the rows the database holds up to {size} do not make the root this key signed at that size: no tiles or checkpoint written (run `event-audit verify`)")]
    Root { size: u64 },
    #[error("the tiles at {path}: its tiles at the served checkpoint's size {size} do not make that checkpoint's root (damaged, or files lost in a crash before they reached the disk); move them away (the directory, or the prefix's objects) and the next round writes the log's tiles again")]
    Damaged { path: String, size: u64 },
}

/// What one call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Tiles written from `from` to `size`, then the checkpoint.
    Wrote { from: u64, size: u64 },
    /// The directory already serves this checkpoint, or a larger one (never lowered).
    Current { size: u64 },
}

/// The tiles of one log, kept by its signer.
pub(crate) struct TileWriter {
    dir: Tiles,
    public: PublicKey,
    /// Whether a backfill's mark may be there (written, or found at the start).
    marked: bool,
    /// The tree of the last checkpoint written, kept between rounds.
    builder: Option<TileBuilder>,
    metrics: Arc<WitnessMetrics>,
    /// How many account index deltas the place holds (read from it at the first round).
    deltas: Option<u64>,
}

impl TileWriter {
    pub(crate) fn new(dir: Tiles, public: PublicKey, metrics: Arc<WitnessMetrics>) -> TileWriter {
        TileWriter {
            dir,
            marked: true,
            public,
            builder: None,
            metrics,
            deltas: None,
        }
    }

    /// Brings the directory to `note`, the newest published checkpoint (with its cosignatures).
    /// `rows`: row hashes already read this round, from the size given (the signer's); the
    /// database is read only for leaves they do not cover.
    pub(crate) async fn publish(
        &mut self,
        trees: &TreeStore,
        note: &str,
        rows: Option<(u64, &[Hash])>,
    ) -> Result<Outcome, WriteError> {
        let cp = note::open(note, &self.public).map_err(|e| self.foreign(e.to_string()))?;
        let served = self.served().await?;
        if let Some(s) = served.as_ref().filter(|s| s.size >= cp.size) {
            self.metrics.tiles_size.set(s.size as i64);
            self.publish_deltas(trees, s.size).await?;
            return Ok(Outcome::Current { size: s.size });
        }
        let mut builder = self.start(served.as_ref(), cp.size).await?;
        let start = builder.size();
        let written = self.extend(trees, &mut builder, &cp, rows).await;
        if let Err(e) = written {
            self.builder = None;
            return Err(e);
        }
        for (id, bytes) in builder.partials() {
            self.dir.write(&id, &bytes).await?;
        }
        pause_before_checkpoint().await;
        self.dir.write_checkpoint(note).await?;
        if std::mem::take(&mut self.marked) {
            self.dir.clear_mark().await;
        }
        self.metrics.tiles_size.set(cp.size as i64);
        self.builder = Some(builder);
        self.publish_deltas(trees, cp.size).await?;
        Ok(Outcome::Wrote {
            from: start,
            size: cp.size,
        })
    }

    /// The account index's deltas (`index/delta/N`) whose records are leaves of the tree of
    /// `size` the place serves, in order, then how many there are (`index/latest`): a mirror
    /// copies them with the tiles.
    async fn publish_deltas(&mut self, trees: &TreeStore, size: u64) -> Result<(), WriteError> {
        let published = match self.deltas {
            Some(n) => n,
            None => self.dir.deltas_published().await?,
        };
        let mut conn = trees.db().acquire().await?;
        let mut n = published;
        while n < published + DELTAS_A_ROUND {
            let seq = i64::try_from(n + 1).unwrap_or(i64::MAX);
            let Some((v, bytes)) = crate::log::index::delta_of(&mut conn, seq).await? else {
                break;
            };
            if u64::try_from(v.record_leaf).map_or(true, |l| l >= size) {
                break;
            }
            self.dir.write_delta(n + 1, &bytes).await?;
            n += 1;
        }
        if n != published {
            self.dir.set_deltas_published(n).await?;
        }
        self.deltas = Some(n);
        Ok(())
    }

    /// The checkpoint the directory serves, opened with the log's key.
    async fn served(&self) -> Result<Option<Checkpoint>, WriteError> {
        match self.dir.checkpoint().await? {
            None => Ok(None),
            Some(text) => note::open(&text, &self.public)
                .map(Some)
                .map_err(|e| self.foreign(e.to_string())),
        }
    }

    fn foreign(&self, why: String) -> WriteError {
        WriteError::Foreign {
            path: self.dir.place().to_owned(),
            why,
        }
    }

    /// Where to go on from: the tree kept since the last round, the backfill's mark, or the
    /// served checkpoint's tiles.
    async fn start(&mut self, cp: Option<&Checkpoint>, to: u64) -> Result<TileBuilder, WriteError> {
        let served = cp.map_or(0, |c| c.size);
        if let Some(b) = self
            .builder
            .take()
            .filter(|b| b.size() >= served && b.size() <= to)
        {
            return Ok(b);
        }
        let mark = self.dir.mark().await;
        self.marked = mark.is_some();
        let mark = mark.filter(|m| *m > served && *m <= to && m % TILE_WIDTH == 0);
        if let Some(m) = mark {
            if let Ok(b) = self.dir.builder_at(m).await {
                tracing::info!(tiles = %self.dir.place(), size = m, "tiles: resuming the backfill");
                return Ok(b);
            }
        }
        let b = self.dir.builder_at(served).await?;
        match cp {
            Some(c) if b.root() != c.root => Err(WriteError::Damaged {
                path: self.dir.place().to_owned(),
                size: c.size,
            }),
            _ => Ok(b),
        }
    }

    /// Reads the rows up to the checkpoint chunk by chunk, writing each chunk's full tiles and
    /// the progress mark; then checks the root.
    async fn extend(
        &mut self,
        trees: &TreeStore,
        builder: &mut TileBuilder,
        cp: &Checkpoint,
        rows: Option<(u64, &[Hash])>,
    ) -> Result<(), WriteError> {
        if let Some(new) = rows.and_then(|r| covering(r, builder.size(), cp.size)) {
            for row in new {
                builder.push(row).map_err(TilesError::from)?;
            }
            let full = builder.take_full();
            self.write_chunk(&full, 0).await?;
            return self.check_root(builder, cp);
        }
        let ends = trees
            .chunk_ends(builder.size(), cp.size, CHUNK_LEAVES)
            .await?;
        let from = builder.size();
        let backfill = cp.size - from > CHUNK_LEAVES;
        let started = std::time::Instant::now();
        if backfill {
            tracing::info!(tiles = %self.dir.place(), from = builder.size(), to = cp.size, "tiles: writing the log's tiles (backfill)");
        }
        for end in ends {
            let mut bad = None;
            trees
                .rows_between(builder.size(), end, |row| {
                    if let Err(e) = builder.push(row) {
                        bad.get_or_insert(e);
                    }
                })
                .await?;
            if let Some(e) = bad {
                return Err(TilesError::from(e).into());
            }
            let full = builder.take_full();
            let mark = builder.size() / TILE_WIDTH * TILE_WIDTH;
            self.write_chunk(&full, mark).await?;
        }
        self.check_root(builder, cp)?;
        if backfill {
            let secs = started.elapsed().as_secs_f64();
            let leaves = cp.size - from;
            tracing::info!(
                leaves,
                secs,
                per_sec = (leaves as f64 / secs.max(1e-9)) as u64,
                "tiles: backfill done"
            );
        }
        Ok(())
    }
}

impl TileWriter {
    /// Writes a chunk's full tiles, a few at once, then marks the backfill's progress.
    async fn write_chunk(
        &mut self,
        full: &[(TileId, Vec<u8>)],
        mark: u64,
    ) -> Result<(), TilesError> {
        for chunk in full.chunks(WRITES_AT_ONCE) {
            let writes = chunk.iter().map(|(id, bytes)| self.dir.write(id, bytes));
            futures::future::try_join_all(writes).await?;
        }
        if !full.is_empty() && mark > 0 {
            self.dir.set_mark(mark).await;
            self.marked = true;
        }
        Ok(())
    }

    /// The tree built must have the root the key signed at that size.
    fn check_root(&self, builder: &TileBuilder, cp: &Checkpoint) -> Result<(), WriteError> {
        if builder.root() != cp.root {
            return Err(WriteError::Root { size: cp.size });
        }
        Ok(())
    }
}

/// The leaves `[from, to)` out of row hashes read from size `start`, when they cover them.
fn covering((start, rows): (u64, &[Hash]), from: u64, to: u64) -> Option<&[Hash]> {
    let lo = usize::try_from(from.checked_sub(start)?).ok()?;
    let hi = usize::try_from(to.checked_sub(start)?).ok()?;
    rows.get(lo..hi)
}

/// Development builds only: waits `EVENT_AUDIT_DEV_TILES_PAUSE_MS` between the tiles and the
/// checkpoint, so that a test can kill the process in that window. Production builds have no
/// such pause.
async fn pause_before_checkpoint() {
    #[cfg(feature = "dev")]
    if let Some(ms) = std::env::var("EVENT_AUDIT_DEV_TILES_PAUSE_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        tracing::info!(
            ms,
            "tiles written; pausing before the checkpoint (development build)"
        );
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
}
