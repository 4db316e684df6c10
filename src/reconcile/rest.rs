//! The REST interface's vocabulary: the endpoints of the spec, how the token is sent, the
//! client's settings (whose `Debug` never shows the token), and the errors callers branch on.

use std::time::Duration;

use secrecy::SecretString;
use url::Url;

use super::records::ShapeError;

/// How the token goes into the `Authorization` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthScheme {
    /// `Authorization: Token <token>` (the spec's sample request).
    #[default]
    Token,
    /// `Authorization: <token>` (the spec's prose).
    Bare,
}

/// The client's settings.
#[derive(Clone)]
pub struct RestConfig {
    pub base_url: Url,
    pub token: SecretString,
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
}

impl std::fmt::Debug for RestConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestConfig")
            .field("base_url", &redact(&self.base_url))
            .field("token", &"<redacted>")
            .field("scheme", &self.scheme)
            .field("timeout", &self.timeout)
            .field("concurrency", &self.concurrency)
            .field("rate", &self.rate)
            .field("retries", &self.retries)
            .finish()
    }
}

/// A URL without user info, query or fragment, for reports and messages.
pub fn redact(url: &Url) -> String {
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
    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::AccountTransferStatus => "account-transfer-status",
            Endpoint::AllAccountImportProcesses => "all-account-import-processes",
            Endpoint::PendingAccountImportProcesses => "pending-account-import-processes",
            Endpoint::ImportedAccountImportProcesses => "imported-account-import-processes",
            Endpoint::MeterpointStatusesForAccount => "meterpoint-statuses-for-account",
        }
    }

    pub fn is_list(self) -> bool {
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
    #[error("{endpoint}: the REST service refused the token (HTTP {status}); check EVENT_AUDIT_REST_TOKEN or --rest-token-file, and --rest-auth")]
    Auth { endpoint: Endpoint, status: u16 },
    #[error("{endpoint}: unexpected answer, {source}")]
    Shape {
        endpoint: Endpoint,
        source: ShapeError,
    },
    #[error("{endpoint}: no answer after {attempts} attempt(s), last: {last}")]
    Unavailable {
        endpoint: Endpoint,
        attempts: u32,
        last: String,
    },
    #[error("{endpoint}: unexpected HTTP {status}")]
    Status { endpoint: Endpoint, status: u16 },
    #[error("{endpoint}: {problem}")]
    Request { endpoint: Endpoint, problem: String },
}

impl RestError {
    /// The service did not answer (after retries): the account is `unverified`.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, RestError::Unavailable { .. })
    }
}
