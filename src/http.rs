//! The HTTP listener: `/healthz`, `/readyz`, `/metrics`, and the reconciliation reports
//! (`crate::reconcile::routes`: bearer token when configured, bounded requests).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

use crate::metrics::Metrics;
use crate::store::Store;

#[derive(Clone)]
pub struct AppState {
    pub metrics: Arc<Metrics>,
    pub store: Store,
    pub nats: async_nats::Client,
    pub bound: Arc<AtomicBool>,
    /// The bearer token the report endpoints require; open when `None`.
    pub report_token: crate::reconcile::routes::ReportToken,
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn readyz(State(s): State<AppState>) -> impl IntoResponse {
    let nats = s.nats.connection_state() == async_nats::connection::State::Connected;
    let pg = s.store.ping().await;
    let bound = s.bound.load(Ordering::SeqCst);
    s.metrics
        .up
        .with_label_values(&["nats"])
        .set(i64::from(nats));
    s.metrics
        .up
        .with_label_values(&["postgres"])
        .set(i64::from(pg));
    let body = format!(
        "nats {}\npostgres {}\nconsumer {}\n",
        ok(nats),
        ok(pg),
        if bound { "bound" } else { "unbound" }
    );
    let code = if nats && pg && bound {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, body)
}

fn ok(b: bool) -> &'static str {
    if b {
        "ok"
    } else {
        "down"
    }
}

async fn metrics(State(s): State<AppState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        s.metrics.render(),
    )
}

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .merge(crate::reconcile::routes::router(state.clone()))
        .layer(axum::extract::DefaultBodyLimit::max(1024))
        .with_state(state)
}

/// Binds `addr` and serves until `shutdown` resolves.
pub async fn serve(
    addr: SocketAddr,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr().unwrap_or(addr);
    tracing::info!(%addr, "HTTP listening (/healthz /readyz /metrics /reports/reconciliation)");
    Ok(tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router)
            .with_graceful_shutdown(shutdown)
            .await
        {
            tracing::error!(error = %e, "HTTP server stopped");
        }
    }))
}
