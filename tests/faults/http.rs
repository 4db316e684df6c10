//! Whoever reaches the HTTP port cannot starve the daemon: slow-loris connections are closed
//! after the header timeout, idle ones after the idle timeout, a flood of idle connections
//! beyond the cap (with the process held to 1,024 descriptors) leaves `/metrics` and `/healthz`
//! answering, an oversized request head gets 431, and bad input in a path is a 400, not a 500.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::daemon::{run_args, Daemon};
use crate::env::{get, Env};

const LIMITS: &[(&str, &str)] = &[
    ("EVENT_AUDIT_HTTP_HEADER_TIMEOUT", "1s"),
    ("EVENT_AUDIT_HTTP_IDLE_TIMEOUT", "3s"),
    ("EVENT_AUDIT_HTTP_MAX_CONNECTIONS", "64"),
];

/// The daemon with its open-file limit held at 1,024 (soft and hard), as on the machine where
/// 1,100 idle connections blinded it.
fn spawn_at_1024(env: &Env) -> Daemon {
    let addr = crate::common::free_addr();
    let d = Daemon::spawn_args(env, addr.clone(), run_args(&addr, &[]), LIMITS);
    // Lower the running process's limit by PID (prlimit(2) on another process).
    let lim = libc::rlimit {
        rlim_cur: 1024,
        rlim_max: 1024,
    };
    let pid = libc::pid_t::try_from(d.pid()).expect("pid");
    // SAFETY: prlimit reads the new limit from a valid struct and writes nothing back (null).
    let r = unsafe { libc::prlimit(pid, libc::RLIMIT_NOFILE, &lim, std::ptr::null_mut()) };
    assert_eq!(r, 0, "prlimit");
    d
}

/// Raises this test process's own descriptor limit to its hard limit.
fn raise_own_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain struct in and out.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
    }
}

/// Whether the server closes `s` within `limit` (EOF or reset).
async fn closed_within(s: &mut TcpStream, limit: Duration) -> bool {
    let mut buf = [0u8; 1024];
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

#[tokio::test]
async fn slow_loris_and_idle_connections_are_closed() {
    let env = Env::start().await;
    let mut d = Daemon::spawn_with(&env, &[], LIMITS);
    d.wait_ready(200, Duration::from_secs(30)).await;
    let addr = d.addr.clone();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..100 {
        let addr = addr.clone();
        tasks.push(tokio::spawn(async move {
            let mut s = TcpStream::connect(&addr).await.expect("connect");
            s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                .await
                .expect("write");
            // One header byte every 200 ms, never finishing the head.
            for _ in 0..100 {
                if s.write_all(b"a").await.is_err() {
                    return true;
                }
                if closed_within(&mut s, Duration::from_millis(200)).await {
                    return true;
                }
            }
            false
        }));
    }
    for t in tasks {
        assert!(
            t.await.expect("task"),
            "a slow-loris connection stayed open for 20 s"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // A connection that sends nothing at all.
    let mut idle = TcpStream::connect(&addr).await.expect("connect");
    assert!(
        closed_within(&mut idle, Duration::from_secs(5)).await,
        "an idle connection stayed open"
    );
    assert_eq!(
        get(&format!("http://{addr}/healthz"), Duration::from_secs(2))
            .await
            .map(|r| r.0),
        Some(200)
    );
}

#[tokio::test]
async fn a_flood_of_idle_connections_leaves_metrics_and_health_answering() {
    raise_own_limit();
    let env = Env::start().await;
    let mut d = spawn_at_1024(&env);
    d.wait_ready(200, Duration::from_secs(30)).await;
    let mut held = Vec::new();
    for _ in 0..1100 {
        match TcpStream::connect(&d.addr).await {
            Ok(s) => held.push(s),
            Err(_) => break,
        }
    }
    assert!(held.len() >= 1000, "only {} connections opened", held.len());
    for path in ["/metrics", "/healthz", "/readyz"] {
        for _ in 0..3 {
            let got = get(&format!("http://{}{path}", d.addr), Duration::from_secs(3)).await;
            assert_eq!(
                got.map(|r| r.0),
                Some(200),
                "{path} did not answer; log:\n{}",
                d.log()
            );
        }
    }
    drop(held);
    // Ingest was never starved of descriptors.
    env.publish_load(200, 61).await;
    env.wait_rows(200, Duration::from_secs(30), || d.log())
        .await;
    assert!(d.running());
}

#[tokio::test]
async fn oversized_heads_get_431_and_bad_paths_get_400() {
    let env = Env::start().await;
    let mut d = Daemon::spawn_with(&env, &[], LIMITS);
    d.wait_ready(200, Duration::from_secs(30)).await;
    let mut s = TcpStream::connect(&d.addr).await.expect("connect");
    let big = "a".repeat(64 * 1024);
    let req = format!("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: {big}\r\n\r\n");
    let _ = s.write_all(req.as_bytes()).await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut answer)).await;
    let head = String::from_utf8_lossy(&answer);
    assert!(head.starts_with("HTTP/1.1 431"), "{head}");
    for path in [
        "/accounts/%00/events",
        "/accounts/%FF/events",
        "/reports/%0A",
    ] {
        let got = get(&format!("http://{}{path}", d.addr), Duration::from_secs(2)).await;
        assert_eq!(got.map(|r| r.0), Some(400), "{path}");
    }
    assert!(
        d.errors().is_empty(),
        "bad input logged an error: {:?}",
        d.errors()
    );
}
