//! What keeps a hostile client from stopping the witness, at the HTTP layer: the request body
//! is read within [`defaults::WITNESS_MAX_BODY`] bytes (a larger one, announced or sent, is 413
//! before the rest is read) and [`defaults::WITNESS_BODY_TIMEOUT`] (a slower one is 408), and
//! must be UTF-8 (400); every answer with an error status is counted by status in a fixed
//! vocabulary (`event_audit_witness_rejected_requests_total{code}`). The listener's own limits
//! (request head time and size, idle time, connection age and count) are in
//! [`event_audit_base::http::limits`].

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

use super::Inner;
use crate::config::defaults;
use crate::metrics::WITNESS_CODES;

/// A plain-text answer (the request is never echoed).
pub(crate) fn text(status: StatusCode, body: String, content_type: &'static str) -> Response {
    (status, [(header::CONTENT_TYPE, content_type)], body).into_response()
}

fn refused(status: StatusCode, why: &str) -> Response {
    text(status, format!("{why}\n"), "text/plain")
}

/// The request body as text, or the answer refusing it (413, 408 or 400).
pub(crate) async fn read_body(headers: &HeaderMap, body: Body) -> Result<String, Response> {
    let max = defaults::WITNESS_MAX_BODY;
    let announced = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let too_large = || {
        refused(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("request body over {max} bytes"),
        )
    };
    if announced.is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    let read = async {
        let mut stream = body.into_data_stream();
        let mut buf: Vec<u8> = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk =
                chunk.map_err(|_| refused(StatusCode::BAD_REQUEST, "request body unreadable"))?;
            if buf.len() + chunk.len() > max {
                return Err(too_large());
            }
            buf.extend_from_slice(&chunk);
        }
        Ok(buf)
    };
    let limit = defaults::WITNESS_BODY_TIMEOUT.get();
    let bytes = tokio::time::timeout(limit, read).await.map_err(|_| {
        refused(
            StatusCode::REQUEST_TIMEOUT,
            &format!("request body not received within {} s", limit.as_secs()),
        )
    })??;
    String::from_utf8(bytes).map_err(|_| refused(StatusCode::BAD_REQUEST, "request body not UTF-8"))
}

/// Counts every answer with an error status by its code (routes, methods and extractors
/// included); a refusal that is evidence against the log is counted by reason as well.
pub(crate) async fn count_errors(
    State(w): State<Arc<Inner>>,
    req: Request,
    next: Next,
) -> Response {
    let resp = next.run(req).await;
    let status = resp.status();
    if status.is_client_error() || status.is_server_error() {
        let code = status.as_str();
        let label = if WITNESS_CODES.contains(&code) {
            code
        } else {
            "other"
        };
        w.metrics.rejected.with_label_values(&[label]).inc();
    }
    resp
}
