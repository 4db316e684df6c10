//! Secrets (the REST token, the organisation API key, the report token, the NATS password or
//! token): read from a file or an environment variable, never from argv, held as [`SecretString`] so that `Debug` and logs show them redacted.

use std::path::{Path, PathBuf};

use secrecy::SecretString;

/// The environment variable holding the REST token.
pub const REST_TOKEN_ENV: &str = "EVENT_AUDIT_REST_TOKEN";
/// The environment variable holding the report endpoints' bearer token.
pub const REPORT_TOKEN_ENV: &str = "EVENT_AUDIT_REPORT_TOKEN";
/// The environment variable holding the NATS password (of `nats.user`).
pub const NATS_PASSWORD_ENV: &str = "NATS_PASSWORD";
/// The environment variable holding a NATS authentication token.
pub const NATS_TOKEN_ENV: &str = "NATS_TOKEN";
/// The environment variable holding the organisation API key (GraphQL token mutation).
pub const API_KEY_ENV: &str = "EVENT_AUDIT_API_KEY";

/// The largest secret file read (a token, a password or an API key).
pub const MAX_SECRET_FILE: u64 = 64 << 10;

/// Why a secret could not be read. Never contains the secret.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("reading the {what} file {path}: {source}")]
    Read {
        what: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the {what} is empty (from {from})")]
    Empty { what: &'static str, from: String },
}

/// A secret from `file` (trimmed), else from the environment variable `env`; never logged.
pub fn load_secret(
    file: Option<&PathBuf>,
    env: &str,
    what: &'static str,
) -> Result<Option<SecretString>, SecretError> {
    let (text, from) = match file {
        Some(path) => {
            let text = super::layer::read_small(path, MAX_SECRET_FILE).map_err(|source| {
                SecretError::Read {
                    what,
                    path: path.display().to_string(),
                    source,
                }
            })?;
            warn_if_readable_by_others(path, what);
            (text, path.display().to_string())
        }
        None => match std::env::var(env) {
            Ok(t) => (t, format!("the environment variable {env}")),
            Err(_) => return Ok(None),
        },
    };
    let t = text.trim();
    if t.is_empty() {
        return Err(SecretError::Empty { what, from });
    }
    Ok(Some(SecretString::from(t.to_owned())))
}

fn warn_if_readable_by_others(path: &Path, what: &str) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!(file = %path.display(), "the {what} file is readable by group or others");
        }
    }
}
