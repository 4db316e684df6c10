//! The report endpoints on the daemon's HTTP listener (next to `/metrics`):
//! `GET /reports/reconciliation` (latest run, `?run=ID`, `?batch=NAME[&supplier=S]`,
//! `?format=json|csv|html`), `GET /reports/reconciliation/runs` (history, `?limit=`,
//! `?batch=`), `GET /reports/reconciliation/diff` (`?from=&to=`, or the latest two runs of
//! `?batch=`; `?format=json|html`), `GET /reports/batches`, and
//! `GET /accounts/{external_account_number}/events` (the account's timeline, `?limit=`,
//! `?format=json|html`).
//!
//! They carry personal data. When a report token is configured they require
//! `Authorization: Bearer <token>` (compared in constant time), a signed link, or the session
//! cookie a signed link sets ([`super::links`]). Requests are bounded: GET only, no body (413),
//! a query string of at most 2 KiB (414), an account number of at most 256 bytes, `limit` at
//! most 1,000 runs or 10,000 timeline events. Answers are `no-store`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

use super::links;
use crate::reconcile::batch::{batch_scope, Batch};
use crate::reconcile::compare::{self, CompareError};
use crate::reconcile::report::{self, changes, html, Format};
use crate::reconcile::store::ReconcileStore;

/// What the report routes need: the reconciliation store and the token, nothing else.
#[derive(Clone)]
pub(crate) struct ReportState {
    pub(crate) store: ReconcileStore,
    /// The bearer token the routes require; open when `None`.
    pub(crate) token: ReportToken,
}

pub(crate) const MAX_QUERY: usize = 2048;
const MAX_ACCOUNT: usize = 256;
const MAX_RUNS: i64 = 1_000;
const MAX_EVENTS: i64 = 10_000;

/// The report routes, guarded.
pub(crate) fn router(state: ReportState) -> Router {
    Router::new()
        .route("/reports/reconciliation", get(latest))
        .route("/reports/reconciliation/runs", get(runs))
        .route("/reports/reconciliation/diff", get(diff))
        .route("/reports/batches", get(batches))
        .route("/accounts/{external_account_number}/events", get(timeline))
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
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
pub(crate) fn bearer_ok(header: Option<&HeaderValue>, token: &SecretString) -> bool {
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

/// The 401 answer: a page saying how to get in for a browser, a line for anything else.
fn unauthorized(wants_html: bool) -> Response {
    let mut r = if wants_html {
        let body = html::page(
            "A report token is required",
            "<p>These reports hold personal data. Open them with a signed link: \
             <code>event-audit reconcile link [--run ID | --batch NAME]</code> prints one \
             (it needs the report token and <code>--public-url</code>); the link opens a \
             session in this browser until it expires. Scripts send \
             <code>Authorization: Bearer &lt;token&gt;</code>.</p>\n",
        );
        (StatusCode::UNAUTHORIZED, Html(body)).into_response()
    } else {
        plain(StatusCode::UNAUTHORIZED, "a report token is required\n")
    };
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"event-audit\""),
    );
    r
}

async fn guard(State(s): State<ReportState>, req: Request, next: Next) -> Response {
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
    let mut session = None;
    if let Some(token) = &s.token {
        let now = chrono::Utc::now();
        let h = req.headers();
        let cookie = h
            .get(header::COOKIE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| links::session_ok(token, c, now));
        let link = req
            .uri()
            .query()
            .and_then(|q| links::verify_link(token, req.uri().path(), q, now));
        if !(bearer_ok(h.get(header::AUTHORIZATION), token) || cookie || link.is_some()) {
            let wants_html = h
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|a| a.contains("text/html"));
            return unauthorized(wants_html);
        }
        session = link.map(|expires| links::session_cookie(token, expires, now));
    }
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    if let Some(v) = session.and_then(|c| HeaderValue::from_str(&c).ok()) {
        h.insert(header::SET_COOKIE, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    resp
}

#[derive(Deserialize)]
struct ReportQuery {
    run: Option<i64>,
    batch: Option<String>,
    supplier: Option<String>,
    format: Option<String>,
}

#[derive(Deserialize)]
struct LimitQuery {
    limit: Option<i64>,
    batch: Option<String>,
    supplier: Option<String>,
    format: Option<String>,
}

#[derive(Deserialize)]
struct DiffQuery {
    from: Option<i64>,
    to: Option<i64>,
    batch: Option<String>,
    supplier: Option<String>,
    format: Option<String>,
}

fn db_error(e: crate::db::DbError) -> Response {
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

/// A refused request: its status and message.
struct Refused(StatusCode, &'static str);

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        plain(self.0, self.1)
    }
}

/// `format=` among `allowed` (JSON by default).
fn format_of(f: Option<&str>, allowed: &[Format]) -> Result<Format, Refused> {
    match f {
        None => Ok(Format::Json),
        Some(f) => match Format::parse(f) {
            Some(f) if allowed.contains(&f) => Ok(f),
            _ => Err(Refused(StatusCode::BAD_REQUEST, "unsupported format\n")),
        },
    }
}

/// The one batch named `name` (of `supplier` when given).
async fn one_batch(
    store: &ReconcileStore,
    supplier: Option<&str>,
    name: &str,
) -> Result<Batch, Refused> {
    let mut found = store.find_batches(supplier, name).await.map_err(|e| {
        tracing::error!(error = %e, "report query failed");
        Refused(StatusCode::INTERNAL_SERVER_ERROR, "database error\n")
    })?;
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(Refused(StatusCode::NOT_FOUND, "no such batch\n")),
        _ => Err(Refused(
            StatusCode::BAD_REQUEST,
            "several suppliers have a batch of that name: add supplier=\n",
        )),
    }
}

async fn latest(State(s): State<ReportState>, Query(q): Query<ReportQuery>) -> Response {
    let format = match format_of(
        q.format.as_deref(),
        &[Format::Json, Format::Csv, Format::Html],
    ) {
        Ok(f) => f,
        Err(r) => return r.into_response(),
    };
    let id = match (&q.run, &q.batch) {
        (Some(id), _) => Some(*id),
        (None, Some(name)) => {
            let b = match one_batch(&s.store, q.supplier.as_deref(), name).await {
                Ok(b) => b,
                Err(r) => return r.into_response(),
            };
            match s.store.reconcile_runs(1, Some(&batch_scope(b.id))).await {
                Ok(runs) => match runs.first() {
                    Some(r) => Some(r.run_id),
                    None => return plain(StatusCode::NOT_FOUND, "the batch has no run yet\n"),
                },
                Err(e) => return db_error(e),
            }
        }
        (None, None) => None,
    };
    let run = match s.store.reconcile_run(id).await {
        Ok(Some(run)) => run,
        Ok(None) => return plain(StatusCode::NOT_FOUND, "no such reconciliation run\n"),
        Err(e) => return db_error(e),
    };
    let changes = if format == Format::Html {
        match compare::since_previous(&s.store, &run).await {
            Ok(d) => d,
            Err(e) => return db_error(e),
        }
    } else {
        None
    };
    let body = report::render(&run, format, true, changes.as_ref());
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

async fn runs(State(s): State<ReportState>, Query(q): Query<LimitQuery>) -> Response {
    let limit = q.limit.unwrap_or(100).clamp(1, MAX_RUNS);
    let scope = match &q.batch {
        Some(name) => match one_batch(&s.store, q.supplier.as_deref(), name).await {
            Ok(b) => Some(batch_scope(b.id)),
            Err(r) => return r.into_response(),
        },
        None => None,
    };
    match s.store.reconcile_runs(limit, scope.as_deref()).await {
        Ok(runs) => json_response(&serde_json::json!({ "runs": runs })),
        Err(e) => db_error(e),
    }
}

async fn diff(State(s): State<ReportState>, Query(q): Query<DiffQuery>) -> Response {
    let format = match format_of(q.format.as_deref(), &[Format::Json, Format::Html]) {
        Ok(f) => f,
        Err(r) => return r.into_response(),
    };
    let found = match (q.from, q.to, &q.batch) {
        (Some(a), Some(b), _) => compare::between(&s.store, a, b).await,
        (None, None, Some(name)) => match one_batch(&s.store, q.supplier.as_deref(), name).await {
            Ok(b) => compare::latest_two(&s.store, &batch_scope(b.id)).await,
            Err(r) => return r.into_response(),
        },
        _ => {
            return plain(
                StatusCode::BAD_REQUEST,
                "give from= and to= (run ids), or batch=\n",
            )
        }
    };
    let d = match found {
        Ok(d) => d,
        Err(CompareError::Db(e)) => return db_error(e),
        Err(CompareError::NoRun(_)) => return plain(StatusCode::NOT_FOUND, "no such run\n"),
        Err(e) => return (StatusCode::BAD_REQUEST, format!("{e}\n")).into_response(),
    };
    (
        [(header::CONTENT_TYPE, format.content_type())],
        changes::render(&d, format),
    )
        .into_response()
}

async fn batches(State(s): State<ReportState>) -> Response {
    match s.store.batches(None).await {
        Ok(b) => json_response(&serde_json::json!({ "batches": b })),
        Err(e) => db_error(e),
    }
}

async fn timeline(
    State(s): State<ReportState>,
    Path(ext): Path<String>,
    Query(q): Query<LimitQuery>,
) -> Response {
    if ext.is_empty() || ext.len() > MAX_ACCOUNT {
        return plain(StatusCode::BAD_REQUEST, "account number too long\n");
    }
    let format = match format_of(q.format.as_deref(), &[Format::Json, Format::Html]) {
        Ok(f) => f,
        Err(r) => return r.into_response(),
    };
    let limit = q.limit.unwrap_or(1_000).clamp(1, MAX_EVENTS);
    match s.store.account_timeline(&ext, limit).await {
        Ok(events) if format == Format::Html => {
            Html(html::timeline(&ext, &events, limit)).into_response()
        }
        Ok(events) => json_response(&serde_json::json!({
            "external_account_number": ext,
            "limit": limit,
            "events": events,
        })),
        Err(e) => db_error(e),
    }
}

/// The report token from a file, or else the environment (`EVENT_AUDIT_REPORT_TOKEN`).
pub(crate) type ReportToken = Option<Arc<SecretString>>;

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
