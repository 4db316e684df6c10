//! The witnessed log's settings: the signing key (a file path, never the key), how often a
//! checkpoint is signed, where checkpoints are published (a JetStream stream, a directory), the
//! log's origin, and for the readers (`verify`, `prove`) the public key and the state file.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::options::section;
use super::{defaults, Dur};

section! {
    /// `witness serve`: the independent witness (C2SP tlog-witness), run by someone other than the
    /// log's operators.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct WitnessServerSettings in "witness_server" {
        /// The witness's private key file (`keygen --witness`; mode 0600).
        #[flag("key", was = "EVENT_AUDIT_WITNESS_KEY_FILE")]
        pub key_file: Option<PathBuf> = None,
        /// A log's public key file (`keygen`'s .pub); repeat for each log. The key is trusted for
        /// its name as origin and for `<name>/reverdicts`.
        #[flag("log-key")]
        pub log_keys: Vec<PathBuf> = Vec::new(),
        /// Where the latest checkpoint cosigned per log is kept (one witness process per directory).
        #[flag("state-dir")]
        pub state_dir: Option<PathBuf> = None,
        /// Listen address.
        #[flag("listen", was = "EVENT_AUDIT_WITNESS_LISTEN")]
        pub listen: std::net::SocketAddr = super::addr(defaults::WITNESS_LISTEN),
        /// How long one connection may stay open; then it closes after its request in progress.
        #[flag("max-connection-age", was = "EVENT_AUDIT_WITNESS_MAX_CONNECTION_AGE")]
        pub max_connection_age: Dur = defaults::WITNESS_CONNECTION_AGE,
    }
}

section! {
    #[derive(Debug, Clone, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct WitnessSettings in "witness" {
        /// Private key file (`event-audit keygen`); without it checkpoints are off. The key is
        /// never stored in the database, passed in argv or logged.
        #[flag("signing-key-file", was = "EVENT_AUDIT_SIGNING_KEY_FILE")]
        pub signing_key_file: Option<PathBuf> = None,
        /// A second private key, ML-DSA-44 (`keygen --algorithm ml-dsa-44 --origin <the log's
        /// origin>`; the same name as the signing key): each checkpoint carries its `subtree/v1`
        /// signature beside the Ed25519 one, which readers that know only Ed25519 ignore.
        #[flag("ml-dsa-signing-key-file")]
        pub ml_dsa_signing_key_file: Option<PathBuf> = None,
        /// Keep no account index. By default the signer keeps one (`event-audit-account-index/1`):
        /// at each checkpoint round the rows the log gained are indexed by the identifiers the
        /// catalogue marks in them, and the index's root is recorded as a row of the log before
        /// the checkpoint is signed, so that `prove --account A --complete` proves an account's
        /// history complete. With this set: no index, and no completeness proof.
        #[flag("no-account-index")]
        pub no_account_index: bool = false,
        /// How often a checkpoint is signed (only when the log grew), and once at shutdown.
        #[flag("checkpoint-interval", was = "EVENT_AUDIT_CHECKPOINT_INTERVAL")]
        pub checkpoint_interval: Dur = defaults::CHECKPOINT_INTERVAL,
        /// JetStream stream witnessing the checkpoints (created with deny-delete, deny-purge).
        #[flag("checkpoint-stream", was = "EVENT_AUDIT_CHECKPOINT_STREAM")]
        pub checkpoint_stream: String = defaults::CHECKPOINT_STREAM.into(),
        /// Replicas of the checkpoint stream when it is created, 1 to 5 (3 in a three-node
        /// JetStream cluster).
        #[flag("checkpoint-replicas", was = "EVENT_AUDIT_CHECKPOINT_REPLICAS")]
        pub checkpoint_replicas: usize = defaults::CHECKPOINT_REPLICAS,
        /// Directory of checkpoint files (the daemon writes each one there too; `verify` and
        /// `prove` read it instead of the stream).
        #[flag("checkpoint-dir", was = "EVENT_AUDIT_CHECKPOINT_DIR")]
        pub checkpoint_dir: Option<PathBuf> = None,
        /// Directory the log is written to as C2SP tlog-tiles at each published checkpoint (tiles,
        /// then the checkpoint) and served from under /log/; an existing log is backfilled first.
        #[flag("tiles-dir", was = "EVENT_AUDIT_TILES_DIR")]
        pub tiles_dir: Option<PathBuf> = None,
        /// The same in an S3 bucket, s3://BUCKET/PREFIX (endpoint, region and credential files
        /// from the settings file's `[object_store]`, or AWS_* in the environment), served under
        /// /log/.
        #[flag("tiles-url", was = "EVENT_AUDIT_TILES_URL")]
        pub tiles_url: Option<String> = None,
        /// With `tiles_url`: each full tile and bundle is put under S3 Object Lock (compliance
        /// mode) for this long (a bucket without Object Lock is refused).
        pub tiles_lock_for: Option<Dur> = None,
        /// How often the daemon re-reads every full tile and bundle it published (also once at
        /// start), writing again from the database any that is missing; other bytes at a
        /// published key are named and counted, never overwritten.
        pub tiles_repair_every: Dur = defaults::TILES_REPAIR_EVERY,
        /// The most objects the repair pass reads per second (its reads, not the signer's).
        pub tiles_repair_rate: u32 = defaults::TILES_REPAIR_RATE,
        /// The log's name in its checkpoints (default: the key's name; keygen's default is
        /// `event-audit/<database name>/<random>`).
        #[flag("origin", was = "EVENT_AUDIT_ORIGIN")]
        pub origin: Option<String> = None,
        /// The log's public key file (`keygen`'s .pub): verify against the witnessed checkpoints.
        #[flag("public-key", was = "EVENT_AUDIT_PUBLIC_KEY")]
        pub public_key: Option<PathBuf> = None,
        /// Rehash every row and rebuild the tree from every row hash: the default, accepted so that
        /// scripts written for older versions keep working.
        #[flag("full", env = false; conflicts_with("witness.incremental"))]
        pub full: bool = false,
        /// Rehash only the rows after the checkpoint checked last time (remembered in the state
        /// file): faster, but an edit of an older row that leaves its stored hash alone is not
        /// seen. The summary and the JSON say which rows were not rehashed.
        #[flag("incremental", env = false; conflicts_with("witness.no_state"))]
        pub incremental: bool = false,
        /// Acknowledge the break the state file remembers (its id, as every run prints it) once it
        /// has been dealt with; the state records when. Until then every run exits 1 naming it.
        #[flag("acknowledge-break", env = false; value_name("ID"))]
        pub acknowledge_break: Option<String> = None,
        /// Where the last checked checkpoint is remembered (default
        /// `$HOME/.local/state/event-audit/<origin>+<key id>.json`). Keep it, and a copy of the
        /// checkpoints, out of the log operators' reach.
        #[flag("state-file")]
        pub state_file: Option<PathBuf> = None,
        /// How long one publish to (or read of) the witness may take, and one witness request.
        pub publish_timeout: Dur = defaults::CHECKPOINT_PUBLISH_TIMEOUT,
        /// The signer's memory of the last checkpoint it signed, outside the database (default:
        /// the key file's path with `.state` appended). Keep it with the key.
        #[flag("signer-state", was = "EVENT_AUDIT_SIGNER_STATE")]
        pub signer_state: Option<PathBuf> = None,
        /// Witness policy file, C2SP tlog-policy (`log <vkey>`, `witness <name> <vkey> [url]`,
        /// `group <name> all|any|<k> <names…>`, `quorum <name>|none`; the older `witness <vkey>
        /// <url>` and `quorum <n>` still read). `run` submits every checkpoint to the witnesses
        /// with a URL and publishes it with their cosignatures; readers require the quorum.
        #[flag("witness-policy", was = "EVENT_AUDIT_WITNESS_POLICY")]
        pub witness_policy: Option<PathBuf> = None,
        /// Neither read nor write the state file (a first look at a log, or a state deliberately
        /// set aside); without it, an unreadable state, or one of another log, is exit 2.
        #[flag("no-state", env = false; conflicts_with("witness.state_file"))]
        pub no_state: bool = false,
        /// Copies of the log's tiles (directories, URLs or s3://BUCKET/PREFIX; an auditor's mirror)
        /// to restore lost leaves from when the database's tree is behind the checkpoint the key
        /// signed (after --tiles-dir or --tiles-url); repeat, or comma-separate.
        #[flag("restore-from", was = "EVENT_AUDIT_RESTORE_FROM")]
        pub restore_from: Vec<String> = Vec::new(),
        /// CA certificate (PEM) of the witnesses and of the logs read over HTTPS (`mirror
        /// --log-url`, `--restore-from`), trusted besides the system's store and SSL_CERT_FILE.
        #[flag("witness-tls-ca")]
        pub tls_ca_file: Option<PathBuf> = None,
        /// Client certificate (PEM) presented to those servers when they ask for one (with
        /// --witness-tls-key).
        #[flag("witness-tls-cert")]
        pub tls_cert_file: Option<PathBuf> = None,
        /// Its private key (PEM).
        #[flag("witness-tls-key")]
        pub tls_key_file: Option<PathBuf> = None,
    }
}

impl WitnessSettings {
    /// The origin `keygen` names a key after: the configured one, else
    /// `event-audit/<database name>/<unique>` (`unique`: random hex keygen draws, so that two
    /// logs never share an origin, as C2SP asks of origins).
    pub fn origin_for(&self, database_url: &str, unique: &str) -> String {
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
    pub fn signer_state_path(&self) -> Option<PathBuf> {
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
    pub fn state_path(&self, origin: &str, key_id: &str) -> Option<PathBuf> {
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
