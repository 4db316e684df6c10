//! The auditor's memory (`verify --public-key`'s state file): per log origin, the newest
//! checkpoint this verifier checked — the signed note itself (with its cosignatures, so a fork
//! can be shown to anyone), its size and root, and the tree's right edge at its size (where the
//! next run resumes). Keyed by the log's origin and key id, written atomically with mode 0600,
//! never lowered. An unreadable file, or one of another log, is an error, never "no state".
//! It also remembers every break a run found ([`super::breaks`]) and counts the runs, so that a
//! log caught tampered never reads "intact" again until the auditor acknowledges the break.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::tlog::latest::Newest;
use crate::tlog::merkle::Frontier;
use crate::tlog::note::PublicKey;

use super::breaks::{Breaks, Finding, RecordedBreak};

/// The format written; `/1` (no breaks, no run count) is still read.
const FORMAT: &str = "event-audit-verify-state/2";
const FORMAT_V1: &str = "event-audit-verify-state/1";

/// One log's last checked checkpoint: its signed note and the tree's right edge at its size
/// (the memory every keeper of a log shares).
pub(crate) type Checked = crate::tlog::latest::Remembered<Frontier>;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    format: String,
    key: String,
    logs: BTreeMap<String, Entry>,
    /// Runs made with this state (v2).
    #[serde(default)]
    runs: u64,
    /// Every break found, in the order found (v2).
    #[serde(default)]
    breaks: Breaks,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    note: String,
    frontier: String,
}

/// The state of one key's logs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditorState {
    pub(crate) logs: Newest<Frontier>,
    /// How many runs used this state (the run that saves it included).
    pub(crate) runs: u64,
    /// Every break found, in the order found; acknowledged ones say when.
    pub(crate) breaks: Breaks,
}

/// Why the state cannot be used (exit 2 unless `--no-state`).
#[derive(Debug, thiserror::Error)]
#[error("state file {path}: {why} (restore it from your copy, or run with --no-state to verify without it, knowingly)")]
pub struct StateError {
    pub(crate) path: String,
    pub(crate) why: String,
}

impl AuditorState {
    /// Reads the state of `key`'s logs (`Ok(None)` when there is no file yet).
    pub fn load(path: &Path, key: &PublicKey) -> Result<Option<AuditorState>, StateError> {
        let err = |why: String| StateError {
            path: path.display().to_string(),
            why,
        };
        match crate::files::read_if_present(path, crate::files::STATE_MAX, "state file")
            .map_err(|e| err(e.to_string()))?
        {
            Some(text) => Self::parse(&text, path, key).map(Some),
            None => Ok(None),
        }
    }

    /// The state in the text of the file at `path` (named in the error): every log's note
    /// opens with `key` and its right edge has the note's size and root.
    pub fn parse(text: &str, path: &Path, key: &PublicKey) -> Result<AuditorState, StateError> {
        let err = |why: String| StateError {
            path: path.display().to_string(),
            why,
        };
        let f: File =
            serde_json::from_str(text).map_err(|e| err(format!("not a verify state ({e})")))?;
        if f.format != FORMAT && f.format != FORMAT_V1 {
            return Err(err(format!("format `{}` is not {FORMAT}", f.format)));
        }
        if f.key != key.encode() {
            return Err(err(format!(
                "it is the state of the log with key {}, not of {}",
                f.key,
                key.encode()
            )));
        }
        let mut logs = Newest::default();
        for (origin, e) in f.logs {
            let r = Checked::read(&origin, &e.note, &e.frontier, key)
                .map_err(|why| err(format!("log {origin}: {why}")))?;
            // One entry per origin in the file: nothing to lower.
            let _ = logs.advance(&origin, r);
        }
        Ok(AuditorState {
            logs,
            runs: f.runs,
            breaks: f.breaks,
        })
    }

    /// Writes the state atomically (0600). Callers never lower it (see `verify::witness`).
    pub(crate) fn save(&self, path: &Path, key: &PublicKey) -> std::io::Result<()> {
        crate::files::replace_private(path, &self.encode(key))
    }

    /// The file's text: what [`AuditorState::parse`] reads back to this state.
    pub fn encode(&self, key: &PublicKey) -> Vec<u8> {
        let f = File {
            format: FORMAT.into(),
            key: key.encode(),
            logs: self
                .logs
                .iter()
                .map(|(o, c)| {
                    (
                        o.clone(),
                        Entry {
                            note: c.note.clone(),
                            frontier: B64.encode(c.tree.to_bytes()),
                        },
                    )
                })
                .collect(),
            runs: self.runs,
            breaks: self.breaks.clone(),
        };
        serde_json::to_vec_pretty(&f).unwrap_or_default()
    }
}

/// What a run leaves in the state: the state as read (with this run's acknowledgement, if any),
/// and the one to write when everything held (newer checkpoints).
pub(crate) struct Memory {
    pub(crate) path: Option<PathBuf>,
    pub(crate) key: PublicKey,
    pub(crate) saved: AuditorState,
    pub(crate) proposed: AuditorState,
    pub(crate) acknowledged: Option<RecordedBreak>,
}

/// What the state says after this run.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Settled {
    /// Where the state lives (`None`: `--no-state`, nothing remembered).
    pub(crate) path: Option<String>,
    /// This run's number in the state.
    pub(crate) run: u64,
    /// The break found and not acknowledged: while there is one, every run exits 1.
    pub(crate) open_break: Option<RecordedBreak>,
    /// Whether `open_break` was found by this run.
    pub(crate) recorded_now: bool,
    /// The break this run acknowledged.
    pub(crate) acknowledged: Option<RecordedBreak>,
}

impl Memory {
    /// Writes the state: the newer checkpoints only when this run found nothing and no break is
    /// open (never lowered either way), this run counted, and `finding` remembered when no break
    /// is open yet.
    pub(crate) fn settle(self, finding: Option<Finding>) -> Result<Settled, StateError> {
        let Some(path) = self.path else {
            return Ok(Settled {
                path: None,
                run: 0,
                open_break: None,
                recorded_now: false,
                acknowledged: self.acknowledged,
            });
        };
        let now = chrono::Utc::now();
        let run = self.saved.runs + 1;
        let clean = finding.is_none() && self.saved.breaks.open().is_none();
        let mut state = if clean { self.proposed } else { self.saved };
        state.runs = run;
        let recorded = finding.and_then(|f| state.breaks.remember(f, run, now));
        state.save(&path, &self.key).map_err(|e| StateError {
            path: path.display().to_string(),
            why: format!("cannot be written: {e}"),
        })?;
        Ok(Settled {
            path: Some(path.display().to_string()),
            run,
            recorded_now: recorded.is_some(),
            open_break: state.breaks.open().cloned(),
            acknowledged: self.acknowledged,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlog::merkle::leaf_hash;
    use crate::tlog::note::{Checkpoint, PrivateKey};
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn round_trips_private_and_refuses_another_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let k = PrivateKey::from_seed("o", &[1; 32]).unwrap();
        let mut tree = Frontier::new();
        tree.append(leaf_hash(b"a"), |_, _| {});
        let cp = Checkpoint {
            origin: "o".into(),
            size: 1,
            root: tree.root(),
        };
        let mut s = AuditorState::default();
        let _ = s.logs.advance("o", Checked::at(tree, k.sign(&cp)));
        assert_eq!(AuditorState::load(&path, &k.public()).unwrap(), None);
        s.save(&path, &k.public()).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(AuditorState::load(&path, &k.public()).unwrap(), Some(s));
        let other = PrivateKey::from_seed("o", &[2; 32]).unwrap();
        assert!(AuditorState::load(&path, &other.public()).is_err());
        std::fs::write(&path, "not json").unwrap();
        assert!(AuditorState::load(&path, &k.public()).is_err());
    }
}
