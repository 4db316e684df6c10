//! Daemon configuration: flags, then environment (`DATABASE_URL`, `NATS_URL`, `EVENT_AUDIT_*`),
//! then an optional TOML file (`--config`), then defaults, in that precedence.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use serde::Deserialize;

use crate::bus::Binding;
use crate::record::Naming;

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
    /// Batches written concurrently, each in its own transaction. [default: 2]
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
        let writers = self.writers.or(f.writers).unwrap_or(2).clamp(1, 16);
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
                .max(writers as u32 + 1),
            exit_when_idle: self.exit_when_idle,
        })
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
