//! Where the log's tiles and its archives are kept: one narrow interface (as Sunlight's
//! `Backend` and Tessera's storage drivers) over a directory ([`dir`]) or an S3-compatible
//! object store ([`s3`], signed with `sigv4`), chosen by a location ([`url`]: a path or
//! `s3://bucket/prefix`). Every operation is bounded: a read by the bytes the caller allows, a
//! request by `object_store.request_timeout`. A create (`Mode::Create`) never replaces other
//! bytes: the same bytes already there are [`Wrote::Same`], other bytes [`BlobError::Conflict`]
//! (the directory links a fsynced temporary file into place; S3 puts with `If-None-Match: *`).
//! A store is proved before its first write ([`probe`]): one that takes a second create is
//! refused, or, with `object_store.conditional_writes = "read-first"`, each create reads first.
//! What was put is durable once [`Store::sync`] returns (the directory syncs its file system;
//! an object store's put is durable when it answers), so a writer puts tiles, syncs, then puts
//! the checkpoint.

pub mod dir;
pub mod probe;
pub mod s3;
mod sigv4;
pub mod url;

use std::time::Duration;

use bytes::Bytes;
use chrono::{DateTime, Utc};

pub use probe::Proof;
pub use url::Location;

/// How a put treats an object already at its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Only if nothing is there: the same bytes already there are fine, other bytes refused.
    #[default]
    Create,
    /// Whatever is there is replaced (a checkpoint, a partial tile, a manifest).
    Replace,
}

/// How to put one object.
#[derive(Debug, Clone, Copy, Default)]
pub struct Put<'a> {
    pub mode: Mode,
    /// `Cache-Control` stored with the object (as `/log/` sets it); a directory keeps none
    /// (whoever serves it sets its own).
    pub cache_control: Option<&'a str>,
    /// `Content-Type` stored with the object.
    pub content_type: Option<&'a str>,
    /// S3 Object Lock, compliance mode, until then: nobody can delete or overwrite this
    /// version before. Refused by a directory and by a bucket without Object Lock.
    pub lock_until: Option<DateTime<Utc>>,
}

/// What a put did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrote {
    New,
    /// A create found the same bytes already there.
    Same,
}

/// What the store keeps about one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub len: u64,
    pub cache_control: Option<String>,
    /// The Object Lock retention date, when the object has one.
    pub lock_until: Option<DateTime<Utc>>,
}

/// Why an operation on a store failed. `place` is the store (`s3://bucket/prefix at
/// <endpoint>` or the directory), never with a credential.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("{place}: `{key}` is not a key this store accepts ({why})")]
    Key {
        place: String,
        key: String,
        why: &'static str,
    },
    #[error("{place}: {key} already holds other bytes; a create never replaces them (another writer or another log at this place?): kept as it is")]
    Conflict { place: String, key: String },
    #[error("{place}: {key} is larger than {max} bytes, more than it may hold: refused")]
    TooLarge {
        place: String,
        key: String,
        max: u64,
    },
    #[error("{place}: {op} {key} timed out after {after:?} (object_store.request_timeout): check that the store is reachable, or allow more time")]
    Timeout {
        place: String,
        op: &'static str,
        key: String,
        after: Duration,
    },
    #[error("{place}: {key} is locked (Object Lock retention): it cannot be deleted or replaced before its retention date")]
    Locked { place: String, key: String },
    #[error("{place}: {op} {key}: the store refused the request's credentials ({code}): check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or object_store.access_key_id_file and secret_access_key_file), their access to the bucket, and object_store.region")]
    Denied {
        place: String,
        op: &'static str,
        key: String,
        code: String,
    },
    #[error("{place}: {what} is not supported here ({why})")]
    Unsupported {
        place: String,
        what: &'static str,
        why: String,
    },
    #[error("{place}: {op} {key}: HTTP {status} {code}: {message}")]
    Http {
        place: String,
        op: &'static str,
        key: String,
        status: u16,
        code: String,
        message: String,
    },
    #[error("{place}: {op} {key}: {why}; check object_store.endpoint and that the store is up")]
    Unreachable {
        place: String,
        op: &'static str,
        key: String,
        why: String,
    },
    #[error("{place}: {op} {key}: {source}")]
    Io {
        place: String,
        op: &'static str,
        key: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{place}: {why}")]
    Setup { place: String, why: String },
    /// The store's certificate (or the handshake) refused: one line, never retried.
    #[error("{line}")]
    Tls { line: String },
}

/// A store of blobs under keys (`tile/0/000`, `checkpoint`, `2026-01.jsonl`).
#[derive(Debug)]
pub enum Store {
    Dir(dir::DirStore),
    S3(Box<s3::S3Store>),
}

impl Store {
    /// The store at `location`: a directory, or an S3 bucket with `settings`' endpoint, region
    /// and credentials (from their files, else `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and
    /// `AWS_SESSION_TOKEN`).
    pub fn open(
        location: &Location,
        settings: &crate::config::ObjectStoreSettings,
    ) -> Result<Store, BlobError> {
        match location {
            Location::Dir(root) => Ok(Store::Dir(dir::DirStore::new(root.clone(), 0o644))),
            Location::S3 { bucket, prefix } => {
                let creds = s3::Credentials::load(settings).map_err(|why| BlobError::Setup {
                    place: location.to_string(),
                    why,
                })?;
                let read_first =
                    settings.conditional_writes == crate::config::ConditionalWrites::ReadFirst;
                s3::S3Store::new(bucket, prefix, settings, creds)
                    .map(|s| Store::S3(Box::new(s.reading_first(read_first))))
            }
        }
    }

    /// The same store, its files readable by their owner alone when it is a directory (an
    /// object store's readers are its bucket policy's to decide).
    pub fn private(self) -> Store {
        match self {
            Store::Dir(d) => Store::Dir(d.with_mode(0o600)),
            other => other,
        }
    }

    /// The store, for messages (never a credential).
    pub fn place(&self) -> &str {
        match self {
            Store::Dir(d) => d.place(),
            Store::S3(s) => s.place(),
        }
    }

    /// The object at `key`, at most `max_bytes` long (longer is [`BlobError::TooLarge`], read
    /// no further); `None` when there is none.
    pub async fn get(&self, key: &str, max_bytes: u64) -> Result<Option<Bytes>, BlobError> {
        self.check(key)?;
        match self {
            Store::Dir(d) => d.get(key, max_bytes).await,
            Store::S3(s) => s.get(key, max_bytes).await,
        }
    }

    /// What the store keeps about the object at `key`; `None` when there is none.
    pub async fn head(&self, key: &str) -> Result<Option<Head>, BlobError> {
        self.check(key)?;
        match self {
            Store::Dir(d) => d.head(key).await,
            Store::S3(s) => s.head(key).await,
        }
    }

    /// Puts `bytes` at `key` as `how` says.
    pub async fn put(&self, key: &str, bytes: Bytes, how: &Put<'_>) -> Result<Wrote, BlobError> {
        self.check(key)?;
        match self {
            Store::Dir(d) => d.put(key, bytes, how).await,
            Store::S3(s) => s.put(key, bytes, how).await,
        }
    }

    /// Removes the object at `key` (its current version, in a bucket that keeps versions);
    /// nothing there is no error. A locked one is [`BlobError::Locked`].
    pub async fn delete(&self, key: &str) -> Result<(), BlobError> {
        self.check(key)?;
        match self {
            Store::Dir(d) => d.delete(key).await,
            Store::S3(s) => s.delete(key).await,
        }
    }

    /// Makes every put before it durable: the barrier between a log's tiles and its checkpoint.
    pub async fn sync(&self) -> Result<(), BlobError> {
        match self {
            Store::Dir(d) => d.sync().await,
            Store::S3(_) => Ok(()),
        }
    }

    fn check(&self, key: &str) -> Result<(), BlobError> {
        key_problem(key).map_or(Ok(()), |why| {
            Err(BlobError::Key {
                place: self.place().to_owned(),
                key: key.chars().take(200).collect(),
                why,
            })
        })
    }
}

/// Why `key` cannot name an object: keys are relative paths of plain segments, so that no key
/// reaches outside a directory or a prefix.
fn key_problem(key: &str) -> Option<&'static str> {
    if key.is_empty() || key.len() > 1024 {
        return Some("1 to 1024 bytes");
    }
    if key.chars().any(|c| c.is_control() || c == '\\') {
        return Some("no control characters or backslashes");
    }
    if key
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Some("segments between slashes, none empty, `.` or `..`");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::key_problem;

    #[test]
    fn keys_stay_inside_their_store() {
        for ok in [
            "checkpoint",
            "tile/0/x001/234.p/5",
            "tile/entries/000",
            "a b.jsonl",
        ] {
            assert_eq!(key_problem(ok), None, "{ok}");
        }
        for bad in [
            "", "/abs", "a//b", "../x", "a/./b", "a/..", "x\0", "a\\b", "end/",
        ] {
            assert!(key_problem(bad).is_some(), "{bad:?}");
        }
        assert!(key_problem(&"k".repeat(1025)).is_some());
    }
}
