//! The daemon keeps what it published whole: a background pass (at start, then every
//! `witness.tiles_repair_every`) re-reads every full tile and bundle of the checkpoint its tiles
//! serve, and the partial ones of that size, at most `witness.tiles_repair_rate` objects a
//! second. The expected bytes are rebuilt from the database's rows, chunk by chunk, each chunk's
//! tree checked against the stored tree's root at its end and the whole against the signed
//! checkpoint's root, so that nothing is written from a database that does not make what was
//! signed. An object that is missing (a lifecycle rule, an operator's `aws s3 rm`) is written
//! again with a create, byte for byte; one that holds other bytes is never overwritten: its key
//! and both SHA-256s are named in an ERROR line and counted. A pass records its progress
//! (`.event-audit-tiles-repair`, beside the tiles, never served), so a pass stopped by a restart
//! goes on from there. Metrics: `event_audit_tiles_missing`, `event_audit_tiles_repaired_total`,
//! `event_audit_tiles_mismatched`.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use crate::blobs::{Mode, Put};
use crate::db::DbError;
use crate::log::tiles::{Tiles, TilesError, Wrote};
use crate::log::tree::TreeStore;
use crate::tlog::merkle::Hash;
use crate::tlog::note::{self, PublicKey};
use crate::tlog::tile::build::TileBuilder;
use crate::tlog::tile::{TileId, TILE_WIDTH};
use crate::witnessed::metrics::WitnessMetrics;
use crate::witnessed::tile_writer::CHUNK_LEAVES;

/// The pass's progress mark under the tiles' prefix: every full tile below this size was checked.
pub(crate) const REPAIR_FILE: &str = ".event-audit-tiles-repair";

/// The first pass starts this long after the daemon (the start-up restore and the signer's
/// first round go first).
const FIRST_PASS_AFTER: Duration = Duration::from_secs(5);

/// The most objects with other bytes one pass names in ERROR lines (all are counted).
const NAMED_PER_PASS: u64 = 100;

/// Why a pass stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RepairError {
    #[error(transparent)]
    Tiles(#[from] TilesError),
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("the tiles at {place} serve a checkpoint that does not open with this log's key ({why}): not repaired")]
    Foreign { place: String, why: String },
    #[error("the database's tree at size {size} does not make the root of the checkpoint the tiles at {place} serve: nothing written from it (run `event-audit verify`)")]
    Root { place: String, size: u64 },
    #[error(transparent)]
    Tile(#[from] crate::tlog::tile::TileError),
    #[error("the database's tree at size {size}: {source}")]
    Resume {
        size: u64,
        #[source]
        source: crate::tlog::tile::build::ResumeError,
    },
}

/// What one pass found.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pass {
    /// The tree size checked (the served checkpoint's).
    pub size: u64,
    /// Objects read.
    pub checked: u64,
    /// Missing objects written again.
    pub repaired: u64,
    /// Missing objects that could not be written (the WARN line says why).
    pub missing: u64,
    /// Objects holding other bytes than the tree's (kept as they are).
    pub mismatched: u64,
}

/// The repair pass over one log's tiles.
pub(crate) struct Repair {
    pub tiles: Tiles,
    pub public: PublicKey,
    pub trees: TreeStore,
    pub every: Duration,
    /// Objects read a second at most.
    pub rate: u32,
    pub metrics: Arc<WitnessMetrics>,
}

impl Repair {
    /// The pass over `tiles`, the tiles `signer` publishes, as the settings schedule it.
    pub(crate) fn new(
        tiles: &Tiles,
        signer: &crate::witnessed::signer::Signer,
        db: &crate::db::Db,
        s: &crate::config::Settings,
        metrics: &Arc<WitnessMetrics>,
    ) -> Repair {
        Repair {
            tiles: tiles.clone(),
            public: signer.public().clone(),
            trees: TreeStore::new(db.clone()),
            every: s.witness.tiles_repair_every.get(),
            rate: s.witness.tiles_repair_rate,
            metrics: metrics.clone(),
        }
    }

    /// A pass shortly after start, then one every `every`, until stopped.
    pub(crate) async fn run(self, stop: CancellationToken) {
        let mut wait = FIRST_PASS_AFTER;
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(wait) => {}
            }
            wait = self.every;
            tokio::select! {
                _ = stop.cancelled() => return,
                r = self.pass() => match r {
                    Ok(p) => tracing::info!(tiles = %self.tiles.place(), size = p.size, checked = p.checked, repaired = p.repaired, missing = p.missing, mismatched = p.mismatched, "tiles: repair pass done"),
                    Err(e) => tracing::warn!(tiles = %self.tiles.place(), error = %e, "tiles: the repair pass stopped (retried at the next one)"),
                },
            }
        }
    }

    /// One pass over the checkpoint the tiles serve (none: nothing to do).
    pub(crate) async fn pass(&self) -> Result<Pass, RepairError> {
        let Some(text) = self.tiles.checkpoint().await? else {
            return Ok(Pass::default());
        };
        let cp = note::open(&text, &self.public).map_err(|e| RepairError::Foreign {
            place: self.tiles.place().to_owned(),
            why: e.to_string(),
        })?;
        if self.trees.root(cp.size).await? != cp.root {
            return Err(RepairError::Root {
                place: self.tiles.place().to_owned(),
                size: cp.size,
            });
        }
        let start = self.mark(cp.size).await;
        let mut builder = self.builder_at(start).await?;
        let mut pass = Pass {
            size: cp.size,
            ..Pass::default()
        };
        let mut limit = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(self.rate)));
        limit.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let ends = self.trees.chunk_ends(start, cp.size, CHUNK_LEAVES).await?;
        for end in ends {
            let mut bad = None;
            self.trees
                .rows_between(builder.size(), end, |row| {
                    if let Err(e) = builder.push(row) {
                        bad.get_or_insert(e);
                    }
                })
                .await?;
            if let Some(e) = bad {
                return Err(e.into());
            }
            if builder.root() != self.trees.root(end).await? {
                return Err(RepairError::Root {
                    place: self.tiles.place().to_owned(),
                    size: end,
                });
            }
            for (id, bytes) in builder.take_full() {
                limit.tick().await;
                self.check(&id, &bytes, &mut pass).await;
            }
            self.set_mark(builder.size() / TILE_WIDTH * TILE_WIDTH)
                .await;
        }
        for (id, bytes) in builder.partials() {
            limit.tick().await;
            self.check(&id, &bytes, &mut pass).await;
        }
        let _ = self
            .tiles
            .store()
            .delete(&self.tiles.key(REPAIR_FILE))
            .await;
        self.metrics.tiles_missing.set(pass.missing as i64);
        self.metrics.tiles_mismatched.set(pass.mismatched as i64);
        Ok(pass)
    }

    /// One object: read, compared with the tree's bytes, written again when missing.
    async fn check(&self, id: &TileId, want: &[u8], pass: &mut Pass) {
        pass.checked += 1;
        let key = self.tiles.shown(&id.path());
        let found = match self.tiles.read(id).await {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(tile = %key, error = %e, "tiles: the repair pass could not read a published tile (checked again at the next pass)");
                return;
            }
        };
        match found {
            Some(b) if b == want => {}
            Some(b) => self.mismatched(&key, &b, want, pass),
            None => match self.tiles.write(id, want).await {
                Ok(Wrote::New) => {
                    pass.repaired += 1;
                    self.metrics.tiles_repaired.inc();
                    tracing::warn!(tile = %key, "tiles: a published tile was missing from the store: written again from the database");
                }
                Ok(Wrote::Same) => {}
                Err(TilesError::Rewrite { .. }) => {
                    let now = self.tiles.read(id).await.ok().flatten().unwrap_or_default();
                    self.mismatched(&key, &now, want, pass);
                }
                Err(e) => {
                    pass.missing += 1;
                    self.metrics
                        .tiles_missing
                        .set(self.metrics.tiles_missing.get().max(pass.missing as i64));
                    tracing::error!(tile = %key, error = %e, "tiles: a published tile is missing from the store and could not be written again");
                }
            },
        }
    }

    fn mismatched(&self, key: &str, found: &[u8], want: &[u8], pass: &mut Pass) {
        pass.mismatched += 1;
        let m = &self.metrics.tiles_mismatched;
        m.set(m.get().max(pass.mismatched as i64));
        if pass.mismatched <= NAMED_PER_PASS {
            tracing::error!(tile = %key, found_sha256 = %sha256(found), published_sha256 = %sha256(want), "tiles: a published tile holds other bytes than the log's tree (tampering, or another writer at this place): kept as it is, never overwritten");
        }
    }

    /// Where the pass goes on from: its mark, when below `size` and at a tile's end; else 0.
    async fn mark(&self, size: u64) -> u64 {
        let Ok(Some(b)) = self.tiles.get(REPAIR_FILE, 64).await else {
            return 0;
        };
        std::str::from_utf8(&b)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .filter(|m| *m < size && m % TILE_WIDTH == 0)
            .unwrap_or(0)
    }

    async fn set_mark(&self, size: u64) {
        let put = Put {
            mode: Mode::Replace,
            ..Put::default()
        };
        let key = self.tiles.key(REPAIR_FILE);
        if let Err(e) = self
            .tiles
            .store()
            .put(&key, Bytes::from(size.to_string()), &put)
            .await
        {
            tracing::warn!(error = %e, "tiles: could not record the repair pass's progress");
        }
    }

    /// The tiles' builder at `size` (a multiple of 256), from the database's stored tree: each
    /// level's partial row the roots of the full subtrees before `size` at that level.
    async fn builder_at(&self, size: u64) -> Result<TileBuilder, RepairError> {
        if size == 0 {
            return Ok(TileBuilder::new());
        }
        let mut rows: Vec<Vec<Hash>> = vec![Vec::new()];
        let mut span = TILE_WIDTH;
        while size / span > 0 {
            let count = size / span;
            let first = count - count % TILE_WIDTH;
            let ranges: Vec<(u64, u64)> =
                (first..count).map(|i| (i * span, (i + 1) * span)).collect();
            rows.push(self.trees.ranges(&ranges).await?);
            span = span.saturating_mul(TILE_WIDTH);
        }
        TileBuilder::resume(size, rows, Vec::new())
            .map_err(|source| RepairError::Resume { size, source })
    }
}

fn sha256(b: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    crate::row::hex(&Sha256::digest(b))
}
