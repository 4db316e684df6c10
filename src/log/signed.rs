//! The signer's memory, kept outside PostgreSQL and NATS: per log (origin), the last checkpoint
//! this signer signed or saw signed by its key, the tree's right edge at that size and the signed
//! note. A JSON file beside the key (`--signer-state`), replaced atomically and fsynced before a
//! checkpoint is stored or published, mode 0600. A file that cannot be read, or that belongs to
//! another key, stops signing (it is never silently recreated); a missing file is rebuilt from
//! the checkpoints the key signed, wherever they are found.

use std::collections::BTreeMap;
use std::path::Path;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::tlog::latest::Newest;
use crate::tlog::merkle::{Frontier, Hash};
use crate::tlog::note::PublicKey;

/// The format name a state file carries.
const FORMAT: &str = "event-audit-signer-state/1";

/// What the signer remembers of one log: the checkpoint, its signed note (with any
/// cosignatures gathered for it) and the tree at its size (the memory every keeper of a log
/// shares).
pub(crate) type Remembered = crate::tlog::latest::Remembered<Frontier>;

/// Why the memory cannot be used (signing stops until an operator looks).
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("signer state {path}: {why}")]
    Unusable { path: String, why: String },
    #[error("signer state {path}: cannot be written: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    format: String,
    /// The public key (vkey) whose checkpoints these are.
    key: String,
    logs: BTreeMap<String, Entry>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    size: u64,
    root: String,
    frontier: String,
    note: String,
}

/// The memory of every log of one key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Memory {
    pub(crate) logs: Newest<Frontier>,
}

impl Memory {
    /// Reads the file: `Ok(None)` when there is none.
    pub fn load(path: &Path, key: &PublicKey) -> Result<Option<Memory>, MemoryError> {
        let bad = |why: String| MemoryError::Unusable {
            path: path.display().to_string(),
            why,
        };
        match crate::files::read_if_present(path, crate::files::STATE_MAX, "state file")
            .map_err(|e| bad(e.to_string()))?
        {
            Some(text) => Self::parse(&text, path, key).map(Some),
            None => Ok(None),
        }
    }

    /// The memory in the text of the file at `path` (named in the error): every log's note
    /// opens with `key`, names its origin, and has the size, root and right edge stated.
    pub fn parse(text: &str, path: &Path, key: &PublicKey) -> Result<Memory, MemoryError> {
        let bad = |why: String| MemoryError::Unusable {
            path: path.display().to_string(),
            why,
        };
        let f: File =
            serde_json::from_str(text).map_err(|e| bad(format!("not a signer state ({e})")))?;
        if f.format != FORMAT {
            return Err(bad(format!("format `{}` is not {FORMAT}", f.format)));
        }
        if f.key != key.encode() {
            return Err(bad(format!(
                "it belongs to key {}, not to the signing key {}",
                f.key,
                key.encode()
            )));
        }
        let mut logs = Newest::default();
        for (origin, e) in f.logs {
            let r =
                remembered(&origin, &e, key).map_err(|why| bad(format!("log {origin}: {why}")))?;
            // One entry per origin in the file: nothing to lower.
            let _ = logs.advance(&origin, r);
        }
        Ok(Memory { logs })
    }

    /// Writes the file atomically and durably (0600).
    pub(crate) fn save(&self, path: &Path, key: &PublicKey) -> Result<(), MemoryError> {
        crate::files::replace_private(path, &self.encode(key)).map_err(|source| {
            MemoryError::Write {
                path: path.display().to_string(),
                source,
            }
        })
    }

    /// The file's text: what [`Memory::parse`] reads back to this memory.
    pub fn encode(&self, key: &PublicKey) -> Vec<u8> {
        let f = File {
            format: FORMAT.into(),
            key: key.encode(),
            logs: self
                .logs
                .iter()
                .map(|(o, r)| {
                    (
                        o.clone(),
                        Entry {
                            size: r.size(),
                            root: B64.encode(r.root),
                            frontier: B64.encode(r.tree.to_bytes()),
                            note: r.note.clone(),
                        },
                    )
                })
                .collect(),
        };
        serde_json::to_vec_pretty(&f).unwrap_or_default()
    }
}

/// One log's entry, checked: the note opens with the key and names this origin, the right edge
/// has its size and root, and the size and root the file states are the note's.
fn remembered(origin: &str, e: &Entry, key: &PublicKey) -> Result<Remembered, String> {
    let r = Remembered::read(origin, &e.note, &e.frontier, key)?;
    let root = B64
        .decode(&e.root)
        .ok()
        .and_then(|r| Hash::try_from(r).ok())
        .ok_or("its root is not 32 bytes of base64")?;
    if r.size != e.size || r.root != root {
        return Err("its note does not sign its origin, size and root".into());
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlog::merkle::leaf_hash;
    use crate::tlog::note::{Checkpoint, PrivateKey};

    fn memory(k: &PrivateKey, origin: &str, n: u8) -> Memory {
        let mut tree = Frontier::new();
        for i in 0..n {
            tree.append(leaf_hash(&[i]), |_, _| {});
        }
        let cp = Checkpoint {
            origin: origin.into(),
            size: tree.size(),
            root: tree.root(),
        };
        let mut logs = Newest::default();
        let _ = logs.advance(origin, Remembered::at(tree, k.sign(&cp)));
        Memory { logs }
    }

    #[test]
    fn round_trips_and_refuses_what_does_not_hold() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("signer.state");
        let k = PrivateKey::from_seed("log.example/a", &[1; 32]).unwrap();
        assert_eq!(Memory::load(&path, &k.public()).unwrap(), None);
        let m = memory(&k, "log.example/a", 5);
        m.save(&path, &k.public()).unwrap();
        assert_eq!(Memory::load(&path, &k.public()).unwrap(), Some(m));
        // Another key's state, a corrupt file, an edited size: unusable, never treated as absent.
        let other = PrivateKey::from_seed("log.example/a", &[2; 32]).unwrap();
        assert!(Memory::load(&path, &other.public()).is_err());
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("\"size\": 5", "\"size\": 4")).unwrap();
        assert!(Memory::load(&path, &k.public()).is_err());
        std::fs::write(&path, "{").unwrap();
        assert!(Memory::load(&path, &k.public()).is_err());
    }
}
