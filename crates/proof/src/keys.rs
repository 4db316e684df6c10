//! The auditor's key and policy files: the log's public key and a witness policy (C2SP
//! tlog-policy, or the format read before it with a one-line note), each read with a bound and
//! refused in one line that names the file.

use std::path::Path;

use crate::tlog::note::PublicKey;
use crate::tlog::policy::WitnessPolicy;

/// Why a key or policy file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    #[error("public key file {path}: {why}; give the log's public key (the PREFIX.pub `event-audit keygen` wrote)")]
    PublicKey { path: String, why: String },
    #[error("witness policy {path}: {why}")]
    Policy { path: String, why: String },
}

/// Reads a public key file.
pub fn load_public_key(path: &Path) -> Result<PublicKey, KeyFileError> {
    let shown = path.display().to_string();
    let text =
        crate::files::bounded::read_text(path, crate::files::KEY_MAX, "key file").map_err(|e| {
            KeyFileError::PublicKey {
                path: shown.clone(),
                why: e.to_string(),
            }
        })?;
    PublicKey::parse(&text).map_err(|e| KeyFileError::PublicKey {
        path: shown,
        why: e.to_string(),
    })
}

/// Reads a witness policy file (C2SP tlog-policy, or the format read before it, with a one-line
/// note), and checks that its `log` lines, if any, name the log's key.
pub fn load_policy(path: &Path, log: Option<&PublicKey>) -> Result<WitnessPolicy, KeyFileError> {
    let shown = path.display().to_string();
    let text = crate::files::bounded::read_text(path, crate::files::POLICY_MAX, "witness policy")
        .map_err(|e| KeyFileError::Policy {
        path: shown.clone(),
        why: e.to_string(),
    })?;
    let policy = WitnessPolicy::parse(&text).map_err(|e| KeyFileError::Policy {
        path: shown.clone(),
        why: e.to_string(),
    })?;
    if let Some(key) = log {
        policy.check_log(key).map_err(|e| KeyFileError::Policy {
            path: shown.clone(),
            why: e.to_string(),
        })?;
    }
    if policy.legacy {
        tracing::warn!(policy = %shown, "{}", crate::tlog::policy::LEGACY_NOTE);
    }
    Ok(policy)
}
