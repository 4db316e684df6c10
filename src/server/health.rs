//! `/healthz` (the process answers) and `/readyz` (NATS, PostgreSQL and the consumer work, and
//! ingest is not stalled or failed), read
//! from the state the pipeline and the probers keep: no I/O in the handler, so it answers at
//! once even when a connection hangs.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

use crate::telemetry::health::{Health, Progress};

pub(crate) fn router(health: Arc<Health>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(health)
}

async fn healthz() -> &'static str {
    "ok\n"
}

fn ok(b: bool) -> &'static str {
    if b {
        "ok"
    } else {
        "down"
    }
}

async fn readyz(State(h): State<Arc<Health>>) -> impl IntoResponse {
    let r = h.readiness();
    let ingest = match &r.ingest {
        Progress::Flowing => "ok".to_owned(),
        Progress::Stalled { secs, batches } => {
            format!("stalled: no batch committed for {secs}s with {batches} batch(es) in hand")
        }
        Progress::Failed(reason) => format!("failed: {reason}"),
    };
    let body = format!(
        "nats {}\npostgres {}\nconsumer {}\ningest {ingest}\n",
        ok(r.nats),
        ok(r.postgres),
        match (r.consumer_bound, r.jetstream) {
            (false, _) => "unbound",
            (true, true) => "bound",
            (true, false) => "bound, not answering (no JetStream leader or quorum)",
        }
    );
    let code = if r.ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, body)
}
