//! The HTTP listener: an index at `/`, health (`/healthz`, `/readyz`), `/metrics`, the log's
//! tiles under `/log/` ([`log`]), and the reconciliation reports ([`reports`]); each router has
//! its own state.

mod health;
pub(crate) use event_audit_base::http::{limits, plain_paths, serve};
pub(crate) mod links;
pub(crate) mod log;
pub(crate) mod reports;

use std::sync::Arc;

use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use axum::Router;

use crate::telemetry::health::Health;
use crate::telemetry::metrics::Registry;

/// The whole listener: health, metrics, reports, and an index page.
pub(crate) fn router(
    health: Arc<Health>,
    registry: Registry,
    reports: reports::ReportState,
    tiles: Option<crate::log::tiles::Tiles>,
) -> Router {
    let log = tiles.map_or_else(Router::new, log::router);
    Router::new()
        .route("/", get(index))
        .merge(log)
        .merge(health::router(health))
        .merge(
            Router::new()
                .route("/metrics", get(metrics))
                .with_state(registry),
        )
        .merge(reports::router(reports))
        .layer(axum::extract::DefaultBodyLimit::max(1024))
        .layer(axum::middleware::from_fn(plain_paths))
}

async fn index() -> Html<&'static str> {
    Html(INDEX)
}

const INDEX: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>event-audit</title></head>
<body style="font-family: sans-serif; max-width: 48em; margin: 2em auto">
<h1>event-audit</h1>
<ul>
<li><a href="/healthz">/healthz</a>: the process answers</li>
<li><a href="/readyz">/readyz</a>: NATS, PostgreSQL and the consumer are working (503 with the failing part otherwise)</li>
<li><a href="/metrics">/metrics</a>: Prometheus metrics</li>
<li><a href="/log/checkpoint">/log/checkpoint</a>, <code>/log/tile/&lt;L&gt;/&lt;N&gt;</code>, <code>/log/tile/entries/&lt;N&gt;</code>: the log as C2SP tlog-tiles, when the daemon writes tiles (<code>--tiles-dir</code>)</li>
<li><a href="/reports/reconciliation?format=html">/reports/reconciliation</a>: the latest reconciliation run (<code>?run=ID</code>, <code>?format=json|csv|html</code>)</li>
<li><a href="/reports/reconciliation/runs">/reports/reconciliation/runs</a>: run history (<code>?batch=NAME</code>)</li>
<li><code>/reports/reconciliation/diff?from=A&amp;to=B</code> (or <code>?batch=NAME</code>): accounts whose verdict changed between two runs (<code>?format=json|html</code>)</li>
<li><a href="/reports/batches">/reports/batches</a>: registered batches, open and closed</li>
<li><code>/accounts/{external_account_number}/events</code>: one account's event timeline (<code>?format=json|html</code>)</li>
</ul>
<p>Report endpoints require <code>Authorization: Bearer &lt;token&gt;</code>, or a signed link (<code>event-audit reconcile link</code>) in a browser, when a report token is configured.</p>
</body></html>
"#;

async fn metrics(axum::extract::State(r): axum::extract::State<Registry>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        crate::telemetry::metrics::render(&r),
    )
}
