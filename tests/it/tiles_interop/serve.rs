//! A plain static file server for the tests' tile directories, on 127.0.0.1: what "any static
//! web server" serving a tlog-tiles directory does (200 with the file's bytes, 404 otherwise),
//! stopped when dropped.

use std::path::{Component, Path, PathBuf};

use axum::extract::State;
use axum::http::{StatusCode, Uri};

/// A running server; its URL is `http://127.0.0.1:PORT` with no trailing slash.
pub(super) struct Served {
    pub url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves the files under `root`.
pub(super) async fn serve(root: &Path) -> Served {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    let app = axum::Router::new()
        .fallback(file)
        .with_state(root.to_path_buf());
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.expect("serve the tiles");
    });
    Served { url, task }
}

/// The file at the request's path under the root; only plain path segments are followed.
async fn file(State(root): State<PathBuf>, uri: Uri) -> (StatusCode, Vec<u8>) {
    let rel = Path::new(uri.path().trim_start_matches('/'));
    if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return (StatusCode::NOT_FOUND, Vec::new());
    }
    match tokio::fs::read(root.join(rel)).await {
        Ok(bytes) => (StatusCode::OK, bytes),
        Err(_) => (StatusCode::NOT_FOUND, Vec::new()),
    }
}
