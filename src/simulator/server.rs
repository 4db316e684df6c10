//! The simulated Data-Import REST service: the status endpoints of the spec served from the
//! planned batch, behind the token (`Authorization: Token <t>` or the bare token; otherwise
//! 401), with injected faults that are deterministic per request path and its n-th request:
//! `--rest-5xx R` answers 503 to a fraction R of requests, `--rest-slow R` delays a fraction R by
//! `--rest-slow-ms`, and `--rest-down R` makes the per-account endpoints of a fraction R of the
//! accounts always answer 503. Deterministic per path, so concurrency does not change outcomes.
//!
//! Where the spec is silent: the pending list holds staged accounts that are not being
//! processed; an account being processed (`IN_PROGRESS`) is only in the all list; a staged
//! account's status is `UNKNOWN` with an empty account number; an account without import process
//! is 404 (`{"detail": "Not found."}`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{json, Value};

use super::state::{hash, unit, Account, Plan, State as Acct};

/// How list records name the platform account number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Naming {
    /// `service_account_number`, as the spec.
    Spec,
    /// `kraken_account_number`, as live deployments.
    Kraken,
    /// `kraken_account_number` and `account_number`.
    Both,
    /// A shape no deployment sends (`external_id` instead of `external_account_number`), to
    /// test that the client names what is missing.
    Unrecognised,
}

/// Injected REST faults.
#[derive(Debug, Clone, Copy, Default)]
pub struct Faults {
    pub seed: u64,
    pub rate_5xx: f64,
    pub slow: f64,
    pub slow_ms: u64,
}

/// The served platform.
pub struct Platform {
    supplier: String,
    accounts: Vec<Account>,
    index: HashMap<String, usize>,
    all: Bytes,
    pending: Bytes,
    imported: Bytes,
    token: SecretString,
    faults: Faults,
    seen: Mutex<HashMap<String, u64>>,
    pub served: AtomicU64,
    pub failed: AtomicU64,
}

fn record(a: &Account, naming: Naming) -> Value {
    let imported = a.state == Acct::Imported;
    let number = imported.then(|| a.number.clone());
    let created = imported.then(|| a.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    match naming {
        Naming::Spec => json!({"external_account_number": a.external,
            "service_account_number": number, "account_created_at": created}),
        Naming::Kraken => json!({"external_account_number": a.external,
            "kraken_account_number": number, "account_created_at": created}),
        Naming::Both => json!({"external_account_number": a.external,
            "kraken_account_number": number, "account_number": number, "account_created_at": created}),
        Naming::Unrecognised => json!({"external_id": a.external, "number": number}),
    }
}

fn list(plan: &Plan, naming: Naming, keep: impl Fn(Acct) -> bool) -> Vec<Value> {
    plan.accounts
        .iter()
        .filter(|a| keep(a.state))
        .map(|a| record(a, naming))
        .collect()
}

impl Platform {
    pub fn new(
        plan: Plan,
        token: SecretString,
        faults: Faults,
        naming: Naming,
        wrap_imported: bool,
    ) -> Platform {
        let body = |v: Value| Bytes::from(serde_json::to_vec(&v).unwrap_or_default());
        let all = body(Value::Array(list(&plan, naming, |s| s != Acct::Gone)));
        let pending = body(Value::Array(list(&plan, naming, |s| s == Acct::Pending)));
        let imported = Value::Array(list(&plan, naming, |s| s == Acct::Imported));
        let imported = body(if wrap_imported {
            json!({"count": plan.accounts.len(), "next": null, "results": imported})
        } else {
            imported
        });
        let index = plan
            .accounts
            .iter()
            .enumerate()
            .map(|(i, a)| (a.external.clone(), i))
            .collect();
        Platform {
            supplier: plan.supplier,
            accounts: plan.accounts,
            index,
            all,
            pending,
            imported,
            token,
            faults,
            seen: Mutex::new(HashMap::new()),
            served: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        }
    }

    fn authorized(&self, req: &Request) -> bool {
        let Some(v) = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
        else {
            return false;
        };
        let given = v.strip_prefix("Token ").unwrap_or(v).trim();
        let want = self.token.expose_secret().as_bytes();
        given.len() == want.len()
            && given
                .as_bytes()
                .iter()
                .zip(want)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    }
}

pub fn router(p: Arc<Platform>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .fallback(handle)
        .with_state(p)
}

fn answer(code: StatusCode, body: impl Into<Body>) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        body.into(),
    )
        .into_response()
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

async fn handle(State(p): State<Arc<Platform>>, req: Request) -> Response {
    p.served.fetch_add(1, Ordering::Relaxed);
    if req.method() != Method::GET {
        return answer(
            StatusCode::METHOD_NOT_ALLOWED,
            r#"{"detail":"Method not allowed."}"#,
        );
    }
    if !p.authorized(&req) {
        return answer(StatusCode::UNAUTHORIZED, r#"{"detail":"Invalid token."}"#);
    }
    let path = req.uri().path().to_owned();
    let n = {
        let mut seen = p.seen.lock().unwrap_or_else(|e| e.into_inner());
        let c = seen.entry(path.clone()).or_insert(0);
        *c += 1;
        *c
    };
    let f = p.faults;
    let nth = n.to_le_bytes();
    if f.slow > 0.0 && unit(hash(f.seed, &[b"slow", path.as_bytes(), &nth])) < f.slow {
        tokio::time::sleep(Duration::from_millis(f.slow_ms)).await;
    }
    if f.rate_5xx > 0.0 && unit(hash(f.seed, &[b"5xx", path.as_bytes(), &nth])) < f.rate_5xx {
        p.failed.fetch_add(1, Ordering::Relaxed);
        return answer(
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"detail":"Service temporarily unavailable."}"#,
        );
    }
    let segs: Option<Vec<String>> = path
        .trim_matches('/')
        .split('/')
        .map(percent_decode)
        .collect();
    let Some(segs) = segs else {
        return answer(StatusCode::NOT_FOUND, r#"{"detail":"Not found."}"#);
    };
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let not_found = || answer(StatusCode::NOT_FOUND, r#"{"detail":"Not found."}"#);
    match segs.as_slice() {
        ["v1", "data-import", endpoint, supplier] => {
            let ours = *supplier == p.supplier;
            let body = match *endpoint {
                _ if !ours => Bytes::from_static(b"[]"),
                "all-account-import-processes" => p.all.clone(),
                "pending-account-import-processes" => p.pending.clone(),
                "imported-account-import-processes" => p.imported.clone(),
                _ => return not_found(),
            };
            answer(StatusCode::OK, body)
        }
        ["v1", "data-import", endpoint, supplier, ext] => {
            let account = (*supplier == p.supplier)
                .then(|| p.index.get(*ext))
                .flatten()
                .map(|&i| &p.accounts[i]);
            if account.is_some_and(|a| a.down) {
                p.failed.fetch_add(1, Ordering::Relaxed);
                return answer(
                    StatusCode::SERVICE_UNAVAILABLE,
                    r#"{"detail":"Service temporarily unavailable."}"#,
                );
            }
            match (*endpoint, account) {
                ("account-transfer-status", Some(a)) => {
                    let (status, number) = match a.state {
                        Acct::Imported => ("COMPLETED", a.number.as_str()),
                        Acct::InProgress => ("IN_PROGRESS", ""),
                        Acct::Pending => ("UNKNOWN", ""),
                        Acct::Gone => return not_found(),
                    };
                    answer(
                        StatusCode::OK,
                        json!({"status": status, "service_account_number": number}).to_string(),
                    )
                }
                ("meterpoint-statuses-for-account", Some(a)) if a.state == Acct::Imported => {
                    let points: Vec<Value> = a
                        .meter_points
                        .iter()
                        .map(|m| json!({"mpxn": m, "status": "PRE_REGISTRATION"}))
                        .collect();
                    answer(StatusCode::OK, Value::Array(points).to_string())
                }
                ("meterpoint-statuses-for-account", _) => answer(
                    StatusCode::NOT_FOUND,
                    r#"[{"error":"Account not found or no meter points."}]"#,
                ),
                _ => not_found(),
            }
        }
        _ => not_found(),
    }
}
