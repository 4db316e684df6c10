//! An ML-DSA-44 witness end to end, against real PostgreSQL, NATS and `witness serve` as a
//! process: `keygen --witness --algorithm ml-dsa-44` writes a type 0x06 key, the witness cosigns
//! the daemon's checkpoints with `subtree/v1` cosignatures, and `verify --witness-policy` with
//! a policy naming that witness counts them (and fails the quorum with a policy naming another
//! ML-DSA-44 witness). The log's second key (`keygen --algorithm ml-dsa-44`, given as
//! `--ml-dsa-signing-key-file`) signs each checkpoint beside its Ed25519 key, and the log's
//! Ed25519-only readers (`verify`, the note opener) still open every checkpoint.

use std::path::Path;

use crate::support::app::run_until_idle;
use crate::support::cli::event_audit;
use crate::support::witness::{
    signing, verify_witness, write_keys, write_policy, Witness, WitnessProcess,
};
use crate::support::{TestDb, TestStream};
use event_audit::config::Dur;
use event_audit::test_support::bus::Bus;
use event_audit::test_support::witnessed::signer::publish;
use event_audit::tlog::cosign::WitnessKey;
use event_audit::tlog::mldsa::{MlDsaSigner, ALG_MLDSA44, SIGNATURE_LEN};
use event_audit::tlog::note::{self, Note};
use event_audit::tlog::policy::WitnessPolicy;

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).expect("read").trim().to_owned()
}

#[tokio::test]
async fn an_ml_dsa_44_witness_cosigns_and_verify_counts_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    let db = TestDb::create().await;
    let ts = TestStream::create("mldsa").await;
    let cps = format!("{}_CP", ts.name);
    let _w = Witness(cps.clone());
    let origin = format!("example.com/logs/{}", db.name);
    let (key, public, log) = write_keys(tmp.path(), &origin, 71);

    // keygen writes an ML-DSA-44 witness key: the private seed 0600, the type 0x06 vkey.
    let prefix = tmp.path().join("pq");
    let made = event_audit(
        &[
            "keygen",
            "--witness",
            "--name",
            "witness.example/pq",
            "--algorithm",
            "ml-dsa-44",
            "--out",
            prefix.to_str().expect("utf-8"),
        ],
        &[],
    )
    .await;
    assert_eq!(made.code, Some(0), "{made:?}");
    let (wkey, wpub) = (tmp.path().join("pq.key"), tmp.path().join("pq.pub"));
    let vkey = read(&wpub);
    assert_eq!(made.stdout.trim(), vkey);
    let parsed = WitnessKey::parse(&vkey).expect("an ML-DSA-44 vkey");
    assert_eq!(parsed.algorithm(), ALG_MLDSA44);
    let signer = MlDsaSigner::parse(&read(&wkey)).expect("an ML-DSA-44 private key");
    assert_eq!(WitnessKey::from(signer.public()), parsed);
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&wkey).expect("key").permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);

    // The daemon submits each checkpoint to the ML-DSA-44 witness the policy names.
    let witness = WitnessProcess::start(
        &wkey,
        std::slice::from_ref(&public),
        &tmp.path().join("witness"),
    )
    .await;
    let policy = write_policy(
        &tmp.path().join("policy"),
        &[(vkey.clone(), witness.url.clone())],
        1,
    );
    // The log's second key: ML-DSA-44, of the log's name.
    let second = tmp.path().join("log-pq");
    let made = event_audit(
        &[
            "keygen",
            "--algorithm",
            "ml-dsa-44",
            "--origin",
            &origin,
            "--out",
            second.to_str().expect("utf-8"),
        ],
        &[],
    )
    .await;
    assert_eq!(made.code, Some(0), "{made:?}");
    let log_pq = WitnessKey::parse(made.stdout.trim()).expect("the log's ML-DSA-44 vkey");
    assert_eq!(log_pq.name, origin);
    let mut s = signing(&db, &ts, &key, &cps, tmp.path());
    s.witness.ml_dsa_signing_key_file = Some(tmp.path().join("log-pq.key"));
    s.witness.witness_policy = Some(policy.clone());
    s.witness.signer_state = Some(tmp.path().join("signer.state"));
    s.witness.checkpoint_interval = Dur::secs(3600);
    ts.publish_load(25, 72).await;
    run_until_idle(s.clone()).await;

    // The published checkpoint carries a subtree/v1 line of 4 + 8 + 2420 bytes that the
    // policy counts, and the log's Ed25519 key still opens it.
    let bus = Bus::connect(&s.nats).await.expect("nats");
    let found = publish::read_stream(&bus, &cps, std::time::Duration::from_secs(10))
        .await
        .expect("read");
    let last = found.last().expect("a checkpoint");
    let n = Note::parse(&last.note).expect("note");
    let line = n
        .sigs
        .iter()
        .find(|l| l.name == "witness.example/pq")
        .expect("the witness's line");
    assert_eq!(line.blob.len(), 4 + 8 + SIGNATURE_LEN);
    assert!(parsed
        .cosigned(&n)
        .expect("verifies")
        .is_some_and(|t| t > 0));
    let p = WitnessPolicy::parse(&std::fs::read_to_string(&policy).expect("policy")).expect("p");
    p.check(&last.note)
        .expect("the quorum counts the ML-DSA-44 cosignature");
    assert_eq!(
        note::open(&last.note, &log.public()).expect("open").size,
        25
    );

    // The auditor's verify counts it; a policy naming another ML-DSA-44 witness fails.
    let pf = policy.to_str().expect("utf-8");
    let ok = verify_witness(
        &db.url,
        &public,
        &cps,
        &["--witness-policy", pf, "--no-state"],
    )
    .await;
    assert_eq!(ok.code, Some(0), "{ok:?}");
    let stranger = MlDsaSigner::from_seed("witness.example/other", &[73; 32]).expect("key");
    let other = write_policy(
        &tmp.path().join("other-policy"),
        &[(stranger.public().encode(), witness.url.clone())],
        1,
    );
    let of = other.to_str().expect("utf-8");
    let refused = verify_witness(
        &db.url,
        &public,
        &cps,
        &["--witness-policy", of, "--no-state"],
    )
    .await;
    assert_ne!(refused.code, Some(0), "{refused:?}");
    assert!(
        refused
            .stdout
            .contains("do not meet the witness policy's quorum"),
        "{refused:?}"
    );
}
