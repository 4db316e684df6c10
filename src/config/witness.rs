//! The witnessed log's settings: the signing key (a file path, never the key), how often a
//! checkpoint is signed, where checkpoints are published (a JetStream stream, a directory), the
//! log's origin, and for the readers (`verify`, `prove`) the public key and the state file.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{defaults, Dur};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WitnessSettings {
    /// The daemon's private key file (`keygen`); without it, checkpoints are off.
    pub signing_key_file: Option<PathBuf>,
    /// How often the daemon signs a checkpoint (only when the tree grew).
    pub checkpoint_interval: Dur,
    /// The JetStream stream that witnesses checkpoints (deny delete, deny purge).
    pub checkpoint_stream: String,
    /// A directory each checkpoint is also written to (one file per checkpoint).
    pub checkpoint_dir: Option<PathBuf>,
    /// The log's name in its checkpoints; default: the signing key's name (which `keygen`
    /// makes `event-audit/<database name>`).
    pub origin: Option<String>,
    /// The public key file of the log (`verify`, `prove`).
    pub public_key: Option<PathBuf>,
    /// `verify`: hash every row again instead of resuming from the state file.
    pub full: bool,
    /// `verify`: where the last checked checkpoint is remembered; default
    /// `$HOME/.local/state/event-audit/<origin>.json`.
    pub state_file: Option<PathBuf>,
    /// How long one publish to (or read of) the witness may take.
    pub publish_timeout: Dur,
}

impl Default for WitnessSettings {
    fn default() -> Self {
        WitnessSettings {
            signing_key_file: None,
            checkpoint_interval: defaults::CHECKPOINT_INTERVAL,
            checkpoint_stream: defaults::CHECKPOINT_STREAM.into(),
            checkpoint_dir: None,
            origin: None,
            public_key: None,
            full: false,
            state_file: None,
            publish_timeout: defaults::CHECKPOINT_PUBLISH_TIMEOUT,
        }
    }
}

impl WitnessSettings {
    /// The origin `keygen` names a key after: the configured one, else
    /// `event-audit/<database name>`.
    pub fn origin_for(&self, database_url: &str) -> String {
        if let Some(o) = &self.origin {
            return o.clone();
        }
        let name = url::Url::parse(database_url)
            .ok()
            .and_then(|u| u.path_segments()?.next_back().map(str::to_owned))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "event_audit".into());
        format!("{}{name}", defaults::ORIGIN_PREFIX)
    }

    /// The state file of `verify`.
    pub fn state_path(&self, origin: &str) -> Option<PathBuf> {
        if let Some(p) = &self.state_file {
            return Some(p.clone());
        }
        let home = std::env::var_os("HOME")?;
        let file: String = origin
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Some(PathBuf::from(home).join(format!(".local/state/event-audit/{file}.json")))
    }
}
