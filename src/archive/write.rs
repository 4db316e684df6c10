//! `event-audit archive`: each dated partition of `audit.events` that ends by a time, streamed
//! with binary COPY into a JSON Lines file of the archive directory (every column by name, the
//! row's leaf index first), mode 0600 (the rows hold personal data), fsynced and renamed into
//! place; then the manifest (the files' and row hashes' digests, the newest signed checkpoint),
//! replaced last. A partition already pruned is left out: its archive is the one that counts.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::TryStreamExt;
use sha2::{Digest, Sha256};
use sqlx::Connection;

use super::line::write_line;
use super::manifest::{Manifest, PartitionFile, FORMAT};
use super::ArchiveError;
use crate::db::{Ctx, Db};
use crate::log::partitions;
use crate::row::copy::Tuples;
use crate::row::erasure::stamp;
use crate::row::hex;

pub(crate) use crate::log::partitions::{Partition, PRUNED_SELECTOR};

/// The manifest's name in an archive directory.
pub(crate) const MANIFEST: &str = "manifest.json";

/// What streaming a partition into its file counted.
struct Streamed {
    rows: u64,
    file_sha: Sha256,
    hashes_sha: Sha256,
    first: Option<u64>,
    last: Option<u64>,
}

/// Writes partition `p` to `dir/<name>.jsonl`; its manifest entry. A failed read closes its
/// connection rather than handing a half-read COPY back to the pool, and leaves no file.
pub(crate) async fn partition(
    db: &Db,
    p: &Partition,
    dir: &Path,
    bound: Duration,
) -> Result<PartitionFile, ArchiveError> {
    let file = format!("{}.jsonl", p.name);
    let path = dir.join(&file);
    let tmp = dir.join(format!(".{file}.{}.tmp", std::process::id()));
    let io = |e: std::io::Error| ArchiveError::Io(tmp.clone(), e);
    let _ = std::fs::remove_file(&tmp);
    let mut out = std::io::BufWriter::with_capacity(
        1 << 20,
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(io)?,
    );
    let mut conn = db.acquire().await?;
    let streamed = match stream_rows(&mut conn, p, bound, &mut out, &tmp).await {
        Ok(s) => s,
        Err(e) => {
            conn.close_on_drop();
            drop(out);
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    let f = out.into_inner().map_err(|e| io(e.into_error()))?;
    f.sync_all().map_err(io)?;
    std::fs::rename(&tmp, &path).map_err(io)?;
    Ok(PartitionFile {
        partition: p.name.clone(),
        published_from: stamp(p.from_ts),
        published_to: stamp(p.to_ts),
        rows: streamed.rows,
        file,
        sha256: hex(&streamed.file_sha.finalize()),
        row_hashes_sha256: hex(&streamed.hashes_sha.finalize()),
        first_leaf: streamed.first,
        last_leaf: streamed.last,
    })
}

/// Streams `p`'s rows (see [`partitions::copy_rows`]) as lines into `out`, in one bounded read-only
/// transaction.
async fn stream_rows(
    conn: &mut sqlx::PgConnection,
    p: &Partition,
    bound: Duration,
    out: &mut impl Write,
    tmp: &Path,
) -> Result<Streamed, ArchiveError> {
    let io = |e: std::io::Error| ArchiveError::Io(tmp.to_owned(), e);
    let mut tx = conn.begin().await.ctx("begin")?;
    sqlx::query(&super::bound_sql(bound))
        .execute(&mut *tx)
        .await
        .ctx("bound the archive's statements")?;
    let mut stream = partitions::copy_rows(&mut tx, p).await?;
    let mut s = Streamed {
        rows: 0,
        file_sha: Sha256::new(),
        hashes_sha: Sha256::new(),
        first: None,
        last: None,
    };
    let mut t = Tuples::new();
    let mut line = Vec::with_capacity(4096);
    while let Some(bytes) = stream.try_next().await.ctx("stream a partition's rows")? {
        t.push(&bytes);
        while let Some((leaf, row)) = t
            .next_row()
            .map_err(|e| ArchiveError::Copy(p.name.clone(), e))?
        {
            let leaf = u64::try_from(leaf).map_err(|_| ArchiveError::NoLeaf {
                partition: p.name.clone(),
                stream: row.stream.to_owned(),
                stream_seq: row.stream_seq,
            })?;
            line.clear();
            write_line(&row, leaf, &mut line);
            s.file_sha.update(&line);
            s.hashes_sha.update(row.row_hash);
            out.write_all(&line).map_err(io)?;
            s.rows += 1;
            s.first = Some(s.first.map_or(leaf, |f| f.min(leaf)));
            s.last = Some(s.last.map_or(leaf, |l| l.max(leaf)));
        }
    }
    t.finish()
        .map_err(|e| ArchiveError::Copy(p.name.clone(), e))?;
    drop(stream);
    tx.commit().await.ctx("end the archive's read")?;
    Ok(s)
}

/// The manifest of `dir`, or a new one.
pub(crate) fn read_manifest(dir: &Path) -> Result<Option<Manifest>, ArchiveError> {
    let path = dir.join(MANIFEST);
    match std::fs::read(&path) {
        Ok(b) => Manifest::parse(&b)
            .map(Some)
            .map_err(|e| ArchiveError::Manifest(path, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ArchiveError::Io(path, e)),
    }
}

/// What one archive run wrote.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Written {
    pub(crate) dir: PathBuf,
    /// The partitions written in this run.
    pub(crate) partitions: Vec<PartitionFile>,
    /// Partitions that end by the time but were pruned already (their archive stands).
    pub(crate) already_pruned: Vec<String>,
}

/// Archives every unpruned dated partition that ends by `before` and holds rows into `dir`,
/// then replaces the manifest (entries for other partitions kept). With nothing to archive,
/// touches nothing: no directory made, no manifest written or rewritten.
pub(crate) async fn archive(
    db: &Db,
    before: DateTime<Utc>,
    dir: &Path,
    bound: Duration,
) -> Result<(Written, Manifest), ArchiveError> {
    let now = Utc::now();
    if before > now {
        return Err(ArchiveError::FutureBound(stamp(before), stamp(now)));
    }
    let found = partitions::before(db, before).await?;
    if found.iter().any(|p| p.has_rows && !p.pruned) {
        std::fs::create_dir_all(dir).map_err(|e| ArchiveError::Io(dir.to_owned(), e))?;
    }
    let mut manifest = read_manifest(dir)?.unwrap_or_else(|| Manifest {
        format: FORMAT.to_owned(),
        origin: None,
        created_at: stamp(Utc::now()),
        checkpoint: None,
        partitions: Vec::new(),
    });
    let mut written = Written {
        dir: dir.to_owned(),
        partitions: Vec::new(),
        already_pruned: Vec::new(),
    };
    for p in found {
        if !p.has_rows {
            continue;
        }
        if p.pruned {
            written.already_pruned.push(p.name);
            continue;
        }
        let entry = partition(db, &p, dir, bound).await?;
        manifest
            .partitions
            .retain(|e| e.partition != entry.partition);
        manifest.partitions.push(entry.clone());
        written.partitions.push(entry);
    }
    if written.partitions.is_empty() {
        return Ok((written, manifest));
    }
    manifest
        .partitions
        .sort_by(|a, b| a.published_from.cmp(&b.published_from));
    manifest.checkpoint = partitions::newest_published(db).await?;
    manifest.origin = manifest
        .checkpoint
        .as_deref()
        .and_then(|n| n.lines().next())
        .map(str::to_owned);
    let path = dir.join(MANIFEST);
    crate::files::replace(&path, manifest.to_json_pretty().as_bytes(), 0o600)
        .map_err(|e| ArchiveError::Io(path, e))?;
    Ok((written, manifest))
}
