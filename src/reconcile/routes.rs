//! The report endpoints on the daemon's HTTP listener (next to `/metrics`):
//! `GET /reports/reconciliation` (latest run, `?run=ID`, `?format=json|csv|html`),
//! `GET /reports/reconciliation/runs` (history, `?limit=`), and
//! `GET /accounts/{external_account_number}/events` (the account's timeline, `?limit=`).
//!
//! They carry personal data. When a report token is configured they require
//! `Authorization: Bearer <token>` (compared in constant time). Requests are bounded: GET only,
//! no body (413), a query string of at most 2 KiB (414), an account number of at most 256
//! bytes, `limit` at most 1,000 runs or 10,000 timeline events. Answers are `no-store`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

use super::report::{self, Format};
use crate::http::AppState;

pub const MAX_QUERY: usize = 2048;
const MAX_ACCOUNT: usize = 256;
const MAX_RUNS: i64 = 1_000;
const MAX_EVENTS: i64 = 10_000;

/// The report routes, guarded.
pub fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/reports/reconciliation", get(latest))
        .route("/reports/reconciliation/runs", get(runs))
        .route("/accounts/{external_account_number}/events", get(timeline))
        .layer(axum::middleware::from_fn_with_state(state, guard))
}

/// Constant-time comparison of the SHA-256 digests (timing reveals neither content nor length).
fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    use sha2::{Digest, Sha256};
    let (a, b) = (Sha256::digest(a), Sha256::digest(b));
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

/// Whether `header` is `Bearer <token>`.
pub fn bearer_ok(header: Option<&HeaderValue>, token: &SecretString) -> bool {
    let Some(value) = header.and_then(|h| h.to_str().ok()) else {
        return false;
    };
    let Some((scheme, given)) = value.split_once(' ') else {
        return false;
    };
    scheme.eq_ignore_ascii_case("bearer")
        && ct_eq(given.trim().as_bytes(), token.expose_secret().as_bytes())
}

fn plain(code: StatusCode, msg: &'static str) -> Response {
    (code, msg).into_response()
}

async fn guard(State(s): State<AppState>, req: Request, next: Next) -> Response {
    if req.uri().query().map_or(0, str::len) > MAX_QUERY {
        return plain(StatusCode::URI_TOO_LONG, "query string too long\n");
    }
    let has_body = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() != "0")
        || req.headers().contains_key(header::TRANSFER_ENCODING);
    if has_body {
        return plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            "request bodies are not accepted\n",
        );
    }
    if let Some(token) = &s.report_token {
        if !bearer_ok(req.headers().get(header::AUTHORIZATION), token) {
            let mut r = plain(StatusCode::UNAUTHORIZED, "a report token is required\n");
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"event-audit\""),
            );
            return r;
        }
    }
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'"),
    );
    resp
}

#[derive(Deserialize)]
struct ReportQuery {
    run: Option<i64>,
    format: Option<String>,
}

#[derive(Deserialize)]
struct LimitQuery {
    limit: Option<i64>,
}

fn db_error(e: crate::store::StoreError) -> Response {
    tracing::error!(error = %e, "report query failed");
    plain(StatusCode::INTERNAL_SERVER_ERROR, "database error\n")
}

fn json_response<T: serde::Serialize>(v: &T) -> Response {
    match serde_json::to_vec(v) {
        Ok(body) => (
            [(header::CONTENT_TYPE, Format::Json.content_type())],
            Body::from(body),
        )
            .into_response(),
        Err(_) => plain(StatusCode::INTERNAL_SERVER_ERROR, "serialization error\n"),
    }
}

async fn latest(State(s): State<AppState>, Query(q): Query<ReportQuery>) -> Response {
    let format = match q.format.as_deref() {
        None => Format::Json,
        Some(f) => match Format::parse(f) {
            Some(Format::Table) | None => {
                return plain(
                    StatusCode::BAD_REQUEST,
                    "format must be json, csv or html\n",
                )
            }
            Some(f) => f,
        },
    };
    let run = match s.store.reconcile_run(q.run).await {
        Ok(Some(run)) => run,
        Ok(None) => return plain(StatusCode::NOT_FOUND, "no such reconciliation run\n"),
        Err(e) => return db_error(e),
    };
    let body = report::render(&run, format, true);
    let mut resp = ([(header::CONTENT_TYPE, format.content_type())], body).into_response();
    if format == Format::Csv {
        if let Ok(v) = HeaderValue::from_str(&format!(
            "attachment; filename=\"reconciliation-{}.csv\"",
            run.run_id.unwrap_or_default()
        )) {
            resp.headers_mut().insert(header::CONTENT_DISPOSITION, v);
        }
    }
    resp
}

async fn runs(State(s): State<AppState>, Query(q): Query<LimitQuery>) -> Response {
    let limit = q.limit.unwrap_or(100).clamp(1, MAX_RUNS);
    match s.store.reconcile_runs(limit).await {
        Ok(runs) => json_response(&serde_json::json!({ "runs": runs })),
        Err(e) => db_error(e),
    }
}

async fn timeline(
    State(s): State<AppState>,
    Path(ext): Path<String>,
    Query(q): Query<LimitQuery>,
) -> Response {
    if ext.is_empty() || ext.len() > MAX_ACCOUNT {
        return plain(StatusCode::BAD_REQUEST, "account number too long\n");
    }
    let limit = q.limit.unwrap_or(1_000).clamp(1, MAX_EVENTS);
    match s.store.account_timeline(&ext, limit).await {
        Ok(events) => json_response(&serde_json::json!({
            "external_account_number": ext,
            "limit": limit,
            "events": events,
        })),
        Err(e) => db_error(e),
    }
}

/// The report token from a file, or else the environment (`EVENT_AUDIT_REPORT_TOKEN`).
pub type ReportToken = Option<Arc<SecretString>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens() {
        let t = SecretString::from("s3cret");
        let h = |s: &'static str| Some(HeaderValue::from_static(s));
        assert!(bearer_ok(h("Bearer s3cret").as_ref(), &t));
        assert!(bearer_ok(h("bearer s3cret").as_ref(), &t));
        assert!(!bearer_ok(h("Bearer s3cre").as_ref(), &t));
        assert!(!bearer_ok(h("Token s3cret").as_ref(), &t));
        assert!(!bearer_ok(h("s3cret").as_ref(), &t));
        assert!(!bearer_ok(None, &t));
    }
}
