//! The independent witness as a real process (`event-audit witness serve`), driven by a plain
//! HTTP client: every answer C2SP tlog-witness specifies as it stands now (200 with a
//! cosignature, 404, 403, 400, 409 with `text/x.tlog.size` and the size it knows, 422 for a
//! failed proof, a proof from old size 0 and another root at the size it cosigned), cosignatures
//! checked by a verifier written from the spec (tests/spec/cosignature_check.py, not the
//! project's note code) including the key id, concurrent submissions that never lower its
//! state, and a restart that keeps it; a hostile client's flood (mutated, truncated, oversized,
//! slow and idle requests) with no 5xx, memory flat, every refusal counted by status, and a
//! valid checkpoint cosigned after it; a connection closed once older than the age cap
//! ([`age`]); the monitoring API ([`monitor`]). Also `keygen --witness`, unique default origins and keys
//! never written through a symlink.

#[path = "witness_server/age.rs"]
mod age;
#[path = "witness_server/hostile.rs"]
mod hostile;
#[path = "witness_server/monitor.rs"]
mod monitor;

use std::collections::BTreeMap;
use std::path::Path;

use crate::support::cli::event_audit;
use crate::support::witness::{write_keys, write_witness_key, WitnessProcess};
use base64::Engine;
use event_audit::tlog::merkle::{leaf_hash, Hash, MemTree};
use event_audit::tlog::note::{Checkpoint, PrivateKey};

fn tree(n: u64) -> MemTree {
    MemTree {
        leaves: (0..n).map(|i| leaf_hash(&i.to_be_bytes())).collect(),
    }
}

fn body(old: u64, proof: &[Hash], note: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut b = format!("old {old}\n");
    for h in proof {
        b.push_str(&b64.encode(h));
        b.push('\n');
    }
    format!("{b}\n{note}")
}

fn sign(k: &PrivateKey, origin: &str, t: &MemTree, n: u64) -> String {
    k.sign(&Checkpoint {
        origin: origin.into(),
        size: n,
        root: t.root(n),
    })
}

/// POSTs to add-checkpoint: (status, content type, body).
async fn add(client: &reqwest::Client, url: &str, body: String) -> (u16, String, String) {
    let r = client
        .post(format!("{url}/add-checkpoint"))
        .body(body)
        .send()
        .await
        .expect("request");
    let status = r.status().as_u16();
    let ct = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, ct, r.text().await.expect("body"))
}

/// Checks `note` + `line` with the spec-written verifier: the timestamps of valid cosignatures.
fn spec_check(dir: &Path, vkey: &Path, note_with_lines: &str) -> (Option<i32>, String) {
    let f = dir.join("cosigned.note");
    std::fs::write(&f, note_with_lines).expect("write");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/spec/cosignature_check.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(vkey)
        .arg(&f)
        .output()
        .expect("python3");
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[tokio::test]
async fn the_witness_answers_as_the_spec_says_and_never_rolls_back() {
    let tmp = tempfile::tempdir().expect("tmp");
    let origin = "log.example/witnessed";
    let (_, log_pub, log) = write_keys(tmp.path(), origin, 1);
    let (wkey, wpub, _) = write_witness_key(tmp.path(), "witness.example/w1", 2);
    let mut w = WitnessProcess::start(
        &wkey,
        std::slice::from_ref(&log_pub),
        &tmp.path().join("state"),
    )
    .await;
    let client = reqwest::Client::new();
    let t = tree(40);

    // Unknown origin 404; the log's origin signed by another key 403; malformed 400.
    let stranger = PrivateKey::from_seed("log.example/other", &[3; 32]).expect("key");
    let (s, _, _) = add(
        &client,
        &w.url,
        body(0, &[], &sign(&stranger, "log.example/other", &t, 4)),
    )
    .await;
    assert_eq!(s, 404);
    let impostor = PrivateKey::from_seed(origin, &[4; 32]).expect("key");
    let (s, _, _) = add(
        &client,
        &w.url,
        body(0, &[], &sign(&impostor, origin, &t, 4)),
    )
    .await;
    assert_eq!(s, 403);
    let (s, _, _) = add(&client, &w.url, "old 0\nno empty line".into()).await;
    assert_eq!(s, 400);
    // Old size above the checkpoint's: 400. Proof lines with old size 0: 422.
    let n4 = sign(&log, origin, &t, 4);
    let (s, _, _) = add(&client, &w.url, body(5, &[], &n4)).await;
    assert_eq!(s, 400);
    let (s, _, _) = add(&client, &w.url, body(0, &t.consistency(2, 4), &n4)).await;
    assert_eq!(s, 422);

    // The first checkpoint: 200 with a cosignature line the spec's verifier accepts.
    let (s, ct, line) = add(&client, &w.url, body(0, &[], &n4)).await;
    assert_eq!(s, 200, "{line}");
    assert!(ct.starts_with("text/plain"), "{ct}");
    assert!(
        line.starts_with("\u{2014} witness.example/w1 ") && line.ends_with('\n'),
        "{line:?}"
    );
    let (code, out) = spec_check(tmp.path(), &wpub, &format!("{n4}{line}"));
    assert_eq!(code, Some(0), "{out}");
    let t0: u64 = out
        .trim()
        .strip_prefix("ok ")
        .expect("ok")
        .parse()
        .expect("time");
    let now = chrono::Utc::now().timestamp() as u64;
    assert!(t0 <= now && now - t0 < 300, "timestamp {t0}");
    // The line bound to this checkpoint only: on another note it does not verify.
    let n5 = sign(&log, origin, &t, 5);
    assert_eq!(
        spec_check(tmp.path(), &wpub, &format!("{n5}{line}")).0,
        Some(1)
    );

    // The wrong old size: 409, text/x.tlog.size, the size it knows.
    let n10 = sign(&log, origin, &t, 10);
    let (s, ct, b) = add(&client, &w.url, body(0, &[], &n10)).await;
    assert_eq!(
        (s, ct.as_str(), b.as_str()),
        (409, "text/x.tlog.size", "4\n")
    );
    // A proof that fails: 422; the same size with another root: 422 (409 in v1.0.0).
    let (s, _, _) = add(&client, &w.url, body(4, &t.consistency(3, 10), &n10)).await;
    assert_eq!(s, 422);
    let other4 = log.sign(&Checkpoint {
        origin: origin.into(),
        size: 4,
        root: [7; 32],
    });
    let (s, _, b) = add(&client, &w.url, body(4, &[], &other4)).await;
    assert_eq!(
        (s, b.as_str()),
        (422, "another root at the size last cosigned\n")
    );
    // The consistent extension: 200; the re-verdict runs' origin is the log key's too.
    let (s, _, b) = add(&client, &w.url, body(4, &t.consistency(4, 10), &n10)).await;
    assert_eq!(s, 200, "{b}");
    // Size 0 only with the empty tree's root (SHA-256 of nothing): 422 otherwise.
    let rv = format!("{origin}/reverdicts");
    let (o, size, root) = (rv.clone(), 0, [1; 32]);
    let bad0 = log.sign(&Checkpoint {
        origin: o,
        size,
        root,
    });
    assert_eq!(add(&client, &w.url, body(0, &[], &bad0)).await.0, 422);
    let (s, _, _) = add(&client, &w.url, body(0, &[], &sign(&log, &rv, &t, 0))).await;
    assert_eq!(s, 200);
    let (s, _, _) = add(&client, &w.url, body(0, &[], &sign(&log, &rv, &t, 2))).await;
    assert_eq!(s, 200);

    // Concurrent submissions from size 10 (sizes 11..=30 in parallel): one wins, the others
    // are told the new size; none lowers it, however they interleave.
    let sends = (11..=30u64).map(|n| {
        let (client, url) = (client.clone(), w.url.clone());
        let b = body(10, &t.consistency(10, n), &sign(&log, origin, &t, n));
        async move { (n, add(&client, &url, b).await) }
    });
    let results = futures::future::join_all(sends).await;
    let won: Vec<u64> = results
        .iter()
        .filter(|(_, r)| r.0 == 200)
        .map(|(n, _)| *n)
        .collect();
    assert_eq!(won.len(), 1, "{results:?}");
    for (_, (s, _, b)) in &results {
        assert!(
            *s == 200 || (*s == 409 && *b == format!("{}\n", won[0])),
            "{results:?}"
        );
    }
    // Smaller than what it knows, even with the right old size: refused (never lowered).
    let (s, _, _) = add(
        &client,
        &w.url,
        body(won[0], &[], &sign(&log, origin, &t, 10)),
    )
    .await;
    assert_eq!(s, 400);

    // Refusals of validly signed checkpoints that show a misbehaving log are evidence: logged
    // and counted (the fork at size 4, the failed proof); a stale old size (the first 409 and
    // the concurrent losers) is routine and counted apart.
    let metrics = client
        .get(format!("{}/metrics", w.url))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    let count = |reason: &str| {
        metrics
            .lines()
            .find(|l| {
                l.starts_with("event_audit_witness_refusals_total")
                    && l.contains(&format!("origin=\"{origin}\""))
                    && l.contains(&format!("reason=\"{reason}\""))
            })
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .unwrap_or(-1.0)
    };
    assert!(
        count("conflict") == 1.0 && count("inconsistent") == 1.0,
        "{metrics}"
    );
    let stale = metrics
        .lines()
        .find(|l| l.starts_with("event_audit_witness_rejected_requests_total{code=\"409\"}"))
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok());
    assert!(stale >= Some(20.0), "{metrics}");
    assert!(
        w.log()
            .contains("refused a checkpoint signed by the log's key"),
        "{}",
        w.log()
    );

    // A restart keeps the state: old 0 is told the size it knew.
    w.restart().await;
    let (s, _, b) = add(&client, &w.url, body(0, &[], &n4)).await;
    assert_eq!((s, b), (409, format!("{}\n", won[0])));
    let n40 = sign(&log, origin, &t, 40);
    let (s, _, line) = add(
        &client,
        &w.url,
        body(won[0], &t.consistency(won[0], 40), &n40),
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(
        spec_check(tmp.path(), &wpub, &format!("{n40}{line}")).0,
        Some(0)
    );
}

/// The value of the metric line starting with `name` (with its labels), if any.
fn metric(text: &str, name: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    line.rsplit(' ').next()?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hostile_client_cannot_stop_the_witness_nor_its_cosigning() {
    let tmp = tempfile::tempdir().expect("tmp");
    let origin = "log.example/hostile";
    let (_, log_pub, log) = write_keys(tmp.path(), origin, 6);
    let (wkey, wpub, _) = write_witness_key(tmp.path(), "witness.example/w6", 7);
    let state = tmp.path().join("state");
    let w = WitnessProcess::start(&wkey, std::slice::from_ref(&log_pub), &state).await;
    let client = reqwest::Client::new();
    let t = tree(40);
    let n4 = sign(&log, origin, &t, 4);
    assert_eq!(add(&client, &w.url, body(0, &[], &n4)).await.0, 200);
    let n10 = sign(&log, origin, &t, 10);
    let valid = body(4, &t.consistency(4, 10), &n10);
    let pid = w.pid().expect("running");
    let before = hostile::rss_kib(pid);

    // Slow clients beside the flood: a body a byte at a time, a head that never ends.
    let slow: Vec<_> = (0..8)
        .map(|i| {
            let (addr, v) = (w.addr.clone(), valid.clone());
            tokio::spawn(async move {
                let r = match i % 2 {
                    0 => hostile::slow_body(v.as_bytes()),
                    _ => hostile::slow_head(),
                };
                (r.kind, hostile::send(&addr, &r).await)
            })
        })
        .collect();
    // 3,000 mutated, truncated, oversized and malformed requests, 48 at a time.
    let mut rng = hostile::rng(27);
    let flood: Vec<hostile::Request> = (0..3000)
        .map(|i| hostile::request(&mut rng, i, valid.as_bytes(), &n10))
        .collect();
    let mut seen: BTreeMap<(&str, Option<u16>), usize> = BTreeMap::new();
    let mut peak = before;
    for chunk in flood.chunks(48) {
        let sent = chunk.iter().map(|r| hostile::send(&w.addr, r));
        for (r, a) in chunk.iter().zip(futures::future::join_all(sent).await) {
            *seen.entry((r.kind, a)).or_default() += 1;
        }
        peak = peak.max(hostile::rss_kib(pid));
    }
    for s in slow {
        let (kind, a) = s.await.expect("slow client");
        *seen.entry((kind, a)).or_default() += 1;
    }
    eprintln!("answers by kind and status: {seen:?}; RSS {before} KiB before, peak {peak} KiB");
    assert!(
        !seen.keys().any(|(_, a)| a.is_some_and(|c| c >= 500)),
        "a 5xx: {seen:?}"
    );
    let got = |k: &str, c: u16| seen.get(&(k, Some(c))).copied().unwrap_or(0);
    assert_eq!(got("slow body", 408), 4, "{seen:?}");
    assert_eq!(seen.get(&("slow head", None)), Some(&4), "{seen:?}");
    assert!(
        got("oversized", 413) > 0 && got("large head", 431) > 0,
        "{seen:?}"
    );
    assert!(
        got("64 proof lines", 400) == 250 && got("not UTF-8", 400) == 250,
        "{seen:?}"
    );
    // Memory flat: a loose bound (the flood would need hundreds of MiB if bodies piled up).
    assert!(
        peak < before + 64 * 1024,
        "RSS {before} KiB before, peak {peak} KiB"
    );

    // Idle connections past the cap (256) make room for a new one; then a valid checkpoint,
    // from the size the witness tells, is cosigned.
    let mut idle = Vec::new();
    for _ in 0..300 {
        idle.extend(tokio::net::TcpStream::connect(&w.addr).await.ok());
    }
    let client = reqwest::Client::new();
    let (s, ct, known) = add(&client, &w.url, body(0, &[], &n10)).await;
    assert_eq!((s, ct.as_str()), (409, "text/x.tlog.size"), "{known}");
    let k: u64 = known.trim().parse().expect("a size");
    let n20 = sign(&log, origin, &t, 20);
    let (s, _, line) = add(&client, &w.url, body(k, &t.consistency(k, 20), &n20)).await;
    assert_eq!(s, 200, "{line}");
    let (code, out) = spec_check(tmp.path(), &wpub, &format!("{n20}{line}"));
    assert_eq!(code, Some(0), "{out}");
    drop(idle);

    // Every refusal counted by its status.
    let m = client.get(format!("{}/metrics", w.url)).send().await;
    let m = m.expect("metrics").text().await.expect("text");
    let count = |code: &str| {
        let name = format!("event_audit_witness_rejected_requests_total{{code=\"{code}\"}}");
        metric(&m, &name).unwrap_or(0.0)
    };
    assert!(count("413") == 500.0 && count("408") == 4.0, "{m}");
    assert!(count("400") >= 500.0 && count("409") >= 1.0, "{m}");
    assert!(
        count("404") + count("405") > 0.0 && count("500") == 0.0,
        "{m}"
    );
}

#[tokio::test]
async fn keygen_writes_witness_keys_unique_origins_and_never_through_a_link() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().expect("tmp");
    let pre = tmp.path().join("w");
    let r = event_audit(
        &[
            "keygen",
            "--witness",
            "--name",
            "witness.example/w9",
            "--out",
            pre.to_str().expect("utf-8"),
        ],
        &[],
    )
    .await;
    assert_eq!(r.code, Some(0), "{r:?}");
    let key = tmp.path().join("w.key");
    assert_eq!(
        std::fs::metadata(&key).expect("key").permissions().mode() & 0o777,
        0o600
    );
    let vkey = std::fs::read_to_string(tmp.path().join("w.pub")).expect("pub");
    assert!(vkey.starts_with("witness.example/w9+"), "{vkey}");
    // The key id as the spec computes it (the checker refuses a vkey whose id differs).
    let (code, out) = spec_check(
        tmp.path(),
        &tmp.path().join("w.pub"),
        "x\n\n\u{2014} other AAAAAA==\n",
    );
    assert_eq!(
        code,
        Some(1),
        "no cosignature by it, but the vkey itself is accepted: {out}"
    );
    assert!(!out.contains("key id"), "{out}");

    // Two log keys without --origin: two origins (C2SP asks origins to be unique).
    let mut names = Vec::new();
    for n in ["a", "b"] {
        let p = tmp.path().join(n);
        let r = event_audit(&["keygen", "--out", p.to_str().expect("utf-8")], &[]).await;
        assert_eq!(r.code, Some(0), "{r:?}");
        names.push(r.stdout.split('+').next().expect("name").to_owned());
    }
    assert_ne!(names[0], names[1]);
    assert!(names[0].starts_with("event-audit/"), "{names:?}");

    // A symlink where the key would go: refused, nothing written through it.
    let target = tmp.path().join("elsewhere");
    std::os::unix::fs::symlink(&target, tmp.path().join("c.key")).expect("symlink");
    let r = event_audit(
        &[
            "keygen",
            "--out",
            tmp.path().join("c").to_str().expect("utf-8"),
        ],
        &[],
    )
    .await;
    assert_ne!(r.code, Some(0), "{r:?}");
    assert!(!target.exists());
}
