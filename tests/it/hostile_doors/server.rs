//! A hostile log server for the doors' tests, run in the test's runtime: every request is
//! recorded and answered by a script the test gives (a path → an answer), which may serve a
//! validly signed checkpoint of any size, a body that never ends, one that trickles a byte at a
//! time, a redirect (to another origin, or to itself), HTML or odd bytes where a tile should
//! be, or a real log's files from a directory. [`silent`] accepts connections and never answers.

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;

/// How a path is answered.
pub(super) type Script = Arc<dyn Fn(&str) -> Response + Send + Sync>;

/// The paths a server was asked, in order.
#[derive(Clone, Default)]
pub(super) struct Asked(Arc<Mutex<Vec<String>>>);

impl Asked {
    pub(super) fn all(&self) -> Vec<String> {
        self.0.lock().expect("lock").clone()
    }

    /// How many times `path` was asked.
    pub(super) fn count(&self, path: &str) -> usize {
        self.all().iter().filter(|p| p.as_str() == path).count()
    }
}

/// Serves `script` on 127.0.0.1; returns `http://ADDR` and what it was asked.
pub(super) async fn hostile(
    script: impl Fn(&str) -> Response + Send + Sync + 'static,
) -> (String, Asked) {
    let asked = Asked::default();
    let state = (Arc::new(script) as Script, asked.clone());
    let app = Router::new().fallback(answer).with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), asked)
}

async fn answer(State((script, asked)): State<(Script, Asked)>, uri: Uri) -> Response {
    let path = uri.path().to_owned();
    asked.0.lock().expect("lock").push(path.clone());
    script(&path)
}

/// Accepts connections on 127.0.0.1 and never reads or answers; returns `http://ADDR`.
pub(super) async fn silent() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    format!("http://{addr}")
}

pub(super) fn not_found() -> Response {
    StatusCode::NOT_FOUND.into_response()
}

/// `body` with status 200.
pub(super) fn bytes(body: impl Into<Bytes>) -> Response {
    body.into().into_response()
}

/// 200 and a body that never ends (no length announced).
pub(super) fn endless() -> Response {
    let chunk = Bytes::from(vec![b'a'; 64 << 10]);
    let stream = futures::stream::repeat_with(move || Ok::<_, Infallible>(chunk.clone()));
    Body::from_stream(stream).into_response()
}

/// 200, announcing `len` bytes, and a body that never ends.
pub(super) fn lying(len: u64) -> Response {
    let mut r = endless();
    r.headers_mut()
        .insert(header::CONTENT_LENGTH, header::HeaderValue::from(len));
    r
}

/// 200 and one byte every 100 ms, forever: never idle long, never done.
pub(super) fn trickle() -> Response {
    let stream = futures::stream::unfold((), |()| async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        Some((Ok::<_, Infallible>(Bytes::from_static(b"x")), ()))
    });
    Body::from_stream(stream).into_response()
}

/// 302 to `to`.
pub(super) fn redirect(to: &str) -> Response {
    (StatusCode::FOUND, [(header::LOCATION, to.to_owned())]).into_response()
}

/// An HTML page, as a misconfigured front proxy serves one for any path.
pub(super) fn html() -> Response {
    (
        [(header::CONTENT_TYPE, "text/html")],
        "<!doctype html><html><body><h1>Welcome</h1></body></html>\n",
    )
        .into_response()
}

/// The file at `rel` under `dir`, or 404.
pub(super) fn file(dir: &std::path::Path, rel: &str) -> Response {
    let p: PathBuf = dir.join(rel);
    match std::fs::read(p) {
        Ok(b) if !rel.contains("..") => bytes(b),
        _ => not_found(),
    }
}
