//! Evidence bundles checked by both verifiers, `event-audit verify-proof` and the independent
//! `tools/verify_bundle.py`: bundles built here from a tiny in-memory tree and a fresh key; the
//! untampered bundle is accepted by both, and one byte changed in a raw event, a leaf's data, a
//! proof hash, the signature or the tree size is rejected by both, each naming what failed.
//! Subprocesses: the exit codes and messages are the point.

mod common;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Value};

use common::records::{now_us, records};
use common::BIN;
use event_audit::audit::bundle::FORMAT;
use event_audit::audit::note::{Checkpoint, PrivateKey};
use event_audit::audit::tlog::{leaf_hash, MemTree};

const ORIGIN: &str = "event-audit/ea_bundle_test";

/// A bundle proving leaves 2 and 6 of a 7-row tree, and the public key's line.
fn bundle() -> (Value, String) {
    let recs = records("BUNDLE", 7, 1, now_us());
    let tree = MemTree {
        leaves: recs.iter().map(|r| leaf_hash(&r.row_hash)).collect(),
    };
    let seed: [u8; 32] = rand::random();
    let key = PrivateKey::from_seed(ORIGIN, &seed).expect("key");
    let cp = Checkpoint {
        origin: ORIGIN.into(),
        size: 7,
        root: tree.root(7),
    };
    let entries: Vec<Value> = [2u64, 6]
        .iter()
        .map(|&i| {
            let r = &recs[i as usize];
            let hex: String = r.row_hash.iter().map(|b| format!("{b:02x}")).collect();
            json!({
                "stream": "BUNDLE",
                "stream_seq": r.stream_seq,
                "leaf_index": i,
                "raw": B64.encode(&r.raw),
                "columns": {"subject": r.subject},
                "leaf_data": B64.encode(r.canon().encode()),
                "row_hash": hex,
                "inclusion_proof": tree.inclusion(i, 7).iter().map(|h| B64.encode(h)).collect::<Vec<_>>(),
            })
        })
        .collect();
    let b = json!({"format": FORMAT, "checkpoint": key.sign(&cp), "entries": entries});
    (b, key.public().encode())
}

/// Both verifiers on `bundle` with `key`: `[(exit code, stderr and stdout)]`, binary first.
fn both(bundle: &Value, key: &str) -> [(Option<i32>, String); 2] {
    let dir = tempfile::tempdir().expect("tempdir");
    let (b, k) = (dir.path().join("bundle.json"), dir.path().join("log.pub"));
    std::fs::write(&b, bundle.to_string()).expect("write bundle");
    std::fs::write(&k, format!("{key}\n")).expect("write key");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tools/verify_bundle.py");
    let run = |cmd: &mut std::process::Command| {
        let out = cmd.output().expect("run a verifier");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        (out.status.code(), text)
    };
    [
        run(std::process::Command::new(BIN)
            .arg("verify-proof")
            .arg(&b)
            .arg("--public-key")
            .arg(&k)),
        run(std::process::Command::new("python3")
            .arg(script)
            .arg(&b)
            .arg("--public-key")
            .arg(&k)),
    ]
}

/// Both verifiers reject `bundle`, each naming `what`.
fn rejected(bundle: &Value, key: &str, what: &str) {
    for (i, (code, text)) in both(bundle, key).into_iter().enumerate() {
        let who = ["verify-proof", "verify_bundle.py"][i];
        assert_eq!(
            code,
            Some(1),
            "{who} on a bundle with {what} changed: {text}"
        );
        assert!(
            text.contains("REJECTED") && text.contains(what),
            "{who} does not name {what}: {text}"
        );
    }
}

/// Base64 `field` with byte `at` flipped.
fn flip(field: &str, at: usize) -> String {
    let mut b = B64.decode(field).expect("base64");
    b[at] ^= 0x01;
    B64.encode(b)
}

#[test]
fn both_verifiers_accept_a_genuine_bundle_and_reject_each_tampering() {
    let (good, key) = bundle();
    for (i, (code, text)) in both(&good, &key).into_iter().enumerate() {
        assert_eq!(code, Some(0), "verifier {i}: {text}");
        assert!(
            text.contains("OK: 2 entries") && text.contains(ORIGIN) && text.contains("tree size 7"),
            "verifier {i}: {text}"
        );
    }

    // A raw event: one byte.
    let mut b = good.clone();
    b["entries"][1]["raw"] = flip(b["entries"][1]["raw"].as_str().expect("raw"), 3).into();
    rejected(&b, &key, "raw");

    // The leaf data (its row hash no longer matches).
    let mut b = good.clone();
    b["entries"][0]["leaf_data"] =
        flip(b["entries"][0]["leaf_data"].as_str().expect("leaf"), 30).into();
    rejected(&b, &key, "row hash");

    // A proof hash.
    let mut b = good.clone();
    b["entries"][0]["inclusion_proof"][1] = flip(
        b["entries"][0]["inclusion_proof"][1]
            .as_str()
            .expect("proof"),
        0,
    )
    .into();
    rejected(&b, &key, "inclusion proof");

    // The signature: a byte of the Ed25519 signature (after the 4-byte key id).
    let note = good["checkpoint"].as_str().expect("note");
    let (body, sig_line) = note.trim_end().rsplit_once(' ').expect("signature line");
    let mut b = good.clone();
    b["checkpoint"] = format!("{body} {}\n", flip(sig_line, 10)).into();
    rejected(&b, &key, "signature");

    // The tree size in the checkpoint (the signature covers it).
    let mut b = good.clone();
    b["checkpoint"] = note.replacen("\n7\n", "\n8\n", 1).into();
    assert_ne!(b["checkpoint"], good["checkpoint"]);
    rejected(&b, &key, "signature");

    // Another key: no signature by it.
    let (_, other) = bundle();
    rejected(&good, &other, "signature");
}
