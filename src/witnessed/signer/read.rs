//! The checkpoints as their readers find them (`verify`, `prove`) and the key and policy files:
//! every note in the checkpoint directory or the witness stream, the log's public key, the
//! signer's private key (refused when others may read it), the witness policy, and the
//! checkpoint `prove` proves against.

use std::path::Path;
use std::time::Duration;

use crate::bus::{Bus, BusError};
use crate::db::Db;
use crate::tlog::note::{self, Checkpoint, PrivateKey, PublicKey};
use crate::tlog::policy::WitnessPolicy;

use super::publish::{self, Found};
use super::CheckpointError;
use crate::log::checkpoints::CheckpointStore;

/// The auditor's key and policy readers' refusals, as the signer's.
impl From<event_audit_proof::keys::KeyFileError> for CheckpointError {
    fn from(e: event_audit_proof::keys::KeyFileError) -> CheckpointError {
        use event_audit_proof::keys::KeyFileError as K;
        match e {
            K::PublicKey { path, why } => CheckpointError::PublicKey { path, why },
            K::Policy { path, why } => CheckpointError::Policy { path, why },
        }
    }
}

/// Reads a private key file (its content is never logged or shown); a file that group or others
/// may read is refused.
#[allow(unreachable_pub)] // public through `test_support` (the lint misses re-exports of re-exports)
pub fn load_key(path: &Path) -> Result<PrivateKey, CheckpointError> {
    let shown = path.display().to_string();
    let text = crate::files::read_private(path).map_err(|e| CheckpointError::Key {
        path: shown.clone(),
        why: e.to_string(),
    })?;
    PrivateKey::parse(&text).map_err(|e| CheckpointError::Key {
        path: shown,
        why: e.to_string(),
    })
}

/// Reads a public key file ([`event_audit_proof::keys::load_public_key`]).
#[allow(unreachable_pub)] // public through `test_support` (the lint misses re-exports of re-exports)
pub fn load_public_key(path: &Path) -> Result<PublicKey, CheckpointError> {
    Ok(event_audit_proof::keys::load_public_key(path)?)
}

/// The signer's policy: [`load_policy`], and the witnesses whose line has a URL (the only
/// ones the daemon submits to) must be able to meet its quorum.
pub(crate) fn load_submitting_policy(
    path: &Path,
    log: &PublicKey,
) -> Result<WitnessPolicy, CheckpointError> {
    let policy = load_policy(path, Some(log))?;
    let with_url = (0..policy.witnesses.len())
        .filter(|i| policy.witnesses[*i].url.is_some())
        .collect();
    if !policy.met_by(&with_url) {
        return Err(CheckpointError::Policy {
            path: path.display().to_string(),
            why: format!(
                "the witnesses with a URL cannot meet the quorum {}: the daemon submits only to witnesses whose line has a URL (`witness <name> <vkey> <url>`)",
                policy.describe()
            ),
        });
    }
    Ok(policy)
}

/// Reads a witness policy file ([`event_audit_proof::keys::load_policy`]).
#[allow(unreachable_pub)] // public through `test_support` (the lint misses re-exports of re-exports)
pub fn load_policy(path: &Path, log: Option<&PublicKey>) -> Result<WitnessPolicy, CheckpointError> {
    Ok(event_audit_proof::keys::load_policy(path, log)?)
}

/// Every checkpoint the witness holds: the checkpoint directory when one is set, else the
/// witness stream (connecting with the NATS settings), with the stream's configuration checked.
pub async fn read_witness(
    s: &crate::config::Settings,
) -> Result<(Vec<Found>, Vec<String>), CheckpointError> {
    let w = &s.witness;
    if let Some(dir) = &w.checkpoint_dir {
        let found = publish::read_dir(dir).map_err(|source| CheckpointError::Dir {
            path: dir.display().to_string(),
            source,
        })?;
        return Ok((found, Vec::new()));
    }
    let bus = Bus::connect(&s.nats).await?;
    // Reading a long history takes longer than one publish: a minute per call at least.
    let limit = w.publish_timeout.get().max(Duration::from_secs(60));
    let problems = publish::stream_problems(&bus, &w.checkpoint_stream, limit)
        .await
        .map_err(|e| match e {
            BusError::NoCheckpointStream { stream } => CheckpointError::NoStream {
                stream,
                url: crate::config::redact_nats_url(&s.nats.url),
            },
            e => e.into(),
        })?;
    let found = publish::read_stream(&bus, &w.checkpoint_stream, limit).await?;
    Ok((found, problems))
}

/// The checkpoint `prove` proves against: the newest witnessed one the database's tree reaches
/// (with `key`, only one whose signature verifies; with `policy`, only one carrying its quorum
/// of cosignatures); when the witness cannot be read or holds none, and only with `key`, the
/// database's copy of the newest stored one that meets the same tests.
#[allow(unreachable_pub)] // public through `test_support` (the lint misses re-exports of re-exports)
pub async fn latest_checkpoint(
    s: &crate::config::Settings,
    db: &Db,
    key: Option<&PublicKey>,
    policy: Option<&WitnessPolicy>,
) -> Result<(Checkpoint, String), CheckpointError> {
    let store = CheckpointStore::new(db.clone());
    let head = store.tree_size().await?;
    let origin = s.witness.origin.clone().or(key.map(|k| k.name.clone()));
    let usable = |text: &str| {
        let cp = match key {
            Some(k) => note::open(text, k).ok()?,
            None => note::claimed(text).ok()?,
        };
        let events = match &origin {
            Some(o) => *o == cp.origin,
            None => !cp.origin.ends_with(note::REVERDICTS_SUFFIX),
        };
        if !events {
            return None;
        }
        if let Some(p) = policy {
            p.check(text).ok()?;
        }
        i64::try_from(cp.size)
            .is_ok_and(|n| n <= head)
            .then_some(cp)
    };
    let found = match read_witness(s).await {
        Ok((f, _)) => f,
        Err(e) if key.is_some() => {
            tracing::warn!(error = %e, "the witnessed checkpoints cannot be read; using the database's copy of the checkpoints, checked with the public key");
            Vec::new()
        }
        Err(e) => return Err(e),
    };
    let best = found
        .into_iter()
        .filter_map(|f| usable(&f.note).map(|c| (c, f.note)))
        .max_by_key(|(c, _)| c.size);
    if let Some(b) = best {
        return Ok(b);
    }
    if key.is_some() {
        for text in store.notes_newest_first().await? {
            if let Some(c) = usable(&text) {
                return Ok((c, text));
            }
        }
    }
    Err(CheckpointError::NoCheckpoint)
}
