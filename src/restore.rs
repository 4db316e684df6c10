//! The witnessed evidence resumes after a database restored from a backup. When the database's
//! tree is smaller than the last checkpoint the log's key signed, the leaves it lost are taken
//! from a copy of the log's tiles (the daemon's own tiles directory, or any copy named in the
//! settings or by hand: an auditor's mirror included) and appended as rows whose contents are
//! lost but whose row hashes and leaf indexes are kept, then the restore is recorded as a row of
//! the log ([`crate::row::restore`]). A copy is used only when its leaves, appended to the
//! database's own tree, make exactly the root the key signed at that size: a copy cannot add,
//! drop or change a leaf, and nothing is trusted of it but what the signature vouches for. The
//! signer then signs under the same origin, and the witnesses cosign: the tree extends what they
//! saw. With no copy that holds the leaves, nothing is written and the refusal says what to do.

pub(crate) mod metrics;
pub(crate) mod start;

use std::time::Duration;

use futures::StreamExt;
use sha2::{Digest, Sha256};

use crate::log::restored::AppendError;
use crate::log::Log;
use crate::mirror::source::{origin_dir, FetchError, Source};
use crate::row::hex;
use crate::row::restore::Restore;
use crate::tlog::merkle::{leaf_hash, Hash};
use crate::tlog::note::{self, PublicKey};
use crate::tlog::tile::{parse_bundle, TileId, TILE_WIDTH};

/// Bundles of a copy fetched at once (as the mirror's pull).
const IN_FLIGHT: usize = 8;

/// Why the lost leaves were not restored.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RestoreError {
    #[error("the database's tree has {db} leaves, fewer than the checkpoint of size {signed} the log's key signed, and no copy holds the lost leaves ({}): nothing restored; name a copy of the log's tiles that holds them (--restore-from, an auditor's mirror), restore a newer backup, or start a successor log (docs/disaster-recovery.md)", tried.join("; "))]
    NoCopy {
        db: u64,
        signed: u64,
        tried: Vec<String>,
    },
    #[error(transparent)]
    Append(#[from] AppendError),
    #[error(transparent)]
    Db(#[from] crate::db::DbError),
}

/// The checkpoint the restored tree must have: what the log's key signed last.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) size: u64,
    pub(crate) root: Hash,
}

/// What a restore did.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) enum Outcome {
    /// The database's tree is not smaller than the target: nothing to restore.
    Current { size: u64 },
    /// The lost leaves were appended, and the restore recorded.
    Restored {
        record: Restore,
        /// The chain link of the record's row.
        link: i64,
        /// How long reading the copy and appending took, seconds.
        seconds: f64,
    },
    /// A dry run: what would be restored, and from where.
    Would { from: u64, to: u64, copy: String },
}

impl Outcome {
    /// One line: what was found, what was done.
    pub(crate) fn line(&self) -> String {
        match self {
            Outcome::Current { size } => {
                format!("the database's tree ({size} leaves) holds every leaf the log's key signed: nothing to restore")
            }
            Outcome::Restored { record, link, seconds } => format!(
                "the database's tree had {} leaves, fewer than the checkpoint of size {} the log's key signed: leaves {}..{} restored from {} in {seconds:.1} s (their row hashes; their contents are lost), recorded as restore {} in chain link {}; the events the bus still holds are recorded again after it",
                record.database_size, record.size, record.database_size, record.size.saturating_sub(1), record.from, record.restore, link
            ),
            Outcome::Would { from, to, copy } => format!(
                "the database's tree has {from} leaves, fewer than the checkpoint of size {to} the log's key signed: leaves {from}..{} would be restored from {copy}", to.saturating_sub(1)
            ),
        }
    }
}

/// Where the lost leaves may be: a copy of the log's tiles (a directory, a URL, or an
/// `s3://bucket/prefix` read with the object store's settings; with or without a mirror's
/// `<hex sha256(origin)>/` folder).
pub(crate) struct Copies {
    pub(crate) key: PublicKey,
    pub(crate) origin: String,
    pub(crate) copies: Vec<String>,
    pub(crate) timeout: Duration,
    /// How an `s3://` copy is reached (endpoint, region, credentials' files).
    pub(crate) object_store: crate::config::ObjectStoreSettings,
    /// The TLS of copies read over HTTPS (`witness.tls_*`).
    pub(crate) tls: crate::tls::Peer,
}

impl Copies {
    /// The newest checkpoint of the log a copy serves that opens with the key: `(size, root)`,
    /// the largest among the copies that answer.
    pub(crate) async fn newest(&self) -> Option<Target> {
        let mut best: Option<Target> = None;
        for c in &self.copies {
            if let Ok((_, note)) = self.open(c).await {
                if let Ok(cp) = note::open(&note, &self.key) {
                    if best.as_ref().is_none_or(|b| cp.size > b.size) {
                        best = Some(Target {
                            size: cp.size,
                            root: cp.root,
                        });
                    }
                }
            }
        }
        best
    }

    /// The copy's read path and its checkpoint: as given, else under its origin's folder.
    async fn open(&self, copy: &str) -> Result<(Source, String), String> {
        let src = Source::open(copy, self.timeout, &self.object_store, &self.tls)?;
        match src.checkpoint().await {
            Ok(n) => Ok((src, n)),
            Err(FetchError::NotFound { .. }) => {
                let child = src.child(&origin_dir(&self.origin));
                let n = child.checkpoint().await.map_err(|e| e.to_string())?;
                Ok((child, n))
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// The row hashes of leaves `from..target.size` as `copy` holds them, checked: its
    /// checkpoint opens with the key, names the origin and reaches the target's size, and every
    /// entry is a row hash.
    async fn leaves(&self, copy: &str, from: u64, to: u64) -> Result<Vec<Hash>, String> {
        let (src, text) = self.open(copy).await?;
        let cp = note::open(&text, &self.key)
            .map_err(|e| format!("its checkpoint does not open with the log's key ({e})"))?;
        if cp.origin != self.origin {
            return Err(format!("its checkpoint is of {}", cp.origin));
        }
        if cp.size < to {
            return Err(format!(
                "its checkpoint is of size {}, short of {to}",
                cp.size
            ));
        }
        let mut out = Vec::with_capacity(usize::try_from(to - from).unwrap_or(0).min(1 << 24));
        // The bundles holding leaves from..to, named lazily, a few fetched at once, taken in order.
        let bundles = (from / TILE_WIDTH..to.div_ceil(TILE_WIDTH)).map(|i| {
            let start = i * TILE_WIDTH;
            let width = u16::try_from((cp.size - start).min(TILE_WIDTH)).unwrap_or(0);
            let id = TileId::entries(i, width);
            let src = &src;
            async move { (start, id, src.tile(id).await) }
        });
        let mut fetched = futures::stream::iter(bundles).buffered(IN_FLIGHT);
        while let Some((start, id, bytes)) = fetched.next().await {
            let bytes = bytes.map_err(|e| e.to_string())?;
            let entries = parse_bundle(&id, &bytes).map_err(|e| e.to_string())?;
            let width = u64::from(id.width);
            let lo = usize::try_from(from.saturating_sub(start)).unwrap_or(0);
            let hi = usize::try_from((to - start).min(width)).unwrap_or(0);
            for (k, e) in entries.iter().enumerate().take(hi).skip(lo) {
                let h: Hash = (*e).try_into().map_err(|_| {
                    format!("leaf {} is not a row hash (32 bytes)", start + k as u64)
                })?;
                out.push(h);
            }
        }
        Ok(out)
    }
}

/// Restores the leaves the database lacks below `target` from the first copy that holds them
/// (see the module); `dry_run` only says what it would do.
pub(crate) async fn restore(
    log: &Log,
    copies: &Copies,
    target: &Target,
    reason: &str,
    dry_run: bool,
) -> Result<Outcome, RestoreError> {
    let tree = log.tree().await?;
    let n = tree.size();
    if n >= target.size {
        return Ok(Outcome::Current { size: n });
    }
    let began = std::time::Instant::now();
    let mut tried = Vec::new();
    for copy in &copies.copies {
        let shown = shown(copy);
        let hashes = match copies.leaves(copy, n, target.size).await {
            Ok(h) => h,
            Err(why) => {
                tried.push(format!("{shown}: {why}"));
                continue;
            }
        };
        let mut t = tree.clone();
        for h in &hashes {
            t.append(leaf_hash(h), |_, _| {});
        }
        if t.root() != target.root {
            tried.push(format!("{shown}: its leaves {n}..{} do not make the root the key signed at size {} (another log's tiles, or a copy that was changed)", target.size.saturating_sub(1), target.size));
            continue;
        }
        if dry_run {
            return Ok(Outcome::Would {
                from: n,
                to: target.size,
                copy: shown,
            });
        }
        let mut digest = Sha256::new();
        for h in &hashes {
            digest.update(h);
        }
        let record = Restore {
            restore: 0,
            at: String::new(),
            reason: reason.to_owned(),
            from: shown,
            database_size: n,
            size: target.size,
            root: hex(&target.root),
            row_hashes_sha256: hex(&digest.finalize()),
        };
        let (record, link) = log.append_restored(&hashes, record).await?;
        return Ok(Outcome::Restored {
            record,
            link,
            seconds: began.elapsed().as_secs_f64(),
        });
    }
    Err(RestoreError::NoCopy {
        db: n,
        signed: target.size,
        tried,
    })
}

/// After a restore to a tree of `size` leaves: the account index's updates the database lost,
/// replayed from the first copy that publishes any ([`crate::index::replay`]). `Ok` says what
/// was replayed (or that no copy publishes more), `Err` why none was (the updates before a
/// refused one are kept).
pub(crate) async fn replay_index(log: &Log, copies: &Copies, size: u64) -> Result<String, String> {
    use crate::index::replay::{from_copies, open_copies, FromCopies};
    let sources = open_copies(
        &copies.copies,
        copies.timeout,
        &copies.object_store,
        &copies.tls,
    );
    match from_copies(log.db(), &sources, &copies.origin, size).await {
        Ok(FromCopies::Replayed(copy, r)) => Ok(format!(
            "account index updates {}..{} replayed from {copy} (the index covers leaves below {} again; the lost rows' labels as the deltas name them)",
            r.first, r.last, r.through
        )),
        Ok(FromCopies::Nothing) => {
            Ok("no copy publishes an account index update the database lacks".into())
        }
        Ok(FromCopies::Failed { refused, silent }) => Err(format!(
            "the account index's lost updates were not replayed ({}); the daemon's index tries its copies again before it indexes the restored leaves, and `tiles fsck` of a copy names the first update that does not match",
            refused.into_iter().chain(silent).collect::<Vec<_>>().join("; ")
        )),
        Err(e) => Err(format!("the account index's lost updates were not replayed: {e}")),
    }
}

/// A copy as a line shows it: a directory as it is, a URL without its credentials.
pub(crate) fn shown(copy: &str) -> String {
    if copy.contains("://") {
        crate::config::redact_url(copy)
    } else {
        copy.to_owned()
    }
}
