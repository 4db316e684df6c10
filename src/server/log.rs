//! The log's read path, C2SP tlog-tiles under `/log/`: `GET /log/checkpoint` (the newest
//! published, with its cosignatures; cacheable for a few seconds) and `GET /log/tile/<L>/<N>
//! [.p/<W>]`, `/log/tile/entries/<N>[.p/<W>]` (immutable: cached for a week). Files come from the
//! tile directory the signer writes (`--tiles-dir`); a path is answered only when it parses as a
//! tile and lies inside the served checkpoint's tree, so nothing else in the directory (a
//! temporary file, the backfill's mark, a tile written past the checkpoint) is ever served, and
//! only as a regular file inside the directory of at most a tile's (or a note's) bytes. CORS is
//! open, as Sunlight's read path is: every answer allows any origin, and a browser's preflight
//! (`OPTIONS`) is answered 204 with the methods and headers allowed.

use std::path::PathBuf;

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::tlog::note::MAX_NOTE;
use crate::tlog::tile::TileId;

/// The checkpoint may be cached this long.
pub(crate) const CHECKPOINT_CACHE: &str = "public, max-age=2";

/// Tiles and bundles never change once written.
pub(crate) const TILE_CACHE: &str = "public, max-age=604800, immutable";

/// The routes under `/log/`, reading `dir`.
pub(crate) fn router(dir: PathBuf) -> Router {
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

/// `rel` in `dir`: a regular file inside it of at most `limit` bytes, or nothing.
async fn read(dir: &std::path::Path, rel: String, limit: u64) -> Option<Vec<u8>> {
    let dir = dir.to_owned();
    tokio::task::spawn_blocking(move || {
        crate::files::bounded::read_beneath(&dir, std::path::Path::new(&rel), limit, "tile")
    })
    .await
    .ok()?
    .ok()?
}

async fn serve(State(dir): State<PathBuf>, Path(path): Path<String>) -> Response {
    let checkpoint = read(&dir, "checkpoint".into(), MAX_NOTE).await;
    if path == "checkpoint" {
        return match checkpoint {
            Some(body) => answer(body, "text/plain; charset=utf-8", CHECKPOINT_CACHE),
            None => not_found(),
        };
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
    match read(&dir, id.path(), id.max_bytes()).await {
        Some(body) => answer(body, "application/octet-stream", TILE_CACHE),
        None => not_found(),
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

fn not_found() -> Response {
    let mut r = (StatusCode::NOT_FOUND, "not found\n").into_response();
    r.headers_mut().insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    r
}
