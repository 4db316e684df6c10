//! A hostile client of the witness, over raw TCP on loopback, from a seeded generator so a
//! failure repeats: valid bodies with bytes flipped, inserted or removed; bodies cut short
//! (half-closed or abandoned); bodies announced or sent past the limit, chunked too; a body
//! sent a byte at a time slower than the witness waits; request heads that never end, that are
//! too large or not HTTP at all; bodies that are not UTF-8 or carry 64 proof lines; other
//! methods and paths. Each request reports the status answered, if any. Bounded: a fixed number
//! of requests, each abandoned after [`GIVE_UP`].

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long the client waits for any one answer.
pub(super) const GIVE_UP: Duration = Duration::from_secs(30);

/// One request as sent: the bytes in parts with a pause after each, then whether the client
/// half-closes (signals it sends no more) and waits for an answer.
pub(super) struct Request {
    pub kind: &'static str,
    parts: Vec<(Vec<u8>, Duration)>,
    half_close: bool,
    wait: bool,
}

fn post(path: &str, extra: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "POST {path} HTTP/1.1\r\nHost: w\r\nConnection: close\r\n{extra}Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

fn whole(kind: &'static str, bytes: Vec<u8>) -> Request {
    Request {
        kind,
        parts: vec![(bytes, Duration::ZERO)],
        half_close: false,
        wait: true,
    }
}

/// Flips, inserts or removes one to four bytes of `body`.
fn mutate(rng: &mut StdRng, body: &[u8]) -> Vec<u8> {
    let mut b = body.to_vec();
    for _ in 0..rng.gen_range(1..=4) {
        let at = rng.gen_range(0..b.len().max(1));
        match rng.gen_range(0..3) {
            0 if at < b.len() => b[at] ^= rng.gen_range(1..=255u8),
            1 => b.insert(at.min(b.len()), rng.gen()),
            _ if at < b.len() => {
                b.remove(at);
            }
            _ => b.push(b'\n'),
        }
    }
    b
}

/// The `i`-th request of the flood (kinds in turn, details from `rng`); `valid` is a body the
/// witness would cosign, `note` its signed checkpoint.
pub(super) fn request(rng: &mut StdRng, i: usize, valid: &[u8], note: &str) -> Request {
    let max = 8 * 1024;
    match i % 12 {
        0..=3 => whole("mutated", post("/add-checkpoint", "", &mutate(rng, valid))),
        4 => {
            let cut = rng.gen_range(0..valid.len());
            let mut head = post("/add-checkpoint", "", valid);
            head.truncate(head.len() - valid.len() + cut);
            Request {
                kind: "truncated",
                parts: vec![(head, Duration::ZERO)],
                half_close: true,
                wait: rng.gen_bool(0.5),
            }
        }
        5 => {
            let n = rng.gen_range(max + 1..max * 64);
            let mut r =
                format!("POST /add-checkpoint HTTP/1.1\r\nHost: w\r\nContent-Length: {n}\r\n\r\n")
                    .into_bytes();
            r.extend(std::iter::repeat_n(b'A', n.min(64 * 1024)));
            whole("oversized", r)
        }
        6 => {
            let mut r =
                b"POST /add-checkpoint HTTP/1.1\r\nHost: w\r\nTransfer-Encoding: chunked\r\n\r\n"
                    .to_vec();
            for _ in 0..rng.gen_range(9..20) {
                r.extend_from_slice(format!("{:x}\r\n", 1024).as_bytes());
                r.extend(std::iter::repeat_n(b'\n', 1024));
                r.extend_from_slice(b"\r\n");
            }
            r.extend_from_slice(b"0\r\n\r\n");
            whole("oversized", r)
        }
        7 => {
            let mut b = b"old 4\n".to_vec();
            b.extend(
                std::iter::repeat_n(&b"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"[..], 64)
                    .flatten(),
            );
            b.extend_from_slice(b"\n");
            whole("64 proof lines", post("/add-checkpoint", "", &b))
        }
        8 => {
            let mut b = valid.to_vec();
            let at = rng.gen_range(0..b.len());
            b[at] = 0xff;
            whole("not UTF-8", post("/add-checkpoint", "", &b))
        }
        9 => match rng.gen_range(0..4) {
            0 => whole("other path", post("/add-checkpoint/x", "", valid)),
            1 => whole(
                "other method",
                b"GET /add-checkpoint HTTP/1.1\r\nHost: w\r\nConnection: close\r\n\r\n".to_vec(),
            ),
            2 => Request {
                half_close: true,
                ..whole(
                    "not HTTP",
                    (0..rng.gen_range(1..512)).map(|_| rng.gen()).collect(),
                )
            },
            _ => {
                let big = "x".repeat(rng.gen_range(17..64) * 1024);
                whole(
                    "large head",
                    post("/add-checkpoint", &format!("X-Big: {big}\r\n"), valid),
                )
            }
        },
        _ => {
            let b = format!("old {}\n\n{note}", rng.gen_range(0..100u64));
            whole(
                "another old size",
                post("/add-checkpoint", "", b.as_bytes()),
            )
        }
    }
}

/// A body sent a byte every 300 ms after a complete head: slower than the witness waits.
pub(super) fn slow_body(valid: &[u8]) -> Request {
    let mut head = post("/add-checkpoint", "", valid);
    head.truncate(head.len() - valid.len());
    let mut parts = vec![(head, Duration::ZERO)];
    parts.extend(
        valid
            .iter()
            .take(60)
            .map(|&b| (vec![b], Duration::from_millis(300))),
    );
    Request {
        kind: "slow body",
        parts,
        half_close: false,
        wait: true,
    }
}

/// A request head sent a line every 2 s that never ends.
pub(super) fn slow_head() -> Request {
    let mut parts = vec![(
        b"POST /add-checkpoint HTTP/1.1\r\n".to_vec(),
        Duration::from_secs(2),
    )];
    parts.extend((0..10).map(|i| (format!("X-{i}: y\r\n").into_bytes(), Duration::from_secs(2))));
    Request {
        kind: "slow head",
        parts,
        half_close: false,
        wait: true,
    }
}

/// Sends `r` to `addr`, reading while it writes: the status of the answer, if one came (the
/// witness may close first, or the client not wait).
pub(super) async fn send(addr: &str, r: &Request) -> Option<u16> {
    let run = async {
        let (mut rd, mut wr) = TcpStream::connect(addr).await.ok()?.into_split();
        let write = async {
            for (bytes, pause) in &r.parts {
                if wr.write_all(bytes).await.is_err() {
                    break;
                }
                tokio::time::sleep(*pause).await;
            }
            if r.half_close {
                let _ = wr.shutdown().await;
            }
        };
        if !r.wait {
            write.await;
            return None;
        }
        let read = async {
            let mut answer = Vec::new();
            let mut buf = [0u8; 4096];
            while !answer.windows(4).any(|w| w == b"\r\n\r\n") && answer.len() < 64 * 1024 {
                match rd.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => answer.extend_from_slice(&buf[..n]),
                }
            }
            let code = std::str::from_utf8(answer.get(9..12)?).ok()?;
            code.parse().ok()
        };
        tokio::select! {
            answer = read => answer,
            _ = async { write.await; std::future::pending::<()>().await } => None,
        }
    };
    tokio::time::timeout(GIVE_UP, run).await.ok().flatten()
}

/// A generator from `seed`.
pub(super) fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// The resident set size of process `pid` in KiB (Linux).
pub(super) fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
