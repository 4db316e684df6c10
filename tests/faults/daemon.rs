//! The daemon under test as a subprocess (signals, exit codes and logs are the point here),
//! pointed at a fault [`Env`]'s proxies, logging JSON lines to a file. Killed by its PID when
//! dropped. `FAULTS_BIN` runs another build of the daemon (e.g. the one before a fix).

use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tokio::process::Child;

use crate::env::{get, Env, CONSUMER, STREAM};

/// The daemon binary: `FAULTS_BIN`, else this build's.
pub(crate) fn daemon_bin() -> String {
    std::env::var("FAULTS_BIN").unwrap_or_else(|_| crate::common::BIN.to_owned())
}

/// A command for the daemon binary without the `EVENT_AUDIT_*` and NATS settings of the
/// environment the tests run in, stdin closed, the account index off.
pub(crate) fn command() -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(daemon_bin());
    for (k, _) in std::env::vars() {
        if k.starts_with("EVENT_AUDIT_") || k.starts_with("NATS_") || k == "DATABASE_URL" {
            cmd.env_remove(k);
        }
    }
    // The account index adds a row a round that these cases' counts do not expect (its own
    // cases are in tests/it/account_index.rs).
    cmd.env("EVENT_AUDIT_WITNESS_NO_ACCOUNT_INDEX", "true");
    cmd.stdin(Stdio::null());
    cmd
}

pub(crate) struct Daemon {
    pub child: Child,
    log: tempfile::NamedTempFile,
    /// Its HTTP listener.
    pub addr: String,
}

/// The arguments every case's daemon gets: the env's stream and consumer, batches of 200, a 2 s
/// ack wait, HTTP on a free port, and the given `extra`.
pub(crate) fn run_args(addr: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "--log-json",
        "run",
        "--stream",
        STREAM,
        "--subjects",
        "events.>",
        "--consumer",
        CONSUMER,
        "--http-addr",
        addr,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Defaults `extra` may override (an option given twice is an error).
    for (flag, value) in [("--ack-wait", "2s"), ("--batch-size", "200")] {
        if !extra.contains(&flag) {
            args.extend([flag.to_string(), value.to_string()]);
        }
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

impl Daemon {
    /// `event-audit run` against `env` (database and NATS URLs in the environment), with
    /// `extra` arguments and environment `vars`, at `RUST_LOG=info`.
    pub(crate) fn spawn(env: &Env, extra: &[&str]) -> Daemon {
        Daemon::spawn_with(env, extra, &[])
    }

    pub(crate) fn spawn_with(env: &Env, extra: &[&str], vars: &[(&str, &str)]) -> Daemon {
        let addr = crate::common::free_addr();
        Daemon::spawn_args(env, addr.clone(), run_args(&addr, extra), vars)
    }

    /// The daemon binary with exactly `args` (its HTTP listener at `addr`), the env's URLs and
    /// `RUST_LOG=info` in the environment, then `vars`.
    pub(crate) fn spawn_args(
        env: &Env,
        addr: String,
        args: Vec<String>,
        vars: &[(&str, &str)],
    ) -> Daemon {
        Daemon::spawn_at(&env.db_url(), &env.nats_url(), addr, args, vars)
    }

    /// The daemon binary with exactly `args` against the given database and NATS URL(s).
    pub(crate) fn spawn_at(
        db_url: &str,
        nats_url: &str,
        addr: String,
        args: Vec<String>,
        vars: &[(&str, &str)],
    ) -> Daemon {
        let log = tempfile::NamedTempFile::new().expect("log file");
        let mut cmd = command();
        cmd.args(args)
            .env("DATABASE_URL", db_url)
            .env("NATS_URL", nats_url)
            .env("RUST_LOG", "info");
        for (k, v) in vars {
            cmd.env(k, v);
        }
        cmd.stdout(Stdio::null())
            .stderr(log.reopen().expect("reopen log file"))
            .kill_on_drop(true);
        let child = cmd.spawn().expect("spawn event-audit run");
        Daemon { child, log, addr }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id().expect("the daemon is running")
    }

    pub(crate) fn running(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
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

    /// Waits for the exit and says how long it took.
    pub(crate) async fn wait_timed(&mut self, limit: Duration) -> (ExitStatus, Duration) {
        let started = Instant::now();
        let status = self.wait(limit).await;
        (status, started.elapsed())
    }

    pub(crate) async fn kill9(&mut self) {
        self.child.kill().await.expect("SIGKILL the daemon");
    }

    pub(crate) fn signal(&self, sig: &str) {
        assert!(
            crate::harness::signal(self.pid(), sig),
            "kill -{sig} failed"
        );
    }

    /// GET a path of its HTTP listener, bounded by `limit`.
    pub(crate) async fn get(&self, path: &str, limit: Duration) -> Option<(u16, String)> {
        get(&format!("http://{}{path}", self.addr), limit).await
    }

    /// Waits until `/readyz` answers `code`; returns its body. Panics after `limit`.
    pub(crate) async fn wait_ready(&mut self, code: u16, limit: Duration) -> String {
        self.wait_ready_saying(code, "", limit).await
    }

    /// Waits until `/readyz` answers `code` with a body containing `says`.
    pub(crate) async fn wait_ready_saying(
        &mut self,
        code: u16,
        says: &str,
        limit: Duration,
    ) -> String {
        let started = Instant::now();
        loop {
            if let Some((c, body)) = self.get("/readyz", Duration::from_secs(1)).await {
                if c == code && body.contains(says) {
                    return body;
                }
            }
            assert!(
                self.running(),
                "the daemon exited while waiting for /readyz {code}; its log:\n{}",
                self.log()
            );
            assert!(
                started.elapsed() < limit,
                "/readyz did not answer {code} ({says}) within {limit:?}; log:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// SIGTERM, then an exit 0 within `limit` (asserted, the log shown otherwise); its log.
    pub(crate) async fn stop_cleanly(&mut self, limit: Duration) -> String {
        self.signal("TERM");
        let status = self.wait(limit).await;
        let log = self.log();
        assert_eq!(status.code(), Some(0), "log:\n{log}");
        log
    }

    /// Its /metrics text.
    pub(crate) async fn metrics(&self) -> String {
        self.get("/metrics", Duration::from_secs(2))
            .await
            .map(|(_, b)| b)
            .unwrap_or_default()
    }

    /// The log lines at ERROR level.
    pub(crate) fn errors(&self) -> Vec<String> {
        crate::common::logs::error_lines(&self.log())
    }
}

/// Runs a daemon with `--exit-when-idle` until it drains the consumer; asserts exit 0.
pub(crate) async fn drain(env: &Env, extra: &[&str]) -> Daemon {
    let mut args = vec!["--exit-when-idle"];
    args.extend_from_slice(extra);
    let mut d = Daemon::spawn(env, &args);
    let status = d.wait(Duration::from_secs(90)).await;
    assert!(
        status.success(),
        "daemon exited with {status}; its log:\n{}",
        d.log()
    );
    d
}
