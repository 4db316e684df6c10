//! The witnessed log's settings: the signing key (a file path, never the key), how often a
//! checkpoint is signed, where checkpoints are published (a JetStream stream, a directory), the
//! log's origin, and for the readers (`verify`, `prove`) the public key and the state file.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{defaults, Dur};

/// `witness serve`: the independent witness (C2SP tlog-witness), run by someone other than the
/// log's operators.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WitnessServerSettings {
    /// The witness's private key file (`keygen --witness`).
    pub key_file: Option<PathBuf>,
    /// The public key files of the logs it witnesses (each trusted for its name as origin and
    /// for `<name>/reverdicts`).
    pub log_keys: Vec<PathBuf>,
    /// Where it keeps the latest checkpoint it cosigned per log.
    pub state_dir: Option<PathBuf>,
    /// Listen address of `POST /add-checkpoint` and `/metrics`.
    pub listen: std::net::SocketAddr,
    /// How long one connection may stay open: then it closes after its request in progress
    /// (a client reconnects; a hostile one cannot hold a connection forever).
    pub max_connection_age: Dur,
}

impl Default for WitnessServerSettings {
    fn default() -> Self {
        WitnessServerSettings {
            key_file: None,
            log_keys: Vec::new(),
            state_dir: None,
            listen: defaults::WITNESS_LISTEN
                .parse()
                .unwrap_or_else(|_| std::net::SocketAddr::from(([127, 0, 0, 1], 0))),
            max_connection_age: defaults::WITNESS_CONNECTION_AGE,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WitnessSettings {
    /// The daemon's private key file (`keygen`); without it, checkpoints are off.
    pub signing_key_file: Option<PathBuf>,
    /// How often the daemon signs a checkpoint (only when the tree grew).
    pub checkpoint_interval: Dur,
    /// The JetStream stream that witnesses checkpoints (deny delete, deny purge).
    pub checkpoint_stream: String,
    /// Replicas of the checkpoint stream when `run` creates it.
    pub checkpoint_replicas: usize,
    /// A directory each checkpoint is also written to (one file per checkpoint).
    pub checkpoint_dir: Option<PathBuf>,
    /// Where the daemon writes the log as C2SP tlog-tiles at each published checkpoint (and
    /// serves it under `/log/`); an existing log is backfilled on the first round.
    pub tiles_dir: Option<PathBuf>,
    /// The same in an S3 bucket, `s3://bucket/prefix` (with `[object_store]`), instead of
    /// `tiles_dir`; served under `/log/` too.
    pub tiles_url: Option<String>,
    /// With `tiles_url`: each full tile and bundle is put under S3 Object Lock (compliance
    /// mode) for this long (a bucket without Object Lock is refused).
    pub tiles_lock_for: Option<Dur>,
    /// The log's name in its checkpoints; default: the signing key's name (which `keygen`
    /// makes `event-audit/<database name>`).
    pub origin: Option<String>,
    /// The public key file of the log (`verify`, `prove`).
    pub public_key: Option<PathBuf>,
    /// `verify`: rehash every row (the default; kept so that older settings files still load).
    pub full: bool,
    /// `verify`: rehash only the rows after the checkpoint checked last time (the state
    /// file's); the rows before it are not rehashed, and the report says so. Never the default.
    pub incremental: bool,
    /// `verify`: acknowledge the break the state file remembers, by its id; the state records
    /// when. Until then every run exits 1 and names it.
    pub acknowledge_break: Option<String>,
    /// `verify`: where the last checked checkpoint is remembered; default
    /// `$HOME/.local/state/event-audit/<origin>.json`.
    pub state_file: Option<PathBuf>,
    /// How long one publish to (or read of) the witness may take, and one witness request.
    pub publish_timeout: Dur,
    /// The signer's memory of what it signed (default: the signing key file's path with
    /// `.state` appended).
    pub signer_state: Option<PathBuf>,
    /// The witnesses that cosign checkpoints and the quorum readers require (`witness <vkey>
    /// <url>` lines, `quorum <n>`): `run` submits to them, readers check the quorum.
    pub witness_policy: Option<PathBuf>,
    /// `verify`: neither read nor write the state file.
    pub no_state: bool,
    /// Copies of the log's tiles (directories or URLs: another daemon's `/log/`, an auditor's
    /// mirror) the daemon restores lost leaves from, after `tiles_dir`, when the database's
    /// tree is behind the checkpoint its key signed.
    pub restore_from: Vec<String>,
}

impl Default for WitnessSettings {
    fn default() -> Self {
        WitnessSettings {
            signing_key_file: None,
            checkpoint_interval: defaults::CHECKPOINT_INTERVAL,
            checkpoint_stream: defaults::CHECKPOINT_STREAM.into(),
            checkpoint_replicas: defaults::CHECKPOINT_REPLICAS,
            checkpoint_dir: None,
            tiles_dir: None,
            tiles_url: None,
            tiles_lock_for: None,
            origin: None,
            public_key: None,
            full: false,
            incremental: false,
            acknowledge_break: None,
            state_file: None,
            publish_timeout: defaults::CHECKPOINT_PUBLISH_TIMEOUT,
            signer_state: None,
            witness_policy: None,
            no_state: false,
            restore_from: Vec::new(),
        }
    }
}

impl WitnessSettings {
    /// The origin `keygen` names a key after: the configured one, else
    /// `event-audit/<database name>/<unique>` (`unique`: random hex keygen draws, so that two
    /// logs never share an origin, as C2SP asks of origins).
    pub(crate) fn origin_for(&self, database_url: &str, unique: &str) -> String {
        if let Some(o) = &self.origin {
            return o.clone();
        }
        let name = url::Url::parse(database_url)
            .ok()
            .and_then(|u| u.path_segments()?.next_back().map(str::to_owned))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "event_audit".into());
        format!("{}{name}/{unique}", defaults::ORIGIN_PREFIX)
    }

    /// The signer's state file: as configured, else beside the key (`<key file>.state`).
    pub(crate) fn signer_state_path(&self) -> Option<PathBuf> {
        if let Some(p) = &self.signer_state {
            return Some(p.clone());
        }
        let key = self.signing_key_file.as_ref()?;
        let mut s = key.as_os_str().to_owned();
        s.push(".state");
        Some(PathBuf::from(s))
    }

    /// The state file of `verify`, for the log `origin` and its key `key_id` (hex): as
    /// configured, else `$HOME/.local/state/event-audit/<origin>+<key id>.json`, so that two logs
    /// (or one origin under two keys) never share a state.
    pub(crate) fn state_path(&self, origin: &str, key_id: &str) -> Option<PathBuf> {
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
        Some(PathBuf::from(home).join(format!(".local/state/event-audit/{file}+{key_id}.json")))
    }
}
