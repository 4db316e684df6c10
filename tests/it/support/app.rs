//! The daemon in-process, as zero-to-production's `spawn_app`: settings for a test's database
//! and stream, `App::build` binding port 0, the address back, a stop token, and its log.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::logs::Logs;
use super::{seq_stats, TestDb, TestStream};
use event_audit::app::metrics::Metrics;
use event_audit::app::App;
use event_audit::config::{Dur, Settings};
use event_audit::test_support::ingest::Totals;

/// Settings for a daemon on this test's database and stream: batches of 500, a 2 s ack wait,
/// HTTP on a free port.
pub(crate) fn settings(db: &TestDb, ts: &TestStream) -> Settings {
    let mut s = ts.settings();
    s.database = db.settings();
    s.stream.ack_wait = Dur::secs(2);
    s.ingest.batch_size = 500;
    s.http.addr = SocketAddr::from(([127, 0, 0, 1], 0));
    // The account index adds a row (its record) to each checkpoint round that signs, which the
    // tests counting the log's rows do not expect: off here and in the processes the tests
    // start (`support::bin`); its own tests (`account_index`) turn it on.
    s.witness.no_account_index = true;
    s
}

/// `settings` with reconciliation of `supplier` against the REST service at `url`, its token
/// in `token_file` (the daemon reconciles once more after draining, with `exit_when_idle`): its
/// open batches and the supplier as a whole.
pub(crate) fn reconciling(
    mut s: Settings,
    supplier: &str,
    url: &str,
    token_file: &Path,
) -> Settings {
    s.reconcile.suppliers = vec![supplier.to_owned()];
    s.reconcile.whole_supplier = true;
    s.rest.url = Some(url.to_owned());
    s.rest.token_file = Some(token_file.to_owned());
    s
}

/// A daemon running in this process.
pub(crate) struct TestApp {
    pub addr: SocketAddr,
    /// `http://ADDR`.
    pub base: String,
    pub stop: CancellationToken,
    pub metrics: Arc<Metrics>,
    logs: Logs,
    handle: Option<JoinHandle<anyhow::Result<Totals>>>,
}

/// A daemon that has stopped: what it ingested and what it logged.
#[derive(Debug)]
pub(crate) struct Stopped {
    /// What it ingested (shown when an assertion on it fails).
    #[allow(dead_code)]
    pub totals: Totals,
    /// Its log, JSON lines (with whatever else ran in-process meanwhile).
    pub log: String,
}

impl Stopped {
    /// The log lines at ERROR level.
    pub(crate) fn errors(&self) -> Vec<String> {
        super::logs::error_lines(&self.log)
    }
}

/// Builds and starts the daemon, capturing its log; panics with the reason when it cannot
/// start.
pub(crate) async fn spawn_app(settings: Settings) -> TestApp {
    settings.validate().expect("valid test settings");
    let logs = Logs::capture();
    let app = App::build(settings).await.expect("build the daemon");
    let addr = app.address();
    let stop = app.stop_token();
    let metrics = app.metrics();
    let handle = tokio::spawn(app.run_until_stopped());
    TestApp {
        addr,
        base: format!("http://{addr}"),
        stop,
        metrics,
        logs,
        handle: Some(handle),
    }
}

impl TestApp {
    /// Waits until the daemon stops by itself (`exit_when_idle`), at most `limit`; panics,
    /// with its log, when it fails or does not stop.
    pub(crate) async fn wait(mut self, limit: Duration) -> Stopped {
        let handle = self.handle.take().expect("running");
        let totals = match tokio::time::timeout(limit, handle).await {
            Ok(joined) => match joined.expect("daemon task") {
                Ok(totals) => totals,
                Err(e) => panic!("the daemon failed: {e:#}; its log:\n{}", self.log()),
            },
            Err(_) => {
                self.stop.cancel();
                panic!(
                    "the daemon did not stop by itself within {limit:?}; its log:\n{}",
                    self.log()
                );
            }
        };
        Stopped {
            totals,
            log: self.log(),
        }
    }

    /// Stops the daemon gracefully (as SIGTERM does) and waits for it.
    pub(crate) async fn stop(self) -> Stopped {
        self.stop.cancel();
        self.wait(Duration::from_secs(60)).await
    }

    /// Whether it still runs.
    pub(crate) fn running(&self) -> bool {
        self.handle.as_ref().is_some_and(|h| !h.is_finished())
    }

    /// Its log so far (JSON lines).
    pub(crate) fn log(&self) -> String {
        self.logs.text()
    }

    /// Its `/metrics` once they hold `needle`; panics with them after `limit`.
    pub(crate) async fn metrics_with(&self, needle: &str, limit: Duration) -> String {
        let started = std::time::Instant::now();
        loop {
            let (_, text) = self.get("/metrics").await;
            if text.contains(needle) {
                return text;
            }
            assert!(
                started.elapsed() < limit,
                "/metrics has no `{needle}` after {limit:?}:\n{text}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// GET a path of its HTTP listener: (status, body).
    pub(crate) async fn get(&self, path: &str) -> (u16, String) {
        let resp = reqwest::get(format!("{}{path}", self.base))
            .await
            .expect("HTTP request");
        let code = resp.status().as_u16();
        (code, resp.text().await.unwrap_or_default())
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Runs the daemon until the consumer is drained; asserts it stopped without error and
/// logged no error.
pub(crate) async fn run_until_idle(settings: Settings) -> Stopped {
    let stopped = run_until_idle_logging(settings).await;
    let errors = stopped.errors();
    assert!(
        errors.is_empty(),
        "the daemon logged errors:\n{}",
        errors.join("\n")
    );
    stopped
}

/// Runs the daemon until the consumer is drained; asserts it stopped without error (what it
/// logged is the caller's to check).
pub(crate) async fn run_until_idle_logging(mut settings: Settings) -> Stopped {
    settings.ingest.exit_when_idle = true;
    let stopped = spawn_app(settings)
        .await
        .wait(Duration::from_secs(120))
        .await;
    // The capture saw the daemon through to its end, so "no error" means something.
    assert!(
        stopped.log.contains("\"stopped\""),
        "the daemon's log was not captured:\n{}",
        stopped.log
    );
    stopped
}

/// Publishes `n` messages of the mix, ingests them with batches of `batch_size` until idle, and
/// asserts the log holds exactly sequences 1..=n of the stream and that its chain verifies.
pub(crate) async fn ingest_load(
    db: &TestDb,
    ts: &TestStream,
    n: i64,
    seed: u64,
    batch_size: usize,
) {
    ts.publish_load(n as usize, seed).await;
    let mut s = settings(db, ts);
    s.ingest.batch_size = batch_size;
    run_until_idle(s).await;
    assert_eq!(
        seq_stats(&db.pool, &ts.name).await,
        (n, n, Some(1), Some(n))
    );
    super::assert_verifies(&db.url, n).await;
}
