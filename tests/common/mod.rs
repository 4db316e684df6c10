//! Shared helpers for the integration tests: a unique JetStream stream per test (deleted on
//! drop), the `event-audit` binary as a real subprocess, and queries on the test database.
//!
//! Every test gets its own Postgres database from `#[sqlx::test]`, its own stream, consumer and
//! subject space, and its own HTTP port, so the tests run in parallel and leave nothing behind.
#![allow(dead_code)]

use std::net::TcpListener;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer, stream};
use sqlx::PgPool;
use tokio::process::{Child, Command};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_event-audit");

pub fn nats_url() -> String {
    std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into())
}

/// A URL for the test's own database (the one `#[sqlx::test]` created), for subprocesses.
pub fn db_url(pool: &PgPool) -> String {
    let db = pool
        .connect_options()
        .get_database()
        .expect("the test pool names its database")
        .to_owned();
    let base = std::env::var("DATABASE_URL").expect("DATABASE_URL must be set for the tests");
    let mut url = url::Url::parse(&base).expect("DATABASE_URL is a URL");
    url.set_path(&db);
    url.to_string()
}

/// A free local port for the daemon's HTTP listener.
pub fn http_addr() -> String {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    l.local_addr().expect("local address").to_string()
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A name unique to this test run: tag, pid, counter and a random salt (stream names allow
/// letters, digits, `_` and `-`).
pub fn unique(tag: &str) -> String {
    let tag: String = tag
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let salt: u16 = rand::random();
    format!("EA_{tag}_{}_{n}_{salt:04X}", std::process::id())
}

/// A JetStream stream of this test alone, with subjects `NAME.>`; deleted when dropped (also
/// when the test panics).
pub struct TestStream {
    pub name: String,
    pub consumer: String,
    pub client: async_nats::Client,
    pub js: jetstream::Context,
}

impl TestStream {
    pub async fn create(tag: &str) -> TestStream {
        let name = unique(tag);
        let consumer = format!("{name}_C");
        let client = async_nats::connect(nats_url())
            .await
            .expect("connect to NATS");
        let js = jetstream::new(client.clone());
        js.create_stream(stream::Config {
            name: name.clone(),
            subjects: vec![format!("{name}.>")],
            storage: stream::StorageType::File,
            // Insurance should a test process die before its guard runs.
            max_age: Duration::from_secs(3600),
            ..Default::default()
        })
        .await
        .expect("create the test stream");
        TestStream {
            name,
            consumer,
            client,
            js,
        }
    }

    /// The stream's subjects, as `--subjects` takes them.
    pub fn subjects(&self) -> String {
        format!("{}.>", self.name)
    }

    /// The subject prefix for bare payloads named by their subject.
    pub fn prefix(&self) -> String {
        format!("{}.", self.name)
    }

    pub fn subject(&self, rest: &str) -> String {
        format!("{}.{rest}", self.name)
    }

    /// Publishes one message and returns its stream sequence.
    pub async fn publish(&self, subject: &str, headers: &[(&str, &str)], bytes: &[u8]) -> u64 {
        let ack = if headers.is_empty() {
            self.js
                .publish(subject.to_owned(), bytes.to_vec().into())
                .await
        } else {
            let mut h = async_nats::HeaderMap::new();
            for (k, v) in headers {
                h.append(*k, *v);
            }
            self.js
                .publish_with_headers(subject.to_owned(), h, bytes.to_vec().into())
                .await
        };
        let ack = ack
            .expect("publish")
            .await
            .expect("JetStream stored the message");
        assert_eq!(ack.stream, self.name);
        ack.sequence
    }

    pub async fn consumer_info(&self) -> consumer::Info {
        let stream = self.js.get_stream(&self.name).await.expect("get stream");
        stream
            .consumer_info(&self.consumer)
            .await
            .expect("consumer info")
    }

    pub async fn delete_consumer(&self) {
        let stream = self.js.get_stream(&self.name).await.expect("get stream");
        stream
            .delete_consumer(&self.consumer)
            .await
            .expect("delete consumer");
    }

    /// `event-audit publish -n N` into this stream (subject `NAME.load`).
    pub async fn publish_load(&self, n: usize, seed: u64) {
        let out = Command::new(BIN)
            .args([
                "publish",
                "--nats-url",
                &nats_url(),
                "--stream",
                &self.name,
                "--subjects",
            ])
            .arg(self.subjects())
            .args([
                "--subject",
                &self.subject("load"),
                "-n",
                &n.to_string(),
                "--seed",
                &seed.to_string(),
            ])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .output()
            .await
            .expect("run event-audit publish");
        assert!(
            out.status.success(),
            "publish failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let info = self
            .js
            .get_stream(&self.name)
            .await
            .expect("get stream")
            .info()
            .await
            .expect("stream info")
            .state
            .messages;
        assert!(
            info >= n as u64,
            "stream holds {info} messages after publishing {n}"
        );
    }
}

impl Drop for TestStream {
    fn drop(&mut self) {
        // Drop cannot await, and the test's runtime may be the one running us: delete from a
        // thread with its own runtime and connection.
        let name = self.name.clone();
        let joined = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            rt.block_on(async {
                let client = async_nats::connect(nats_url()).await.ok()?;
                let js = jetstream::new(client);
                match js.delete_stream(&name).await {
                    Ok(_) => Some(()),
                    Err(e) => {
                        eprintln!("could not delete stream {name}: {e}");
                        None
                    }
                }
            })
        })
        .join();
        if !matches!(joined, Ok(Some(()))) {
            eprintln!("stream {} may be left behind", self.name);
        }
    }
}

/// Options of one daemon run.
#[derive(Clone, Debug)]
pub struct RunOpts {
    pub batch_size: usize,
    pub exit_when_idle: bool,
    pub subject_prefix: Option<String>,
    /// Further arguments of `run`.
    pub extra: Vec<String>,
}

impl Default for RunOpts {
    fn default() -> Self {
        RunOpts {
            batch_size: 500,
            exit_when_idle: true,
            subject_prefix: None,
            extra: Vec::new(),
        }
    }
}

/// A running `event-audit run`, logging JSON lines to a temporary file. Killed when dropped.
pub struct Daemon {
    pub child: Child,
    log: tempfile::NamedTempFile,
    /// Its HTTP listener (`/metrics`, `/readyz`, reports).
    pub addr: String,
}

impl Daemon {
    pub fn spawn(db_url: &str, ts: &TestStream, opts: &RunOpts) -> Daemon {
        let log = tempfile::NamedTempFile::new().expect("log file");
        let addr = http_addr();
        let mut cmd = Command::new(BIN);
        cmd.args([
            "--log-json",
            "run",
            "--database-url",
            db_url,
            "--nats-url",
            &nats_url(),
        ])
        .args([
            "--stream",
            &ts.name,
            "--subjects",
            &ts.subjects(),
            "--consumer",
            &ts.consumer,
        ])
        .args(["--http-addr", &addr, "--ack-wait-secs", "2"])
        .args(["--batch-size", &opts.batch_size.to_string()]);
        if let Some(p) = &opts.subject_prefix {
            cmd.args(["--subject-prefix", p]);
        }
        if opts.exit_when_idle {
            cmd.arg("--exit-when-idle");
        }
        cmd.args(&opts.extra);
        for (k, _) in std::env::vars() {
            if k.starts_with("EVENT_AUDIT_") {
                cmd.env_remove(k);
            }
        }
        cmd.env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log.reopen().expect("reopen log file"))
            .kill_on_drop(true);
        let child = cmd.spawn().expect("spawn event-audit run");
        Daemon { child, log, addr }
    }

    pub fn pid(&self) -> u32 {
        self.child.id().expect("the daemon is running")
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// The log lines at ERROR level.
    pub fn errors(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter(|l| {
                serde_json::from_str::<serde_json::Value>(l)
                    .map(|v| v["level"] == "ERROR")
                    .unwrap_or_else(|_| l.contains("ERROR"))
            })
            .map(str::to_owned)
            .collect()
    }

    /// Waits for the process to exit on its own; kills it and fails after `limit`.
    pub async fn wait(&mut self, limit: Duration) -> ExitStatus {
        match tokio::time::timeout(limit, self.child.wait()).await {
            Ok(status) => status.expect("wait for the daemon"),
            Err(_) => {
                let _ = self.child.kill().await;
                panic!(
                    "the daemon did not exit within {limit:?}; its log:\n{}",
                    self.log()
                );
            }
        }
    }

    /// SIGKILL, then reap.
    pub async fn kill9(&mut self) {
        self.child.kill().await.expect("SIGKILL the daemon");
    }

    /// SIGTERM (a graceful stop).
    pub async fn term(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .await
            .expect("run kill");
        assert!(status.success(), "kill -TERM failed");
    }
}

/// Runs the daemon with `--exit-when-idle` until it exits; asserts exit 0 and no error logged.
pub async fn run_until_idle(db_url: &str, ts: &TestStream, opts: &RunOpts) -> Daemon {
    let opts = RunOpts {
        exit_when_idle: true,
        ..opts.clone()
    };
    let mut d = Daemon::spawn(db_url, ts, &opts);
    let status = d.wait(Duration::from_secs(90)).await;
    assert!(
        status.success(),
        "daemon exited with {status}; its log:\n{}",
        d.log()
    );
    let errors = d.errors();
    assert!(
        errors.is_empty(),
        "the daemon logged errors:\n{}",
        errors.join("\n")
    );
    d
}

/// The outcome of `event-audit verify`.
#[derive(Debug)]
pub struct Verify {
    pub code: Option<i32>,
    pub report: serde_json::Value,
    pub stdout: String,
    pub stderr: String,
}

impl Verify {
    /// What the command said about the first break (its report and its message).
    pub fn first_break(&self) -> String {
        self.report["first_break"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

pub async fn verify(db_url: &str) -> Verify {
    let out = Command::new(BIN)
        .args(["verify", "--database-url", db_url])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .await
        .expect("run event-audit verify");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = serde_json::from_str(stdout.trim()).unwrap_or(serde_json::Value::Null);
    Verify {
        code: out.status.code(),
        report,
        stdout,
        stderr,
    }
}

/// Asserts that `event-audit verify` exits 0 and reports `rows` rows.
pub async fn assert_verifies(db_url: &str, rows: i64) {
    let v = verify(db_url).await;
    assert_eq!(v.code, Some(0), "verify failed: {v:?}");
    assert_eq!(v.report["ok"], true, "{v:?}");
    assert_eq!(v.report["rows"], rows, "{v:?}");
    assert!(v.stderr.contains("chain intact"), "{v:?}");
}

pub async fn count_rows(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM audit.events")
        .fetch_one(pool)
        .await
        .expect("count rows")
}

/// `(rows, distinct stream_seq, min stream_seq, max stream_seq)` of one stream.
pub async fn seq_stats(pool: &PgPool, stream: &str) -> (i64, i64, Option<i64>, Option<i64>) {
    sqlx::query_as(
        "SELECT count(*), count(DISTINCT stream_seq), min(stream_seq), max(stream_seq) \
         FROM audit.events WHERE stream = $1",
    )
    .bind(stream)
    .fetch_one(pool)
    .await
    .expect("sequence stats")
}

/// Polls until the log holds at least `rows` rows or the daemon exits; returns the count.
pub async fn wait_for_rows(pool: &PgPool, d: &mut Daemon, rows: i64, limit: Duration) -> i64 {
    let started = Instant::now();
    loop {
        let n = count_rows(pool).await;
        if n >= rows || !d.running() {
            return n;
        }
        assert!(
            started.elapsed() < limit,
            "only {n} of {rows} rows after {limit:?}; log:\n{}",
            d.log()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Publishes `n` messages of the mix, ingests them with batches of `batch_size` until idle, and
/// asserts the log holds exactly sequences 1..=n of the stream and that its chain verifies.
pub async fn ingest_load(
    pool: &PgPool,
    ts: &TestStream,
    n: i64,
    seed: u64,
    batch_size: usize,
) -> Daemon {
    let url = db_url(pool);
    ts.publish_load(n as usize, seed).await;
    let d = run_until_idle(
        &url,
        ts,
        &RunOpts {
            batch_size,
            ..RunOpts::default()
        },
    )
    .await;
    assert_eq!(
        seq_stats(pool, &ts.name).await,
        (n, n, Some(1), Some(n)),
        "log of the run:\n{}",
        d.log()
    );
    assert_verifies(&url, n).await;
    d
}
