//! The platform's Data-Import REST interface: its vocabulary here (the endpoints of the spec,
//! the client's settings, whose `Debug` never shows the token, and the errors callers branch
//! on), the [`client`], the answers as data ([`records`]), and the token that expires
//! ([`token`]).

pub(crate) mod client;
pub(crate) mod metrics;
pub(crate) mod records;
pub(crate) mod token;

use std::time::Duration;

use url::Url;

pub(crate) use crate::config::AuthScheme;
use crate::config::{secrets, RestSettings};
use records::ShapeError;
use token::TokenSource;

/// The client's settings.
#[derive(Clone)]
pub struct RestConfig {
    pub base_url: Url,
    pub token: TokenSource,
    pub scheme: AuthScheme,
    /// Per request, per-account endpoints.
    pub timeout: Duration,
    /// Per request, list endpoints (they carry the whole batch).
    pub list_timeout: Duration,
    pub concurrency: usize,
    /// Requests per second; 0 = no limit.
    pub rate: f64,
    /// Retries after the first attempt.
    pub retries: u32,
    /// The first backoff; doubled per retry, capped at 10 s.
    pub backoff: Duration,
    /// TLS: the CA file and client certificate (`rest.tls_*`), besides the system's store.
    pub tls: crate::tls::Peer,
}

impl std::fmt::Debug for RestConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestConfig")
            .field("base_url", &redact(&self.base_url))
            .field("token", &self.token.label())
            .field("scheme", &self.scheme)
            .field("timeout", &self.timeout)
            .field("concurrency", &self.concurrency)
            .field("rate", &self.rate)
            .field("retries", &self.retries)
            .finish()
    }
}

/// Why the REST client cannot be configured.
#[derive(Debug, thiserror::Error)]
pub enum RestConfigError {
    #[error("--rest-url (or EVENT_AUDIT_REST_URL, or rest.url in the config file) is required")]
    NoUrl,
    #[error("--rest-url is not a URL")]
    BadUrl,
    #[error(
        "no REST token: set {} or pass --rest-token-file",
        secrets::REST_TOKEN_ENV
    )]
    NoToken,
    #[error(transparent)]
    Secret(#[from] secrets::SecretError),
    #[error(
        "--graphql-url is set but no organisation API key: set {} or pass --api-key-file",
        secrets::API_KEY_ENV
    )]
    NoApiKey,
    #[error("--graphql-url is not a URL")]
    BadGraphQlUrl,
}

impl RestConfig {
    /// The client's settings: the URL and a token source required (a token file must be
    /// readable now; it is read again at every run).
    pub(crate) fn from_settings(s: &RestSettings) -> Result<RestConfig, RestConfigError> {
        let raw = s.url.as_deref().ok_or(RestConfigError::NoUrl)?;
        let base_url = Url::parse(raw).map_err(|_| RestConfigError::BadUrl)?;
        let token = match (&s.graphql_url, &s.token_file) {
            (Some(g), _) => TokenSource::GraphQl {
                url: Url::parse(g).map_err(|_| RestConfigError::BadGraphQlUrl)?,
                api_key: secrets::load_secret(
                    s.api_key_file.as_ref(),
                    secrets::API_KEY_ENV,
                    "organisation API key",
                )?
                .ok_or(RestConfigError::NoApiKey)?,
                mutation: s.token_mutation.clone(),
            },
            (None, Some(file)) => {
                secrets::load_secret(Some(file), secrets::REST_TOKEN_ENV, "REST token")?
                    .ok_or(RestConfigError::NoToken)?;
                TokenSource::File(file.clone())
            }
            (None, None) => TokenSource::Env(
                secrets::load_secret(None, secrets::REST_TOKEN_ENV, "REST token")?
                    .ok_or(RestConfigError::NoToken)?,
            ),
        };
        Ok(RestConfig {
            base_url,
            token,
            scheme: s.auth,
            timeout: s.timeout.get(),
            list_timeout: s.list_timeout.get(),
            concurrency: s.concurrency,
            rate: s.rate,
            retries: s.retries,
            backoff: s.backoff.get(),
            tls: crate::tls::Peer::new(
                "the REST service",
                "rest",
                s.tls_ca_file.as_ref(),
                s.tls_cert_file.as_ref(),
                s.tls_key_file.as_ref(),
            ),
        })
    }
}

impl RestConfig {
    /// The settings as stored with a run: no secret.
    pub(crate) fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "rest_url": redact(&self.base_url),
            "rest_auth": self.scheme.as_str(),
            "rest_token": self.token.label(),
            "rest_concurrency": self.concurrency,
            "rest_rate": self.rate,
            "rest_retries": self.retries,
            "rest_timeout_ms": u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX),
        })
    }
}

/// A transport error in words, without the URL (the caller names the place).
pub(crate) fn describe(e: &reqwest::Error) -> String {
    let io = {
        let mut source = std::error::Error::source(e);
        let mut kind = None;
        while let Some(s) = source {
            if let Some(io) = s.downcast_ref::<std::io::Error>() {
                kind = Some(io.kind());
            }
            source = s.source();
        }
        kind
    };
    let why = match io {
        Some(std::io::ErrorKind::ConnectionRefused) => ": connection refused (is the service up?)",
        Some(std::io::ErrorKind::ConnectionReset) => ": connection reset",
        Some(std::io::ErrorKind::TimedOut) => ": timed out",
        _ => "",
    };
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        format!("connection failed{why}")
    } else if e.is_body() || e.is_decode() {
        "connection broken while reading the answer".into()
    } else {
        format!("request failed{why}")
    }
}

/// `host:port` of a URL, for messages.
pub(crate) fn place(url: &Url) -> String {
    match (url.host_str(), url.port_or_known_default()) {
        (Some(h), Some(p)) => format!("{h}:{p}"),
        (Some(h), None) => h.to_owned(),
        _ => "<no host>".to_owned(),
    }
}

/// A URL without user info, query or fragment, for reports and messages.
pub(crate) fn redact(url: &Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.set_query(None);
    u.set_fragment(None);
    u.to_string()
}

/// The endpoints, named as in the spec (and in metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    AccountTransferStatus,
    AllAccountImportProcesses,
    PendingAccountImportProcesses,
    ImportedAccountImportProcesses,
    MeterpointStatusesForAccount,
}

impl Endpoint {
    pub const ALL: [Endpoint; 5] = [
        Endpoint::AccountTransferStatus,
        Endpoint::AllAccountImportProcesses,
        Endpoint::PendingAccountImportProcesses,
        Endpoint::ImportedAccountImportProcesses,
        Endpoint::MeterpointStatusesForAccount,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::AccountTransferStatus => "account-transfer-status",
            Endpoint::AllAccountImportProcesses => "all-account-import-processes",
            Endpoint::PendingAccountImportProcesses => "pending-account-import-processes",
            Endpoint::ImportedAccountImportProcesses => "imported-account-import-processes",
            Endpoint::MeterpointStatusesForAccount => "meterpoint-statuses-for-account",
        }
    }

    pub(crate) fn is_list(self) -> bool {
        matches!(
            self,
            Endpoint::AllAccountImportProcesses
                | Endpoint::PendingAccountImportProcesses
                | Endpoint::ImportedAccountImportProcesses
        )
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Errors at the REST boundary. [`RestError::Unavailable`] makes one account `unverified`;
/// everything else stops the run ("could not complete").
#[derive(Debug, thiserror::Error)]
pub enum RestError {
    #[error("{endpoint} at {place}: the REST service refused the token (HTTP {status}){}; check EVENT_AUDIT_REST_TOKEN, --rest-token-file or --graphql-url, and --rest-auth", if *.renewed { " also after renewing it" } else { "" })]
    Auth {
        endpoint: Endpoint,
        place: String,
        status: u16,
        renewed: bool,
    },
    #[error("REST token: {problem}")]
    Token { problem: String },
    #[error("{endpoint}: unexpected answer, {source}")]
    Shape {
        endpoint: Endpoint,
        source: ShapeError,
    },
    #[error("{endpoint} at {place}: no answer after {attempts} attempt(s), last: {last}")]
    Unavailable {
        endpoint: Endpoint,
        place: String,
        attempts: u32,
        last: String,
    },
    #[error("{endpoint}: unexpected HTTP {status}")]
    Status { endpoint: Endpoint, status: u16 },
    #[error("{endpoint}: {problem}")]
    Request { endpoint: Endpoint, problem: String },
    /// The service's certificate (or the handshake) refused: one line, never retried.
    #[error("{endpoint}: {line}")]
    Tls { endpoint: Endpoint, line: String },
}

impl RestError {
    /// The service did not answer (after retries): the account is `unverified`.
    pub(crate) fn is_unavailable(&self) -> bool {
        matches!(self, RestError::Unavailable { .. })
    }
}
