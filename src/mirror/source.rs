//! Where a log is read from: its C2SP tlog-tiles read path over HTTP(S) (the log's prefix, e.g.
//! the daemon's `http://host:port/log`), or a directory holding the same files (a path or a
//! `file://` URL: a copied log, or a mirror's copy). Every read is bounded: one timeout per
//! request (connecting included), at most the bytes a checkpoint, a hash tile or a bundle can
//! hold, and a partial tile the log no longer serves is read from the full tile at its place
//! (tlog-tiles lets a log delete partial tiles once the full one is there).

use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use crate::tlog::tile::{self, Kind, TileError, TileId, MAX_ENTRY, TILE_WIDTH};

/// The largest checkpoint read (a note of 64 signature lines is a few kilobytes).
const MAX_CHECKPOINT: u64 = 64 * 1024;

/// How long connecting may take at most, within the request's timeout.
const MAX_CONNECT: Duration = Duration::from_secs(10);

/// Why a file of the log could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    #[error("{url}: {why}; check that the log is serving and the address is right")]
    Unreachable { url: String, why: String },
    #[error("{url}: not found")]
    NotFound { url: String },
    #[error("{url}: HTTP status {status}")]
    Status { url: String, status: u16 },
    #[error("{url}: more than {limit} bytes, larger than a {what} can be")]
    TooLarge {
        url: String,
        limit: u64,
        what: &'static str,
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
    pub(crate) fn is_unreachable(&self) -> bool {
        match self {
            FetchError::Unreachable { .. } => true,
            FetchError::Status { status, .. } => *status >= 500,
            _ => false,
        }
    }
}

/// A log's read path.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    Http {
        /// Ends with `/`, so that a tile's path joins under it.
        base: url::Url,
        client: reqwest::Client,
    },
    Dir(PathBuf),
}

pub(crate) use crate::witnessed::tiles::origin_dir;

impl Source {
    /// `http(s)://...` (the log's prefix), `file://...` or a directory path; each request may
    /// take `timeout` at most.
    pub(crate) fn parse(s: &str, timeout: Duration) -> Result<Source, String> {
        if s.starts_with("http://") || s.starts_with("https://") {
            let mut base = url::Url::parse(s)
                .map_err(|e| format!("{}: not a URL ({e})", crate::config::redact_url(s)))?;
            if !base.path().ends_with('/') {
                base.set_path(&format!("{}/", base.path()));
            }
            let client = reqwest::Client::builder()
                .timeout(timeout)
                .connect_timeout(timeout.min(MAX_CONNECT))
                .redirect(reqwest::redirect::Policy::limited(5))
                .user_agent(concat!("event-audit/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| format!("building the HTTP client: {}", e.without_url()))?;
            return Ok(Source::Http { base, client });
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

    /// The source under `sub` (a mirror's copy of one origin).
    pub(crate) fn child(&self, sub: &str) -> Source {
        match self {
            Source::Http { base, client } => Source::Http {
                base: base
                    .join(&format!("{sub}/"))
                    .unwrap_or_else(|_| base.clone()),
                client: client.clone(),
            },
            Source::Dir(d) => Source::Dir(d.join(sub)),
        }
    }

    /// Where `rel` is read from, as shown (credentials and query redacted).
    pub(crate) fn shown(&self, rel: &str) -> String {
        match self {
            Source::Http { base, .. } => match base.join(rel) {
                Ok(u) => crate::config::redact_url(u.as_str()),
                Err(_) => crate::config::redact_url(base.as_str()),
            },
            Source::Dir(d) => d.join(rel).display().to_string(),
        }
    }

    /// The log's checkpoint, as served.
    pub(crate) async fn checkpoint(&self) -> Result<String, FetchError> {
        let bytes = self.get("checkpoint", MAX_CHECKPOINT, "checkpoint").await?;
        String::from_utf8(bytes).map_err(|_| FetchError::Unreachable {
            url: self.shown("checkpoint"),
            why: "the checkpoint is not UTF-8 text".into(),
        })
    }

    /// A tile's or bundle's bytes, checked against its width (a bundle parsed strictly); a
    /// partial one that is not found is cut from the full tile at its place.
    pub(crate) async fn tile(&self, id: TileId) -> Result<Vec<u8>, FetchError> {
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
        let (limit, what) = match id.kind {
            Kind::Hashes(_) => (TILE_WIDTH * 32, "hash tile"),
            Kind::Entries => (u64::from(id.width) * (2 + MAX_ENTRY as u64), "bundle"),
        };
        let rel = id.path();
        let bytes = self.get(&rel, limit, what).await?;
        let checked = match id.kind {
            Kind::Hashes(_) => tile::parse_hashes(&id, &bytes).map(|_| ()),
            Kind::Entries => tile::parse_bundle(&id, &bytes).map(|_| ()),
        };
        checked.map_err(|source| FetchError::Tile {
            base: self.shown(""),
            source,
        })?;
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

    /// The bytes at `rel`, at most `limit` of them.
    async fn get(&self, rel: &str, limit: u64, what: &'static str) -> Result<Vec<u8>, FetchError> {
        let url = self.shown(rel);
        let too_large = |url: String| FetchError::TooLarge { url, limit, what };
        match self {
            Source::Dir(d) => {
                let file = match std::fs::File::open(d.join(rel)) {
                    Ok(f) => f,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        return Err(FetchError::NotFound { url })
                    }
                    Err(e) => return Err(unreadable(url, &e)),
                };
                let mut bytes = Vec::new();
                file.take(limit + 1)
                    .read_to_end(&mut bytes)
                    .map_err(|e| unreadable(url.clone(), &e))?;
                if bytes.len() as u64 > limit {
                    return Err(too_large(url));
                }
                Ok(bytes)
            }
            Source::Http { base, client } => {
                let target = base.join(rel).map_err(|e| FetchError::Unreachable {
                    url: url.clone(),
                    why: e.to_string(),
                })?;
                let unreachable = |e: reqwest::Error| FetchError::Unreachable {
                    url: url.clone(),
                    why: e.without_url().to_string(),
                };
                let mut resp = client.get(target).send().await.map_err(unreachable)?;
                let status = resp.status();
                if status == reqwest::StatusCode::NOT_FOUND {
                    return Err(FetchError::NotFound { url });
                }
                if !status.is_success() {
                    return Err(FetchError::Status {
                        url,
                        status: status.as_u16(),
                    });
                }
                if resp.content_length().is_some_and(|n| n > limit) {
                    return Err(too_large(url));
                }
                let mut bytes = Vec::new();
                while let Some(chunk) = resp.chunk().await.map_err(unreachable)? {
                    if (bytes.len() + chunk.len()) as u64 > limit {
                        return Err(too_large(url));
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Ok(bytes)
            }
        }
    }
}

fn unreadable(url: String, e: &std::io::Error) -> FetchError {
    FetchError::Unreachable {
        url,
        why: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(1);

    #[test]
    fn a_log_is_a_url_prefix_a_file_url_or_a_directory() {
        let Ok(Source::Http { base, .. }) = Source::parse("http://h:1/log", T) else {
            panic!("an HTTP prefix");
        };
        assert_eq!(base.as_str(), "http://h:1/log/");
        let s = Source::parse("https://u:secret@h/log/", T).expect("https");
        assert_eq!(
            s.shown("tile/0/000"),
            "https://u:***@h/log/tile/0/000",
            "the password is never shown"
        );
        assert_eq!(
            s.child(&origin_dir("o")).shown("checkpoint"),
            format!("https://u:***@h/log/{}/checkpoint", origin_dir("o"))
        );
        let Ok(Source::Dir(d)) = Source::parse("file:///var/log/copy", T) else {
            panic!("a file URL");
        };
        assert_eq!(d, PathBuf::from("/var/log/copy"));
        let Ok(Source::Dir(d)) = Source::parse("copy/log", T) else {
            panic!("a directory");
        };
        assert_eq!(d, PathBuf::from("copy/log"));
        assert!(Source::parse("ftp://h/log", T).is_err());
        assert!(Source::parse("file://host/x", T).is_err());
    }

    #[test]
    fn the_origin_directory_is_the_lowercase_hex_sha256_of_the_origin() {
        // `printf %s example.com/log | sha256sum`
        assert_eq!(
            origin_dir("example.com/log"),
            "4d3203c8f35cdf600e475f55fede6081a703d3d322f208865fca2ec4f0e030f8"
        );
    }
}
