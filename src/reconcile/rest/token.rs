//! The REST token, which expires: from the environment (fixed), from a file (read again at the
//! start of every run and after a 401, so an external rotator works), or obtained with the
//! platform's GraphQL token mutation (ObtainToken in the spec), authenticated by the
//! organisation API key, and obtained again after a 401. A 401 renews the token once per request
//! and the request is retried; concurrent requests that saw the same token share one renewal
//! (a request whose token another request renewed meanwhile retries with the new one, at most
//! three times). Renewals are counted (`event_audit_rest_token_refreshes_total{source}`).
//!
//! The mutation is sent as `{"query": <document>, "variables": {"input": {"APIKey": <key>}}}`
//! and the token read from `data.<first field>.token` (the platform's
//! `obtainKrakenToken { token }` by default; the document is configurable because the spec
//! does not show it). Neither the key nor a token ever appears in an error, a log line or
//! `Debug` output.

use std::path::PathBuf;
use std::time::Duration;

use reqwest::header::HeaderValue;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{json, Value};
use url::Url;

use super::{redact, AuthScheme, RestError};
use crate::config::secrets;
use crate::reconcile::rest::metrics::RestMetrics;

/// The largest answer to the GraphQL token mutation read (a token and a few errors).
const MAX_TOKEN_ANSWER: usize = 1 << 20;

/// Where the token comes from.
#[derive(Debug, Clone)]
pub enum TokenSource {
    /// `EVENT_AUDIT_REST_TOKEN`, fixed for the process (a 401 cannot be repaired).
    Env(SecretString),
    /// A file, read at the start of every run and after a 401.
    File(PathBuf),
    /// The GraphQL token mutation.
    GraphQl {
        url: Url,
        api_key: SecretString,
        mutation: String,
    },
}

impl TokenSource {
    /// Every value of [`TokenSource::label`].
    pub(crate) const LABELS: [&'static str; 3] = ["environment", "file", "graphql"];

    /// The metric label.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            TokenSource::Env(_) => "environment",
            TokenSource::File(_) => "file",
            TokenSource::GraphQl { .. } => "graphql",
        }
    }
}

/// What a renewal after a 401 found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Renewal {
    /// Another request renewed the token since this one was sent: retry with it.
    Newer,
    /// This request obtained a new token: retry with it.
    Fetched,
    /// No newer token: the 401 stands.
    Unchanged,
}

#[derive(Default)]
struct State {
    header: Option<HeaderValue>,
    /// Bumped at every new token; a 401 names the generation it saw.
    generation: u64,
}

/// The current token, shared by the requests of a run (and, in the daemon, by every run).
pub struct Tokens {
    source: TokenSource,
    scheme: AuthScheme,
    timeout: Duration,
    http: reqwest::Client,
    /// The GraphQL endpoint's TLS, for the message of a refused certificate.
    tls: crate::tls::Peer,
    state: tokio::sync::Mutex<State>,
    metrics: Option<RestMetrics>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("source", &self.source.label())
            .finish()
    }
}

fn token_error(problem: impl Into<String>) -> RestError {
    RestError::Token {
        problem: problem.into(),
    }
}

impl Tokens {
    pub fn new(
        source: TokenSource,
        scheme: AuthScheme,
        timeout: Duration,
        tls: &crate::tls::Peer,
        metrics: Option<RestMetrics>,
    ) -> Result<Tokens, RestError> {
        let mut tls = tls.clone();
        tls.name = "the platform's GraphQL endpoint";
        let http = crate::tls::https_client(&tls)
            .map_err(|e| token_error(e.to_string()))?
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|e| token_error(format!("building the HTTP client: {}", e.without_url())))?;
        if let Some(m) = &metrics {
            // The series exists (at 0) from the start, so that a rate over it has data.
            m.token_refreshes.with_label_values(&[source.label()]);
        }
        Ok(Tokens {
            source,
            scheme,
            timeout,
            http,
            tls,
            state: tokio::sync::Mutex::new(State::default()),
            metrics,
        })
    }

    /// The start of a run: a token file is read again; a missing token is obtained.
    pub async fn begin_run(&self) -> Result<(), RestError> {
        let mut st = self.state.lock().await;
        if st.header.is_none() || matches!(self.source, TokenSource::File(_)) {
            let header = self.load().await?;
            if st.header.as_ref() != Some(&header) {
                st.header = Some(header);
                st.generation += 1;
            }
        }
        Ok(())
    }

    /// The current `Authorization` value and its generation.
    pub(crate) async fn current(&self) -> Result<(u64, HeaderValue), RestError> {
        let mut st = self.state.lock().await;
        if st.header.is_none() {
            st.header = Some(self.load().await?);
            st.generation += 1;
        }
        let header = st.header.clone().ok_or_else(|| token_error("no token"))?;
        Ok((st.generation, header))
    }

    /// After a 401 seen with token generation `seen`: [`Renewal::Newer`] when another request
    /// renewed it meanwhile; else, when `may_fetch`, a new token ([`Renewal::Fetched`], or
    /// [`Renewal::Unchanged`] when it cannot change: environment, or the file still holds the
    /// refused token).
    pub(crate) async fn renew(&self, seen: u64, may_fetch: bool) -> Result<Renewal, RestError> {
        let mut st = self.state.lock().await;
        if st.generation != seen {
            return Ok(Renewal::Newer);
        }
        if !may_fetch || matches!(self.source, TokenSource::Env(_)) {
            return Ok(Renewal::Unchanged);
        }
        let header = self.load().await?;
        if st.header.as_ref() == Some(&header) {
            return Ok(Renewal::Unchanged);
        }
        st.header = Some(header);
        st.generation += 1;
        super::metrics::token_renewed(self.metrics.as_ref(), self.source.label());
        Ok(Renewal::Fetched)
    }

    async fn load(&self) -> Result<HeaderValue, RestError> {
        let token = match &self.source {
            TokenSource::Env(t) => t.clone(),
            TokenSource::File(path) => {
                secrets::load_secret(Some(path), secrets::REST_TOKEN_ENV, "REST token")
                    .map_err(|e| token_error(e.to_string()))?
                    .ok_or_else(|| token_error("no REST token"))?
            }
            TokenSource::GraphQl {
                url,
                api_key,
                mutation,
            } => self.obtain(url, api_key, mutation).await?,
        };
        let value = match self.scheme {
            AuthScheme::Token => format!("Token {}", token.expose_secret().trim()),
            AuthScheme::Bare => token.expose_secret().trim().to_owned(),
        };
        let mut header = HeaderValue::from_str(&value)
            .map_err(|_| token_error("the REST token is not a valid header value"))?;
        header.set_sensitive(true);
        Ok(header)
    }

    /// Runs the token mutation.
    async fn obtain(
        &self,
        url: &Url,
        key: &SecretString,
        mutation: &str,
    ) -> Result<SecretString, RestError> {
        let at = redact(url);
        let body = json!({
            "query": mutation,
            "variables": {"input": {"APIKey": key.expose_secret()}},
        });
        let resp = self
            .http
            .post(url.clone())
            .json(&body)
            .timeout(self.timeout)
            .send()
            .await
            .map_err(|e| match crate::tls::refusal(&e) {
                Some(r) => token_error(self.tls.refused(&r, &super::place(url))),
                None => token_error(format!(
                    "GraphQL token mutation at {at}: {}",
                    super::describe(&e)
                )),
            })?;
        let status = resp.status();
        let mut resp = resp;
        let mut bytes = Vec::new();
        loop {
            let chunk = resp.chunk().await.map_err(|e| {
                token_error(format!(
                    "GraphQL token mutation at {at}: {}",
                    super::describe(&e)
                ))
            })?;
            let Some(chunk) = chunk else { break };
            if bytes.len() + chunk.len() > MAX_TOKEN_ANSWER {
                return Err(token_error(format!(
                    "GraphQL token mutation at {at}: an answer larger than {MAX_TOKEN_ANSWER} bytes, larger than a token's can be"
                )));
            }
            bytes.extend_from_slice(&chunk);
        }
        let v: Value = serde_json::from_slice(&bytes).map_err(|_| {
            token_error(format!(
                "GraphQL token mutation at {at}: HTTP {}, not JSON",
                status.as_u16()
            ))
        })?;
        if let Some(errors) = v.get("errors").and_then(Value::as_array) {
            let codes: Vec<String> = errors
                .iter()
                .filter_map(|e| {
                    let code = e.pointer("/extensions/errorCode").and_then(Value::as_str);
                    let msg = e.get("message").and_then(Value::as_str);
                    code.or(msg)
                        .filter(|m| !m.contains(key.expose_secret()))
                        .map(|m| m.chars().take(120).collect())
                })
                .collect();
            return Err(token_error(format!(
                "GraphQL token mutation at {at} refused (HTTP {}): {}; check the organisation \
                 API key (--api-key-file or {}) and --token-mutation",
                status.as_u16(),
                if codes.is_empty() {
                    "errors without message".to_owned()
                } else {
                    codes.join("; ")
                },
                secrets::API_KEY_ENV
            )));
        }
        let token = v
            .get("data")
            .and_then(Value::as_object)
            .and_then(|d| d.values().next())
            .and_then(|f| f.get("token"))
            .and_then(Value::as_str)
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| {
                token_error(format!(
                    "GraphQL token mutation at {at}: HTTP {}, no `data.<field>.token` in the answer",
                    status.as_u16()
                ))
            })?;
        Ok(SecretString::from(token.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_file_is_read_again_at_each_run_and_renewed_only_when_it_changed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("token");
        std::fs::write(&path, "one\n").expect("write");
        let t = Tokens::new(
            TokenSource::File(path.clone()),
            AuthScheme::Token,
            Duration::from_secs(1),
            &Default::default(),
            None,
        )
        .expect("tokens");
        t.begin_run().await.expect("read");
        let (g1, h1) = t.current().await.expect("token");
        assert_eq!(h1.to_str().ok(), Some("Token one"));
        // The same token after a 401: nothing to renew.
        assert_eq!(t.renew(g1, true).await.expect("renew"), Renewal::Unchanged);
        std::fs::write(&path, "two").expect("rotate");
        assert_eq!(t.renew(g1, false).await.expect("renew"), Renewal::Unchanged);
        assert_eq!(t.renew(g1, true).await.expect("renew"), Renewal::Fetched);
        let (g2, h2) = t.current().await.expect("token");
        assert!(g2 > g1 && h2.to_str().ok() == Some("Token two"));
        // A second request that saw the old token shares the renewal.
        assert_eq!(t.renew(g1, true).await.expect("renew"), Renewal::Newer);
        std::fs::write(&path, "three").expect("rotate");
        t.begin_run().await.expect("read");
        assert_eq!(
            t.current().await.expect("token").1.to_str().ok(),
            Some("Token three")
        );
        assert!(format!("{t:?}").contains("file") && !format!("{t:?}").contains("three"));
    }

    #[tokio::test]
    async fn an_environment_token_cannot_be_renewed() {
        let t = Tokens::new(
            TokenSource::Env(SecretString::from("env-tok")),
            AuthScheme::Bare,
            Duration::from_secs(1),
            &Default::default(),
            None,
        )
        .expect("tokens");
        let (g, h) = t.current().await.expect("token");
        assert_eq!(h.to_str().ok(), Some("env-tok"));
        assert!(h.is_sensitive());
        assert_eq!(t.renew(g, true).await.expect("renew"), Renewal::Unchanged);
    }
}
