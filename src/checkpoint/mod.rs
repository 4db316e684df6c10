//! The witness: the daemon's checkpoint signer. Every `checkpoint_interval` (when the tree
//! grew) and once at shutdown it signs a checkpoint of the latest committed tree, stores it in
//! the database (a convenience and the queue of what is to be published), and publishes every
//! checkpoint not yet published, in order, to the witness stream (and the directory). One
//! signer at a time across all daemons of the log (an advisory lock), so their checkpoints form
//! one strictly increasing sequence. The witness being down never stops ingest: what is not
//! published stays queued, is counted (`backlog`) and retried at the next tick.

pub mod publish;
pub mod store;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::audit::note::{Checkpoint, NoteError, PrivateKey};
use crate::audit::tlog::Frontier;
use crate::config::WitnessSettings;
use crate::db::{Db, DbError};
use crate::ingest::source::{Bus, BusError};
use crate::telemetry::metrics::witness::WitnessMetrics;
use store::CheckpointStore;

/// Why the signer could not start or a round failed.
#[derive(Debug, thiserror::Error)]
pub enum WitnessError {
    #[error("signing key file {path}: {why}; create one with `event-audit keygen --out PREFIX`")]
    Key { path: String, why: String },
    #[error(transparent)]
    Db(#[from] DbError),
    #[error(transparent)]
    Bus(#[from] BusError),
    #[error("no usable checkpoint: the witness holds none the database reaches (is the daemon signing checkpoints? with --public-key, only checkpoints it verifies count)")]
    NoCheckpoint,
    #[error("checkpoint directory {path}: {source}")]
    Dir {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// Reads a private key file (its content is never logged or shown).
pub fn load_key(path: &std::path::Path) -> Result<PrivateKey, WitnessError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| WitnessError::Key {
        path: shown.clone(),
        why: e.to_string(),
    })?;
    PrivateKey::parse(&text).map_err(|e: NoteError| WitnessError::Key {
        path: shown,
        why: e.to_string(),
    })
}

/// The checkpoint signer of one daemon.
#[derive(Clone)]
pub struct Signer {
    key: Arc<PrivateKey>,
    origin: String,
    store: CheckpointStore,
    bus: Bus,
    stream: String,
    dir: Option<PathBuf>,
    interval: Duration,
    limit: Duration,
    metrics: Arc<WitnessMetrics>,
}

/// What one round did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    /// The size of the checkpoint signed in this round, if any.
    pub signed: Option<i64>,
    pub published: usize,
    /// Checkpoints still waiting to be published.
    pub backlog: usize,
}

impl Signer {
    pub fn new(
        key: PrivateKey,
        origin: String,
        db: Db,
        bus: Bus,
        s: &WitnessSettings,
        metrics: Arc<WitnessMetrics>,
    ) -> Signer {
        Signer {
            key: Arc::new(key),
            origin,
            store: CheckpointStore::new(db),
            bus,
            stream: s.checkpoint_stream.clone(),
            dir: s.checkpoint_dir.clone(),
            interval: s.checkpoint_interval.get(),
            limit: s.publish_timeout.get(),
            metrics,
        }
    }

    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Creates the witness stream if missing (a failure here is retried by every round).
    pub async fn prepare(&self) -> Result<(), WitnessError> {
        publish::ensure_stream(&self.bus, &self.stream, self.limit).await?;
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
        self.round_logged().await;
    }

    async fn round_logged(&self) {
        if let Err(e) = self.round().await {
            tracing::warn!(error = %e, "checkpoint round failed; retried at the next one");
        }
    }

    /// One round: sign if the tree grew, then publish what is queued, in order.
    pub async fn round(&self) -> Result<Round, WitnessError> {
        let mut out = Round::default();
        let mut tx = self.store.lock().await?;
        let (size, front) = CheckpointStore::head(&mut tx).await?;
        let latest = CheckpointStore::latest(&mut tx).await?;
        if size > latest {
            let tree = u64::try_from(size)
                .ok()
                .and_then(|n| Frontier::from_bytes(n, &front))
                .ok_or(DbError::Corrupt {
                    what: "audit.chain_head.frontier",
                    why: "does not hold one hash per set bit of the tree size",
                })?;
            let cp = Checkpoint {
                origin: self.origin.clone(),
                size: tree.size(),
                root: tree.root(),
            };
            let note = self.key.sign(&cp);
            CheckpointStore::insert(&mut tx, size, &note).await?;
            out.signed = Some(size);
            tracing::debug!(size, "checkpoint signed");
        }
        let queue = CheckpointStore::unpublished(&mut tx).await?;
        let mut failed: Option<WitnessError> = None;
        for c in &queue {
            if let Some(dir) = &self.dir {
                if let Err(source) = publish::write_dir(dir, c.tree_size, &c.note) {
                    failed = Some(WitnessError::Dir {
                        path: dir.display().to_string(),
                        source,
                    });
                    break;
                }
            }
            match publish::publish(
                &self.bus,
                &self.stream,
                &self.origin,
                c.tree_size,
                &c.note,
                self.limit,
            )
            .await
            {
                Ok(()) => {
                    CheckpointStore::mark_published(&mut tx, c.tree_size).await?;
                    out.published += 1;
                    self.metrics.size.set(c.tree_size);
                    self.metrics.time.set(chrono::Utc::now().timestamp());
                }
                Err(e) => {
                    failed = Some(e.into());
                    break;
                }
            }
        }
        out.backlog = queue.len() - out.published;
        self.metrics
            .backlog
            .set(i64::try_from(out.backlog).unwrap_or(i64::MAX));
        tx.commit().await.map_err(|e| {
            WitnessError::Db(DbError::Sql {
                action: "commit checkpoints",
                place: None,
                cause: e,
            })
        })?;
        if let Some(e) = failed {
            self.metrics.failures.inc();
            return Err(e);
        }
        Ok(out)
    }
}

/// The daemon's signer when a signing key file is configured (an unreadable or malformed key
/// stops the daemon before ingest starts); says at start-up whether checkpoints are on. The
/// signer runs at each interval, and once more when ingest has ended.
pub fn from_settings(
    s: &crate::config::Settings,
    db: &Db,
    bus: &Bus,
    metrics: &crate::telemetry::metrics::Metrics,
) -> Result<Option<Signer>, WitnessError> {
    let w = &s.witness;
    let Some(path) = &w.signing_key_file else {
        tracing::info!("checkpoints are off: no signing key (--signing-key-file or EVENT_AUDIT_SIGNING_KEY_FILE); the log is not witnessed outside the database");
        return Ok(None);
    };
    let key = load_key(path)?;
    // The log's name: as configured, else the key's (keygen names the key after the origin,
    // and verify expects the same).
    let origin = w.origin.clone().unwrap_or_else(|| key.name.clone());
    tracing::info!(%origin, key = %key.public().encode(), stream = %w.checkpoint_stream, interval = %w.checkpoint_interval, "checkpoints on");
    let (db, bus, m) = (db.clone(), bus.clone(), metrics.witness.clone());
    Ok(Some(Signer::new(key, origin, db, bus, w, m)))
}

/// Every checkpoint the witness holds: the checkpoint directory when one is set, else the
/// witness stream (connecting with the NATS settings).
pub async fn read_witness(
    s: &crate::config::Settings,
) -> Result<Vec<publish::Found>, WitnessError> {
    let w = &s.witness;
    if let Some(dir) = &w.checkpoint_dir {
        return publish::read_dir(dir).map_err(|source| WitnessError::Dir {
            path: dir.display().to_string(),
            source,
        });
    }
    let bus = Bus::connect(&s.nats).await?;
    // Reading a long history takes longer than one publish: a minute per call at least.
    let limit = w.publish_timeout.get().max(Duration::from_secs(60));
    Ok(publish::read_stream(&bus, &w.checkpoint_stream, limit).await?)
}

/// Reads a public key file.
pub fn load_public_key(
    path: &std::path::Path,
) -> Result<crate::audit::note::PublicKey, WitnessError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| WitnessError::Key {
        path: shown.clone(),
        why: e.to_string(),
    })?;
    crate::audit::note::PublicKey::parse(&text).map_err(|e| WitnessError::Key {
        path: shown,
        why: e.to_string(),
    })
}

/// The checkpoint `prove` proves against: the newest witnessed one the database's tree reaches
/// (with `key`, only one whose signature verifies; only notes `keep` accepts, e.g. those with a
/// witness policy's quorum of cosignatures); when the witness cannot be read or holds none, and
/// only with `key`, the database's copy of the latest one, once its signature verifies and
/// `keep` accepts it.
pub async fn latest_checkpoint(
    s: &crate::config::Settings,
    db: &Db,
    key: Option<&crate::audit::note::PublicKey>,
    keep: &dyn Fn(&str) -> bool,
) -> Result<(Checkpoint, String), WitnessError> {
    use crate::audit::note;
    let store = CheckpointStore::new(db.clone());
    let head = store.tree_size().await?;
    let open = |text: &str| match key {
        Some(k) => note::open(text, k).ok(),
        None => note::claimed(text).ok(),
    };
    let found = match read_witness(s).await {
        Ok(f) => f,
        Err(e) if key.is_some() => {
            tracing::warn!(error = %e, "the witness cannot be read; using the database's copy of the latest checkpoint, checked with the public key");
            Vec::new()
        }
        Err(e) => return Err(e),
    };
    let best = found
        .into_iter()
        .filter(|f| keep(&f.note))
        .filter_map(|f| open(&f.note).map(|c| (c, f.note)))
        .filter(|(c, _)| i64::try_from(c.size).is_ok_and(|n| n <= head))
        .max_by_key(|(c, _)| c.size);
    if let Some(b) = best {
        return Ok(b);
    }
    if key.is_some() {
        if let Some(text) = store.latest_note().await? {
            if let Some(c) = open(&text).filter(|_| keep(&text)) {
                return Ok((c, text));
            }
        }
    }
    Err(WitnessError::NoCheckpoint)
}
