//! The option groups commands share. Every field is optional: what a flag or its environment
//! variable gives becomes an override of [`crate::config::Settings`] (the field's `id` is its
//! settings path, and the groups serialize into the same nested shape); what neither gives
//! keeps the file's value or the default, which `--help` shows.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Serialize;
use serde_with::skip_serializing_none;

use crate::config::layer::{self, LoadError};
use crate::config::{AuthScheme, Dur, Settings};

pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

/// `--config`: the TOML file with any settings (nested tables, see docs/operators.md).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ConfigArg {
    /// TOML file with settings (`[database]`, `[ingest]`, ...); environment and flags win.
    #[arg(long, env = "EVENT_AUDIT_CONFIG")]
    pub(crate) config: Option<PathBuf>,
}

impl ConfigArg {
    /// Settings from the defaults, this file, then `overrides` (flags and environment).
    pub fn load<T: Serialize>(&self, overrides: &T) -> Result<Settings, LoadError> {
        layer::load(self.config.as_deref(), layer::overrides(overrides)?)
    }
}

/// The audit log's database as every command that opens it reads it: where it is, and how long
/// to wait for it. The commands that read more of `[database]` flatten a larger group below, so
/// that `--help` lists only what the command reads.
#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct DatabaseArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub(crate) url: DatabaseUrlArg,
    /// How long to wait for PostgreSQL to accept a connection.
    #[arg(long = "db-connect-timeout", id = "database.connect_timeout")]
    pub(crate) connect_timeout: Option<Dur>,
}

/// The database's URL alone (`keygen` reads only its name).
#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct DatabaseUrlArg {
    /// PostgreSQL URL (postgres://USER@HOST:PORT/DATABASE); keep passwords in the environment.
    #[arg(
        long = "database-url",
        id = "database.url",
        env = "DATABASE_URL",
        hide_env_values = true
    )]
    pub(crate) url: Option<String>,
}

/// The database with a pool sized by `--db-connections` (`verify`).
#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct PooledDatabaseArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub(crate) database: DatabaseArgs,
    /// Connections in the pool.
    #[arg(
        long = "db-connections",
        id = "database.connections",
        env = "EVENT_AUDIT_DB_CONNECTIONS"
    )]
    pub(crate) connections: Option<u32>,
}

/// The database as a writer opens it: its statements bounded on the server (`reprocess`).
#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct StatementDatabaseArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub(crate) pool: PooledDatabaseArgs,
    /// Server-side bound of each statement, and of idle time inside a transaction.
    #[arg(
        long = "db-statement-timeout",
        id = "database.statement_timeout",
        env = "EVENT_AUDIT_DB_STATEMENT_TIMEOUT"
    )]
    pub(crate) statement_timeout: Option<Dur>,
}

/// The daemon's database: also each batch write bounded on the client (`run`).
#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct WriterDatabaseArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub(crate) statements: StatementDatabaseArgs,
    /// Client-side bound of one batch write; past it the connection is dropped and the batch
    /// retried.
    #[arg(
        long = "db-write-timeout",
        id = "database.write_timeout",
        env = "EVENT_AUDIT_DB_WRITE_TIMEOUT"
    )]
    pub(crate) write_timeout: Option<Dur>,
}

#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct NatsArgs {
    /// NATS URL (or a comma-separated list); keep credentials in the environment.
    #[arg(
        long = "nats-url",
        id = "nats.url",
        env = "NATS_URL",
        hide_env_values = true
    )]
    pub(crate) url: Option<String>,
    /// How long to wait for NATS to accept the connection.
    #[arg(long = "nats-connect-timeout", id = "nats.connect_timeout")]
    pub(crate) connect_timeout: Option<Dur>,
    /// NATS user (its password in --nats-password-file or NATS_PASSWORD, never argv).
    #[arg(long = "nats-user", id = "nats.user", env = "NATS_USER")]
    pub(crate) user: Option<String>,
    /// File holding the NATS password (else the environment variable NATS_PASSWORD).
    #[arg(
        long = "nats-password-file",
        id = "nats.password_file",
        env = "NATS_PASSWORD_FILE"
    )]
    pub(crate) password_file: Option<PathBuf>,
    /// File holding a NATS token (else the environment variable NATS_TOKEN).
    #[arg(
        long = "nats-token-file",
        id = "nats.token_file",
        env = "NATS_TOKEN_FILE"
    )]
    pub(crate) token_file: Option<PathBuf>,
    /// File holding a NATS user NKey seed.
    #[arg(long = "nats-nkey-file", id = "nats.nkey_file", env = "NATS_NKEY")]
    pub(crate) nkey_file: Option<PathBuf>,
    /// NATS `.creds` file (user JWT and seed).
    #[arg(long = "nats-creds", id = "nats.creds_file", env = "NATS_CREDS")]
    pub(crate) creds_file: Option<PathBuf>,
    /// CA certificate (PEM) that signed the NATS server's certificate; requires TLS.
    #[arg(long = "nats-tls-ca", id = "nats.tls_ca_file", env = "NATS_CA")]
    pub(crate) tls_ca_file: Option<PathBuf>,
    /// Client certificate (PEM) for NATS servers that require one (with --nats-tls-key).
    #[arg(long = "nats-tls-cert", id = "nats.tls_cert_file", env = "NATS_CERT")]
    pub(crate) tls_cert_file: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long = "nats-tls-key", id = "nats.tls_key_file", env = "NATS_KEY")]
    pub(crate) tls_key_file: Option<PathBuf>,
}

/// The stream a publisher writes to (created when missing).
#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct StreamArgs {
    /// JetStream stream.
    #[arg(long = "stream", id = "stream.name", env = "EVENT_AUDIT_STREAM")]
    pub(crate) name: Option<String>,
    /// Subjects of the stream when it is created, comma-separated.
    #[arg(
        long,
        id = "stream.subjects",
        env = "EVENT_AUDIT_SUBJECTS",
        value_delimiter = ','
    )]
    pub(crate) subjects: Option<Vec<String>>,
    /// Replicas of the stream when it is created, 1 to 5 (3 in a three-node JetStream
    /// cluster); an existing stream keeps its own.
    #[arg(
        long = "stream-replicas",
        id = "stream.replicas",
        env = "EVENT_AUDIT_STREAM_REPLICAS"
    )]
    pub(crate) replicas: Option<usize>,
}

/// The stream and the durable consumer the daemon reads.
#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct ConsumerArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub(crate) stream: StreamArgs,
    /// Durable pull consumer (created if missing).
    #[arg(long, id = "stream.consumer", env = "EVENT_AUDIT_CONSUMER")]
    pub(crate) consumer: Option<String>,
    /// Only bind to an existing stream; never create it.
    #[arg(long, id = "stream.bind_only", env = "EVENT_AUDIT_BIND_ONLY")]
    #[serde(skip_serializing_if = "is_false")]
    pub(crate) bind_only: bool,
    /// A message without envelope is named by its `Event-Type` header, else by its subject
    /// after this prefix (`events.account.created-v1`).
    #[arg(long, id = "stream.subject_prefix", env = "EVENT_AUDIT_SUBJECT_PREFIX")]
    pub(crate) subject_prefix: Option<String>,
    /// How long JetStream waits for an ack before redelivering.
    #[arg(long, id = "stream.ack_wait", env = "EVENT_AUDIT_ACK_WAIT")]
    pub(crate) ack_wait: Option<Dur>,
    /// The first stream sequence the log records: the consumer is created to deliver from it,
    /// and no recovery reads below it.
    #[arg(
        long = "start-seq",
        id = "stream.start_seq",
        env = "EVENT_AUDIT_START_SEQ"
    )]
    pub(crate) start_seq: Option<u64>,
}

#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct IngestArgs {
    /// Messages per fetch and per database transaction (bounds memory), 1 to 100000.
    #[arg(long, id = "ingest.batch_size", env = "EVENT_AUDIT_BATCH_SIZE")]
    pub(crate) batch_size: Option<usize>,
    /// How long a batch waits to fill up before it is written anyway.
    #[arg(long, id = "ingest.linger", env = "EVENT_AUDIT_LINGER")]
    pub(crate) linger: Option<Dur>,
    /// Batches written concurrently, each in its own transaction, 1 to 16.
    #[arg(long, id = "ingest.writers", env = "EVENT_AUDIT_WRITERS")]
    pub(crate) writers: Option<usize>,
    /// Exit once the consumer has nothing pending (benchmarks, one-shot backfills).
    #[arg(long, id = "ingest.exit_when_idle")]
    #[serde(skip_serializing_if = "is_false")]
    pub(crate) exit_when_idle: bool,
    /// This daemon's name in the chain links it writes (default: the host name).
    #[arg(long, id = "ingest.instance", env = "EVENT_AUDIT_INSTANCE")]
    pub(crate) instance: Option<String>,
    /// /readyz fails when batches are in hand and none has committed for this long.
    #[arg(long, id = "ingest.stall_timeout", env = "EVENT_AUDIT_STALL_TIMEOUT")]
    pub(crate) stall_timeout: Option<Dur>,
    /// After SIGTERM, how long the batches in hand may take to commit; past it nothing more is
    /// acked and the daemon exits non-zero, naming what is left.
    #[arg(
        long,
        id = "ingest.shutdown_timeout",
        env = "EVENT_AUDIT_SHUTDOWN_TIMEOUT"
    )]
    pub(crate) shutdown_timeout: Option<Dur>,
}

#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct HttpArgs {
    /// Listen address for the index, /healthz, /readyz, /metrics and the reports.
    #[arg(long = "http-addr", id = "http.addr", env = "EVENT_AUDIT_HTTP_ADDR")]
    pub(crate) addr: Option<SocketAddr>,
    /// File holding the bearer token the report endpoints require (else the environment
    /// variable EVENT_AUDIT_REPORT_TOKEN; with neither, the reports are open).
    #[arg(
        long,
        id = "http.report_token_file",
        env = "EVENT_AUDIT_REPORT_TOKEN_FILE"
    )]
    pub(crate) report_token_file: Option<PathBuf>,
    /// A connection must send a whole request head within this time.
    #[arg(
        long = "http-header-timeout",
        id = "http.header_timeout",
        env = "EVENT_AUDIT_HTTP_HEADER_TIMEOUT"
    )]
    pub(crate) header_timeout: Option<Dur>,
    /// A connection that moves no byte for this long is closed.
    #[arg(
        long = "http-idle-timeout",
        id = "http.idle_timeout",
        env = "EVENT_AUDIT_HTTP_IDLE_TIMEOUT"
    )]
    pub(crate) idle_timeout: Option<Dur>,
    /// HTTP connections served at once (kept well below the descriptor limit).
    #[arg(
        long = "http-max-connections",
        id = "http.max_connections",
        env = "EVENT_AUDIT_HTTP_MAX_CONNECTIONS"
    )]
    pub(crate) max_connections: Option<usize>,
    /// Largest request head accepted, in bytes.
    #[arg(
        long = "http-max-header-bytes",
        id = "http.max_header_bytes",
        env = "EVENT_AUDIT_HTTP_MAX_HEADER_BYTES"
    )]
    pub(crate) max_header_bytes: Option<usize>,
}

/// The REST service; its token comes from `--rest-token-file` or `EVENT_AUDIT_REST_TOKEN`,
/// never argv.
#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct RestArgs {
    /// Base URL of the Data-Import REST service (`/v1/data-import/...` is appended).
    #[arg(long = "rest-url", id = "rest.url", env = "EVENT_AUDIT_REST_URL")]
    pub(crate) url: Option<String>,
    /// File holding the REST token (else EVENT_AUDIT_REST_TOKEN).
    #[arg(
        long = "rest-token-file",
        id = "rest.token_file",
        env = "EVENT_AUDIT_REST_TOKEN_FILE"
    )]
    pub(crate) token_file: Option<PathBuf>,
    /// `token`: `Authorization: Token <token>`; `bare`: `Authorization: <token>`.
    #[arg(
        long = "rest-auth",
        id = "rest.auth",
        env = "EVENT_AUDIT_REST_AUTH",
        value_enum
    )]
    pub(crate) auth: Option<AuthScheme>,
    /// Timeout of one per-account request.
    #[arg(long = "rest-timeout", id = "rest.timeout")]
    pub(crate) timeout: Option<Dur>,
    /// Timeout of one list request (a list carries the whole batch).
    #[arg(long = "rest-list-timeout", id = "rest.list_timeout")]
    pub(crate) list_timeout: Option<Dur>,
    /// Requests in flight at once, 1 to 256.
    #[arg(long = "rest-concurrency", id = "rest.concurrency")]
    pub(crate) concurrency: Option<usize>,
    /// Requests per second, 0 for no limit.
    #[arg(long = "rest-rate", id = "rest.rate")]
    pub(crate) rate: Option<f64>,
    /// Retries after 5xx, 429, timeouts and connection errors (exponential backoff, jitter).
    #[arg(long = "rest-retries", id = "rest.retries")]
    pub(crate) retries: Option<u32>,
    /// The platform's GraphQL URL: obtain the REST token with the token mutation (and again
    /// after a 401), authenticated by the organisation API key.
    #[arg(
        long = "graphql-url",
        id = "rest.graphql_url",
        env = "EVENT_AUDIT_GRAPHQL_URL"
    )]
    pub(crate) graphql_url: Option<String>,
    /// File holding the organisation API key (else EVENT_AUDIT_API_KEY).
    #[arg(
        long = "api-key-file",
        id = "rest.api_key_file",
        env = "EVENT_AUDIT_API_KEY_FILE"
    )]
    pub(crate) api_key_file: Option<PathBuf>,
    /// The GraphQL mutation document that obtains a token (sent with the variables
    /// `{"input": {"APIKey": KEY}}`; the token is read from `data.<field>.token`).
    #[arg(long = "token-mutation", id = "rest.token_mutation")]
    pub(crate) token_mutation: Option<String>,
}

/// Where the daemon's reports are for a browser, and how long a signed link lives.
#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct LinkArgs {
    /// The daemon's address as a browser reaches it (`https://audit.internal:9187`): the CLI
    /// prints signed links to the reports under it, and an HTML report's links point under it
    /// (without it, a written HTML report leaves them out).
    #[arg(
        long = "public-url",
        id = "http.public_url",
        env = "EVENT_AUDIT_PUBLIC_URL"
    )]
    pub(crate) public_url: Option<String>,
    /// File holding the report token the links are signed with (else the environment
    /// variable EVENT_AUDIT_REPORT_TOKEN).
    #[arg(
        long,
        id = "http.report_token_file",
        env = "EVENT_AUDIT_REPORT_TOKEN_FILE"
    )]
    pub(crate) report_token_file: Option<PathBuf>,
    /// How long a signed link (and the browser session it opens) stays valid.
    #[arg(long = "link-ttl", id = "http.link_ttl")]
    pub(crate) link_ttl: Option<Dur>,
}

/// The daemon's scheduled reconciliation.
#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct ScheduleArgs {
    /// Reconcile this import supplier on a schedule (repeatable, or comma-separated); needs
    /// --rest-url and a REST token.
    #[arg(
        long = "reconcile-supplier",
        id = "reconcile.suppliers",
        env = "EVENT_AUDIT_RECONCILE_SUPPLIERS",
        value_delimiter = ','
    )]
    pub(crate) suppliers: Option<Vec<String>>,
    /// Time between scheduled reconciliations (`30s`, `5m`, `1h`).
    #[arg(
        long = "reconcile-interval",
        id = "reconcile.interval",
        env = "EVENT_AUDIT_RECONCILE_INTERVAL"
    )]
    pub(crate) interval: Option<Dur>,
    /// Scheduled runs look at outcome events (and imports) of this last period only (`7d`);
    /// without it, at the whole history.
    #[arg(
        long = "reconcile-window",
        id = "reconcile.window",
        env = "EVENT_AUDIT_RECONCILE_WINDOW"
    )]
    pub(crate) window: Option<Dur>,
    /// Grace period of scheduled reconciliations.
    #[arg(
        long = "reconcile-grace",
        id = "reconcile.grace",
        env = "EVENT_AUDIT_RECONCILE_GRACE"
    )]
    pub(crate) grace: Option<Dur>,
    /// Also reconcile each supplier as a whole (the daemon reconciles each open batch of the
    /// suppliers; the whole supplier only when asked).
    #[arg(
        long = "reconcile-whole-supplier",
        id = "reconcile.whole_supplier",
        env = "EVENT_AUDIT_RECONCILE_WHOLE_SUPPLIER"
    )]
    #[serde(skip_serializing_if = "is_false")]
    pub(crate) whole_supplier: bool,
    /// A batch closes by itself once every account has been settled (matched or tolerated,
    /// every registration registered) this long.
    #[arg(
        long = "batch-close-after",
        id = "reconcile.close_after",
        env = "EVENT_AUDIT_BATCH_CLOSE_AFTER"
    )]
    pub(crate) close_after: Option<Dur>,
    /// A registration requested longer ago than this without completion is `stalled`.
    #[arg(
        long = "registration-grace",
        id = "reconcile.registration_grace",
        env = "EVENT_AUDIT_REGISTRATION_GRACE"
    )]
    pub(crate) registration_grace: Option<Dur>,
    /// How often the reconciliation metrics are derived from the stored runs (CLI runs
    /// included).
    #[arg(long = "reconcile-poll", id = "reconcile.poll")]
    pub(crate) poll: Option<Dur>,
}

/// The daemon's retention: payloads erased, rows archived, past their periods.
#[skip_serializing_none]
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct RetentionArgs {
    /// Erase the personal data of rows published longer ago than this (`400d`), recorded as
    /// one erasure per run; without it, payloads are kept.
    #[arg(
        long = "retention-payloads-for",
        id = "retention.payloads_for",
        env = "EVENT_AUDIT_RETENTION_PAYLOADS_FOR"
    )]
    pub(crate) payloads_for: Option<Dur>,
    /// Archive rows published longer ago than this to --retention-archive-dir, then drop them
    /// from the database; without it, rows are kept.
    #[arg(
        long = "retention-rows-for",
        id = "retention.rows_for",
        env = "EVENT_AUDIT_RETENTION_ROWS_FOR"
    )]
    pub(crate) rows_for: Option<Dur>,
    /// Where rows are archived before they leave the database.
    #[arg(
        long = "retention-archive-dir",
        id = "retention.archive_dir",
        env = "EVENT_AUDIT_RETENTION_ARCHIVE_DIR"
    )]
    pub(crate) archive_dir: Option<PathBuf>,
    /// Time between retention runs.
    #[arg(
        long = "retention-interval",
        id = "retention.interval",
        env = "EVENT_AUDIT_RETENTION_INTERVAL"
    )]
    pub(crate) interval: Option<Dur>,
}

#[cfg(test)]
#[path = "args_tests.rs"]
mod tests;
