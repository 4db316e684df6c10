//! Pruning an archived partition, once its month is over: the archive file checked on disk
//! against its manifest entry, then in one transaction as the eraser role the partition held
//! against new rows (so every row it holds precedes the prune's record), its rows' envelope-id
//! claims and findings removed,
//! the prune recorded as an erasure by publication time naming the archive file (a row of the
//! log: chain, tree, checkpoints, witnesses and mirrors hold it), and the partition compacted to
//! its kept columns in place by `audit.prune_partition`, which refuses unless it still holds
//! exactly the archived rows.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::manifest::PartitionFile;
use super::ArchiveError;
use crate::db::{Ctx, Db};
use crate::erase::ERASER_ROLE;
use crate::log::append::Appender;
use crate::log::partitions;
use crate::row::erasure::{Archived, Erasure, Published};
use crate::row::hex;

/// What a prune did.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Pruned {
    pub(crate) partition: String,
    pub(crate) rows: i64,
    /// The record's erasure number and chain link.
    pub(crate) erasure: i64,
    pub(crate) link_seq: i64,
    pub(crate) claims_removed: u64,
    pub(crate) findings_removed: u64,
}

/// SHA-256 of a file, lowercase hex, read in blocks.
pub(crate) fn file_sha256(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(hex(&h.finalize()));
        }
        h.update(&buf[..n]);
    }
}

/// Prunes the partition `entry` archives in `dir` (see the module).
pub(crate) async fn prune(
    db: &Db,
    dir: &Path,
    entry: &PartitionFile,
    reason: &str,
    instance: &str,
    bound: Duration,
) -> Result<Pruned, ArchiveError> {
    let path = dir.join(&entry.file);
    let on_disk = file_sha256(&path).map_err(|e| ArchiveError::Io(path.clone(), e))?;
    if on_disk != entry.sha256 {
        return Err(ArchiveError::FileChanged(path));
    }
    let digest = super::line::unhex(&entry.row_hashes_sha256)
        .and_then(|d| <[u8; 32]>::try_from(d).ok())
        .ok_or_else(|| ArchiveError::FileChanged(dir.join(super::write::MANIFEST)))?;
    let rows = i64::try_from(entry.rows).unwrap_or(i64::MAX);
    let over = chrono::DateTime::parse_from_rfc3339(&entry.published_to)
        .is_ok_and(|end| end <= chrono::Utc::now());
    if !over {
        return Err(ArchiveError::NotOver(
            entry.partition.clone(),
            entry.published_to.clone(),
        ));
    }
    let mut conn = db.acquire().await?;
    let mut log = Appender::begin(&mut conn, instance).await?;
    let tx = log.tx();
    sqlx::query(&format!("SET LOCAL ROLE {ERASER_ROLE}"))
        .execute(&mut *tx)
        .await
        .ctx("work as the eraser role (GRANT event_audit_eraser TO the login that prunes)")?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('event-audit erase'))")
        .execute(&mut *tx)
        .await
        .ctx("take the erasure lock")?;
    sqlx::query(&super::bound_sql(bound))
        .execute(&mut *tx)
        .await
        .ctx("bound the prune's statements")?;
    let (from, to) = (&entry.published_from, &entry.published_to);
    let (claims_removed, findings_removed) =
        partitions::hold_and_forget(tx, &entry.partition, from, to).await?;
    let record = Erasure {
        erasure: 0,
        at: String::new(),
        reason: reason.to_owned(),
        selector: format!("{}{}", super::write::PRUNED_SELECTOR, entry.partition),
        rows: Vec::new(),
        subjects: Vec::new(),
        published: Some(Published {
            from: Some(from.clone()),
            before: to.clone(),
            count: rows,
            row_hashes_sha256: entry.row_hashes_sha256.clone(),
        }),
        archive: Some(Archived {
            partition: entry.partition.clone(),
            file_sha256: entry.sha256.clone(),
            file: entry.file.clone(),
        }),
    };
    let (n, link_seq) = log.erasure_record(record).await?;
    let pruned = partitions::swap(log.tx(), &entry.partition, rows, &digest).await?;
    log.commit("commit the prune").await?;
    Ok(Pruned {
        partition: entry.partition.clone(),
        rows: pruned,
        erasure: n,
        link_seq,
        claims_removed,
        findings_removed,
    })
}
