//! The directory driver: each key a file under the root. A put writes a temporary file beside
//! its place and fsyncs it, then renames it into place (`Replace`) or hard-links it there
//! (`Create`: the link fails when the name exists, so a create never replaces a file, even when
//! two writers race; the same bytes already there are `Same`). A name therefore never points at
//! bytes that are not all on disk; [`DirStore::sync`] syncs the file system once, making every
//! name written before it durable (cheaper than an fsync of each directory).

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use super::{BlobError, Head, Mode, Put, Wrote};

/// Temporary files of this process, numbered so that concurrent puts never share one.
static TEMP: AtomicU64 = AtomicU64::new(0);

/// A store in a directory.
#[derive(Debug, Clone)]
pub struct DirStore {
    root: PathBuf,
    place: String,
    /// The mode of the files it creates (0644 for a log served by any web server, 0600 for
    /// archives).
    mode: u32,
    /// Whether each put fsyncs its file before naming it (the default); without, only
    /// [`DirStore::sync`] makes what was put durable (a log's tiles: one sync of the file
    /// system before the checkpoint, as the tile writer always did).
    fsync_each: bool,
}

impl DirStore {
    pub fn new(root: PathBuf, mode: u32) -> DirStore {
        DirStore {
            place: format!("directory {}", root.display()),
            root,
            mode,
            fsync_each: true,
        }
    }

    /// The same, its puts not fsynced one by one: durable only once [`DirStore::sync`] returns.
    pub fn without_fsync_each(self) -> DirStore {
        DirStore {
            fsync_each: false,
            ..self
        }
    }

    pub fn with_mode(self, mode: u32) -> DirStore {
        DirStore { mode, ..self }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn place(&self) -> &str {
        &self.place
    }

    fn io(&self, op: &'static str, key: &str, source: std::io::Error) -> BlobError {
        BlobError::Io {
            place: self.place.clone(),
            op,
            key: key.to_owned(),
            source,
        }
    }

    fn too_large(&self, key: &str, max: u64) -> BlobError {
        BlobError::TooLarge {
            place: self.place.clone(),
            key: key.to_owned(),
            max,
        }
    }

    pub async fn get(&self, key: &str, max: u64) -> Result<Option<Bytes>, BlobError> {
        let (me, key) = (self.clone(), key.to_owned());
        blocking(move || me.get_now(&key, max)).await
    }

    fn get_now(&self, key: &str, max: u64) -> Result<Option<Bytes>, BlobError> {
        let f = match std::fs::File::open(self.root.join(key)) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.io("get", key, e)),
        };
        // A file that says it is larger is refused before any byte is read.
        if f.metadata().is_ok_and(|m| m.len() > max) {
            return Err(self.too_large(key, max));
        }
        let mut bytes = Vec::new();
        f.take(max.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| self.io("get", key, e))?;
        if bytes.len() as u64 > max {
            return Err(self.too_large(key, max));
        }
        Ok(Some(Bytes::from(bytes)))
    }

    pub async fn head(&self, key: &str) -> Result<Option<Head>, BlobError> {
        let (me, key) = (self.clone(), key.to_owned());
        blocking(move || match std::fs::metadata(me.root.join(&key)) {
            Ok(m) if m.is_file() => Ok(Some(Head {
                len: m.len(),
                cache_control: None,
                lock_until: None,
            })),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(me.io("head", &key, e)),
        })
        .await
    }

    pub async fn put(&self, key: &str, bytes: Bytes, how: &Put<'_>) -> Result<Wrote, BlobError> {
        if how.lock_until.is_some() {
            return Err(BlobError::Unsupported {
                place: self.place.clone(),
                what: "a retention lock",
                why: "a directory cannot keep a file from being deleted; use an S3 bucket with Object Lock".into(),
            });
        }
        let (me, key, mode) = (self.clone(), key.to_owned(), how.mode);
        blocking(move || me.put_now(&key, &bytes, mode)).await
    }

    fn put_now(&self, key: &str, bytes: &[u8], mode: Mode) -> Result<Wrote, BlobError> {
        let path = self.root.join(key);
        let tmp = self
            .temp_beside(&path, bytes)
            .map_err(|e| self.io("put", key, e))?;
        let placed = match mode {
            Mode::Replace => std::fs::rename(&tmp, &path).map(|()| Wrote::New),
            Mode::Create => std::fs::hard_link(&tmp, &path).map(|()| Wrote::New),
        };
        let _ = std::fs::remove_file(&tmp);
        match placed {
            Ok(w) => Ok(w),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                // What is there: the same bytes, or refused (read no more than ours plus one).
                match self.get_now(key, bytes.len() as u64) {
                    Ok(Some(old)) if old == bytes => Ok(Wrote::Same),
                    Ok(_) | Err(BlobError::TooLarge { .. }) => Err(BlobError::Conflict {
                        place: self.place.clone(),
                        key: key.to_owned(),
                    }),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(self.io("put", key, e)),
        }
    }

    /// A temporary file beside `path` holding `bytes`, fsynced unless the store syncs at once.
    fn temp_beside(&self, path: &Path, bytes: &[u8]) -> std::io::Result<PathBuf> {
        let parent = path.parent().unwrap_or(&self.root);
        std::fs::create_dir_all(parent)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let n = TEMP.fetch_add(1, Ordering::Relaxed);
        let tmp = parent.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
        let written = (|| {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(self.mode)
                .open(&tmp)?;
            f.write_all(bytes)?;
            if self.fsync_each {
                f.sync_all()?;
            }
            Ok(())
        })();
        match written {
            Ok(()) => Ok(tmp),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    pub async fn delete(&self, key: &str) -> Result<(), BlobError> {
        let (me, key) = (self.clone(), key.to_owned());
        blocking(move || match std::fs::remove_file(me.root.join(&key)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(me.io("delete", &key, e)),
        })
        .await
    }

    /// Syncs the file system the directory is on (every name written before, in one call).
    pub async fn sync(&self) -> Result<(), BlobError> {
        let me = self.clone();
        blocking(move || {
            use std::os::fd::AsRawFd;
            let dir = match std::fs::File::open(&me.root) {
                Ok(d) => d,
                // Nothing was ever put here: nothing to make durable.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(me.io("sync", ".", e)),
            };
            // SAFETY: `syncfs` reads the descriptor, which `dir` keeps open for the call.
            if unsafe { libc::syncfs(dir.as_raw_fd()) } != 0 {
                return Err(me.io("sync", ".", std::io::Error::last_os_error()));
            }
            Ok(())
        })
        .await
    }
}

/// Runs file work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, BlobError> + Send + 'static,
) -> Result<T, BlobError> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(BlobError::Setup {
            place: "directory store".into(),
            why: format!("the file task stopped: {e}"),
        })
    })
}
