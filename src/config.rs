//! Daemon configuration: flags, then environment (`DATABASE_URL`, `NATS_URL`, `EVENT_AUDIT_*`),
//! then an optional TOML file (`--config`), then defaults, in that precedence.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use serde::Deserialize;

use crate::bus::Binding;
use crate::reconcile::client::{AuthScheme, RestConfig};
use crate::record::Naming;
use crate::secrets::{load_secret, REPORT_TOKEN_ENV, REST_TOKEN_ENV};

pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/event_audit";
pub const DEFAULT_NATS_URL: &str = "nats://127.0.0.1:4222";

/// Connection options shared by `run`, `verify`, `reconcile`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ConnArgs {
    /// TOML file with any of the options below (snake_case keys); flags and environment win.
    #[arg(long, env = "EVENT_AUDIT_CONFIG")]
    pub config: Option<PathBuf>,
    /// Postgres URL; the database is created if missing. Prefer the environment for passwords.
    /// [default: postgres://postgres@127.0.0.1:5432/event_audit]
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// NATS URL. [default: nats://127.0.0.1:4222]
    #[arg(long, env = "NATS_URL", hide_env_values = true)]
    pub nats_url: Option<String>,
}

/// Options of `event-audit run`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RunArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    /// JetStream stream to consume. [default: EVENTS]
    #[arg(long, env = "EVENT_AUDIT_STREAM")]
    pub stream: Option<String>,
    /// Subjects of the stream when it is created, comma-separated. [default: events.>]
    #[arg(long, env = "EVENT_AUDIT_SUBJECTS", value_delimiter = ',')]
    pub subjects: Option<Vec<String>>,
    /// Durable pull consumer name (created if missing). [default: event-audit]
    #[arg(long, env = "EVENT_AUDIT_CONSUMER")]
    pub consumer: Option<String>,
    /// Only bind to an existing stream; never create it.
    #[arg(long, env = "EVENT_AUDIT_BIND_ONLY")]
    pub bind_only: bool,
    /// A message without envelope is named by its `Event-Type` header, else by its subject
    /// after this prefix (`events.account.created-v1`). [default: events.]
    #[arg(long, env = "EVENT_AUDIT_SUBJECT_PREFIX")]
    pub subject_prefix: Option<String>,
    /// Listen address for /healthz, /readyz, /metrics and the reports. [default: 127.0.0.1:9187]
    #[arg(long, env = "EVENT_AUDIT_HTTP_ADDR")]
    pub http_addr: Option<SocketAddr>,
    /// Messages per fetch and per database transaction (bounds memory). [default: 2000]
    #[arg(long, env = "EVENT_AUDIT_BATCH_SIZE")]
    pub batch_size: Option<usize>,
    /// Milliseconds a batch waits to fill up before it is written anyway. [default: 50]
    #[arg(long, env = "EVENT_AUDIT_LINGER_MS")]
    pub linger_ms: Option<u64>,
    /// Batches written concurrently, each in its own transaction. [default: 3]
    #[arg(long, env = "EVENT_AUDIT_WRITERS")]
    pub writers: Option<usize>,
    /// Seconds JetStream waits for an ack before redelivering. [default: 30]
    #[arg(long, env = "EVENT_AUDIT_ACK_WAIT_SECS")]
    pub ack_wait_secs: Option<u64>,
    /// Database connections in the pool. [default: 4]
    #[arg(long, env = "EVENT_AUDIT_DB_CONNECTIONS")]
    pub db_connections: Option<u32>,
    /// Exit once the consumer has nothing pending (benchmarks, one-shot backfills).
    #[arg(long)]
    pub exit_when_idle: bool,
    #[command(flatten)]
    pub rest: RestArgs,
    /// Reconcile this import supplier on a schedule (repeatable, or comma-separated); needs
    /// --rest-url and a REST token.
    #[arg(
        long = "reconcile-supplier",
        env = "EVENT_AUDIT_RECONCILE_SUPPLIERS",
        value_delimiter = ','
    )]
    pub reconcile_suppliers: Option<Vec<String>>,
    /// Time between scheduled reconciliations (`30s`, `5m`, `1h`). [default: 5m]
    #[arg(long, env = "EVENT_AUDIT_RECONCILE_INTERVAL", value_parser = parse_duration)]
    pub reconcile_interval: Option<Duration>,
    /// Scheduled reconciliations look at outcome events (and imports) of this last period only
    /// (`7d`); without it, at the whole history. Each run stores one result row per account.
    #[arg(long, env = "EVENT_AUDIT_RECONCILE_WINDOW", value_parser = parse_duration)]
    pub reconcile_window: Option<Duration>,
    /// Grace period of scheduled reconciliations. [default: 15m]
    #[arg(long, env = "EVENT_AUDIT_RECONCILE_GRACE", value_parser = parse_duration)]
    pub reconcile_grace: Option<Duration>,
    /// File holding the bearer token the report endpoints require (else the environment
    /// variable EVENT_AUDIT_REPORT_TOKEN; with neither, the reports are open).
    #[arg(long, env = "EVENT_AUDIT_REPORT_TOKEN_FILE")]
    pub report_token_file: Option<PathBuf>,
}

/// REST options of `reconcile` and of the daemon's scheduled reconciliation. The token comes
/// from `--rest-token-file` or the environment variable `EVENT_AUDIT_REST_TOKEN`, never argv.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RestArgs {
    /// Base URL of the Data-Import REST service (`/v1/data-import/...` is appended).
    #[arg(long, env = "EVENT_AUDIT_REST_URL")]
    pub rest_url: Option<String>,
    /// File holding the REST token (else EVENT_AUDIT_REST_TOKEN).
    #[arg(long, env = "EVENT_AUDIT_REST_TOKEN_FILE")]
    pub rest_token_file: Option<PathBuf>,
    /// `token`: `Authorization: Token <token>`; `bare`: `Authorization: <token>`. [default: token]
    #[arg(long, env = "EVENT_AUDIT_REST_AUTH", value_enum)]
    pub rest_auth: Option<AuthScheme>,
    /// Timeout of one per-account request. [default: 10s]
    #[arg(long, value_parser = parse_duration)]
    pub rest_timeout: Option<Duration>,
    /// Timeout of one list request (a list carries the whole batch). [default: 120s]
    #[arg(long, value_parser = parse_duration)]
    pub rest_list_timeout: Option<Duration>,
    /// Requests in flight at once. [default: 8]
    #[arg(long)]
    pub rest_concurrency: Option<usize>,
    /// Requests per second, 0 for no limit. [default: 100]
    #[arg(long)]
    pub rest_rate: Option<f64>,
    /// Retries after 5xx, 429, timeouts and connection errors (exponential backoff, jitter). [default: 5]
    #[arg(long)]
    pub rest_retries: Option<u32>,
}

#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    database_url: Option<String>,
    nats_url: Option<String>,
    stream: Option<String>,
    subjects: Option<Vec<String>>,
    consumer: Option<String>,
    bind_only: Option<bool>,
    subject_prefix: Option<String>,
    http_addr: Option<SocketAddr>,
    batch_size: Option<usize>,
    ack_wait_secs: Option<u64>,
    db_connections: Option<u32>,
    linger_ms: Option<u64>,
    writers: Option<usize>,
    rest_url: Option<String>,
    rest_token_file: Option<PathBuf>,
    rest_auth: Option<AuthScheme>,
    rest_timeout: Option<String>,
    rest_list_timeout: Option<String>,
    rest_concurrency: Option<usize>,
    rest_rate: Option<f64>,
    rest_retries: Option<u32>,
    reconcile_suppliers: Option<Vec<String>>,
    reconcile_interval: Option<String>,
    reconcile_grace: Option<String>,
    reconcile_window: Option<String>,
    report_token_file: Option<PathBuf>,
}

fn read_file(path: &Option<PathBuf>) -> anyhow::Result<FileConfig> {
    match path {
        None => Ok(FileConfig::default()),
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("reading config file {}", p.display()))?;
            toml::from_str(&text).with_context(|| format!("parsing config file {}", p.display()))
        }
    }
}

/// Resolved connections.
#[derive(Debug, Clone)]
pub struct Conn {
    pub database_url: String,
    pub nats_url: String,
}

impl ConnArgs {
    pub fn resolve(&self) -> anyhow::Result<Conn> {
        let file = read_file(&self.config)?;
        Ok(Conn {
            database_url: self
                .database_url
                .clone()
                .or(file.database_url)
                .unwrap_or_else(|| DEFAULT_DATABASE_URL.into()),
            nats_url: self
                .nats_url
                .clone()
                .or(file.nats_url)
                .unwrap_or_else(|| DEFAULT_NATS_URL.into()),
        })
    }
}

/// Resolved daemon configuration.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub conn: Conn,
    pub binding: Binding,
    pub naming: Naming,
    pub http_addr: SocketAddr,
    pub batch_size: usize,
    pub linger: Duration,
    pub writers: usize,
    pub db_connections: u32,
    pub exit_when_idle: bool,
    /// Scheduled reconciliation, when suppliers are configured.
    pub reconcile: Option<Schedule>,
    pub report_token: Option<std::sync::Arc<secrecy::SecretString>>,
}

/// The daemon's scheduled reconciliation.
#[derive(Debug, Clone)]
pub struct Schedule {
    pub suppliers: Vec<String>,
    pub interval: Duration,
    pub grace: Duration,
    /// Look back this far (events and imports); the whole history when `None`.
    pub window: Option<Duration>,
    pub rest: RestConfig,
}

impl RunArgs {
    pub fn resolve(&self) -> anyhow::Result<RunConfig> {
        let conn = self.conn.resolve()?;
        let f = read_file(&self.conn.config)?;
        let batch_size = self
            .batch_size
            .or(f.batch_size)
            .unwrap_or(2000)
            .clamp(1, 100_000);
        let writers = self.writers.or(f.writers).unwrap_or(3).clamp(1, 16);
        let reconcile = self.schedule(&f)?;
        let report_token = load_secret(
            self.report_token_file
                .as_ref()
                .or(f.report_token_file.as_ref()),
            REPORT_TOKEN_ENV,
            "report token",
        )?
        .map(std::sync::Arc::new);
        Ok(RunConfig {
            conn,
            binding: Binding {
                stream: self
                    .stream
                    .clone()
                    .or(f.stream)
                    .unwrap_or_else(|| "EVENTS".into()),
                subjects: self
                    .subjects
                    .clone()
                    .or(f.subjects)
                    .unwrap_or_else(|| vec!["events.>".into()]),
                consumer: self
                    .consumer
                    .clone()
                    .or(f.consumer)
                    .unwrap_or_else(|| "event-audit".into()),
                bind_only: self.bind_only || f.bind_only.unwrap_or(false),
                ack_wait: Duration::from_secs(
                    self.ack_wait_secs.or(f.ack_wait_secs).unwrap_or(30).max(1),
                ),
                // Batches being written, queued, and being filled, plus one in the pull pipeline.
                max_ack_pending: i64::try_from(batch_size * (2 * writers + 2)).unwrap_or(i64::MAX),
            },
            naming: Naming {
                subject_prefix: Some(
                    self.subject_prefix
                        .clone()
                        .or(f.subject_prefix)
                        .unwrap_or_else(|| "events.".into()),
                )
                .filter(|p| !p.is_empty()),
            },
            http_addr: self
                .http_addr
                .or(f.http_addr)
                .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 9187))),
            batch_size,
            linger: Duration::from_millis(self.linger_ms.or(f.linger_ms).unwrap_or(50)),
            writers,
            db_connections: self
                .db_connections
                .or(f.db_connections)
                .unwrap_or(4)
                .max(writers as u32 + 1 + if reconcile.is_some() { 2 } else { 0 }),
            exit_when_idle: self.exit_when_idle,
            reconcile,
            report_token,
        })
    }

    fn schedule(&self, f: &FileConfig) -> anyhow::Result<Option<Schedule>> {
        let suppliers: Vec<String> = self
            .reconcile_suppliers
            .clone()
            .or(f.reconcile_suppliers.clone())
            .unwrap_or_default()
            .into_iter()
            .filter(|s| !s.trim().is_empty())
            .collect();
        if suppliers.is_empty() {
            return Ok(None);
        }
        let rest = self.rest.resolve(f)?.ok_or_else(|| {
            anyhow::anyhow!("--reconcile-supplier needs --rest-url (or EVENT_AUDIT_REST_URL)")
        })?;
        Ok(Some(Schedule {
            suppliers,
            interval: pick(
                self.reconcile_interval,
                &f.reconcile_interval,
                "reconcile_interval",
            )?
            .unwrap_or(Duration::from_secs(300))
            .max(Duration::from_secs(1)),
            grace: pick(self.reconcile_grace, &f.reconcile_grace, "reconcile_grace")?
                .unwrap_or(Duration::from_secs(900)),
            window: pick(
                self.reconcile_window,
                &f.reconcile_window,
                "reconcile_window",
            )?,
            rest,
        }))
    }
}

/// A flag's duration, else the file's (parsed), else `None`.
fn pick(
    flag: Option<Duration>,
    file: &Option<String>,
    key: &str,
) -> anyhow::Result<Option<Duration>> {
    match (flag, file) {
        (Some(d), _) => Ok(Some(d)),
        (None, Some(s)) => parse_duration(s)
            .map(Some)
            .map_err(|e| anyhow::anyhow!("config file key {key}: {e}")),
        (None, None) => Ok(None),
    }
}

/// `500ms`, `30s`, `5m`, `2h`, `1d`, or a number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (e.g. 30s, 5m, 2h)"))?;
    let secs = match unit.trim() {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        "d" => n * 86_400.0,
        other => return Err(format!("unknown unit `{other}` in `{s}` (ms, s, m, h, d)")),
    };
    Duration::try_from_secs_f64(secs).map_err(|_| format!("`{s}` is out of range"))
}

impl RestArgs {
    /// The client settings (`None` without a REST URL); flags, then environment, then the file.
    pub fn resolve_with(&self, config: &Option<PathBuf>) -> anyhow::Result<Option<RestConfig>> {
        self.resolve(&read_file(config)?)
    }

    fn resolve(&self, f: &FileConfig) -> anyhow::Result<Option<RestConfig>> {
        let Some(raw) = self.rest_url.clone().or(f.rest_url.clone()) else {
            return Ok(None);
        };
        let base_url =
            url::Url::parse(&raw).map_err(|_| anyhow::anyhow!("--rest-url is not a URL"))?;
        let token = load_secret(
            self.rest_token_file.as_ref().or(f.rest_token_file.as_ref()),
            REST_TOKEN_ENV,
            "REST token",
        )?
        .ok_or_else(|| {
            anyhow::anyhow!("no REST token: set {REST_TOKEN_ENV} or pass --rest-token-file")
        })?;
        Ok(Some(RestConfig {
            base_url,
            token,
            scheme: self.rest_auth.or(f.rest_auth).unwrap_or_default(),
            timeout: pick(self.rest_timeout, &f.rest_timeout, "rest_timeout")?
                .unwrap_or(Duration::from_secs(10)),
            list_timeout: pick(
                self.rest_list_timeout,
                &f.rest_list_timeout,
                "rest_list_timeout",
            )?
            .unwrap_or(Duration::from_secs(120)),
            concurrency: self
                .rest_concurrency
                .or(f.rest_concurrency)
                .unwrap_or(8)
                .clamp(1, 256),
            rate: self.rest_rate.or(f.rest_rate).unwrap_or(100.0).max(0.0),
            retries: self.rest_retries.or(f.rest_retries).unwrap_or(5).min(20),
            backoff: Duration::from_millis(100),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_flag_then_file_then_default() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("ea.toml");
        std::fs::write(
            &path,
            "stream = \"FROMFILE\"\nconsumer = \"file-consumer\"\nbatch_size = 10\n",
        )
        .expect("write");
        let args = RunArgs {
            conn: ConnArgs {
                config: Some(path),
                ..Default::default()
            },
            stream: Some("FROMFLAG".into()),
            ..Default::default()
        };
        let c = args.resolve().expect("resolve");
        assert_eq!(c.binding.stream, "FROMFLAG");
        assert_eq!(c.binding.consumer, "file-consumer");
        assert_eq!(c.batch_size, 10);
        assert_eq!(c.binding.subjects, vec!["events.>".to_string()]);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn a_schedule_needs_a_rest_url_and_takes_the_token_from_a_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let token = dir.path().join("token");
        std::fs::write(&token, "tok-from-file\n").expect("write");
        let mut args = RunArgs {
            reconcile_suppliers: Some(vec!["ACME".into()]),
            ..Default::default()
        };
        assert!(args.resolve().is_err());
        let file = dir.path().join("ea.toml");
        let toml = format!(
            "rest_url = \"http://127.0.0.1:1/\"\nreconcile_interval = \"1m\"\nrest_token_file = {:?}\n",
            token.display().to_string()
        );
        std::fs::write(&file, toml).expect("write");
        args.conn.config = Some(file);
        let c = args.resolve().expect("resolve");
        let s = c.reconcile.expect("a schedule");
        assert_eq!(s.interval, Duration::from_secs(60));
        assert_eq!(
            secrecy::ExposeSecret::expose_secret(&s.rest.token),
            "tok-from-file"
        );
        assert!(!format!("{s:?}").contains("tok-from-file"));
    }

    #[test]
    fn unknown_keys_in_file_are_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("ea.toml");
        std::fs::write(&path, "strem = \"typo\"\n").expect("write");
        let args = RunArgs {
            conn: ConnArgs {
                config: Some(path),
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(args.resolve().is_err());
    }
}
