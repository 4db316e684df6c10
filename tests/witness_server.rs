//! The independent witness as a real process (`event-audit witness serve`), driven by a plain
//! HTTP client: every answer C2SP tlog-witness specifies (200 with a cosignature, 404, 403,
//! 400, 409 with `text/x.tlog.size` and the size it knows, 422), cosignatures checked by a
//! verifier written from the spec (tests/spec/cosignature_check.py, not the project's note
//! code) including the key id, concurrent submissions that never lower its state, and a restart
//! that keeps it. Also `keygen --witness`, unique default origins and keys never written
//! through a symlink.

mod common;

use std::path::Path;

use base64::Engine;
use common::cli::event_audit;
use common::witness::{write_keys, write_witness_key, WitnessProcess};
use event_audit::audit::note::{Checkpoint, PrivateKey};
use event_audit::audit::tlog::{leaf_hash, Hash, MemTree};

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
    // Old size above the checkpoint's: 400.
    let n4 = sign(&log, origin, &t, 4);
    let (s, _, _) = add(&client, &w.url, body(5, &[], &n4)).await;
    assert_eq!(s, 400);

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
    // A proof that fails: 422; the same size with another root: 409.
    let (s, _, _) = add(&client, &w.url, body(4, &t.consistency(3, 10), &n10)).await;
    assert_eq!(s, 422);
    let other4 = log.sign(&Checkpoint {
        origin: origin.into(),
        size: 4,
        root: [7; 32],
    });
    let (s, ct, b) = add(&client, &w.url, body(4, &[], &other4)).await;
    assert_eq!(
        (s, ct.as_str(), b.as_str()),
        (409, "text/x.tlog.size", "4\n")
    );
    // The consistent extension: 200; the re-verdict runs' origin is the log key's too.
    let (s, _, b) = add(&client, &w.url, body(4, &t.consistency(4, 10), &n10)).await;
    assert_eq!(s, 200, "{b}");
    let rv = format!("{origin}/reverdicts");
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
