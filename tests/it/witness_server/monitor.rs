//! The witness's monitoring API (C2SP tlog-witness, "Monitor Retrieval Mechanism") through a real
//! `witness serve`: `GET /<hex SHA-256 of the origin>/checkpoint` is 404 before the witness
//! cosigned anything for the log and for an origin it does not know; after a cosignature it is
//! the checkpoint with the log's signature and the witness's cosignature (a signature line by
//! another key dropped), cosignature checked by the spec-written verifier; kept across a restart.

use sha2::{Digest, Sha256};

use super::{add, body, sign, spec_check, tree};
use crate::support::witness::{write_keys, write_witness_key, WitnessProcess};
use event_audit::tlog::note::{open, PrivateKey};

fn hex_sha256(s: &str) -> String {
    Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[tokio::test]
async fn the_witness_serves_the_latest_cosigned_checkpoint_to_monitors() {
    let tmp = tempfile::tempdir().expect("tmp");
    let origin = "log.example/monitored";
    let (_, log_pub, log) = write_keys(tmp.path(), origin, 1);
    let (wkey, wpub, _) = write_witness_key(tmp.path(), "witness.example/m1", 2);
    let mut w = WitnessProcess::start(
        &wkey,
        std::slice::from_ref(&log_pub),
        &tmp.path().join("state"),
    )
    .await;
    let client = reqwest::Client::new();
    let get = |path: String| {
        let client = client.clone();
        async move {
            let r = client.get(path).send().await.expect("request");
            (r.status().as_u16(), r.text().await.expect("body"))
        }
    };
    let url = |w: &WitnessProcess, h: &str| format!("{}/{h}/checkpoint", w.url);
    let h = hex_sha256(origin);
    assert_eq!(get(url(&w, &h)).await.0, 404, "nothing cosigned yet");
    assert_eq!(get(url(&w, &hex_sha256("log.example/other"))).await.0, 404);
    assert_eq!(
        get(url(&w, &h.to_uppercase())).await.0,
        404,
        "lowercase hex only"
    );

    let t = tree(9);
    let n5 = sign(&log, origin, &t, 5);
    // A signature line by a key the witness does not know rides along; it is not served.
    let other = PrivateKey::from_seed("someone.example", &[7; 32]).expect("key");
    let foreign = other.sign(&event_audit::tlog::note::Checkpoint {
        origin: origin.into(),
        size: 5,
        root: t.root(5),
    });
    let foreign_line = foreign.lines().last().expect("a line").to_owned();
    let submitted = format!("{n5}{foreign_line}\n");
    let (s, _, line) = add(&client, &w.url, body(0, &[], &submitted)).await;
    assert_eq!(s, 200, "{line}");
    let (s, served) = get(url(&w, &h)).await;
    assert_eq!(s, 200, "{served}");
    assert_eq!(served, format!("{n5}{line}"));
    assert!(!served.contains(&foreign_line));
    let log_key = event_audit::tlog::note::PublicKey::parse(
        std::fs::read_to_string(&log_pub).expect("pub").trim(),
    )
    .expect("key");
    assert_eq!(open(&served, &log_key).expect("opens").size, 5);
    let (code, out) = spec_check(tmp.path(), &wpub, &served);
    assert_eq!(code, Some(0), "{out}");

    // The next checkpoint replaces it; a restart keeps it.
    let n9 = sign(&log, origin, &t, 9);
    let (s, _, line9) = add(&client, &w.url, body(5, &t.consistency(5, 9), &n9)).await;
    assert_eq!(s, 200, "{line9}");
    w.restart().await;
    let (s, served) = get(url(&w, &h)).await;
    assert_eq!((s, served), (200, format!("{n9}{line9}")));
    w.stop().await;
}
