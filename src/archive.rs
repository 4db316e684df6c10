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

/// Archives every unpruned dated partition that ends by `before` into `out`, then, with a
/// `prune` reason, prunes each (`retention.rows_for`, and `event-audit archive [--prune]`).
/// `out` is a directory, or an `s3://bucket/prefix` location: for a bucket the archive is
/// written in a private staging directory seeded with the bucket's manifest, and its new objects
/// put there (locked for `lock_for` when set) before any partition is pruned.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn retain(
    db: &Db,
    before: DateTime<Utc>,
    out: &Path,
    store: &crate::config::ObjectStoreSettings,
    lock_for: Option<std::time::Duration>,
    prune: Option<&str>,
    instance: &str,
    bound: std::time::Duration,
) -> Result<Retained, ArchiveError> {
    let remote = remote::Remote::of(out, store, lock_for)?;
    let staging = match &remote {
        Some(r) => Some(remote::stage(&r.store).await?),
        None => None,
    };
    let dir = staging.as_ref().map_or(out, |t| t.path());
    let (mut written, _) = write::archive(db, before, dir, bound).await?;
    if let Some(r) = &remote {
        remote::upload(r, dir, &written).await?;
    }
    let mut pruned = Vec::new();
    if let Some(reason) = prune {
        for entry in &written.partitions {
            pruned.push(prune::prune(db, dir, entry, reason, instance, bound).await?);
        }
    }
    written.dir = out.to_owned();
    Ok(Retained { written, pruned })
}
