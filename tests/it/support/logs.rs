//! The logs of what runs in-process (the daemon, the simulator), captured per test as JSON
//! lines, as the daemon subprocess used to write them to its log file.
//!
//! One subscriber per test binary writes each event to the captures open on the thread that
//! emits it. `#[tokio::test]`'s runtime is current-thread, so every task a test spawns (the
//! daemon's, the simulator's) runs on the test's thread and logs into that test's captures
//! only, however many tests run in parallel. A capture refuses a multi-threaded runtime, where
//! it would silently miss events.

use std::cell::RefCell;
use std::io::Write;
use std::sync::{Arc, Mutex, Once};

type Buf = Arc<Mutex<Vec<u8>>>;

thread_local! {
    static OPEN: RefCell<Vec<Buf>> = const { RefCell::new(Vec::new()) };
}

/// Writes to every capture open on the current thread (nowhere when there is none).
struct ThreadWriter;

impl Write for ThreadWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        OPEN.with(|open| {
            for buf in open.borrow().iter() {
                buf.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend_from_slice(bytes);
            }
        });
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The level the daemon subprocess logged at (`RUST_LOG=info`), as JSON lines.
fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = tracing_subscriber::fmt()
            .json()
            .with_env_filter(tracing_subscriber::EnvFilter::new("info"))
            .with_writer(|| ThreadWriter)
            .try_init();
    });
}

/// The log lines at ERROR level of JSON-lines text.
pub(crate) fn error_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| {
            serde_json::from_str::<serde_json::Value>(l)
                .map(|v| v["level"] == "ERROR")
                .unwrap_or_else(|_| l.contains("ERROR"))
        })
        .map(str::to_owned)
        .collect()
}

/// Everything logged on this test's thread from [`Logs::capture`] until the capture drops.
pub(crate) struct Logs {
    buf: Buf,
}

impl Logs {
    /// Starts capturing. Captures nest: an event goes to every open one.
    pub(crate) fn capture() -> Logs {
        let flavor = tokio::runtime::Handle::try_current()
            .map(|h| h.runtime_flavor())
            .expect("log capture needs the test's tokio runtime");
        assert_eq!(
            flavor,
            tokio::runtime::RuntimeFlavor::CurrentThread,
            "log capture needs #[tokio::test]'s current-thread runtime (tasks on other threads would log elsewhere)"
        );
        install();
        let buf = Buf::default();
        OPEN.with(|open| open.borrow_mut().push(buf.clone()));
        Logs { buf }
    }

    pub(crate) fn text(&self) -> String {
        let bytes = self.buf.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The lines at ERROR level (the fault suite's checks).
    #[allow(dead_code)]
    pub(crate) fn errors(&self) -> Vec<String> {
        error_lines(&self.text())
    }
}

impl Drop for Logs {
    fn drop(&mut self) {
        let _ = OPEN.try_with(|open| {
            open.borrow_mut().retain(|b| !Arc::ptr_eq(b, &self.buf));
        });
    }
}
