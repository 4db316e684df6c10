//! `Settings`: every option of `run`, `reconcile`, `verify`, `demo`, `simulate-platform` and
//! `publish` in one nested type. Defaults live in `config::defaults`; `config::layer` builds a
//! `Settings` once per process from defaults → TOML file → environment → flags; [`Settings::validate`]
//! refuses what cannot work, naming the key, the value and the allowed range. This module
//! imports nothing else of the crate: every other room reads its part of the settings.

pub mod defaults;
mod duration;
pub mod layer;
mod object_store;
pub mod options;
mod retention;
pub mod secrets;
mod tools;
pub mod urls;
mod validate;
mod witness;

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use options::section;

pub use duration::{parse_duration, Dur};
// Not re-exported: reached as `Settings::retention` and `Settings::object_store` (the public
// items stay within their bound).
pub use object_store::ConditionalWrites;
pub use object_store::{endpoint_problem, ObjectStoreSettings};
pub use retention::RetentionSettings;
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

impl Settings {
    /// Every option with a flag, section by section.
    pub fn options() -> Vec<options::Opt> {
        [
            DatabaseSettings::options(),
            NatsSettings::options(),
            StreamSettings::options(),
            IngestSettings::options(),
            HttpSettings::options(),
            RestSettings::options(),
            ReconcileSettings::options(),
            RetentionSettings::options(),
            ObjectStoreSettings::options(),
            PublishSettings::options(),
            SimulatorSettings::options(),
            SimRates::options(),
            DemoSettings::options(),
            VerifySettings::options(),
            WitnessSettings::options(),
            WitnessServerSettings::options(),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// Every field of every section, with its doc comment (docs/options.md).
    #[cfg(feature = "dev")]
    pub fn fields() -> Vec<(&'static str, &'static [&'static str])> {
        [
            DatabaseSettings::fields(),
            NatsSettings::fields(),
            StreamSettings::fields(),
            IngestSettings::fields(),
            HttpSettings::fields(),
            RestSettings::fields(),
            ReconcileSettings::fields(),
            RetentionSettings::fields(),
            ObjectStoreSettings::fields(),
            PublishSettings::fields(),
            SimulatorSettings::fields(),
            SimRates::fields(),
            DemoSettings::fields(),
            VerifySettings::fields(),
            WitnessSettings::fields(),
            WitnessServerSettings::fields(),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

fn addr(s: &str) -> SocketAddr {
    s.parse()
        .unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)))
}

section! {
    /// `verify`.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct VerifySettings in "verify" {
        /// Skip the completeness report (which needs NATS for the streams' state).
        #[flag("skip-completeness", was = "EVENT_AUDIT_SKIP_COMPLETENESS")]
        pub skip_completeness: bool = false,
        /// An auditor's mirror directory (`event-audit mirror --dir`), or a copy of the log's
        /// tiles: every row's hash must equal the mirror's entry at its leaf index; leaves the
        /// mirror holds and the database lost are named. Needs no witness.
        #[flag("mirror")]
        pub mirror: Option<PathBuf> = None,
    }
}

section! {
    /// PostgreSQL.
    #[derive(Clone, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct DatabaseSettings in "database" {
        /// PostgreSQL URL (postgres://USER@HOST:PORT/DATABASE); keep passwords in the environment.
        #[flag("database-url", was = "DATABASE_URL"; hide_env_values(true))]
        pub url: String = defaults::DATABASE_URL.into(),
        /// Connections in the pool.
        #[flag("db-connections", was = "EVENT_AUDIT_DB_CONNECTIONS")]
        pub connections: u32 = defaults::DB_CONNECTIONS,
        /// How long to wait for PostgreSQL to accept a connection.
        #[flag("db-connect-timeout")]
        pub connect_timeout: Dur = defaults::DB_CONNECT_TIMEOUT,
        /// Server-side bound of each statement, and of idle time inside a transaction.
        #[flag("db-statement-timeout", was = "EVENT_AUDIT_DB_STATEMENT_TIMEOUT")]
        pub statement_timeout: Dur = defaults::DB_STATEMENT_TIMEOUT,
        /// Client-side bound of one batch write; past it the connection is dropped and the batch
        /// retried.
        #[flag("db-write-timeout", was = "EVENT_AUDIT_DB_WRITE_TIMEOUT")]
        pub write_timeout: Dur = defaults::DB_WRITE_TIMEOUT,
        /// File holding the database password (else the URL's, or PGPASSWORD): no password
        /// need be in a URL.
        #[flag("db-password-file")]
        pub password_file: Option<PathBuf> = None,
        /// TLS to PostgreSQL, as libpq's sslmode: disable, prefer (TLS when the server offers
        /// it, unverified), require (TLS, unverified; verified as verify-ca when a CA file is
        /// given), verify-ca (the certificate signed by a trusted CA), verify-full (and for the
        /// host connected to). Default: the URL's `sslmode`, else prefer.
        #[flag("db-tls-mode")]
        pub tls_mode: Option<String> = None,
        /// CA certificate (PEM) that signed the server's certificate (the URL's `sslrootcert`);
        /// else the system's store and SSL_CERT_FILE.
        #[flag("db-tls-ca")]
        pub tls_ca_file: Option<PathBuf> = None,
        /// Client certificate (PEM) for a server that asks for one (the URL's `sslcert`; with
        /// --db-tls-key).
        #[flag("db-tls-cert")]
        pub tls_cert_file: Option<PathBuf> = None,
        /// The client certificate's private key (PEM; the URL's `sslkey`).
        #[flag("db-tls-key")]
        pub tls_key_file: Option<PathBuf> = None,
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
            .field("password_file", &self.password_file)
            .field("tls_mode", &self.tls_mode)
            .field("tls_ca_file", &self.tls_ca_file)
            .field("tls_cert_file", &self.tls_cert_file)
            .field("tls_key_file", &self.tls_key_file)
            .finish()
    }
}

section! {
    /// NATS.
    #[derive(Clone, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct NatsSettings in "nats" {
        /// NATS URL (or a comma-separated list); keep credentials in the environment.
        #[flag("nats-url", was = "NATS_URL"; hide_env_values(true))]
        pub url: String = defaults::NATS_URL.into(),
        /// How long to wait for NATS to accept the connection.
        #[flag("nats-connect-timeout")]
        pub connect_timeout: Dur = defaults::NATS_CONNECT_TIMEOUT,
        /// NATS user (its password in --nats-password-file or NATS_PASSWORD, never argv).
        #[flag("nats-user", was = "NATS_USER")]
        pub user: Option<String> = None,
        /// File holding the NATS password (else the environment variable NATS_PASSWORD).
        #[flag("nats-password-file", was = "NATS_PASSWORD_FILE")]
        pub password_file: Option<PathBuf> = None,
        /// File holding a NATS token (else the environment variable NATS_TOKEN).
        #[flag("nats-token-file", was = "NATS_TOKEN_FILE")]
        pub token_file: Option<PathBuf> = None,
        /// File holding a NATS user NKey seed.
        #[flag("nats-nkey-file", was = "NATS_NKEY")]
        pub nkey_file: Option<PathBuf> = None,
        /// NATS `.creds` file (user JWT and seed).
        #[flag("nats-creds", was = "NATS_CREDS")]
        pub creds_file: Option<PathBuf> = None,
        /// CA certificate (PEM) that signed the NATS server's certificate; requires TLS.
        #[flag("nats-tls-ca", was = "NATS_CA")]
        pub tls_ca_file: Option<PathBuf> = None,
        /// Client certificate (PEM) for NATS servers that require one (with --nats-tls-key).
        #[flag("nats-tls-cert", was = "NATS_CERT")]
        pub tls_cert_file: Option<PathBuf> = None,
        /// The client certificate's private key (PEM).
        #[flag("nats-tls-key", was = "NATS_KEY")]
        pub tls_key_file: Option<PathBuf> = None,
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

section! {
    /// The JetStream stream and the durable pull consumer.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct StreamSettings in "stream" {
        /// JetStream stream.
        #[flag("stream", was = "EVENT_AUDIT_STREAM")]
        pub name: String = defaults::STREAM.into(),
        /// Subjects of the stream when it is created, comma-separated.
        #[flag("subjects", was = "EVENT_AUDIT_SUBJECTS")]
        pub subjects: Vec<String> = vec![defaults::SUBJECTS.into()],
        /// Durable pull consumer (created if missing).
        #[flag("consumer", was = "EVENT_AUDIT_CONSUMER")]
        pub consumer: String = defaults::CONSUMER.into(),
        /// Only bind to an existing stream; never create it.
        #[flag("bind-only", was = "EVENT_AUDIT_BIND_ONLY")]
        pub bind_only: bool = false,
        /// A message without envelope is named by its `Event-Type` header, else by its subject
        /// after this prefix (`events.account.created-v1`).
        #[flag("subject-prefix", was = "EVENT_AUDIT_SUBJECT_PREFIX")]
        pub subject_prefix: String = defaults::SUBJECT_PREFIX.into(),
        /// How long JetStream waits for an ack before redelivering.
        #[flag("ack-wait", was = "EVENT_AUDIT_ACK_WAIT")]
        pub ack_wait: Dur = defaults::ACK_WAIT,
        /// Replicas of the stream when it is created, 1 to 5 (3 in a three-node JetStream
        /// cluster); an existing stream keeps its own.
        #[flag("stream-replicas")]
        pub replicas: usize = defaults::STREAM_REPLICAS,
        /// The first stream sequence the log records: the consumer is created to deliver from it,
        /// and no recovery reads below it.
        #[flag("start-seq", was = "EVENT_AUDIT_START_SEQ")]
        pub start_seq: u64 = 1,
    }
}

section! {
    /// Batching and writing.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct IngestSettings in "ingest" {
        /// Messages per fetch and per database transaction (bounds memory), 1 to 100000.
        #[flag("batch-size", was = "EVENT_AUDIT_BATCH_SIZE")]
        pub batch_size: usize = defaults::BATCH_SIZE,
        /// How long a batch waits to fill up before it is written anyway.
        #[flag("linger", was = "EVENT_AUDIT_LINGER")]
        pub linger: Dur = defaults::LINGER,
        /// Batches written concurrently, each in its own transaction, 1 to 16.
        #[flag("writers", was = "EVENT_AUDIT_WRITERS")]
        pub writers: usize = defaults::WRITERS,
        /// Exit once the consumer has nothing pending (benchmarks, one-shot backfills).
        #[flag("exit-when-idle")]
        pub exit_when_idle: bool = false,
        /// This daemon's name in the chain links it writes (default: the host name).
        #[flag("instance", was = "EVENT_AUDIT_INSTANCE")]
        pub instance: Option<String> = None,
        /// /readyz fails when batches are in hand and none has committed for this long.
        #[flag("stall-timeout", was = "EVENT_AUDIT_STALL_TIMEOUT")]
        pub stall_timeout: Dur = defaults::STALL_TIMEOUT,
        /// After SIGTERM, how long the batches in hand may take to commit; past it nothing more is
        /// acked and the daemon exits non-zero, naming what is left.
        #[flag("shutdown-timeout", was = "EVENT_AUDIT_SHUTDOWN_TIMEOUT")]
        pub shutdown_timeout: Dur = defaults::SHUTDOWN_TIMEOUT,
    }
}

impl IngestSettings {
    /// The instance name: as configured, else the host name.
    pub fn instance_name(&self) -> String {
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
    pub fn max_ack_pending(&self) -> i64 {
        i64::try_from(self.batch_size.saturating_mul(2 * self.writers + 2)).unwrap_or(i64::MAX)
    }
}

section! {
    /// The HTTP listener.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct HttpSettings in "http" {
        /// Listen address for the index, /healthz, /readyz, /metrics and the reports.
        #[flag("http-addr")]
        pub addr: SocketAddr = addr(defaults::HTTP_ADDR),
        /// File holding the bearer token the report endpoints require (else the environment
        /// variable EVENT_AUDIT_REPORT_TOKEN; with neither, the reports are open).
        #[flag("report-token-file", was = "EVENT_AUDIT_REPORT_TOKEN_FILE")]
        pub report_token_file: Option<PathBuf> = None,
        /// A connection must send a whole request head within this time.
        #[flag("http-header-timeout")]
        pub header_timeout: Dur = defaults::HTTP_HEADER_TIMEOUT,
        /// A connection that moves no byte for this long is closed.
        #[flag("http-idle-timeout")]
        pub idle_timeout: Dur = defaults::HTTP_IDLE_TIMEOUT,
        /// HTTP connections served at once (kept well below the descriptor limit).
        #[flag("http-max-connections")]
        pub max_connections: usize = defaults::HTTP_MAX_CONNECTIONS,
        /// Largest request head accepted, in bytes.
        #[flag("http-max-header-bytes")]
        pub max_header_bytes: usize = defaults::HTTP_MAX_HEADER_BYTES,
        /// The daemon's address as a browser reaches it (`https://audit.internal:9187`): the CLI
        /// prints signed links to the reports under it, and an HTML report's links point under it
        /// (without it, a written HTML report leaves them out).
        #[flag("public-url", was = "EVENT_AUDIT_PUBLIC_URL")]
        pub public_url: Option<String> = None,
        /// How long a signed link (and the browser session it opens) stays valid.
        #[flag("link-ttl")]
        pub link_ttl: Dur = defaults::LINK_TTL,
        /// Serve HTTPS with this certificate chain (PEM; with --http-tls-key); read again when
        /// the file changes (a rotation in place), the connections open kept. Off by default.
        #[flag("http-tls-cert")]
        pub tls_cert_file: Option<PathBuf> = None,
        /// The listener certificate's private key (PEM).
        #[flag("http-tls-key")]
        pub tls_key_file: Option<PathBuf> = None,
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

section! {
    /// The platform's Data-Import REST service.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct RestSettings in "rest" {
        /// Base URL of the Data-Import REST service (`/v1/data-import/...` is appended).
        #[flag("rest-url")]
        pub url: Option<String> = None,
        /// File holding the REST token (else EVENT_AUDIT_REST_TOKEN).
        #[flag("rest-token-file")]
        pub token_file: Option<PathBuf> = None,
        /// `token`: `Authorization: Token <token>`; `bare`: `Authorization: <token>`.
        #[flag("rest-auth")]
        pub auth: AuthScheme = AuthScheme::default(),
        /// Timeout of one per-account request.
        #[flag("rest-timeout")]
        pub timeout: Dur = defaults::REST_TIMEOUT,
        /// Timeout of one list request (a list carries the whole batch).
        #[flag("rest-list-timeout")]
        pub list_timeout: Dur = defaults::REST_LIST_TIMEOUT,
        /// Requests in flight at once, 1 to 256.
        #[flag("rest-concurrency")]
        pub concurrency: usize = defaults::REST_CONCURRENCY,
        /// Requests per second, 0 for no limit.
        #[flag("rest-rate")]
        pub rate: f64 = defaults::REST_RATE,
        /// Retries after 5xx, 429, timeouts and connection errors (exponential backoff, jitter).
        #[flag("rest-retries")]
        pub retries: u32 = defaults::REST_RETRIES,
        /// The first backoff, doubled per retry.
        pub backoff: Dur = defaults::REST_BACKOFF,
        /// The platform's GraphQL URL: obtain the REST token with the token mutation (and again
        /// after a 401), authenticated by the organisation API key.
        #[flag("graphql-url", was = "EVENT_AUDIT_GRAPHQL_URL")]
        pub graphql_url: Option<String> = None,
        /// File holding the organisation API key (else EVENT_AUDIT_API_KEY).
        #[flag("api-key-file", was = "EVENT_AUDIT_API_KEY_FILE")]
        pub api_key_file: Option<PathBuf> = None,
        /// The GraphQL mutation document that obtains a token (sent with the variables
        /// `{"input": {"APIKey": KEY}}`; the token is read from `data.<field>.token`).
        #[flag("token-mutation")]
        pub token_mutation: String = defaults::TOKEN_MUTATION.into(),
        /// CA certificate (PEM) of the REST service and its GraphQL endpoint, trusted besides the
        /// system's store and SSL_CERT_FILE.
        #[flag("rest-tls-ca")]
        pub tls_ca_file: Option<PathBuf> = None,
        /// Client certificate (PEM) for a REST service that asks for one (with --rest-tls-key).
        #[flag("rest-tls-cert")]
        pub tls_cert_file: Option<PathBuf> = None,
        /// The REST client certificate's private key (PEM).
        #[flag("rest-tls-key")]
        pub tls_key_file: Option<PathBuf> = None,
    }
}

section! {
    /// Reconciliation: the daemon's schedule and the CLI's defaults.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct ReconcileSettings in "reconcile" {
        /// Reconcile this import supplier on a schedule (repeatable, or comma-separated); needs
        /// --rest-url and a REST token.
        #[flag("reconcile-supplier")]
        pub suppliers: Vec<String> = Vec::new(),
        /// Time between scheduled reconciliations (`30s`, `5m`, `1h`).
        #[flag("reconcile-interval")]
        pub interval: Dur = defaults::RECONCILE_INTERVAL,
        /// Scheduled runs look at outcome events (and imports) of this last period only (`7d`);
        /// without it, at the whole history.
        #[flag("reconcile-window")]
        pub window: Option<Dur> = None,
        /// Grace period of scheduled reconciliations.
        #[flag("reconcile-grace")]
        pub grace: Dur = defaults::RECONCILE_GRACE,
        /// Also reconcile each supplier as a whole (the daemon reconciles each open batch of the
        /// suppliers; the whole supplier only when asked).
        #[flag("reconcile-whole-supplier")]
        pub whole_supplier: bool = false,
        /// A batch closes by itself once every account has been settled (matched or tolerated,
        /// every registration registered) this long.
        #[flag("batch-close-after", was = "EVENT_AUDIT_BATCH_CLOSE_AFTER")]
        pub close_after: Dur = defaults::RECONCILE_CLOSE_AFTER,
        /// A registration requested longer ago than this without completion is `stalled`.
        #[flag("registration-grace", was = "EVENT_AUDIT_REGISTRATION_GRACE")]
        pub registration_grace: Dur = defaults::REGISTRATION_GRACE,
        /// How often the reconciliation metrics are derived from the stored runs (CLI runs
        /// included).
        #[flag("reconcile-poll")]
        pub poll: Dur = defaults::RECONCILE_POLL,
    }
}
