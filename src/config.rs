//! `Settings`: every option of `run`, `reconcile`, `verify`, `demo`, `simulate-platform` and
//! `publish` in one nested type. Defaults live in [`defaults`]; [`layer`] builds a `Settings`
//! once per process from defaults → TOML file → environment → flags; [`Settings::validate`]
//! refuses what cannot work, naming the key, the value and the allowed range. This module
//! imports nothing else of the crate: every other room reads its part of the settings.

pub(crate) mod defaults;
mod duration;
pub(crate) mod layer;
mod object_store;
mod retention;
pub(crate) mod secrets;
mod tools;
pub(crate) mod urls;
mod validate;
mod witness;

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use duration::{parse_duration, Dur};
// Not re-exported: reached as `Settings::retention` and `Settings::object_store` (the public
// items stay within their bound).
pub(crate) use object_store::{endpoint_problem, ObjectStoreSettings};
pub(crate) use retention::RetentionSettings;
pub use tools::{DemoSettings, PublishSettings, SimNaming, SimRates, SimulatorSettings};
pub use urls::{redact_nats_url, redact_url};
pub use validate::ConfigError;
pub use witness::{WitnessServerSettings, WitnessSettings};

/// All settings. Each command reads the groups it needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[derive(Default)]
pub struct Settings {
    pub database: DatabaseSettings,
    pub nats: NatsSettings,
    pub stream: StreamSettings,
    pub ingest: IngestSettings,
    pub http: HttpSettings,
    pub rest: RestSettings,
    pub reconcile: ReconcileSettings,
    pub retention: RetentionSettings,
    /// An S3-compatible object store (endpoint, region, credentials' files, timeout).
    pub object_store: ObjectStoreSettings,
    pub publish: PublishSettings,
    pub simulator: SimulatorSettings,
    pub demo: DemoSettings,
    pub verify: VerifySettings,
    pub witness: WitnessSettings,
    pub witness_server: WitnessServerSettings,
}

fn addr(s: &str) -> SocketAddr {
    s.parse()
        .unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)))
}

/// `verify`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VerifySettings {
    /// Do not ask NATS for the streams' state (no completeness report).
    pub skip_completeness: bool,
    /// An auditor's mirror (`event-audit mirror --dir`): every row's hash at its leaf index is
    /// checked against the mirror's entry, and leaves the database lost are named.
    pub mirror: Option<std::path::PathBuf>,
}

/// PostgreSQL.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseSettings {
    /// `postgres://` or `postgresql://` URL; passwords belong in the environment.
    pub url: String,
    /// Connections in the pool.
    pub connections: u32,
    /// How long to wait for a connection to open.
    pub connect_timeout: Dur,
    /// Server-side bound of every statement and of idle time inside a transaction, set per
    /// connection of the daemon (`statement_timeout`, `idle_in_transaction_session_timeout`).
    pub statement_timeout: Dur,
    /// Client-side bound of one batch write (the whole transaction); past it the connection is
    /// dropped and the batch retried. Catches what the server cannot see: a silent network.
    pub write_timeout: Dur,
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        DatabaseSettings {
            url: defaults::DATABASE_URL.into(),
            connections: defaults::DB_CONNECTIONS,
            connect_timeout: defaults::DB_CONNECT_TIMEOUT,
            statement_timeout: defaults::DB_STATEMENT_TIMEOUT,
            write_timeout: defaults::DB_WRITE_TIMEOUT,
        }
    }
}

impl std::fmt::Debug for DatabaseSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseSettings")
            .field("url", &redact_url(&self.url))
            .field("connections", &self.connections)
            .field("connect_timeout", &self.connect_timeout)
            .field("statement_timeout", &self.statement_timeout)
            .field("write_timeout", &self.write_timeout)
            .finish()
    }
}

/// NATS.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NatsSettings {
    /// `nats://HOST:PORT` (or a comma-separated list). Credentials in it are taken out and
    /// used as user/password (or token); they are never passed on or logged.
    pub url: String,
    pub connect_timeout: Dur,
    /// User name (its password from `password_file` or `NATS_PASSWORD`).
    pub user: Option<String>,
    /// File holding the password of `user` (else the environment variable NATS_PASSWORD).
    pub password_file: Option<PathBuf>,
    /// File holding an authentication token (else the environment variable NATS_TOKEN).
    pub token_file: Option<PathBuf>,
    /// File holding a user NKey seed (`SU...`).
    pub nkey_file: Option<PathBuf>,
    /// A `.creds` file (user JWT and NKey seed).
    pub creds_file: Option<PathBuf>,
    /// CA certificate (PEM) to verify the server with; setting it requires TLS.
    pub tls_ca_file: Option<PathBuf>,
    /// Client certificate (PEM), with `tls_key_file`, for servers that require one.
    pub tls_cert_file: Option<PathBuf>,
    pub tls_key_file: Option<PathBuf>,
}

impl Default for NatsSettings {
    fn default() -> Self {
        NatsSettings {
            url: defaults::NATS_URL.into(),
            connect_timeout: defaults::NATS_CONNECT_TIMEOUT,
            user: None,
            password_file: None,
            token_file: None,
            nkey_file: None,
            creds_file: None,
            tls_ca_file: None,
            tls_cert_file: None,
            tls_key_file: None,
        }
    }
}

impl std::fmt::Debug for NatsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsSettings")
            .field("url", &redact_nats_url(&self.url))
            .field("connect_timeout", &self.connect_timeout)
            .field("user", &self.user)
            .field("password_file", &self.password_file)
            .field("token_file", &self.token_file)
            .field("nkey_file", &self.nkey_file)
            .field("creds_file", &self.creds_file)
            .field("tls_ca_file", &self.tls_ca_file)
            .field("tls_cert_file", &self.tls_cert_file)
            .field("tls_key_file", &self.tls_key_file)
            .finish()
    }
}

/// The JetStream stream and the durable pull consumer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StreamSettings {
    pub name: String,
    /// Subjects of the stream when it is created.
    pub subjects: Vec<String>,
    pub consumer: String,
    /// Only bind to an existing stream; never create it.
    pub bind_only: bool,
    /// A message without envelope is named by its `Event-Type` header, else by its subject
    /// after this prefix; empty for none.
    pub subject_prefix: String,
    /// How long JetStream waits for an ack before redelivering.
    pub ack_wait: Dur,
    /// Replicas of the stream when it is created (an existing stream keeps its own).
    pub replicas: usize,
    /// The first stream sequence the log records: the consumer is created to deliver from it,
    /// and no recovery reads below it (1: from the stream's first message).
    pub start_seq: u64,
}

impl Default for StreamSettings {
    fn default() -> Self {
        StreamSettings {
            name: defaults::STREAM.into(),
            subjects: vec![defaults::SUBJECTS.into()],
            consumer: defaults::CONSUMER.into(),
            bind_only: false,
            subject_prefix: defaults::SUBJECT_PREFIX.into(),
            ack_wait: defaults::ACK_WAIT,
            replicas: defaults::STREAM_REPLICAS,
            start_seq: 1,
        }
    }
}

/// Batching and writing.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IngestSettings {
    /// Messages per fetch and per database transaction (bounds memory).
    pub batch_size: usize,
    /// How long a batch waits to fill up before it is written anyway.
    pub linger: Dur,
    /// Batches written concurrently, each in its own transaction.
    pub writers: usize,
    /// Exit once the consumer has nothing pending (benchmarks, one-shot backfills).
    pub exit_when_idle: bool,
    /// This daemon's name in the chain links it writes; the host name when unset.
    pub instance: Option<String>,
    /// `/readyz` fails when batches are in hand and none has committed for this long.
    pub stall_timeout: Dur,
    /// After SIGTERM, how long the batches in hand may take to commit; past it the daemon
    /// stops retrying, acks nothing uncommitted, says what is left and exits non-zero.
    pub shutdown_timeout: Dur,
}

impl Default for IngestSettings {
    fn default() -> Self {
        IngestSettings {
            batch_size: defaults::BATCH_SIZE,
            linger: defaults::LINGER,
            writers: defaults::WRITERS,
            exit_when_idle: false,
            instance: None,
            stall_timeout: defaults::STALL_TIMEOUT,
            shutdown_timeout: defaults::SHUTDOWN_TIMEOUT,
        }
    }
}

impl IngestSettings {
    /// The instance name: as configured, else the host name.
    pub(crate) fn instance_name(&self) -> String {
        self.instance.clone().unwrap_or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_owned())
                .ok()
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| "event-audit".into())
        })
    }

    /// Unacked messages the consumer may hold: batches being written, queued and being
    /// filled, plus one in the pull pipeline.
    pub(crate) fn max_ack_pending(&self) -> i64 {
        i64::try_from(self.batch_size.saturating_mul(2 * self.writers + 2)).unwrap_or(i64::MAX)
    }
}

/// The HTTP listener.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpSettings {
    /// Listen address (port 0: any free port).
    pub addr: SocketAddr,
    /// File holding the bearer token of the report endpoints (else EVENT_AUDIT_REPORT_TOKEN;
    /// with neither, the reports are open).
    pub report_token_file: Option<PathBuf>,
    /// A connection must deliver a whole request head within this time (slow clients are
    /// closed); also how long a kept-alive connection may wait for its next request.
    pub header_timeout: Dur,
    /// A connection that moves no byte either way for this long is closed.
    pub idle_timeout: Dur,
    /// Connections served at once; at the cap the oldest idle one is closed for a new one.
    pub max_connections: usize,
    /// Largest request head (request line and headers) accepted, in bytes (431 beyond).
    pub max_header_bytes: usize,
    /// The daemon's address as a browser reaches it (`https://audit.internal:9187`), for the
    /// signed report links the CLI prints.
    pub public_url: Option<String>,
    /// How long a signed report link (and the session it opens) stays valid.
    pub link_ttl: Dur,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            addr: addr(defaults::HTTP_ADDR),
            report_token_file: None,
            header_timeout: defaults::HTTP_HEADER_TIMEOUT,
            idle_timeout: defaults::HTTP_IDLE_TIMEOUT,
            max_connections: defaults::HTTP_MAX_CONNECTIONS,
            max_header_bytes: defaults::HTTP_MAX_HEADER_BYTES,
            public_url: None,
            link_ttl: defaults::LINK_TTL,
        }
    }
}

/// How the REST token goes into the `Authorization` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum AuthScheme {
    /// `Authorization: Token <token>` (the spec's sample request).
    #[default]
    Token,
    /// `Authorization: <token>` (the spec's prose).
    Bare,
}

impl AuthScheme {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthScheme::Token => "token",
            AuthScheme::Bare => "bare",
        }
    }
}

/// The platform's Data-Import REST service.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RestSettings {
    /// Base URL (`/v1/data-import/...` is appended).
    pub url: Option<String>,
    /// File holding the token (else EVENT_AUDIT_REST_TOKEN).
    pub token_file: Option<PathBuf>,
    pub auth: AuthScheme,
    /// Timeout of one per-account request.
    pub timeout: Dur,
    /// Timeout of one list request (a list carries the whole batch).
    pub list_timeout: Dur,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Requests per second, 0 for no limit.
    pub rate: f64,
    /// Retries after 5xx, 429, timeouts and connection errors.
    pub retries: u32,
    /// The first backoff, doubled per retry.
    pub backoff: Dur,
    /// The platform's GraphQL URL: when set, the token is obtained (and renewed after a 401)
    /// with the token mutation, authenticated by the organisation API key.
    pub graphql_url: Option<String>,
    /// File holding the organisation API key (else EVENT_AUDIT_API_KEY).
    pub api_key_file: Option<PathBuf>,
    /// The GraphQL mutation document that obtains a token (variables `{"input": {"APIKey"}}`).
    pub token_mutation: String,
}

impl Default for RestSettings {
    fn default() -> Self {
        RestSettings {
            url: None,
            token_file: None,
            auth: AuthScheme::default(),
            timeout: defaults::REST_TIMEOUT,
            list_timeout: defaults::REST_LIST_TIMEOUT,
            concurrency: defaults::REST_CONCURRENCY,
            rate: defaults::REST_RATE,
            retries: defaults::REST_RETRIES,
            backoff: defaults::REST_BACKOFF,
            graphql_url: None,
            api_key_file: None,
            token_mutation: defaults::TOKEN_MUTATION.into(),
        }
    }
}

/// Reconciliation: the daemon's schedule and the CLI's defaults.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReconcileSettings {
    /// Import suppliers to reconcile (the daemon reconciles them on a schedule when set).
    pub suppliers: Vec<String>,
    /// Time between scheduled reconciliations.
    pub interval: Dur,
    /// Scheduled runs look at this last period only; the whole history when unset.
    pub window: Option<Dur>,
    /// An account imported less than this long ago without outcome event is
    /// `awaiting_event`, not `missing_event`.
    pub grace: Dur,
    /// The daemon also reconciles each supplier as a whole (not only its open batches).
    pub whole_supplier: bool,
    /// A batch closes by itself once every run has been settled for this long.
    pub close_after: Dur,
    /// A registration requested longer ago than this without completion is `stalled`.
    pub registration_grace: Dur,
    /// How often the daemon derives the reconciliation metrics from the stored runs.
    pub poll: Dur,
}

impl Default for ReconcileSettings {
    fn default() -> Self {
        ReconcileSettings {
            suppliers: Vec::new(),
            interval: defaults::RECONCILE_INTERVAL,
            window: None,
            grace: defaults::RECONCILE_GRACE,
            whole_supplier: false,
            close_after: defaults::RECONCILE_CLOSE_AFTER,
            registration_grace: defaults::REGISTRATION_GRACE,
            poll: defaults::RECONCILE_POLL,
        }
    }
}
