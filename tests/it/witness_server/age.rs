//! The witness's connection age cap (`witness_server.max_connection_age`, 5 minutes by default,
//! `--max-connection-age`): a client that keeps one connection alive with request after request,
//! so that neither the head timeout nor the idle timeout ever closes it, is closed by the witness
//! once the connection is older than the cap, and the witness goes on answering new connections.

use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use crate::support::witness::{write_keys, write_witness_key};
use crate::support::{bin, free_addr};

/// Sends `GET /` on `conn` and reads the whole answer: its status, or `None` when the witness
/// closed the connection instead.
async fn get(conn: &mut BufReader<TcpStream>) -> Option<u16> {
    let req = b"GET / HTTP/1.1\r\nHost: witness\r\n\r\n";
    conn.get_mut().write_all(req).await.ok()?;
    let mut line = String::new();
    conn.read_line(&mut line).await.ok().filter(|n| *n > 0)?;
    let status = line.split(' ').nth(1)?.parse().ok()?;
    let mut length = 0;
    loop {
        line.clear();
        conn.read_line(&mut line).await.ok().filter(|n| *n > 0)?;
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().ok()?;
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    conn.read_exact(&mut body).await.ok()?;
    Some(status)
}

#[tokio::test]
async fn a_connection_kept_alive_past_its_age_is_closed_by_the_witness() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (_, log_pub, _) = write_keys(tmp.path(), "log.example/age", 21);
    let (wkey, _, _) = write_witness_key(tmp.path(), "witness.example/age", 22);
    let addr = free_addr();
    let mut witness = bin()
        .args([
            "witness",
            "serve",
            "--max-connection-age",
            "2s",
            "--listen",
            &addr,
        ])
        .arg("--key")
        .arg(&wkey)
        .arg("--log-key")
        .arg(&log_pub)
        .arg("--state-dir")
        .arg(tmp.path().join("state"))
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start the witness");
    let started = Instant::now();
    let sock = loop {
        match TcpStream::connect(&addr).await {
            Ok(s) => break s,
            Err(e) => assert!(started.elapsed() < Duration::from_secs(20), "{e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let (opened, mut conn) = (Instant::now(), BufReader::new(sock));

    // A request every 200 ms on the one connection, until the witness closes it.
    let mut answered = 0;
    while get(&mut conn).await == Some(200) {
        answered += 1;
        assert!(
            opened.elapsed() < Duration::from_secs(10),
            "still open after 10 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let age = opened.elapsed();
    assert!(
        age >= Duration::from_secs(2) && age < Duration::from_secs(4),
        "closed after {age:?}, the cap is 2 s"
    );
    assert!(
        answered >= 8,
        "{answered} requests answered on the connection"
    );

    // The witness itself goes on: a new connection is answered.
    let sock = TcpStream::connect(&addr).await.expect("connect again");
    assert_eq!(get(&mut BufReader::new(sock)).await, Some(200));
    let _ = witness.kill().await;

    // The cap is a setting whose default is the constant (5 minutes).
    let help = bin()
        .args(["witness", "serve", "--help"])
        .output()
        .await
        .expect("help");
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("[default: 5m]"), "{help}");
}
