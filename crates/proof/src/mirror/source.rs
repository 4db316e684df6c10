//! Where a log is read from: its C2SP tlog-tiles read path over HTTP(S) (the log's prefix, e.g.
//! the daemon's `http://host:port/log`), or a directory holding the same files (a path or a
//! `file://` URL: a copied log, or a mirror's copy). Every read is bounded: one deadline per
//! request (connecting and the whole body included; a body that trickles past it is a timeout,
//! named as one), at most the bytes a checkpoint, a hash tile or a bundle of row hashes can
//! hold, redirects followed only within the log's origin (scheme, host and port; at most 5),
//! and in a directory only regular files inside it (no symlink out, no device or FIFO). A
//! partial tile the log no longer serves is read from the full tile at its place (tlog-tiles
//! lets a log delete partial tiles once the full one is there). A mirror's copy is found under
//! its `<hex SHA-256 of the origin>/` folder when the prefix holds no checkpoint itself. Where
//! the settings of an object store are at hand (a restore), an `s3://bucket/prefix` is read with
//! the store's signed client, each object bounded the same way.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::tlog::merkle::Hash;
use crate::tlog::note::MAX_NOTE;
use crate::tlog::tile::{self, Kind, TileError, TileId};

/// How long connecting may take at most, within the request's timeout.
const MAX_CONNECT: Duration = Duration::from_secs(10);

/// The most redirects a request follows (each within the log's origin).
const MAX_REDIRECTS: usize = 5;

/// An entry of an event-audit log: a row hash.
const ENTRY: usize = std::mem::size_of::<Hash>();

/// Why a file of the log could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("{url}: {why}; check that the log is serving and the address is right")]
    Unreachable { url: String, why: String },
    #[error("{url}: timed out after {secs} s reading the {what} (the log answers too slowly or not at all; --timeout sets the limit)")]
    TimedOut {
        url: String,
        secs: f64,
        what: &'static str,
    },
    #[error("{url}: not found")]
    NotFound { url: String },
    #[error("{url}: not found, nor a mirror's copy of log {origin} at {copy}; check --log-url")]
    NoCheckpoint {
        url: String,
        origin: String,
        copy: String,
    },
    #[error("{url}: HTTP status {status}")]
    Status { url: String, status: u16 },
    #[error("{url}: {why}")]
    Redirect { url: String, why: String },
    #[error("{url}: more than the {limit} bytes a {what} may be: refused")]
    TooLarge {
        url: String,
        limit: u64,
        what: &'static str,
    },
    #[error("{url}: {why}")]
    Refused { url: String, why: String },
    #[error("{url}: entry {entry} is {len} bytes, not a row hash ({ENTRY} bytes): not a bundle of an event-audit log")]
    Entry {
        url: String,
        entry: usize,
        len: usize,
    },
    /// The tile error names the tile's path, under `base`.
    #[error("{base}{source}")]
    Tile {
        base: String,
        #[source]
        source: TileError,
    },
}

impl FetchError {
    /// Whether the log could not be reached at all (rather than serving something wrong).
    pub fn is_unreachable(&self) -> bool {
        match self {
            FetchError::Unreachable { .. } | FetchError::TimedOut { .. } => true,
            FetchError::Status { status, .. } => *status >= 500,
            _ => false,
        }
    }
}

/// Why a redirect was not followed.
#[derive(Debug, thiserror::Error)]
enum Redirected {
    #[error("redirected to {0}, another origin: the mirror follows redirects only within the log's own scheme, host and port")]
    Elsewhere(String),
    #[error("more than {MAX_REDIRECTS} redirects (a loop?)")]
    TooMany,
}

/// A log's read path.
#[derive(Debug, Clone)]
pub enum Source {
    Http {
        /// Ends with `/`, so that a tile's path joins under it.
        base: url::Url,
        client: reqwest::Client,
        timeout: Duration,
    },
    Dir(PathBuf),
    /// Objects under `prefix` (empty, or ending with `/`) of a store: a bucket the log's tiles
    /// are written to (`run --tiles-url`).
    Store {
        store: Arc<crate::blobs::Store>,
        /// The location as given (`s3://bucket/prefix`), for messages.
        at: String,
        prefix: String,
    },
}

pub use crate::tiles::origin_dir;

impl Source {
    /// `http(s)://...` (the log's prefix), `file://...` or a directory path; each request may
    /// take `timeout` at most.
    pub fn parse(s: &str, timeout: Duration, tls: &crate::tls::Peer) -> Result<Source, String> {
        if s.starts_with("http://") || s.starts_with("https://") {
            let mut base = url::Url::parse(s)
                .map_err(|e| format!("{}: not a URL ({e})", crate::config::redact_url(s)))?;
            if !base.path().ends_with('/') {
                base.set_path(&format!("{}/", base.path()));
            }
            let client = crate::tls::https_client(tls)
                .map_err(|e| e.to_string())?
                .timeout(timeout)
                .connect_timeout(timeout.min(MAX_CONNECT))
                .redirect(same_origin())
                .build()
                .map_err(|e| format!("building the HTTP client: {}", e.without_url()))?;
            return Ok(Source::Http {
                base,
                client,
                timeout,
            });
        }
        if s.starts_with("file://") {
            let u = url::Url::parse(s).map_err(|e| format!("{s}: not a file URL ({e})"))?;
            let path = u
                .to_file_path()
                .map_err(|_| format!("{s}: not a local file URL (file:///path)"))?;
            return Ok(Source::Dir(path));
        }
        if s.contains("://") {
            return Err(format!(
                "{}: the log URL must be http://, https://, file:// or a directory",
                crate::config::redact_url(s)
            ));
        }
        Ok(Source::Dir(PathBuf::from(s)))
    }

    /// The TLS of a log read over HTTPS (`witness.tls_*`: the witnesses' and logs' CA and
    /// client certificate).
    pub fn tls_of(s: &crate::config::WitnessSettings) -> crate::tls::Peer {
        crate::tls::Peer::new(
            "the log",
            "witness",
            s.tls_ca_file.as_ref(),
            s.tls_cert_file.as_ref(),
            s.tls_key_file.as_ref(),
        )
    }

    /// As [`Source::parse`], and `s3://bucket/prefix` too, with the object store `settings`
    /// (their request timeout bounds each read there).
    pub fn open(
        s: &str,
        timeout: Duration,
        settings: &crate::config::ObjectStoreSettings,
        tls: &crate::tls::Peer,
    ) -> Result<Source, String> {
        if !s.starts_with("s3://") {
            return Source::parse(s, timeout, tls);
        }
        let at = crate::blobs::Location::parse(s)?;
        let store = crate::blobs::Store::open(&at, settings).map_err(|e| e.to_string())?;
        Ok(Source::Store {
            store: Arc::new(store),
            at: s.trim_end_matches('/').to_owned(),
            prefix: String::new(),
        })
    }

    /// The source under `sub` (a mirror's copy of one origin).
    pub fn child(&self, sub: &str) -> Source {
        match self {
            Source::Http {
                base,
                client,
                timeout,
            } => Source::Http {
                base: base
                    .join(&format!("{sub}/"))
                    .unwrap_or_else(|_| base.clone()),
                client: client.clone(),
                timeout: *timeout,
            },
            Source::Dir(d) => Source::Dir(d.join(sub)),
            Source::Store { store, at, prefix } => Source::Store {
                store: store.clone(),
                at: at.clone(),
                prefix: format!("{prefix}{sub}/"),
            },
        }
    }

    /// Where `rel` is read from, as shown (credentials and query redacted).
    pub fn shown(&self, rel: &str) -> String {
        match self {
            Source::Http { base, .. } => match base.join(rel) {
                Ok(u) => crate::config::redact_url(u.as_str()),
                Err(_) => crate::config::redact_url(base.as_str()),
            },
            Source::Dir(d) => d.join(rel).display().to_string(),
            Source::Store { at, prefix, .. } => format!("{at}/{prefix}{rel}"),
        }
    }

    /// The log's checkpoint, as served.
    pub async fn checkpoint(&self) -> Result<String, FetchError> {
        let bytes = self.get("checkpoint", MAX_NOTE, "checkpoint").await?;
        String::from_utf8(bytes).map_err(|_| FetchError::Refused {
            url: self.shown("checkpoint"),
            why: "not UTF-8 text, not a checkpoint".into(),
        })
    }

    /// The checkpoint of log `origin`: at this prefix, or, when it holds none, in a mirror's
    /// copy of that log under it (`<hex SHA-256 of origin>/`, C2SP tlog-mirror's layout).
    /// Returns where it was found (where the log's tiles are) and the note, fetched once.
    pub async fn locate(&self, origin: &str) -> Result<(Source, String), FetchError> {
        match self.checkpoint().await {
            Ok(note) => Ok((self.clone(), note)),
            Err(FetchError::NotFound { url }) => {
                let copy = self.child(&origin_dir(origin));
                match copy.checkpoint().await {
                    Ok(note) => Ok((copy, note)),
                    Err(FetchError::NotFound { url: at }) => Err(FetchError::NoCheckpoint {
                        url,
                        origin: origin.to_owned(),
                        copy: at,
                    }),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// A tile's or bundle's bytes, checked against its width (a bundle parsed strictly, each
    /// entry a row hash); a partial one that is not found is cut from the full tile at its
    /// place.
    pub async fn tile(&self, id: TileId) -> Result<Vec<u8>, FetchError> {
        match self.tile_exact(id).await {
            Err(FetchError::NotFound { .. }) if !id.is_full() => {
                let full = self.tile_exact(id.full()).await?;
                self.prefix(id, &full)
            }
            other => other,
        }
    }

    /// The tile at exactly `id`'s path, checked against its width.
    async fn tile_exact(&self, id: TileId) -> Result<Vec<u8>, FetchError> {
        let (per, what) = match id.kind {
            Kind::Hashes(_) => (32, "hash tile"),
            Kind::Entries => (2 + ENTRY as u64, "bundle of row hashes"),
        };
        let rel = id.path();
        let bytes = self.get(&rel, u64::from(id.width) * per, what).await?;
        let tile_error = |source| FetchError::Tile {
            base: self.shown(""),
            source,
        };
        match id.kind {
            Kind::Hashes(_) => {
                tile::parse_hashes(&id, &bytes).map_err(tile_error)?;
            }
            Kind::Entries => {
                let entries = tile::parse_bundle(&id, &bytes).map_err(tile_error)?;
                if let Some((entry, e)) = entries.iter().enumerate().find(|(_, e)| e.len() != ENTRY)
                {
                    return Err(FetchError::Entry {
                        url: self.shown(&rel),
                        entry,
                        len: e.len(),
                    });
                }
            }
        }
        Ok(bytes)
    }

    /// The first `id.width` hashes or entries of the full tile at `id`'s place.
    fn prefix(&self, id: TileId, full: &[u8]) -> Result<Vec<u8>, FetchError> {
        let shown = |source| FetchError::Tile {
            base: self.shown(""),
            source,
        };
        match id.kind {
            Kind::Hashes(_) => Ok(full[..usize::from(id.width) * 32].to_vec()),
            Kind::Entries => {
                let entries = tile::parse_bundle(&id.full(), full).map_err(shown)?;
                let mut out = Vec::new();
                for e in entries.iter().take(usize::from(id.width)) {
                    tile::push_entry(&mut out, e).map_err(shown)?;
                }
                Ok(out)
            }
        }
    }

    /// The file `rel` beside the log's tiles (the account index's), at most `limit` bytes;
    /// `None` when it is not there.
    pub async fn file(
        &self,
        rel: &str,
        limit: u64,
        what: &'static str,
    ) -> Result<Option<Vec<u8>>, FetchError> {
        match self.get(rel, limit, what).await {
            Ok(b) => Ok(Some(b)),
            Err(FetchError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The bytes at `rel`, at most `limit` of them.
    async fn get(&self, rel: &str, limit: u64, what: &'static str) -> Result<Vec<u8>, FetchError> {
        let url = self.shown(rel);
        match self {
            Source::Dir(d) => {
                let d = d.clone();
                let rel = PathBuf::from(rel);
                let read = tokio::task::spawn_blocking(move || {
                    crate::files::bounded::read_beneath(&d, &rel, limit, what)
                })
                .await;
                match read {
                    Ok(Ok(Some(bytes))) => Ok(bytes),
                    Ok(Ok(None)) => Err(FetchError::NotFound { url }),
                    Ok(Err(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                        Err(FetchError::Refused {
                            url,
                            why: e.to_string(),
                        })
                    }
                    Ok(Err(e)) => Err(FetchError::Unreachable {
                        url,
                        why: e.to_string(),
                    }),
                    Err(e) => Err(FetchError::Unreachable {
                        url,
                        why: format!("the read stopped: {e}"),
                    }),
                }
            }
            Source::Store { store, prefix, .. } => {
                match store.get(&format!("{prefix}{rel}"), limit).await {
                    Ok(Some(bytes)) => Ok(bytes.to_vec()),
                    Ok(None) => Err(FetchError::NotFound { url }),
                    Err(crate::blobs::BlobError::TooLarge { .. }) => {
                        Err(FetchError::TooLarge { url, limit, what })
                    }
                    Err(e) => Err(FetchError::Unreachable {
                        url,
                        why: e.to_string(),
                    }),
                }
            }
            Source::Http {
                base,
                client,
                timeout,
            } => {
                let timed_out = || FetchError::TimedOut {
                    url: url.clone(),
                    secs: timeout.as_secs_f64(),
                    what,
                };
                let fetch = http_get(client, base, rel, &url, limit, what);
                match tokio::time::timeout(*timeout, fetch).await {
                    Ok(Err(FetchError::TimedOut { .. })) | Err(_) => Err(timed_out()),
                    Ok(r) => r,
                }
            }
        }
    }
}

/// Follows a redirect only within the origin of the first request, at most [`MAX_REDIRECTS`].
fn same_origin() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first().map(url::Url::origin);
        if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(Redirected::TooMany)
        } else if first.as_ref() != Some(&attempt.url().origin()) {
            let to = crate::config::redact_url(attempt.url().as_str());
            attempt.error(Redirected::Elsewhere(to))
        } else {
            attempt.follow()
        }
    })
}

/// One GET of `rel` under `base`, its body read up to `limit` bytes.
async fn http_get(
    client: &reqwest::Client,
    base: &url::Url,
    rel: &str,
    url: &str,
    limit: u64,
    what: &'static str,
) -> Result<Vec<u8>, FetchError> {
    let too_large = || FetchError::TooLarge {
        url: url.to_owned(),
        limit,
        what,
    };
    let target = base.join(rel).map_err(|e| FetchError::Unreachable {
        url: url.to_owned(),
        why: e.to_string(),
    })?;
    let failed = |e: reqwest::Error| http_error(url, what, e);
    let mut resp = client.get(target).send().await.map_err(failed)?;
    let status = resp.status();
    if status == reqwest::StatusCode::NOT_FOUND {
        return Err(FetchError::NotFound {
            url: url.to_owned(),
        });
    }
    if !status.is_success() {
        return Err(FetchError::Status {
            url: url.to_owned(),
            status: status.as_u16(),
        });
    }
    if resp.content_length().is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(failed)? {
        if (bytes.len() + chunk.len()) as u64 > limit {
            return Err(too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// What a failed request was: a refused redirect, a timeout, or the log unreachable.
fn http_error(url: &str, what: &'static str, e: reqwest::Error) -> FetchError {
    use std::error::Error;
    if let Some(r) = crate::tls::refusal(&e) {
        return FetchError::Refused {
            url: url.to_owned(),
            why: r.short("witness"),
        };
    }
    let mut cause = e.source();
    while let Some(c) = cause {
        if let Some(r) = c.downcast_ref::<Redirected>() {
            return FetchError::Redirect {
                url: url.to_owned(),
                why: r.to_string(),
            };
        }
        cause = c.source();
    }
    if e.is_timeout() {
        // The deadline around the request names the limit.
        return FetchError::TimedOut {
            url: url.to_owned(),
            secs: 0.0,
            what,
        };
    }
    FetchError::Unreachable {
        url: url.to_owned(),
        why: e.without_url().to_string(),
    }
}

#[cfg(test)]
#[path = "source_tests.rs"]
mod tests;
