//! The daemon as a real subprocess, where the process is the point: SIGKILL, SIGTERM, exit
//! codes. It logs JSON lines to a temporary file and is killed when dropped.

use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use sqlx::PgPool;
use tokio::process::{Child, Command};

use super::{bin, count_rows, free_addr, nats_url, TestStream};

/// Options of one daemon run.
#[derive(Clone, Debug)]
pub(crate) struct RunOpts {
    pub batch_size: usize,
    pub exit_when_idle: bool,
    pub subject_prefix: Option<String>,
    /// Further arguments of `run`.
    pub extra: Vec<String>,
    /// Further environment variables of the process.
    pub env: Vec<(String, String)>,
}

impl Default for RunOpts {
    fn default() -> Self {
        RunOpts {
            batch_size: 500,
            exit_when_idle: true,
            subject_prefix: None,
            extra: Vec::new(),
            env: Vec::new(),
        }
    }
}

/// A running `event-audit run`, logging JSON lines to a temporary file. Killed when dropped.
pub(crate) struct Daemon {
    pub child: Child,
    log: tempfile::NamedTempFile,
    /// Its HTTP listener (`/metrics`, `/readyz`, reports).
    pub addr: String,
}

impl Daemon {
    pub(crate) fn spawn(db_url: &str, ts: &TestStream, opts: &RunOpts) -> Daemon {
        let log = tempfile::NamedTempFile::new().expect("log file");
        let addr = free_addr();
        let mut cmd = bin();
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
        .args(["--http-addr", &addr, "--ack-wait", "2s"])
        .args(["--batch-size", &opts.batch_size.to_string()]);
        if let Some(p) = &opts.subject_prefix {
            cmd.args(["--subject-prefix", p]);
        }
        if opts.exit_when_idle {
            cmd.arg("--exit-when-idle");
        }
        cmd.args(&opts.extra);
        cmd.envs(opts.env.iter().map(|(k, v)| (k, v)));
        cmd.env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(log.reopen().expect("reopen log file"))
            .kill_on_drop(true);
        let child = cmd.spawn().expect("spawn event-audit run");
        Daemon { child, log, addr }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id().expect("the daemon is running")
    }

    /// Whether the process is still running.
    pub(crate) fn running(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// The log lines at ERROR level.
    pub(crate) fn errors(&self) -> Vec<String> {
        super::logs::error_lines(&self.log())
    }

    /// Waits for the process to exit on its own; kills it and fails after `limit`.
    pub(crate) async fn wait(&mut self, limit: Duration) -> ExitStatus {
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
    pub(crate) async fn kill9(&mut self) {
        self.child.kill().await.expect("SIGKILL the daemon");
    }

    /// SIGTERM (a graceful stop).
    pub(crate) async fn term(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .await
            .expect("run kill");
        assert!(status.success(), "kill -TERM failed");
    }
}

/// Runs the daemon subprocess with `--exit-when-idle` until it exits; asserts exit 0 and no
/// error logged.
pub(crate) async fn run_until_idle(db_url: &str, ts: &TestStream, opts: &RunOpts) -> Daemon {
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

/// Polls until the log holds at least `rows` rows or the daemon exits; returns the count.
pub(crate) async fn wait_for_rows(
    pool: &PgPool,
    d: &mut Daemon,
    rows: i64,
    limit: Duration,
) -> i64 {
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
