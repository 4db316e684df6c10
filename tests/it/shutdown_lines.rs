//! What processes say when they stop, as real processes sent SIGTERM: the witness says it
//! answers the requests in progress (it has no batches), and the daemon's `stopped` line gives
//! two rates, each named by what it is over (the time a batch was in hand, and the span from
//! the first fetch to the last ack), so a burst after an idle stretch is not reported as slow.

use std::time::Duration;

use crate::support::process::{wait_for_rows, Daemon, RunOpts};
use crate::support::witness::{write_keys, write_witness_key};
use crate::support::{TestDb, TestStream};

async fn sigterm(pid: u32) {
    let status = tokio::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .await
        .expect("run kill");
    assert!(status.success(), "kill -TERM failed");
}

#[tokio::test]
async fn the_witness_says_what_it_finishes_not_batches() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (wkey, _, _) = write_witness_key(dir.path(), "w.example/shutdown", 41);
    let (_, log_pub, _) = write_keys(dir.path(), "log.example/shutdown", 42);
    let addr = crate::support::free_addr();
    let mut child = crate::support::bin()
        .args(["witness", "serve", "--key"])
        .arg(&wkey)
        .arg("--log-key")
        .arg(&log_pub)
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .args(["--listen", &addr])
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the witness");
    let started = std::time::Instant::now();
    while tokio::net::TcpStream::connect(&addr).await.is_err() {
        assert!(started.elapsed() < Duration::from_secs(20), "not listening");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    sigterm(child.id().expect("running")).await;
    let out = tokio::time::timeout(Duration::from_secs(20), async {
        let status = child.wait().await.expect("wait");
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            use tokio::io::AsyncReadExt;
            let _ = e.read_to_string(&mut err).await;
        }
        (status, err)
    })
    .await
    .expect("the witness stops on SIGTERM");
    assert!(out.0.success(), "{out:?}");
    assert!(
        out.1
            .contains("shutdown requested: answering the requests in progress"),
        "{}",
        out.1
    );
    assert!(!out.1.contains("batches in hand"), "{}", out.1);
}

/// The `fields` of the daemon's `stopped` line.
fn stopped_fields(log: &str) -> serde_json::Value {
    log.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| v["fields"].clone())
        .find(|f| f["message"] == "stopped")
        .unwrap_or_else(|| panic!("no stopped line:\n{log}"))
}

#[tokio::test]
async fn the_stop_line_rates_over_busy_time_and_over_the_span_each_named() {
    let db = TestDb::create().await;
    let ts = TestStream::create("stopline").await;
    let opts = RunOpts {
        exit_when_idle: false,
        ..RunOpts::default()
    };
    let mut d = Daemon::spawn(&db.url, &ts, &opts);
    let msg = br#"{"event":"account.occupied-v1","payload":{"account_number":"A-1"}}"#;
    for burst in 1..=2i64 {
        for _ in 0..50 {
            ts.publish(&ts.subject("x"), &[], msg).await;
        }
        let n = wait_for_rows(&db.pool, &mut d, 50 * burst, Duration::from_secs(60)).await;
        assert_eq!(n, 50 * burst, "{}", d.log());
        if burst == 1 {
            // Idle: the daemon holds no batch for two seconds.
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }
    sigterm(d.pid()).await;
    let status = d.wait(Duration::from_secs(60)).await;
    assert!(status.success(), "{}", d.log());
    let log = d.log();
    assert!(
        log.contains("shutdown requested: finishing the batches in hand"),
        "{log}"
    );
    let f = stopped_fields(&log);
    assert_eq!(f["messages"], 100, "{f}");
    assert!(
        f.get("per_sec").is_none(),
        "a rate that does not say over what: {f}"
    );
    let num = |k: &str| f[k].as_f64().unwrap_or_else(|| panic!("{k} in {f}"));
    let (busy, span) = (num("busy_secs"), num("span_secs"));
    assert!(span >= 2.0, "the span holds the idle stretch: {f}");
    assert!(
        busy < span - 1.0,
        "busy time leaves the idle stretch out: {f}"
    );
    assert!(num("per_busy_sec") > num("per_span_sec"), "{f}");
    assert_eq!(num("per_span_sec"), (100.0 / span).round(), "{f}");
}
