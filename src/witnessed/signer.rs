//! The daemon's checkpoint signer. Every `checkpoint_interval` and once at shutdown, under an
//! advisory lock (one signer at a time across the daemons of a log), it signs a checkpoint of
//! each of its two trees that grew — the rows (origin `O`) and the closed re-verdict runs
//! (`O/reverdicts`) — but only a tree it has proved, with its own code, to extend every
//! checkpoint its key signed ([`sign`]), remembering what it signed outside PostgreSQL
//! ([`crate::log::signed`], written before anything is stored or published). It then publishes the queue in
//! order: each note opened with its own key first, cosigned by the witness policy's quorum
//! ([`submit`]) when there is one, to the witness stream and the directory ([`publish`]). A
//! refusal signs nothing, says why in one ERROR line, sets `event_audit_checkpoint_signer_ok` to
//! 0; ingest goes on. The witness being down never stops ingest: what is not published stays
//! queued, is counted (`backlog`) and retried at the next round.

pub mod publish;
mod queue;
mod read;
mod second;
mod sign;
mod start;
mod submit;
mod tiles;
mod update_index;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::bus::{Bus, BusError};
use crate::config::WitnessSettings;
use crate::db::{Db, DbError};
use crate::log::checkpoints::{CheckpointStore, LOG_EVENTS, LOG_REVERDICTS};
use crate::log::signed::{Memory, Remembered};
use crate::log::tiles::Tiles;
use crate::log::tree::TreeStore;
use crate::row::reverdict::chain_order;
use crate::tlog::merkle::Frontier;
use crate::tlog::note::{self, Checkpoint, PrivateKey, PublicKey, REVERDICTS_SUFFIX};
use crate::witnessed::metrics::WitnessMetrics;
use crate::witnessed::tile_writer::TileWriter;
#[allow(unreachable_pub)]
// public through `test_support` (the lint misses re-exports of re-exports)
pub use read::{latest_checkpoint, load_key, load_policy, load_public_key, read_witness};
use sign::{Found, Refusal};
pub(crate) use start::{check, from_checked, Checked};
use submit::Witnesses;

/// Why the signer could not start, a round failed, or a reader could not read.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("signing key file {path}: {why}; create one with `event-audit keygen --out PREFIX`")]
    Key { path: String, why: String },
    #[error("public key file {path}: {why}; give the log's public key (the PREFIX.pub `event-audit keygen` wrote)")]
    PublicKey { path: String, why: String },
    #[error("witness policy {path}: {why}")]
    Policy { path: String, why: String },
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
    #[error(transparent)]
    Db(#[from] DbError),
    #[error(transparent)]
    Bus(#[from] BusError),
    #[error("the checkpoint stream `{stream}` does not exist on NATS at {url}: pass --checkpoint-stream with the stream the daemon publishes its checkpoints to (its witness.checkpoint_stream setting), or --checkpoint-dir DIR for a directory of checkpoint files")]
    NoStream { stream: String, url: String },
    #[error("no usable checkpoint: the witness holds none the database reaches (is the daemon signing checkpoints? with --public-key, only checkpoints it verifies count; with --witness-policy, only those its quorum cosigned)")]
    NoCheckpoint,
    #[error("checkpoint directory {path}: {source}")]
    Dir {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// What one round did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Round {
    /// The (log, size) of each checkpoint signed in this round.
    pub signed: Vec<(&'static str, i64)>,
    pub published: usize,
    /// Checkpoints still waiting to be published.
    pub backlog: usize,
    /// Why nothing was signed, if the signer refused.
    pub refused: Option<String>,
}

/// The checkpoint signer of one daemon.
pub struct Signer {
    key: Arc<PrivateKey>,
    /// The log's ML-DSA-44 key, whose signature each note carries too ([`second`]).
    ml_dsa: Option<Arc<crate::tlog::mldsa::MlDsaSigner>>,
    public: PublicKey,
    origin: String,
    store: CheckpointStore,
    trees: TreeStore,
    bus: Bus,
    stream: String,
    replicas: usize,
    dir: Option<PathBuf>,
    interval: Duration,
    limit: Duration,
    metrics: Arc<WitnessMetrics>,
    state: PathBuf,
    witnesses: Option<Mutex<Witnesses>>,
    /// The refusal last logged (logged again only when it changes).
    last_refusal: Mutex<Option<String>>,
    /// Whether the stream's newest messages were searched for notes this signer forgot.
    searched: Mutex<bool>,
    /// Whether the remembered checkpoints were shown to the witnesses since the start.
    cross_checked: Mutex<bool>,
    /// The log's tiles, when a tile directory or bucket is configured.
    tiles: Option<Mutex<TileWriter>>,
    /// The row hashes the last round read, from which size: the tiles' new leaves, most often.
    tapped: Mutex<Option<(u64, Vec<crate::tlog::merkle::Hash>)>>,
    /// `event_audit_signer_memory_missing`, set to 0 once the memory file exists.
    memory_missing: Option<prometheus::IntGauge>,
    /// The backlog the last round left (a line says when it drains).
    last_backlog: std::sync::atomic::AtomicUsize,
    /// The account index, brought up to the head before each round signs.
    index: Option<Mutex<crate::index::update::Updater>>,
    /// Set for the round at shutdown.
    stopping: std::sync::atomic::AtomicBool,
}

impl Signer {
    pub fn new(
        key: PrivateKey,
        origin: String,
        db: Db,
        bus: Bus,
        s: &WitnessSettings,
        metrics: Arc<WitnessMetrics>,
    ) -> Result<Signer, CheckpointError> {
        let policy = match &s.witness_policy {
            Some(p) => Some(read::load_submitting_policy(p, &key.public())?),
            None => None,
        };
        let state = s.signer_state_path().ok_or_else(|| CheckpointError::Key {
            path: String::new(),
            why: "no signer state file (--signer-state)".into(),
        })?;
        let limit = s.publish_timeout.get();
        let tls = crate::tls::Peer::new(
            "a witness",
            "witness",
            s.tls_ca_file.as_ref(),
            s.tls_cert_file.as_ref(),
            s.tls_key_file.as_ref(),
        );
        if policy.is_some() {
            // A CA or client certificate that cannot be read stops the start, named.
            crate::tls::client_config(&tls)?;
        }
        let tiles = s.tiles_dir.as_ref().map(|d| {
            Mutex::new(TileWriter::new(
                Tiles::dir(d.clone()),
                key.public(),
                metrics.clone(),
            ))
        });
        Ok(Signer {
            tiles,
            tapped: Mutex::new(None),
            memory_missing: None,
            last_backlog: std::sync::atomic::AtomicUsize::new(0),
            public: key.public(),
            key: Arc::new(key),
            ml_dsa: None,
            origin,
            store: CheckpointStore::new(db.clone()),
            trees: TreeStore::new(db),
            bus,
            stream: s.checkpoint_stream.clone(),
            replicas: s.checkpoint_replicas,
            dir: s.checkpoint_dir.clone(),
            interval: s.checkpoint_interval.get(),
            limit,
            metrics,
            state,
            witnesses: policy.map(|p| Mutex::new(Witnesses::new(p, limit, &tls))),
            last_refusal: Mutex::new(None),
            searched: Mutex::new(false),
            cross_checked: Mutex::new(false),
            index: None,
            stopping: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The signer with its tiles in `tiles` (a directory or an S3 bucket) rather than the
    /// settings' `tiles_dir`.
    pub fn with_tiles(mut self, tiles: Tiles) -> Signer {
        let public = self.public.clone();
        self.tiles = Some(Mutex::new(TileWriter::new(
            tiles,
            public,
            self.metrics.clone(),
        )));
        self
    }

    /// The signer sets `gauge` (start-up's finding that the memory file was missing) to 0 at
    /// the end of each round once the file exists.
    pub(crate) fn clears_when_remembered(mut self, gauge: prometheus::IntGauge) -> Signer {
        self.memory_missing = Some(gauge);
        self
    }

    /// The log's public key.
    pub fn public(&self) -> &PublicKey {
        &self.public
    }

    /// The two logs: (log, origin).
    fn logs(&self) -> [(&'static str, String); 2] {
        [
            (LOG_EVENTS, self.origin.clone()),
            (
                LOG_REVERDICTS,
                format!("{}{REVERDICTS_SUFFIX}", self.origin),
            ),
        ]
    }

    /// Creates the witness stream if missing and checks its configuration (a failure here is
    /// retried by every round).
    pub async fn prepare(&self) -> Result<(), CheckpointError> {
        let problems =
            publish::ensure_stream(&self.bus, &self.stream, self.replicas, self.limit).await?;
        self.metrics.stream_ok.set(i64::from(problems.is_empty()));
        if !problems.is_empty() {
            tracing::error!(stream = %self.stream, problems = %problems.join("; "), "the checkpoint stream does not keep evidence: published checkpoints can be removed through NATS; recreate it (deny delete, deny purge, no limits) and deny stream updates to the daemon's NATS user");
        }
        Ok(())
    }

    /// Signs and publishes every interval until `stop`, then once more.
    pub async fn run(self, stop: CancellationToken) {
        let start = tokio::time::Instant::now() + self.interval;
        let mut tick = tokio::time::interval_at(start, self.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut stream_ready = self.prepare().await.is_ok();
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tick.tick() => {}
            }
            if !stream_ready {
                stream_ready = self.prepare().await.is_ok();
            }
            self.round_logged().await;
        }
        // The last round at shutdown: the index gets a short budget (it catches up at the next
        // start), so that the checkpoint is signed within the shutdown's time.
        self.stopping
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.round_logged().await;
    }

    async fn round_logged(&self) {
        let started = std::time::Instant::now();
        let result = self.round().await;
        tracing::debug!(
            ms = started.elapsed().as_secs_f64() * 1e3,
            "checkpoint round"
        );
        if let Err(e) = result {
            tracing::warn!(error = %e, "checkpoint round failed (checkpoints not published stay queued); retried at the next one");
        }
    }

    /// One round: sign what grew (if it extends what the key signed), then publish the queue.
    pub async fn round(&self) -> Result<Round, CheckpointError> {
        self.update_index().await;
        let mut out = Round::default();
        let mut tx = self.store.lock().await?;
        let mut refusal = self.sign(&mut tx, &mut out).await?.err();
        let mut failed = None;
        if refusal.is_none() {
            refusal = self.cross_check().await?.err();
        }
        if refusal.is_none() {
            let (r, f) = self.publish(&mut tx, &mut out).await?;
            refusal = r.err();
            failed = f;
        }
        self.write_tiles(&mut tx).await?;
        tx.commit().await.map_err(|e| {
            CheckpointError::Db(DbError::Sql {
                action: "commit checkpoints",
                place: None,
                cause: e,
            })
        })?;
        self.metrics
            .backlog
            .set(i64::try_from(out.backlog).unwrap_or(i64::MAX));
        let before = self
            .last_backlog
            .swap(out.backlog, std::sync::atomic::Ordering::Relaxed);
        if before > 0 && out.backlog == 0 {
            tracing::info!(
                published = out.published,
                "the checkpoint backlog drained: every signed checkpoint is published"
            );
        }
        if let Some(g) = &self.memory_missing {
            if g.get() != 0 && self.state.exists() {
                g.set(0);
                tracing::info!(state = %self.state.display(), "the signer's memory file exists again");
            }
        }
        let mut last = self.last_refusal.lock().await;
        match refusal {
            Some(r) => {
                let text = r.to_string();
                self.metrics
                    .signer_refuses(r.reason(), &text, last.as_deref() != Some(&text));
                *last = Some(text.clone());
                out.refused = Some(text);
            }
            None => {
                if last.take().is_some() {
                    tracing::info!("checkpoint signer signs again: the tree extends every checkpoint this key signed");
                }
                self.metrics.signer_ok.set(1);
            }
        }
        if let Some(e) = failed {
            self.metrics.failures.inc();
            return Err(e);
        }
        Ok(out)
    }

    /// The notes of `log` signed by this key: the stored ones newer than `from` (foreign ones
    /// counted and ignored), and on the first round the stream's newest and the directory's.
    async fn found(
        &self,
        tx: &mut sqlx::PgConnection,
        log: &str,
        origin: &str,
        from: i64,
        extra: &[String],
    ) -> Result<Vec<Found>, CheckpointError> {
        let mut out = Vec::new();
        for s in CheckpointStore::newer_or_queued(tx, log, from).await? {
            match note::open(&s.note, &self.public) {
                Ok(cp) if cp.origin == origin && i64::try_from(cp.size) == Ok(s.tree_size) => {
                    out.push(Found { cp, note: s.note })
                }
                _ => self.foreign(log, s.tree_size),
            }
        }
        for text in extra {
            if let Ok(cp) = note::open(text, &self.public) {
                if cp.origin == origin {
                    out.push(Found {
                        cp,
                        note: text.clone(),
                    });
                }
            }
        }
        Ok(out)
    }

    fn foreign(&self, log: &str, size: i64) {
        self.metrics.foreign_checkpoint(log, size);
    }

    /// On the first round, the notes in the stream's newest messages and in the directory.
    async fn elsewhere(&self) -> Vec<String> {
        let mut searched = self.searched.lock().await;
        if *searched {
            return Vec::new();
        }
        let mut notes = Vec::new();
        match publish::read_tail(&self.bus, &self.stream, 256, self.limit).await {
            Ok(f) => notes.extend(f.into_iter().map(|f| f.note)),
            Err(e) => {
                tracing::warn!(error = %e, "the checkpoint stream's newest checkpoints cannot be read; relying on the signer's memory and the database's copies")
            }
        }
        if let Some(dir) = &self.dir {
            if let Ok(f) = publish::read_dir(dir) {
                notes.extend(f.into_iter().rev().take(256).map(|f| f.note));
            }
        }
        *searched = true;
        notes
    }

    /// Decides and signs each log; the memory is saved before anything is stored.
    async fn sign(
        &self,
        tx: &mut sqlx::PgConnection,
        out: &mut Round,
    ) -> Result<Result<(), Refusal>, CheckpointError> {
        let mut memory = match Memory::load(&self.state, &self.public) {
            Ok(m) => m.unwrap_or_default(),
            Err(e) => return Ok(Err(Refusal::Memory(e.to_string()))),
        };
        let extra = self.elsewhere().await;
        let (head_size, front) = CheckpointStore::head(tx).await?;
        let head_size = u64::try_from(head_size).unwrap_or(0);
        let head_root = Frontier::from_bytes(head_size, &front).map(|f| f.root());
        let leaves = chain_order(&CheckpointStore::run_ends(tx).await?);
        let mut fresh = Vec::new();
        let mut changed = false;
        for (log, origin) in self.logs() {
            let before = memory.logs.get(&origin).cloned();
            let from = before.as_ref().map_or(-1, |r| r.size() as i64);
            let found = self.found(tx, log, &origin, from, &extra).await?;
            let decided = if log == LOG_EVENTS {
                let mut tap = Vec::new();
                let decided = sign::events(
                    &self.trees,
                    &origin,
                    before.as_ref(),
                    &found,
                    (head_size, head_root),
                    &mut tap,
                )
                .await?;
                if self.tiles.is_some() {
                    *self.tapped.lock().await =
                        Some((before.as_ref().map_or(0, |r| r.size()), tap));
                }
                decided
            } else {
                sign::reverdicts(&origin, before.as_ref(), &found, &leaves)
            };
            let outcome = match decided {
                Ok(o) => o,
                Err(r) => return Ok(Err(r)),
            };
            if let Some(r) = outcome.remembered.filter(|r| Some(r) != before.as_ref()) {
                if let Err(r) = remember(&mut memory, log, &origin, r) {
                    return Ok(Err(r));
                }
                changed = true;
            }
            if let Some(tree) = outcome.to_sign {
                let cp = Checkpoint {
                    origin: origin.clone(),
                    size: tree.size(),
                    root: tree.root(),
                };
                let note = self.sign_note(&cp);
                fresh.push((log, cp.size as i64, note.clone()));
                if let Err(r) = remember(&mut memory, log, &origin, Remembered::at(tree, note)) {
                    return Ok(Err(r));
                }
                changed = true;
            }
        }
        if changed {
            if let Err(e) = memory.save(&self.state, &self.public) {
                return Ok(Err(Refusal::Memory(e.to_string())));
            }
        }
        for (log, size, note) in &fresh {
            CheckpointStore::insert(tx, log, *size, note).await?;
            out.signed.push((log, *size));
            tracing::debug!(log, size, "checkpoint signed");
        }
        // A note remembered but not stored (a commit lost after the memory was written, or a
        // database emptied of its copies) is stored again, to be published.
        for (log, origin) in self.logs() {
            if let Some(r) = memory.logs.get(&origin) {
                let plain = queue::plain_note(&r.note, &self.public);
                CheckpointStore::insert(tx, log, r.size() as i64, &plain).await?;
            }
        }
        Ok(Ok(()))
    }
}

/// Remembers `r` as the newest checkpoint of `origin`; the memory is never lowered, so a
/// smaller checkpoint, or another root at the remembered size, is a refusal (`sign` has proved
/// the tree extends the memory before this, so this is the last line, not the first).
fn remember(memory: &mut Memory, log: &str, origin: &str, r: Remembered) -> Result<(), Refusal> {
    let size = r.size();
    memory
        .logs
        .advance(origin, r)
        .map(|_| ())
        .map_err(|s| match s {
            crate::tlog::latest::Step::OtherRoot => Refusal::Forked {
                log: log.to_owned(),
                size,
            },
            _ => Refusal::Rewritten {
                log: log.to_owned(),
                size,
            },
        })
}
