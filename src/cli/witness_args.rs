//! The witnessed log's option groups: the daemon's signer (`run`) and the readers' (`verify`,
//! `prove`). Every field becomes a `witness.*` settings override.

use std::path::PathBuf;

use serde::Serialize;
use serde_with::skip_serializing_none;

use super::args::is_false;
use crate::config::Dur;

/// `run`: signing and publishing checkpoints.
#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct SignerArgs {
    /// Private key file (`event-audit keygen`); without it checkpoints are off. The key is
    /// never stored in the database, passed in argv or logged.
    #[arg(
        long,
        id = "witness.signing_key_file",
        env = "EVENT_AUDIT_SIGNING_KEY_FILE"
    )]
    pub(crate) signing_key_file: Option<PathBuf>,
    /// How often a checkpoint is signed (only when the log grew), and once at shutdown.
    #[arg(
        long,
        id = "witness.checkpoint_interval",
        env = "EVENT_AUDIT_CHECKPOINT_INTERVAL"
    )]
    pub(crate) checkpoint_interval: Option<Dur>,
    /// The signer's memory of the last checkpoint it signed, outside the database (default:
    /// the key file's path with `.state` appended). Keep it with the key.
    #[arg(long, id = "witness.signer_state", env = "EVENT_AUDIT_SIGNER_STATE")]
    pub(crate) signer_state: Option<PathBuf>,
    /// Replicas of the checkpoint stream when it is created, 1 to 5 (3 in a three-node
    /// JetStream cluster).
    #[arg(
        long,
        id = "witness.checkpoint_replicas",
        env = "EVENT_AUDIT_CHECKPOINT_REPLICAS"
    )]
    pub(crate) checkpoint_replicas: Option<usize>,
    /// Directory the log is written to as C2SP tlog-tiles at each published checkpoint (tiles,
    /// then the checkpoint) and served from under /log/; an existing log is backfilled first.
    #[arg(long, id = "witness.tiles_dir", env = "EVENT_AUDIT_TILES_DIR")]
    pub(crate) tiles_dir: Option<PathBuf>,
    /// The same in an S3 bucket, s3://BUCKET/PREFIX (endpoint, region and credential files
    /// from the settings file's [object_store], or AWS_* in the environment), served under /log/.
    #[arg(long, id = "witness.tiles_url", env = "EVENT_AUDIT_TILES_URL")]
    pub(crate) tiles_url: Option<String>,
    /// Copies of the log's tiles (directories or URLs; an auditor's mirror) to restore lost
    /// leaves from when the database's tree is behind the checkpoint the key signed (after
    /// --tiles-dir); repeat, or comma-separate.
    #[arg(
        long,
        id = "witness.restore_from",
        env = "EVENT_AUDIT_RESTORE_FROM",
        value_delimiter = ','
    )]
    pub(crate) restore_from: Option<Vec<String>>,
    #[command(flatten)]
    #[serde(flatten)]
    pub(crate) policy: PolicyArg,
    #[command(flatten)]
    #[serde(flatten)]
    pub(crate) place: PlaceArgs,
}

/// The witnesses whose cosignatures a checkpoint needs.
#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct PolicyArg {
    /// Witness policy file: `witness <vkey> <url>` lines and `quorum <n>` (default: all).
    /// `run` submits every checkpoint to these witnesses and publishes it with their
    /// cosignatures; readers require the quorum (URLs ignored).
    #[arg(
        long,
        id = "witness.witness_policy",
        env = "EVENT_AUDIT_WITNESS_POLICY"
    )]
    pub(crate) witness_policy: Option<PathBuf>,
}

/// Where checkpoints are witnessed, and the log's name in them.
#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct PlaceArgs {
    /// JetStream stream witnessing the checkpoints (created with deny-delete, deny-purge).
    #[arg(
        long,
        id = "witness.checkpoint_stream",
        env = "EVENT_AUDIT_CHECKPOINT_STREAM"
    )]
    pub(crate) checkpoint_stream: Option<String>,
    /// Directory of checkpoint files (the daemon writes each one there too; `verify` and
    /// `prove` read it instead of the stream).
    #[arg(
        long,
        id = "witness.checkpoint_dir",
        env = "EVENT_AUDIT_CHECKPOINT_DIR"
    )]
    pub(crate) checkpoint_dir: Option<PathBuf>,
    /// The log's name in its checkpoints (default: the key's name; keygen's default is
    /// event-audit/<database name>/<random>).
    #[arg(long, id = "witness.origin", env = "EVENT_AUDIT_ORIGIN")]
    pub(crate) origin: Option<String>,
}

/// `verify`: checking the log against the witnessed checkpoints.
#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct ReaderArgs {
    /// The log's public key file (`keygen`'s .pub): verify against the witnessed checkpoints.
    #[arg(long, id = "witness.public_key", env = "EVENT_AUDIT_PUBLIC_KEY")]
    pub(crate) public_key: Option<PathBuf>,
    /// Rehash every row and rebuild the tree from every row hash: the default, accepted so that
    /// scripts written for older versions keep working.
    #[arg(long, id = "witness.full", conflicts_with = "witness.incremental")]
    #[serde(skip_serializing_if = "is_false")]
    pub(crate) full: bool,
    /// Rehash only the rows after the checkpoint checked last time (remembered in the state
    /// file): faster, but an edit of an older row that leaves its stored hash alone is not
    /// seen. The summary and the JSON say which rows were not rehashed.
    #[arg(long, id = "witness.incremental", conflicts_with = "witness.no_state")]
    #[serde(skip_serializing_if = "is_false")]
    pub(crate) incremental: bool,
    /// Acknowledge the break the state file remembers (its id, as every run prints it) once it
    /// has been dealt with; the state records when. Until then every run exits 1 naming it.
    #[arg(long, id = "witness.acknowledge_break", value_name = "ID")]
    pub(crate) acknowledge_break: Option<String>,
    /// Where the last checked checkpoint is remembered (default
    /// $HOME/.local/state/event-audit/<origin>+<key id>.json). Keep it, and a copy of the
    /// checkpoints, out of the log operators' reach.
    #[arg(long, id = "witness.state_file")]
    pub(crate) state_file: Option<PathBuf>,
    /// Neither read nor write the state file (a first look at a log, or a state deliberately
    /// set aside); without it, an unreadable state, or one of another log, is exit 2.
    #[arg(long, id = "witness.no_state", conflicts_with = "witness.state_file")]
    #[serde(skip_serializing_if = "is_false")]
    pub(crate) no_state: bool,
    #[command(flatten)]
    #[serde(flatten)]
    pub(crate) policy: PolicyArg,
    #[command(flatten)]
    #[serde(flatten)]
    pub(crate) place: PlaceArgs,
}
