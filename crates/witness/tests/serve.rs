//! The witness's binary on its own (`event-audit-witness serve`, built without the daemon): it
//! listens where it prints, cosigns a checkpoint signed by a log it trusts (a cosignature its own
//! key verifies), and refuses one signed by another key; it is ended by its PID.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

use event_audit_witness::tlog::cosign::WitnessSigner;
use event_audit_witness::tlog::merkle::{leaf_hash, MemTree};
use event_audit_witness::tlog::note::{self, Checkpoint, PrivateKey};

/// A plain HTTP/1.1 request over a socket: (status, body).
fn request(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .expect("timeout");
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("read");
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, body.to_owned())
}

#[test]
fn serve_cosigns_a_trusted_logs_checkpoint_and_refuses_a_strangers() {
    let t = tempfile::tempdir().expect("tempdir");
    let log = PrivateKey::from_seed("serve.example/log", &[3; 32]).expect("log key");
    let stranger = PrivateKey::from_seed("serve.example/log", &[4; 32]).expect("other key");
    let witness = WitnessSigner::from_seed("serve.example/witness", &[5; 32]).expect("witness");
    let (log_pub, witness_key) = (t.path().join("log.pub"), t.path().join("w.key"));
    std::fs::write(&log_pub, log.public().encode()).expect("write");
    std::fs::write(&witness_key, witness.encode()).expect("write");
    std::fs::set_permissions(&witness_key, std::fs::Permissions::from_mode(0o600)).expect("chmod");

    let mut child = Command::new(env!("CARGO_BIN_EXE_event-audit-witness"))
        .args(["serve", "--listen", "127.0.0.1:0", "--key"])
        .arg(&witness_key)
        .arg("--log-key")
        .arg(&log_pub)
        .arg("--state-dir")
        .arg(t.path().join("state"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start event-audit-witness");
    let mut first = String::new();
    let mut out = child.stdout.take().expect("stdout");
    let mut byte = [0u8; 1];
    while out.read(&mut byte).unwrap_or(0) == 1 && byte[0] != b'\n' {
        first.push(byte[0] as char);
    }
    let addr = first.trim().trim_start_matches("http://").to_owned();

    let tree = MemTree {
        leaves: (0..5u64).map(|i| leaf_hash(&i.to_be_bytes())).collect(),
    };
    let cp = Checkpoint {
        origin: "serve.example/log".into(),
        size: 5,
        root: tree.root(5),
    };
    let signed = log.sign(&cp);
    let (status, line) = request(
        &addr,
        "POST",
        "/add-checkpoint",
        &format!("old 0\n\n{signed}"),
    );
    let (stranger_status, _) = request(
        &addr,
        "POST",
        "/add-checkpoint",
        &format!("old 0\n\n{}", stranger.sign(&cp)),
    );
    let (metrics_status, metrics) = request(&addr, "GET", "/metrics", "");
    let _ = child.kill();
    let _ = child.wait();

    assert_eq!(status, 200, "{line}");
    let cosigned = format!("{signed}{line}");
    let opened = note::Note::parse(&cosigned).expect("a note with the cosignature");
    assert!(
        witness
            .public()
            .cosigned(&opened)
            .expect("cosigned")
            .is_some(),
        "the answer is not the witness's cosignature: {line}"
    );
    assert_eq!(
        stranger_status, 403,
        "a checkpoint of another key was not refused"
    );
    assert_eq!(metrics_status, 200);
    assert!(metrics.contains("event_audit_witness_cosignatures_total"));
}
