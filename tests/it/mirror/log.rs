//! Logs for the mirror's tests: a tlog-tiles log written into a directory with the crate's own
//! tile builder and a signing key (as the daemon's `--tiles-dir` lays it out), every file of a
//! directory hashed (to show a refused pull left it byte-identical), and a small HTTP server
//! that serves a directory under `/log/` and records every path asked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use sha2::{Digest, Sha256};

use event_audit::tlog::merkle::Hash;
use event_audit::tlog::note::{Checkpoint, PrivateKey};
use event_audit::tlog::tile::build::TileBuilder;
use event_audit::tlog::tile::TileId;

/// Entry `i` of a log: a 32-byte "row hash", `salt` telling logs apart.
pub(crate) fn entry(salt: &str, i: u64) -> Hash {
    Sha256::digest(format!("{salt}/{i}")).into()
}

/// `n` entries, entry `i` of `salt`.
pub(crate) fn entries(salt: &str, n: u64) -> Vec<Hash> {
    (0..n).map(|i| entry(salt, i)).collect()
}

/// Writes the log of `entries` into `dir` (its tiles, bundles and partial tiles of this size;
/// files of an earlier size stay), its checkpoint signed by `key` as origin `key.name` last.
/// Returns the signed note.
pub(crate) fn write_log(dir: &Path, key: &PrivateKey, entries: &[Hash]) -> String {
    let mut b = TileBuilder::new();
    for e in entries {
        b.push(e).expect("push");
    }
    let mut files = b.take_full();
    files.extend(b.partials());
    for (id, bytes) in files {
        write(dir, &id, &bytes);
    }
    sign(dir, key, entries.len() as u64, b.root())
}

/// Writes a checkpoint of `size` and `root` signed by `key` into `dir`; returns it.
pub(crate) fn sign(dir: &Path, key: &PrivateKey, size: u64, root: Hash) -> String {
    let note = key.sign(&Checkpoint {
        origin: key.name.clone(),
        size,
        root,
    });
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::write(dir.join("checkpoint"), &note).expect("write checkpoint");
    note
}

/// The root of the tree of `entries`.
pub(crate) fn root_of(entries: &[Hash]) -> Hash {
    let mut b = TileBuilder::new();
    for e in entries {
        b.push(e).expect("push");
    }
    b.root()
}

/// Writes one tile's bytes at its path under `dir`.
pub(crate) fn write(dir: &Path, id: &TileId, bytes: &[u8]) {
    let p = dir.join(id.path());
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, bytes).expect("write tile");
}

/// A log key named `name` from a fixed seed, its public key written to `dir/<seed>.pub`.
pub(crate) fn key(dir: &Path, name: &str, seed: u8) -> (PrivateKey, PathBuf) {
    let k = PrivateKey::from_seed(name, &[seed; 32]).expect("key");
    let p = dir.join(format!("{seed}.pub"));
    std::fs::write(&p, format!("{}\n", k.public().encode())).expect("write pub");
    (k, p)
}

/// The copy of `origin` under a mirror's directory.
pub(crate) fn copy_of(mirror: &Path, origin: &str) -> PathBuf {
    let h: String = Sha256::digest(origin.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    mirror.join(h)
}

/// Every file under `dir` (relative path → SHA-256), empty when `dir` does not exist.
pub(crate) fn hash_files(dir: &Path) -> BTreeMap<String, Hash> {
    crate::support::files::files(dir)
        .into_iter()
        .map(|(path, bytes)| (path, Sha256::digest(bytes).into()))
        .collect()
}

/// What the test server knows: the directory, the paths asked.
#[derive(Clone)]
pub(crate) struct Served {
    dir: PathBuf,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Served {
    /// The paths asked since the last call.
    pub(crate) fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.asked.lock().expect("lock"))
    }
}

/// Serves `dir` at `http://ADDR/log/` in the test's runtime; returns the URL prefix.
pub(crate) async fn serve(dir: &Path) -> (String, Served) {
    let served = Served {
        dir: dir.to_owned(),
        asked: Arc::default(),
    };
    let app = Router::new()
        .route("/log/{*path}", get(file))
        .with_state(served.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/log"), served)
}

async fn file(State(s): State<Served>, UrlPath(path): UrlPath<String>) -> Response {
    s.asked.lock().expect("lock").push(path.clone());
    if path.contains("..") {
        return StatusCode::NOT_FOUND.into_response();
    }
    match tokio::fs::read(s.dir.join(&path)).await {
        Ok(b) => b.into_response(),
        Err(_) => StatusCode::NOT_FOUND.into_response(),
    }
}
