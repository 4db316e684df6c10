//! Archiving old rows out of the database: the archive's files (`line`, `manifest`), the
//! command that writes them (`write`), the prune that then drops what they hold (`prune`), and
//! the retention step that does both for rows older than `retention.rows_for` (`retain`).
pub(crate) mod line;
pub(crate) mod manifest;
pub(crate) mod prune;
pub(crate) mod read;
pub(crate) mod remote;
pub(crate) mod write;

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::db::{Db, DbError};
use crate::row::pgcopy::CopyError;

/// Why archiving or pruning stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ArchiveError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("{path}: {source}", path = .0.display(), source = .1)]
    Io(PathBuf, std::io::Error),
    #[error("{path}: {source}", path = .0.display(), source = .1)]
    Manifest(PathBuf, manifest::ManifestError),
    #[error("partition audit.{0}: its rows as COPY streamed them do not parse: {1}")]
    Copy(String, CopyError),
    #[error("partition audit.{partition}: row stream={stream} stream_seq={stream_seq} has no leaf index (its link has no tree size); run the daemon once so the tree covers it")]
    NoLeaf {
        partition: String,
        stream: String,
        stream_seq: i64,
    },
    #[error("{path}: not what the manifest says was written (changed or truncated since); archive again before pruning", path = .0.display())]
    FileChanged(PathBuf),
    /// A bound past now: only partitions whose range is over are archived and pruned, and a
    /// prune covers only the rows recorded before its record.
    #[error("--before {0} lies in the future (now {1}): only a partition whose month is over is archived or pruned, and a prune covers only the rows recorded before it; give a time in the past")]
    FutureBound(String, String),
    #[error("partition audit.{0} ends at {1}, which has not passed: a partition is pruned only once its month is over")]
    NotOver(String, String),
    /// The archive's object store failed or refused (a file already there with other bytes,
    /// a lock the bucket does not keep).
    #[error(transparent)]
    Store(Box<crate::blobs::BlobError>),
}

/// How much longer than one ordinary statement an archive's COPY or a prune may take (the
/// whole partition in one statement): 60 × `database.statement_timeout`, 30 minutes by default.
pub(crate) const STATEMENT_FACTOR: u32 = 60;

/// `SET LOCAL statement_timeout` for an archive's or a prune's transaction.
fn bound_sql(bound: std::time::Duration) -> String {
    format!(
        "SET LOCAL statement_timeout = '{}ms'",
        bound.as_millis().max(1)
    )
}

/// What one retention step did: the partitions archived and then pruned.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Retained {
    pub(crate) written: write::Written,
    pub(crate) pruned: Vec<prune::Pruned>,
}

/// Archives every unpruned dated partition that ends by `before` into `dir`, then prunes each
/// (`retention.rows_for`, and `event-audit archive --prune`).
pub(crate) async fn retain(
    db: &Db,
    before: DateTime<Utc>,
    dir: &Path,
    reason: &str,
    instance: &str,
    bound: std::time::Duration,
) -> Result<Retained, ArchiveError> {
    retain_to(db, before, dir, None, reason, instance, bound).await
}

/// [`retain`] into `out`, a directory or an `s3://bucket/prefix` location: for a bucket the
/// archive is written in a private staging directory seeded with the bucket's manifest, its new
/// objects put there (locked for `lock_for` when set) before any partition is pruned.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn retain_at(
    db: &Db,
    before: DateTime<Utc>,
    out: &Path,
    store: &crate::config::ObjectStoreSettings,
    lock_for: Option<std::time::Duration>,
    reason: &str,
    instance: &str,
    bound: std::time::Duration,
) -> Result<Retained, ArchiveError> {
    let Some(remote) = remote::Remote::of(out, store, lock_for)? else {
        return retain(db, before, out, reason, instance, bound).await;
    };
    let staging = tempfile::Builder::new()
        .prefix(".event-audit-archive")
        .tempdir()
        .map_err(|e| ArchiveError::Io(std::env::temp_dir(), e))?;
    remote::stage_manifest(&remote.store, staging.path()).await?;
    let mut r = retain_to(
        db,
        before,
        staging.path(),
        Some(&remote),
        reason,
        instance,
        bound,
    )
    .await?;
    r.written.dir = out.to_owned();
    Ok(r)
}

/// [`retain`], the archive written in `dir` and, with `remote`, put in its bucket before any
/// partition is pruned.
pub(crate) async fn retain_to(
    db: &Db,
    before: DateTime<Utc>,
    dir: &Path,
    remote: Option<&remote::Remote>,
    reason: &str,
    instance: &str,
    bound: std::time::Duration,
) -> Result<Retained, ArchiveError> {
    let (written, _) = write::archive(db, before, dir, bound).await?;
    if let Some(r) = remote {
        remote::upload(r, dir, &written).await?;
    }
    let mut pruned = Vec::new();
    for entry in &written.partitions {
        pruned.push(prune::prune(db, dir, entry, reason, instance, bound).await?);
    }
    Ok(Retained { written, pruned })
}
