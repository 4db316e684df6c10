//! The log's second key: an ML-DSA-44 key of the same name as its Ed25519 key (C2SP
//! tlog-checkpoint recommends ML-DSA-44 `subtree/v1` signatures), read at start-up and checked
//! to name the log; each note the signer makes carries its line after the Ed25519 one. A
//! reader that knows only Ed25519 (Go's sumdb note, `verify`) ignores it, as C2SP signed-note
//! says; one that knows ML-DSA-44 verifies it as a cosignature with time 0.

use std::path::Path;
use std::sync::Arc;

use super::{CheckpointError, Signer};
use crate::tlog::mldsa::MlDsaSigner;
use crate::tlog::note::{with_signatures, Checkpoint};

/// Reads the ML-DSA-44 key file, refused unless it is named `name` (the log's key's name).
pub(crate) fn load(path: &Path, name: &str) -> Result<MlDsaSigner, CheckpointError> {
    let shown = path.display().to_string();
    let err = |why: String| CheckpointError::Key {
        path: shown.clone(),
        why,
    };
    let text = crate::files::read_private(path).map_err(|e| err(e.to_string()))?;
    let key = MlDsaSigner::parse(&text).map_err(|e| err(e.to_string()))?;
    if key.public().name != name {
        return Err(err(format!(
            "the ML-DSA-44 key is named `{}`, but the log's key `{name}`: generate it with `keygen --algorithm ml-dsa-44 --origin {name}`",
            key.public().name
        )));
    }
    Ok(key)
}

impl Signer {
    /// The signer that signs each note with `key` too.
    pub fn with_ml_dsa(mut self, key: MlDsaSigner) -> Signer {
        self.ml_dsa = Some(Arc::new(key));
        self
    }

    /// The note of `cp`: the Ed25519 signature, then the ML-DSA-44 one when configured (time 0:
    /// the log states the tree, not that it is the largest it has).
    pub(super) fn sign_note(&self, cp: &Checkpoint) -> String {
        let note = self.key.sign(cp);
        let Some(k) = &self.ml_dsa else {
            return note;
        };
        match k.cosign(&cp.body(), 0) {
            Ok(line) => with_signatures(&note, &line),
            Err(e) => {
                // Only an origin longer than 255 bytes, which start-up refuses (`start::check`).
                tracing::error!(origin = %cp.origin, error = %e, "the ML-DSA-44 signature cannot be made; the checkpoint carries the Ed25519 one only");
                note
            }
        }
    }
}
