//! The log's read path, C2SP tlog-tiles under `/log/`: `GET /log/checkpoint` (the newest
//! published, with its cosignatures; cacheable for a few seconds) and `GET /log/tile/<L>/<N>
//! [.p/<W>]`, `/log/tile/entries/<N>[.p/<W>]` (immutable: cached for a week), and the account
//! index's `GET /log/index/latest` (how many deltas, cached as the checkpoint) and
//! `/log/index/delta/<N>` (immutable, N at most the latest). Files come from the
//! tiles the signer writes (`--tiles-dir`, or the bucket of `--tiles-url`); a path is answered
//! only when it parses as a tile and lies inside the served checkpoint's tree, so nothing else
//! in the store (a temporary file, the backfill's mark, a tile written past the checkpoint) is
//! ever served, and only as at most a tile's (or a note's) bytes (in a directory, a regular
//! file inside it). A store that cannot be read answers 503. CORS is
//! open, as Sunlight's read path is: every answer allows any origin, and a browser's preflight
//! (`OPTIONS`) is answered 204 with the methods and headers allowed.

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::log::tiles::Tiles;
use crate::tlog::note::MAX_NOTE;
use crate::tlog::tile::TileId;

use crate::log::tiles::{CHECKPOINT_CACHE, TILE_CACHE};

/// The routes under `/log/`, reading `dir`.
pub(crate) fn router(dir: Tiles) -> Router {
    Router::new()
        .route("/log/{*path}", get(serve).options(preflight))
        .with_state(dir)
}

/// A CORS preflight: any origin may `GET` (or `HEAD`) the log, with any request headers.
async fn preflight() -> Response {
    let mut r = StatusCode::NO_CONTENT.into_response();
    let h = r.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, HEAD, OPTIONS"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("*"),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("86400"),
    );
    r
}

/// `rel` in `dir`, at most `limit` bytes: `Ok(None)` when it is not there (or not a file that
/// may be served), `Err` when the store could not be read.
async fn read(dir: &Tiles, rel: &str, limit: u64) -> Result<Option<Vec<u8>>, ()> {
    match dir.get(rel, limit).await {
        Ok(b) => Ok(b.map(Vec::from)),
        // In a directory: not a regular file inside it, or too large: not a tile to serve.
        Err(_) if matches!(dir.store(), crate::blobs::Store::Dir(_)) => Ok(None),
        Err(e) => {
            tracing::warn!(error = %e, "/log/: the tiles could not be read");
            Err(())
        }
    }
}

async fn serve(State(dir): State<Tiles>, Path(path): Path<String>) -> Response {
    let Ok(checkpoint) = read(&dir, "checkpoint", MAX_NOTE).await else {
        return unavailable();
    };
    if path == "checkpoint" {
        return match checkpoint {
            Some(body) => answer(body, "text/plain; charset=utf-8", CHECKPOINT_CACHE),
            None => not_found(),
        };
    }
    if path.starts_with("index/") {
        return index_file(&dir, &path).await;
    }
    let (Ok(id), Some(size)) = (
        TileId::parse(&path),
        checkpoint.as_deref().and_then(size_of),
    ) else {
        return not_found();
    };
    if !id.within(size) {
        return not_found();
    }
    match read(&dir, &id.path(), id.max_bytes()).await {
        Ok(Some(body)) => answer(body, "application/octet-stream", TILE_CACHE),
        Ok(None) => not_found(),
        Err(()) => unavailable(),
    }
}

/// The account index's files: `index/latest`, and a delta numbered at most what it says.
async fn index_file(dir: &Tiles, path: &str) -> Response {
    use crate::tlog::index::delta;
    let latest = match dir.deltas_published().await {
        Ok(n) => n,
        Err(_) if matches!(dir.store(), crate::blobs::Store::Dir(_)) => 0,
        Err(e) => {
            tracing::warn!(error = %e, "/log/: the index's latest could not be read");
            return unavailable();
        }
    };
    if path == delta::LATEST {
        return match latest {
            0 => not_found(),
            n => answer(
                format!("{n}\n").into_bytes(),
                "text/plain; charset=utf-8",
                CHECKPOINT_CACHE,
            ),
        };
    }
    match delta::parse_path(path) {
        Some(seq) if seq >= 1 && seq <= latest => match read(dir, path, delta::MAX_DELTA).await {
            Ok(Some(body)) => answer(body, "application/octet-stream", TILE_CACHE),
            Ok(None) => not_found(),
            Err(()) => unavailable(),
        },
        _ => not_found(),
    }
}

/// The tree size a checkpoint's text states (its second line); the signature is the client's
/// to check.
fn size_of(note: &[u8]) -> Option<u64> {
    std::str::from_utf8(note).ok()?.lines().nth(1)?.parse().ok()
}

fn answer(body: Vec<u8>, kind: &'static str, cache: &'static str) -> Response {
    let mut r = body.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    r
}

fn unavailable() -> Response {
    let mut r = (
        StatusCode::SERVICE_UNAVAILABLE,
        "the log's tiles cannot be read now\n",
    )
        .into_response();
    r.headers_mut().insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    r
}

fn not_found() -> Response {
    let mut r = (StatusCode::NOT_FOUND, "not found\n").into_response();
    r.headers_mut().insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    r
}
