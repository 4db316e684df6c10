//! The Data-Import REST client: the status endpoints of the spec, with a per-request timeout, a
//! concurrency limit (a semaphore held only while a request is on the wire), a request-rate
//! limit (evenly spaced slots, no bursts), and retries with exponential backoff and equal jitter
//! for 5xx, 429, timeouts and connection errors. A 401 renews the token once ([`Tokens`]) and
//! the request is retried; a 401 after that, or a 403, is [`RestError::Auth`], which stops a
//! run. Redirects are not followed (the token must not travel elsewhere); pagination (`next`) is
//! followed only on the base URL's origin. Errors name the service's host and port.
//!
//! The token is only ever exposed into a header value marked sensitive, and no error, log line
//! or `Debug` output contains it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, RETRY_AFTER};
use reqwest::StatusCode;
use tokio::sync::Semaphore;
use url::Url;

use super::describe;
use super::records::{self, ImportRecord, MeterPointStatus, StatusAnswer};
use super::token::{Renewal, Tokens};
#[allow(unreachable_pub)]
// public through `test_support` (the lint misses re-exports of re-exports)
pub use super::{Endpoint, RestConfig, RestError};
use crate::reconcile::rest::metrics::RestMetrics;

/// Request counts of one client (all endpoints).
#[derive(Debug, Default)]
pub(crate) struct Stats {
    /// Requests asked for (a page of a list counts once), whatever the retries.
    pub(crate) calls: AtomicU64,
    pub(crate) list_calls: AtomicU64,
    pub(crate) account_calls: AtomicU64,
    /// HTTP attempts, retries included.
    pub(crate) attempts: AtomicU64,
    pub(crate) retries: AtomicU64,
}

/// Answers larger than this are refused (a list of 1M records is about 150 MB).
const MAX_BODY: usize = 512 << 20;
const MAX_PAGES: usize = 10_000;
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// 401s a request answers with a newer token before giving up.
const MAX_REAUTH: u32 = 3;

/// Evenly spaced request slots.
struct Pace {
    interval: Option<Duration>,
    next: Mutex<tokio::time::Instant>,
}

impl Pace {
    async fn wait(&self) {
        let Some(interval) = self.interval else {
            return;
        };
        let slot = {
            let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
            let now = tokio::time::Instant::now();
            let slot = (*next).max(now);
            *next = slot + interval;
            slot
        };
        tokio::time::sleep_until(slot).await;
    }
}

/// The client. Cheap to clone.
#[derive(Clone)]
pub struct RestClient {
    http: reqwest::Client,
    cfg: Arc<RestConfig>,
    tokens: Arc<Tokens>,
    /// `host:port` of the service, for messages.
    place: String,
    sem: Arc<Semaphore>,
    pace: Arc<Pace>,
    metrics: Option<RestMetrics>,
    pub(crate) stats: Arc<Stats>,
}

/// A 2xx or 404 answer.
struct Answer {
    status: StatusCode,
    body: Bytes,
}

impl RestClient {
    /// `metrics`: where to count requests (the daemon), or `None` (a command-line run). The
    /// client has its own token.
    pub fn new(cfg: RestConfig, metrics: Option<RestMetrics>) -> Result<RestClient, RestError> {
        let tokens = Tokens::new(
            cfg.token.clone(),
            cfg.scheme,
            cfg.timeout,
            &cfg.tls,
            metrics.clone(),
        )?;
        RestClient::with_tokens(cfg, Arc::new(tokens), metrics)
    }

    /// A client sharing `tokens` (the daemon's runs share one token until it expires).
    pub fn with_tokens(
        cfg: RestConfig,
        tokens: Arc<Tokens>,
        metrics: Option<RestMetrics>,
    ) -> Result<RestClient, RestError> {
        let bad = |problem: String| RestError::Request {
            endpoint: Endpoint::AllAccountImportProcesses,
            problem,
        };
        if !matches!(cfg.base_url.scheme(), "http" | "https") {
            return Err(bad("the REST URL must be http or https".into()));
        }
        let http = crate::tls::https_client(&cfg.tls)
            .map_err(|e| bad(e.to_string()))?
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(cfg.timeout.min(Duration::from_secs(10)))
            .pool_max_idle_per_host(cfg.concurrency.max(1))
            .build()
            .map_err(|e| bad(format!("building the HTTP client: {}", e.without_url())))?;
        let interval = (cfg.rate > 0.0)
            .then(|| Duration::try_from_secs_f64(1.0 / cfg.rate).ok())
            .flatten();
        Ok(RestClient {
            http,
            place: super::place(&cfg.base_url),
            tokens,
            sem: Arc::new(Semaphore::new(cfg.concurrency.max(1))),
            pace: Arc::new(Pace {
                interval,
                next: Mutex::new(tokio::time::Instant::now()),
            }),
            cfg: Arc::new(cfg),
            metrics,
            stats: Arc::new(Stats::default()),
        })
    }

    pub(crate) fn config(&self) -> &RestConfig {
        &self.cfg
    }

    /// The start of a run: the token file is read again (or a token obtained).
    pub async fn begin_run(&self) -> Result<(), RestError> {
        self.tokens.begin_run().await
    }

    /// `{base}/v1/data-import/<endpoint>/<segments...>/`, segments percent-encoded.
    fn url(&self, endpoint: Endpoint, segments: &[&str]) -> Result<Url, RestError> {
        let mut url = self.cfg.base_url.clone();
        url.set_query(None);
        url.set_fragment(None);
        url.path_segments_mut()
            .map_err(|()| RestError::Request {
                endpoint,
                problem: "the REST URL cannot be a base".into(),
            })?
            .pop_if_empty()
            .extend(["v1", "data-import", endpoint.as_str()])
            .extend(segments)
            .push("");
        Ok(url)
    }

    /// All records of a list endpoint (following pagination).
    pub async fn list(
        &self,
        endpoint: Endpoint,
        supplier: &str,
    ) -> Result<Vec<ImportRecord>, RestError> {
        let mut url = self.url(endpoint, &[supplier])?;
        let mut out = Vec::new();
        for _ in 0..MAX_PAGES {
            let answer = self.get(endpoint, url.clone()).await?;
            if answer.status == StatusCode::NOT_FOUND {
                return Err(RestError::Request {
                    endpoint,
                    problem: "HTTP 404 (is the import supplier code right?)".into(),
                });
            }
            let page = records::parse_list(&answer.body)
                .map_err(|source| RestError::Shape { endpoint, source })?;
            out.extend(page.records);
            match page.next {
                None => return Ok(out),
                Some(next) => {
                    let next = url.join(&next).map_err(|_| RestError::Request {
                        endpoint,
                        problem: "the `next` page is not a URL".into(),
                    })?;
                    if next.origin() != self.cfg.base_url.origin() {
                        return Err(RestError::Request {
                            endpoint,
                            problem: "refusing to follow `next` to another origin".into(),
                        });
                    }
                    url = next;
                }
            }
        }
        Err(RestError::Request {
            endpoint,
            problem: format!("more than {MAX_PAGES} pages"),
        })
    }

    /// `account-transfer-status`; `None` on 404 (no account for the code and number).
    pub(crate) async fn transfer_status(
        &self,
        supplier: &str,
        external: &str,
    ) -> Result<Option<StatusAnswer>, RestError> {
        let endpoint = Endpoint::AccountTransferStatus;
        let answer = self
            .get(endpoint, self.url(endpoint, &[supplier, external])?)
            .await?;
        if answer.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        records::parse_status(&answer.body)
            .map(Some)
            .map_err(|source| RestError::Shape { endpoint, source })
    }

    /// `meterpoint-statuses-for-account`; `None` on 404 (not imported, or no meter points).
    pub(crate) async fn meter_points(
        &self,
        supplier: &str,
        external: &str,
    ) -> Result<Option<Vec<MeterPointStatus>>, RestError> {
        let endpoint = Endpoint::MeterpointStatusesForAccount;
        let answer = self
            .get(endpoint, self.url(endpoint, &[supplier, external])?)
            .await?;
        if answer.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        records::parse_meter_points(&answer.body)
            .map(Some)
            .map_err(|source| RestError::Shape { endpoint, source })
    }

    /// One GET with retries. `Ok` for 2xx and 404.
    async fn get(&self, endpoint: Endpoint, url: Url) -> Result<Answer, RestError> {
        let stats = &self.stats;
        stats.calls.fetch_add(1, Ordering::Relaxed);
        if endpoint.is_list() {
            stats.list_calls.fetch_add(1, Ordering::Relaxed);
        } else {
            stats.account_calls.fetch_add(1, Ordering::Relaxed);
        }
        let timeout = if endpoint.is_list() {
            self.cfg.list_timeout
        } else {
            self.cfg.timeout
        };
        let mut attempt: u32 = 0;
        // 401s answered by a newer token (ours, at most one, or another request's).
        let (mut fetched, mut reauth) = (false, 0u32);
        loop {
            attempt += 1;
            stats.attempts.fetch_add(1, Ordering::Relaxed);
            let (outcome, retry_after) = self.attempt(endpoint, &url, timeout).await;
            let last = match outcome {
                Attempt::Done(answer) => return Ok(answer),
                Attempt::Fatal(e) => return Err(e),
                Attempt::Unauthorized { status, generation } => {
                    if status == 401 && reauth < MAX_REAUTH {
                        match self.tokens.renew(generation, !fetched).await? {
                            Renewal::Fetched => fetched = true,
                            Renewal::Newer => {}
                            Renewal::Unchanged => {
                                return Err(self.refused(endpoint, status, fetched));
                            }
                        }
                        reauth += 1;
                        continue;
                    }
                    return Err(self.refused(endpoint, status, fetched));
                }
                Attempt::Retry(why) => why,
            };
            if attempt > self.cfg.retries + reauth {
                return Err(RestError::Unavailable {
                    endpoint,
                    place: self.place.clone(),
                    attempts: attempt,
                    last,
                });
            }
            stats.retries.fetch_add(1, Ordering::Relaxed);
            if let Some(m) = &self.metrics {
                m.retries.inc();
            }
            let wait = retry_after.unwrap_or_else(|| backoff(self.cfg.backoff, attempt));
            tracing::debug!(endpoint = endpoint.as_str(), attempt, reason = %last, wait_ms = wait.as_millis() as u64, "retrying REST request");
            tokio::time::sleep(wait).await;
        }
    }

    fn refused(&self, endpoint: Endpoint, status: u16, renewed: bool) -> RestError {
        RestError::Auth {
            endpoint,
            place: self.place.clone(),
            status,
            renewed,
        }
    }

    async fn attempt(
        &self,
        endpoint: Endpoint,
        url: &Url,
        timeout: Duration,
    ) -> (Attempt, Option<Duration>) {
        let label = endpoint.as_str();
        let Ok(_permit) = self.sem.acquire().await else {
            return (
                Attempt::Fatal(RestError::Request {
                    endpoint,
                    problem: "client closed".into(),
                }),
                None,
            );
        };
        let (generation, auth) = match self.tokens.current().await {
            Ok(t) => t,
            Err(e) => return (Attempt::Fatal(e), None),
        };
        self.pace.wait().await;
        let started = Instant::now();
        let sent = self
            .http
            .get(url.clone())
            .header(AUTHORIZATION, auth)
            .header(reqwest::header::ACCEPT, "application/json")
            .timeout(timeout)
            .send()
            .await;
        let result = match sent {
            Ok(resp) => {
                let status = resp.status();
                let retry_after = resp
                    .headers()
                    .get(RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map(|s| Duration::from_secs(s).min(MAX_BACKOFF));
                let class = format!("{}xx", status.as_u16() / 100);
                let body = if status.is_success() || status == StatusCode::NOT_FOUND {
                    Some(read_body(resp).await)
                } else {
                    None
                };
                let outcome = match (status.as_u16(), body) {
                    (_, Some(Ok(body))) => Attempt::Done(Answer { status, body }),
                    (_, Some(Err(BodyError::TooLarge))) => Attempt::Fatal(RestError::Request {
                        endpoint,
                        problem: format!("answer larger than {MAX_BODY} bytes"),
                    }),
                    (_, Some(Err(BodyError::Io(why)))) => Attempt::Retry(why),
                    (401 | 403, None) => Attempt::Unauthorized {
                        status: status.as_u16(),
                        generation,
                    },
                    (429 | 500..=599, None) => Attempt::Retry(format!("HTTP {}", status.as_u16())),
                    (code, None) => Attempt::Fatal(RestError::Status {
                        endpoint,
                        status: code,
                    }),
                };
                if let Some(m) = &self.metrics {
                    m.requests.with_label_values(&[label, &class]).inc();
                }
                (outcome, retry_after)
            }
            Err(e) => {
                if let Some(m) = &self.metrics {
                    m.requests.with_label_values(&[label, "error"]).inc();
                }
                match crate::tls::refusal(&e) {
                    Some(r) => (
                        Attempt::Fatal(RestError::Tls {
                            endpoint,
                            line: self.cfg.tls.refused(&r, &self.place),
                        }),
                        None,
                    ),
                    None => (Attempt::Retry(describe(&e)), None),
                }
            }
        };
        if let Some(m) = &self.metrics {
            m.seconds
                .with_label_values(&[label])
                .observe(started.elapsed().as_secs_f64());
        }
        result
    }
}

enum Attempt {
    Done(Answer),
    Retry(String),
    Fatal(RestError),
    /// 401 or 403 with the token of this generation.
    Unauthorized {
        status: u16,
        generation: u64,
    },
}

enum BodyError {
    TooLarge,
    Io(String),
}

async fn read_body(mut resp: reqwest::Response) -> Result<Bytes, BodyError> {
    if resp.content_length().unwrap_or(0) > MAX_BODY as u64 {
        return Err(BodyError::TooLarge);
    }
    let mut buf = bytes::BytesMut::new();
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                if buf.len() + chunk.len() > MAX_BODY {
                    return Err(BodyError::TooLarge);
                }
                buf.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(buf.freeze()),
            Err(e) => return Err(BodyError::Io(describe(&e))),
        }
    }
}

/// Exponential backoff with equal jitter: half the step fixed, half random.
pub(crate) fn backoff(base: Duration, attempt: u32) -> Duration {
    let step = base
        .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
        .min(MAX_BACKOFF);
    let half = step / 2;
    let jitter = rand::Rng::gen_range(&mut rand::thread_rng(), 0..=half.as_micros() as u64);
    half + Duration::from_micros(jitter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::SecretString;

    #[test]
    fn backoff_grows_and_is_capped() {
        let base = Duration::from_millis(100);
        for attempt in 1..=20 {
            let step = (base * 2u32.pow((attempt - 1).min(16))).min(MAX_BACKOFF);
            let b = backoff(base, attempt);
            assert!(b >= step / 2 && b <= step, "attempt {attempt}: {b:?}");
        }
    }

    fn client(base: &str) -> RestClient {
        RestClient::new(
            RestConfig {
                base_url: Url::parse(base).expect("url"),
                token: super::super::token::TokenSource::Env(SecretString::from("tok-123")),
                scheme: crate::reconcile::rest::AuthScheme::Token,
                timeout: Duration::from_secs(1),
                list_timeout: Duration::from_secs(1),
                concurrency: 1,
                rate: 0.0,
                retries: 0,
                backoff: Duration::from_millis(1),
                tls: Default::default(),
            },
            None,
        )
        .expect("client")
    }

    #[test]
    fn urls_keep_a_base_path_and_encode_segments() {
        let c = client("https://platform.example/api/");
        let u = c
            .url(Endpoint::AccountTransferStatus, &["SUP", "E/1 2"])
            .expect("url");
        assert_eq!(
            u.as_str(),
            "https://platform.example/api/v1/data-import/account-transfer-status/SUP/E%2F1%202/"
        );
        let c = client("http://127.0.0.1:8080");
        let u = c
            .url(Endpoint::ImportedAccountImportProcesses, &["SUP"])
            .expect("url");
        assert_eq!(
            u.as_str(),
            "http://127.0.0.1:8080/v1/data-import/imported-account-import-processes/SUP/"
        );
    }

    #[test]
    fn the_token_is_not_in_debug_output() {
        let c = client("http://u:p@127.0.0.1/?k=v");
        let dbg = format!("{:?} {:?}", c.config(), c.tokens);
        assert!(!dbg.contains("tok-123"), "{dbg}");
        assert_eq!(c.place, "127.0.0.1:80");
        assert!(!dbg.contains(":p@"), "{dbg}");
    }
}
