//! The simulated Data-Import REST service: the status endpoints of the spec served from the
//! planned batch, behind the token (`Authorization: Token <t>` or the bare token; otherwise
//! 401). Tokens may expire after `--token-uses` requests (401 `Token has expired.`); with an
//! organisation API key, `POST /graphql` runs the token mutation and issues new tokens (any
//! mutation document; `variables.input.APIKey` must be the key; the token is returned under
//! `data.obtainKrakenToken.token`). [`Platform::fix`] makes the platform finish an account (the
//! tests' "the platform fixes some accounts"). Injected faults that are deterministic per request path and its n-th request:
//! `--rest-5xx R` answers 503 to a fraction R of requests, `--rest-slow R` delays a fraction R by
//! `--rest-slow-delay`, and `--rest-down R` makes the per-account endpoints of a fraction R of the
//! accounts always answer 503. Deterministic per path, so concurrency does not change outcomes.
//!
//! Where the spec is silent: the pending list holds staged accounts that are not being
//! processed; an account being processed (`IN_PROGRESS`) is only in the all list; a staged
//! account's status is `UNKNOWN` with an empty account number; an account without import process
//! is 404 (`{"detail": "Not found."}`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use bytes::Bytes;
use chrono::Utc;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{json, Value};

use super::state::{hash, unit, Account, Plan, State as Acct};
use crate::dev::sample;

pub(crate) use crate::config::SimNaming as Naming;

/// Injected REST faults.
#[derive(Debug, Clone, Copy, Default)]
pub struct Faults {
    pub(crate) seed: u64,
    pub(crate) rate_5xx: f64,
    pub(crate) slow: f64,
    pub(crate) slow_ms: u64,
}

/// Who may ask: the configured token, tokens the GraphQL mutation issued, each for `uses`
/// requests (0: unlimited).
pub struct Auth {
    pub(crate) token: SecretString,
    pub(crate) uses: u64,
    pub(crate) api_key: Option<SecretString>,
}

/// The accounts and the list answers built from them.
struct Served {
    accounts: Vec<Account>,
    all: Bytes,
    pending: Bytes,
    imported: Bytes,
}

/// The served platform.
pub struct Platform {
    supplier: String,
    served_state: RwLock<Served>,
    index: HashMap<String, usize>,
    naming: Naming,
    wrap_imported: bool,
    /// Valid tokens and the requests each has left.
    tokens: Mutex<HashMap<String, u64>>,
    uses: u64,
    api_key: Option<SecretString>,
    faults: Faults,
    seen: Mutex<HashMap<String, u64>>,
    pub served: AtomicU64,
    pub failed: AtomicU64,
    /// Requests refused because their token had expired.
    pub expired: AtomicU64,
    /// Tokens issued by the GraphQL mutation.
    pub issued: AtomicU64,
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

fn list(accounts: &[Account], naming: Naming, keep: impl Fn(Acct) -> bool) -> Vec<Value> {
    accounts
        .iter()
        .filter(|a| keep(a.state))
        .map(|a| record(a, naming))
        .collect()
}

fn served(accounts: Vec<Account>, naming: Naming, wrap_imported: bool) -> Served {
    let body = |v: Value| Bytes::from(serde_json::to_vec(&v).unwrap_or_default());
    let all = body(Value::Array(list(&accounts, naming, |s| s != Acct::Gone)));
    let pending = body(Value::Array(list(&accounts, naming, |s| {
        s == Acct::Pending
    })));
    let imported = Value::Array(list(&accounts, naming, |s| s == Acct::Imported));
    let imported = body(if wrap_imported {
        json!({"count": accounts.len(), "next": null, "results": imported})
    } else {
        imported
    });
    Served {
        accounts,
        all,
        pending,
        imported,
    }
}

/// How a rejected token is answered.
enum Refused {
    Missing,
    Expired,
}

impl Platform {
    pub fn new(
        plan: Plan,
        auth: Auth,
        faults: Faults,
        naming: Naming,
        wrap_imported: bool,
    ) -> Platform {
        let index = plan
            .accounts
            .iter()
            .enumerate()
            .map(|(i, a)| (a.external.clone(), i))
            .collect();
        let uses = if auth.uses == 0 { u64::MAX } else { auth.uses };
        let tokens = HashMap::from([(auth.token.expose_secret().trim().to_owned(), uses)]);
        Platform {
            supplier: plan.supplier,
            served_state: RwLock::new(served(plan.accounts, naming, wrap_imported)),
            index,
            naming,
            wrap_imported,
            tokens: Mutex::new(tokens),
            uses,
            api_key: auth.api_key,
            faults,
            seen: Mutex::new(HashMap::new()),
            served: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            expired: AtomicU64::new(0),
            issued: AtomicU64::new(0),
        }
    }

    /// Spends one use of the request's token.
    fn authorize(&self, req: &Request) -> Result<(), Refused> {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.strip_prefix("Token ").unwrap_or(v).trim())
            .ok_or(Refused::Missing)?;
        let mut tokens = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        match tokens.get_mut(given) {
            None => Err(Refused::Missing),
            Some(0) => Err(Refused::Expired),
            Some(left) => {
                *left -= 1;
                Ok(())
            }
        }
    }

    /// The platform finishes account `ext` (processed, or its import completed): imported
    /// now, with its outcome, `account.created` and registration events to publish (in
    /// order). `None` for an account the batch does not have.
    pub fn fix(&self, ext: &str, seed: u64) -> Option<Vec<Vec<u8>>> {
        let i = *self.index.get(ext)?;
        let mut st = self.served_state.write().unwrap_or_else(|e| e.into_inner());
        let now = Utc::now();
        let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(hash(
            seed,
            &[b"fix", ext.as_bytes()],
        ));
        let a = &mut st.accounts[i];
        a.state = Acct::Imported;
        a.anomaly = None;
        a.at = now;
        let t = |ms: i64| {
            (now + chrono::Duration::milliseconds(ms))
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        };
        let mut out = vec![
            sample::cloudevents(
                "data_import.import_process.complete-v1",
                &sample::uuid(&mut rng),
                &t(0),
                &json!({"resource_type": "account", "external_identifier": a.external, "identifier": a.number}),
            ),
            sample::cloudevents(
                "account.created-v1",
                &sample::uuid(&mut rng),
                &t(1),
                &json!({"account_number": a.number, "account_user_emails": ["fixed@example.com"], "is_imported": true}),
            ),
        ];
        for (name, at, payload) in super::registration::events(
            &a.number,
            &format!("JS-FIX-{i}"),
            &a.meter_points,
            crate::reconcile::registration::Registration::Registered,
            now,
            now,
        ) {
            let at = at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            out.push(sample::cloudevents(
                name,
                &sample::uuid(&mut rng),
                &at,
                &payload,
            ));
        }
        let accounts = std::mem::take(&mut st.accounts);
        *st = served(accounts, self.naming, self.wrap_imported);
        Some(out)
    }
}

pub(crate) fn router(p: Arc<Platform>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/graphql", post(graphql))
        .fallback(handle)
        .with_state(p)
}

/// The token mutation: a new token for the organisation API key.
async fn graphql(State(p): State<Arc<Platform>>, body: Bytes) -> Response {
    p.served.fetch_add(1, Ordering::Relaxed);
    let Some(key) = &p.api_key else {
        return answer(StatusCode::NOT_FOUND, r#"{"detail":"Not found."}"#);
    };
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let is_mutation = v["query"].as_str().is_some_and(|q| q.contains("mutation"));
    let given = v.pointer("/variables/input/APIKey").and_then(Value::as_str);
    if !is_mutation || given != Some(key.expose_secret().trim()) {
        return answer(
            StatusCode::OK,
            r#"{"data":null,"errors":[{"message":"Invalid API key.","extensions":{"errorCode":"KT-CT-1139"}}]}"#,
        );
    }
    let n = p.issued.fetch_add(1, Ordering::Relaxed) + 1;
    let token = format!(
        "sim-{n}-{:016x}",
        hash(p.faults.seed, &[b"token", &n.to_le_bytes()])
    );
    p.tokens
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(token.clone(), p.uses);
    answer(
        StatusCode::OK,
        json!({"data": {"obtainKrakenToken": {"token": token}}}).to_string(),
    )
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
    match p.authorize(&req) {
        Ok(()) => {}
        Err(Refused::Missing) => {
            return answer(StatusCode::UNAUTHORIZED, r#"{"detail":"Invalid token."}"#)
        }
        Err(Refused::Expired) => {
            p.expired.fetch_add(1, Ordering::Relaxed);
            return answer(
                StatusCode::UNAUTHORIZED,
                r#"{"detail":"Token has expired."}"#,
            );
        }
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
    let st = p.served_state.read().unwrap_or_else(|e| e.into_inner());
    match segs.as_slice() {
        ["v1", "data-import", endpoint, supplier] => {
            let ours = *supplier == p.supplier;
            let body = match *endpoint {
                _ if !ours => Bytes::from_static(b"[]"),
                "all-account-import-processes" => st.all.clone(),
                "pending-account-import-processes" => st.pending.clone(),
                "imported-account-import-processes" => st.imported.clone(),
                _ => return not_found(),
            };
            answer(StatusCode::OK, body)
        }
        ["v1", "data-import", endpoint, supplier, ext] => {
            let account = (*supplier == p.supplier)
                .then(|| p.index.get(*ext))
                .flatten()
                .map(|&i| &st.accounts[i]);
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
