//! The independent witness (`event-audit witness serve`): a C2SP tlog-witness cosigner that an
//! auditor runs outside the log operators' reach. It keeps, per log origin, the latest
//! checkpoint it cosigned (`state`), and cosigns (C2SP tlog-cosignature: `cosignature/v1` with
//! an Ed25519 key, `subtree/v1` with an ML-DSA-44 key) only a checkpoint signed by the log's key
//! that extends it ([`add`]); the check and the update
//! are one step under one lock, and the new state is on disk before the answer. It needs no
//! PostgreSQL and no NATS. Refusals of validly signed checkpoints are logged and counted: they
//! are evidence of a log that rewrote its history. Its clients are the log's operators, the
//! party it guards against: bodies, times and connections are bounded (`http`), nothing a
//! client sends gets a 5xx, and every refusal is counted by status.

pub use event_audit_base::{args, config, files, logging, signal, tls};
pub use event_audit_tlog as tlog;

pub mod add;
pub mod cli;
mod http;
pub mod metrics;
mod monitor;
mod state;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::config::{defaults, Settings};
use crate::metrics::WitnessServerMetrics;
use crate::tlog::cosign::AnyWitnessSigner;
use crate::tlog::note::{PublicKey, REVERDICTS_SUFFIX};
use add::Refused;
use event_audit_base::metrics::Registry;
use http::text;
use state::StateDir;

/// Why the witness cannot start.
#[derive(Debug, thiserror::Error)]
pub enum WitnessServerError {
    #[error("witness key file {path}: {why}; create one with `event-audit keygen --witness --name NAME --out PREFIX`")]
    Key { path: String, why: String },
    #[error("log key file {path}: {why}")]
    LogKey { path: String, why: String },
    #[error("{0}")]
    Config(String),
    #[error("state directory {path}: {source}")]
    State {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

struct Inner {
    signer: AnyWitnessSigner,
    logs: HashMap<String, Vec<PublicKey>>,
    state: StateDir,
    /// Held across check, store and answer: two requests never interleave.
    lock: Mutex<()>,
    metrics: WitnessServerMetrics,
    registry: Registry,
}

/// A witness bound to its port, ready to serve.
pub struct WitnessServer {
    inner: Arc<Inner>,
    listener: TcpListener,
    address: SocketAddr,
    limits: event_audit_base::http::limits::Limits,
    /// HTTPS (`http.tls_cert_file`, `http.tls_key_file`), when asked for.
    tls: Option<tokio_rustls::TlsAcceptor>,
}

fn read_key(path: &Path) -> Result<AnyWitnessSigner, WitnessServerError> {
    let shown = path.display().to_string();
    let text = crate::files::read_private(path).map_err(|e| WitnessServerError::Key {
        path: shown.clone(),
        why: e.to_string(),
    })?;
    AnyWitnessSigner::parse(&text).map_err(|e| WitnessServerError::Key {
        path: shown,
        why: e.to_string(),
    })
}

impl WitnessServer {
    /// Reads the keys, locks the state directory and binds the listener.
    pub async fn build(settings: &Settings) -> Result<WitnessServer, WitnessServerError> {
        let s = &settings.witness_server;
        let key = s
            .key_file
            .as_deref()
            .ok_or_else(|| WitnessServerError::Config("no witness key (--key)".into()))?;
        let signer = read_key(key)?;
        let mut logs: HashMap<String, Vec<PublicKey>> = HashMap::new();
        for p in &s.log_keys {
            let shown = p.display().to_string();
            let text = crate::files::bounded::read_text(p, crate::files::KEY_MAX, "key file")
                .map_err(|e| WitnessServerError::LogKey {
                    path: shown.clone(),
                    why: e.to_string(),
                })?;
            let k = PublicKey::parse(&text).map_err(|e| WitnessServerError::LogKey {
                path: shown,
                why: e.to_string(),
            })?;
            // A log key vouches for its name (the rows' tree) and its re-verdict runs' tree.
            for origin in [k.name.clone(), format!("{}{REVERDICTS_SUFFIX}", k.name)] {
                logs.entry(origin).or_default().push(k.clone());
            }
        }
        if logs.is_empty() {
            return Err(WitnessServerError::Config(
                "no log key (--log-key LOG.pub): the witness would cosign nothing".into(),
            ));
        }
        let dir = s
            .state_dir
            .as_deref()
            .ok_or_else(|| WitnessServerError::Config("no state directory (--state-dir)".into()))?;
        let state = StateDir::open(dir).map_err(|source| WitnessServerError::State {
            path: dir.display().to_string(),
            source,
        })?;
        let tls = crate::tls::listen::from_settings(
            settings.http.tls_cert_file.as_deref(),
            settings.http.tls_key_file.as_deref(),
        )
        .map_err(|e| WitnessServerError::Config(e.to_string()))?;
        let listener =
            TcpListener::bind(s.listen)
                .await
                .map_err(|source| WitnessServerError::Bind {
                    addr: s.listen,
                    source,
                })?;
        let address = listener.local_addr().unwrap_or(s.listen);
        let registry = Registry::new();
        let mut origins: Vec<String> = logs.keys().cloned().collect();
        origins.sort();
        let metrics = WitnessServerMetrics::new(&registry, &origins);
        tracing::info!(%address, https = tls.is_some(), witness = %signer.public().encode(), logs = %origins.join(", "), state = %dir.display(), "witness listening (POST /add-checkpoint, GET /metrics)");
        Ok(WitnessServer {
            inner: Arc::new(Inner {
                signer,
                logs,
                state,
                lock: Mutex::new(()),
                metrics,
                registry,
            }),
            listener,
            address,
            tls,
            limits: event_audit_base::http::limits::Limits {
                max_age: Some(s.max_connection_age.get()),
                ..event_audit_base::http::limits::Limits::from_settings(&settings.http)
            },
        })
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Serves until `stop`.
    pub async fn run_until_stopped(self, stop: CancellationToken) {
        let router = Router::new()
            .route("/", get(index))
            .route("/add-checkpoint", post(add_checkpoint))
            .route("/metrics", get(metrics))
            .route("/{origin_hash}/checkpoint", get(monitor::checkpoint))
            .layer(axum::extract::DefaultBodyLimit::max(
                defaults::WITNESS_MAX_BODY,
            ))
            .layer(axum::middleware::from_fn_with_state(
                self.inner.clone(),
                http::count_errors,
            ))
            .with_state(self.inner);
        event_audit_base::http::serve(self.listener, router, self.limits, self.tls, stop).await;
    }
}

async fn index(State(w): State<Arc<Inner>>) -> String {
    let mut logs: Vec<&String> = w.logs.keys().collect();
    logs.sort();
    format!(
        "event-audit witness (C2SP tlog-witness, {})\nkey {}\nPOST /add-checkpoint\nGET /<hex SHA-256 of the origin>/checkpoint\nGET /metrics\nlogs:\n{}\n",
        if w.signer.public().algorithm() == crate::tlog::mldsa::ALG_MLDSA44 {
            "ML-DSA-44 subtree/v1"
        } else {
            "Ed25519 cosignature/v1"
        },
        w.signer.public().encode(),
        logs.iter().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
    )
}

async fn metrics(State(w): State<Arc<Inner>>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        event_audit_base::metrics::render(&w.registry),
    )
        .into_response()
}

async fn add_checkpoint(State(w): State<Arc<Inner>>, headers: HeaderMap, body: Body) -> Response {
    let body = match http::read_body(&headers, body).await {
        Ok(b) => b,
        Err(refused) => return refused,
    };
    let req = match add::parse(&body) {
        Ok(r) => r,
        Err(why) => return refuse(&w, None, Refused::Malformed(why)),
    };
    let cp = match add::authenticate(&req, |o| w.logs.get(o).cloned().unwrap_or_default()) {
        Ok(cp) => cp,
        Err(r) => return refuse(&w, None, r),
    };
    // Parsed by `authenticate` already; the text the cosignature signs.
    let Ok(signed) = crate::tlog::note::Note::parse(&req.note).map(|n| n.text.to_owned()) else {
        return refuse(&w, None, Refused::Malformed("not a signed checkpoint"));
    };
    // C2SP: a cosignature's timestamp is never zero (nor before 1970).
    let Some(now) = u64::try_from(chrono::Utc::now().timestamp())
        .ok()
        .filter(|t| *t > 0)
    else {
        tracing::error!("the witness's clock is not after 1970; refusing to cosign");
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            "witness clock unset\n".into(),
            "text/plain",
        );
    };
    let _held = w.lock.lock().await;
    let latest = match w.state.load(&cp.origin) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(origin = %cp.origin, error = %e, "the witness's state cannot be read; refusing to cosign");
            return text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "witness state unreadable\n".into(),
                "text/plain",
            );
        }
    };
    let next = match add::decide(&req, &cp, latest.as_ref()) {
        Ok(n) => n,
        Err(r) => {
            return refuse(
                &w,
                Some((&cp.origin, cp.size, latest.as_ref().map(|l| l.size))),
                r,
            )
        }
    };
    // Only ML-DSA-44 can refuse: its message holds the origin in at most 255 bytes.
    let Ok(line) = w.signer.cosign(&signed, now) else {
        return refuse(
            &w,
            None,
            Refused::Malformed("origin too long for ML-DSA-44"),
        );
    };
    let served = monitor::served_note(
        &req.note,
        w.logs
            .get(&cp.origin)
            .map(Vec::as_slice)
            .unwrap_or_default(),
        &line,
    );
    if let Err(e) = w.state.store(&cp.origin, &next, &served) {
        tracing::error!(origin = %cp.origin, error = %e, "the witness's state cannot be written; refusing to cosign");
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "witness state not written\n".into(),
            "text/plain",
        );
    }
    w.metrics.cosigned.with_label_values(&[&cp.origin]).inc();
    tracing::debug!(origin = %cp.origin, size = cp.size, "checkpoint cosigned");
    text(StatusCode::OK, line, "text/plain; charset=utf-8")
}

/// The answer to a refused request (counted by status in [`http::count_errors`]); one validly
/// signed that shows a misbehaving log is logged and counted by reason as evidence.
fn refuse(w: &Inner, signed: Option<(&str, u64, Option<u64>)>, r: Refused) -> Response {
    let status = StatusCode::from_u16(r.status()).unwrap_or(StatusCode::BAD_REQUEST);
    if let (Some((origin, size, known)), Some(reason)) = (signed, r.evidence()) {
        w.metrics
            .refused_evidence(origin, size, known, reason, status.as_u16());
    }
    match r {
        Refused::Stale { known } => text(status, format!("{known}\n"), "text/x.tlog.size"),
        r => text(status, format!("{}\n", r.text()), "text/plain"),
    }
}
