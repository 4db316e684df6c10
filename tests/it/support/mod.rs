//! Shared helpers of the integration tests, in one place: a database per test ([`db`]), a
//! JetStream stream per test ([`stream`]), the daemon in-process ([`app`]) with its log
//! ([`logs`]) or, where the process is the point, as a subprocess ([`process`]), the platform
//! simulator in-process ([`sim`]), the CLI commands whose exit codes are checked ([`cli`]),
//! evidence bundles and both their verifiers ([`bundle`]),
//! audit rows built without the bus ([`records`]), personal data and a dump to search for it
//! ([`personal`]), the operations tools ([`observe`]), the binary run under a memory
//! ceiling with its peak measured, beside a file watched for any read ([`bounded`]), and buckets
//! on the S3-compatible test servers ([`s3`]), and one made to ignore conditional writes
//! ([`proxy`]).
//!
//! Every test gets its own database, stream, consumer and subject space, and its own HTTP port,
//! so tests run in parallel; databases and streams are removed when their guards drop (also
//! when a test panics).

pub(crate) mod app;
pub(crate) mod bounded;
pub(crate) mod bundle;
pub(crate) mod cli;
pub(crate) mod db;
pub(crate) mod files;
pub(crate) mod logs;
pub(crate) mod mix;
pub(crate) mod mutate;
pub(crate) mod observe;
pub(crate) mod personal;
pub(crate) mod process;
pub(crate) mod proxy;
pub(crate) mod records;
pub(crate) mod s3;
pub(crate) mod sim;
pub(crate) mod stream;
pub(crate) mod witness;

use std::net::TcpListener;
use std::sync::atomic::{AtomicU32, Ordering};

pub(crate) use app::{ingest_load, run_until_idle, settings, spawn_app, TestApp};
pub(crate) use cli::{assert_verifies, verify, Verify};
pub(crate) use db::{count_rows, seq_stats, TestDb};
pub(crate) use logs::Logs;
pub(crate) use stream::TestStream;

/// The binary under test (for the tests where the process itself is the point).
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_event-audit");

/// The binary under test as a command, without the `EVENT_AUDIT_*` settings of the environment
/// the tests run in, stdin closed.
pub(crate) fn bin() -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(BIN);
    for (k, _) in std::env::vars() {
        if k.starts_with("EVENT_AUDIT_") {
            cmd.env_remove(k);
        }
    }
    // As in `settings`: the account index adds rows that tests counting the log's rows do not
    // expect; its own tests run their daemons in-process with it on.
    cmd.env("EVENT_AUDIT_WITNESS_NO_ACCOUNT_INDEX", "true");
    cmd.stdin(std::process::Stdio::null());
    cmd
}

pub(crate) fn nats_url() -> String {
    std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into())
}

/// A free local address (`127.0.0.1:PORT`), for the processes the tests start.
pub(crate) fn free_addr() -> String {
    format!("127.0.0.1:{}", free_port())
}

/// A port on 127.0.0.1 that was free a moment ago, for a process the test starts to bind.
/// Chosen at random below the kernel's ephemeral range (32768–60999 by default): a port handed
/// out by `bind(0)` there can be taken by any outgoing connection before the child binds it,
/// which made daemons fail to start under a loaded parallel suite.
pub(crate) fn free_port() -> u16 {
    for _ in 0..1000 {
        let port = rand::Rng::gen_range(&mut rand::thread_rng(), 20_000u16..32_000);
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in 20000..32000 after 1000 tries");
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A name unique to this test run: tag, pid, counter and a random salt (stream names allow
/// letters, digits, `_` and `-`).
pub(crate) fn unique(tag: &str) -> String {
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

/// Runs `f` on a thread with its own runtime (for `Drop`, which cannot await and may run on
/// the test's runtime).
pub(crate) fn blocking<F, T>(f: F) -> Option<T>
where
    F: FnOnce() -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<T>> + Send>>
        + Send
        + 'static,
    T: Send + 'static,
{
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        rt.block_on(f())
    })
    .join()
    .ok()
    .flatten()
}
