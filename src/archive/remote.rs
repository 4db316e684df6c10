//! Archives in an object store (`archive --out s3://bucket/prefix`, `verify --archive` and
//! `prove --archive` of the same): the archive is written as ever into a private staging
//! directory (mode 0700, removed after), seeded with the bucket's manifest so that its other
//! partitions' entries are kept; then each new partition file is put with a create (a file
//! already there with other bytes is refused, never replaced), and the manifest last. With
//! `retention.archive_lock_for`, each object is put under S3 Object Lock in compliance mode
//! until then: a store that ignores the lock is refused ([`crate::blobs::BlobError::Unsupported`]),
//! never taken for one. A prune runs only after the upload. Readers fetch the manifest (at most
//! [`MAX_MANIFEST`] bytes) and each file it names (at most [`MAX_OBJECT`]) into a staging
//! directory and read it there, with the same checks as a directory's.

use std::path::Path;

use bytes::Bytes;
use chrono::{DateTime, Utc};

use super::read::MAX_MANIFEST;
use super::write::{Written, MANIFEST};
use super::ArchiveError;
use crate::blobs::{BlobError, Mode, Put, Store};

/// The largest partition file put or fetched: one PUT holds it in memory (the S3 driver does
/// not yet stream multipart uploads).
pub(crate) const MAX_OBJECT: u64 = 1 << 30;

/// The most partition files one fetch reads (a monthly partition each: centuries of them).
pub(crate) const MAX_FILES: usize = 10_000;

/// An archive's bucket, and the Object Lock its objects are put under.
pub(crate) struct Remote {
    pub store: Store,
    pub lock_until: Option<DateTime<Utc>>,
}

impl Remote {
    /// The archive's bucket when `out` is `s3://bucket/prefix` (with `[object_store]`), its
    /// objects locked for `lock_for` from now when set; `None` for a directory.
    pub(crate) fn of(
        out: &Path,
        settings: &crate::config::ObjectStoreSettings,
        lock_for: Option<std::time::Duration>,
    ) -> Result<Option<Remote>, ArchiveError> {
        let Some(s3 @ crate::blobs::Location::S3 { .. }) = out
            .to_str()
            .and_then(|s| crate::blobs::Location::parse(s).ok())
        else {
            return Ok(None);
        };
        let store = Store::open(&s3, settings).map_err(blob)?;
        let lock_until = lock_for.map(|d| {
            chrono::Duration::from_std(d)
                .ok()
                .and_then(|d| Utc::now().checked_add_signed(d))
                .unwrap_or(DateTime::<Utc>::MAX_UTC)
        });
        Ok(Some(Remote { store, lock_until }))
    }
}

fn blob(e: BlobError) -> ArchiveError {
    ArchiveError::Store(Box::new(e))
}

/// Writes `bytes` to `dir/name`, readable by its owner alone.
fn write_private(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), ArchiveError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(name);
    let io = |e| ArchiveError::Io(path.clone(), e);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(io)?;
    f.write_all(bytes).map_err(io)
}

/// A private staging directory (mode 0700, removed when the guard drops) for an archive that
/// goes to or comes from a bucket.
fn staging() -> Result<tempfile::TempDir, ArchiveError> {
    tempfile::Builder::new()
        .prefix(".event-audit-archive")
        .tempdir()
        .map_err(|e| ArchiveError::Io(std::env::temp_dir(), e))
}

/// A staging directory for an archive to be written to `store`, seeded with the bucket's
/// manifest when it has one (so that the new manifest lists what the bucket holds already).
pub(crate) async fn stage(store: &Store) -> Result<tempfile::TempDir, ArchiveError> {
    let dir = staging()?;
    if let Some(m) = store.get(MANIFEST, MAX_MANIFEST).await.map_err(blob)? {
        write_private(dir.path(), MANIFEST, &m)?;
    }
    Ok(dir)
}

/// Proves the store ([`Store::prove`]), then puts the partition files `written` wrote into
/// `staging`, then the manifest.
pub(crate) async fn upload(
    remote: &Remote,
    staging: &Path,
    written: &Written,
) -> Result<(), ArchiveError> {
    if written.partitions.is_empty() {
        return Ok(());
    }
    remote.store.prove("archive").await.map_err(blob)?;
    let put = |mode| Put {
        mode,
        cache_control: None,
        content_type: Some("application/octet-stream"),
        lock_until: remote.lock_until,
    };
    for p in &written.partitions {
        let bytes = read_staged(staging, &p.file)?;
        let store = &remote.store;
        store
            .put(&p.file, bytes, &put(Mode::Create))
            .await
            .map_err(blob)?;
    }
    let manifest = read_staged(staging, MANIFEST)?;
    remote
        .store
        .put(MANIFEST, manifest, &put(Mode::Replace))
        .await
        .map_err(blob)?;
    Ok(())
}

/// A staged file, at most [`MAX_OBJECT`] bytes.
fn read_staged(staging: &Path, name: &str) -> Result<Bytes, ArchiveError> {
    let path = staging.join(name);
    crate::files::bounded::read(&path, MAX_OBJECT, "archive file")
        .map(Bytes::from)
        .map_err(|e| ArchiveError::Io(path, e))
}

/// Fetches the archive in `store` into `staging`: its manifest and every file it names, each
/// bounded; the directory is then read as any archive's.
pub(crate) async fn fetch(store: &Store, staging: &Path) -> Result<(), ArchiveError> {
    let Some(bytes) = store.get(MANIFEST, MAX_MANIFEST).await.map_err(blob)? else {
        return Err(ArchiveError::Io(
            Path::new(store.place()).join(MANIFEST),
            std::io::Error::new(std::io::ErrorKind::NotFound, "no archive manifest here"),
        ));
    };
    let manifest = super::manifest::Manifest::parse(&bytes)
        .map_err(|e| ArchiveError::Manifest(Path::new(store.place()).join(MANIFEST), e))?;
    if manifest.partitions.len() > MAX_FILES {
        return Err(ArchiveError::Io(
            Path::new(store.place()).join(MANIFEST),
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("names more than {MAX_FILES} files: refused, nothing fetched"),
            ),
        ));
    }
    write_private(staging, MANIFEST, &bytes)?;
    for p in &manifest.partitions {
        // A name that is not one plain file name is left for the directory's reader to refuse.
        if p.file.contains('/') || p.file.starts_with('.') {
            continue;
        }
        if let Some(b) = store.get(&p.file, MAX_OBJECT).await.map_err(blob)? {
            write_private(staging, &p.file, &b)?;
        }
    }
    Ok(())
}

/// Where an archive given as `path` can be read as a directory: the path itself, or, for an
/// `s3://` location, a private staging directory its archive was fetched into (kept while the
/// returned guard lives).
pub(crate) async fn at(
    path: &Path,
    settings: &crate::config::ObjectStoreSettings,
) -> Result<(std::path::PathBuf, Option<tempfile::TempDir>), ArchiveError> {
    let Some(s3 @ crate::blobs::Location::S3 { .. }) = path
        .to_str()
        .and_then(|s| crate::blobs::Location::parse(s).ok())
    else {
        return Ok((path.to_owned(), None));
    };
    let store = Store::open(&s3, settings).map_err(blob)?;
    let staging = staging()?;
    fetch(&store, staging.path()).await?;
    Ok((staging.path().to_owned(), Some(staging)))
}
