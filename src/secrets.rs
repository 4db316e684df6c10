//! Secrets (the REST token, the report token): read from a file or an environment variable,
//! never from argv, held as [`SecretString`] so that `Debug` and logs show them redacted.

use std::path::{Path, PathBuf};

use anyhow::Context;
use secrecy::SecretString;

/// The environment variable holding the REST token.
pub const REST_TOKEN_ENV: &str = "EVENT_AUDIT_REST_TOKEN";
/// The environment variable holding the report endpoints' bearer token.
pub const REPORT_TOKEN_ENV: &str = "EVENT_AUDIT_REPORT_TOKEN";

/// A secret from `file` (trimmed), else from the environment variable `env`; never logged.
pub fn load_secret(
    file: Option<&PathBuf>,
    env: &str,
    what: &str,
) -> anyhow::Result<Option<SecretString>> {
    let text = match file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading the {what} file {}", path.display()))?;
            warn_if_readable_by_others(path, what);
            text
        }
        None => match std::env::var(env) {
            Ok(t) => t,
            Err(_) => return Ok(None),
        },
    };
    let t = text.trim();
    if t.is_empty() {
        anyhow::bail!("the {what} is empty");
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
