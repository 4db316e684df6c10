//! The auditor's binary on its own (`event-audit-proof`, built without the daemon): tiles made
//! with the log's formats and signed with a log key are checked by `tiles fsck` and copied by
//! `mirror` (exit 0), a changed tile is refused, and a file that is not a bundle is unusable
//! input to `verify-proof` (exit 2).

use std::path::Path;
use std::process::{Command, Output};

use event_audit_proof::tiles::Tiles;
use event_audit_proof::tlog::merkle::leaf_hash;
use event_audit_proof::tlog::note::{Checkpoint, PrivateKey};
use event_audit_proof::tlog::tile::build::TileBuilder;

fn proof(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_event-audit-proof"))
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run event-audit-proof")
}

/// A log of `n` entries as C2SP tlog-tiles under `dir`, its checkpoint signed by `key`.
fn write_log(dir: &Path, key: &PrivateKey, origin: &str, n: u64) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let tiles = Tiles::dir(dir);
        let mut b = TileBuilder::new();
        for i in 0..n {
            // An event-audit log's entries are row hashes: 32 bytes each.
            b.push(&leaf_hash(&i.to_be_bytes())).expect("push");
            for (id, bytes) in b.take_full() {
                tiles.write(&id, &bytes).await.expect("write a full tile");
            }
        }
        for (id, bytes) in b.partials() {
            tiles
                .write(&id, &bytes)
                .await
                .expect("write a partial tile");
        }
        let note = key.sign(&Checkpoint {
            origin: origin.into(),
            size: n,
            root: b.root(),
        });
        tiles.write_checkpoint(&note).await.expect("checkpoint");
    });
}

#[test]
fn tiles_fsck_and_mirror_check_a_log_and_refuse_a_changed_tile() {
    let t = tempfile::tempdir().expect("tempdir");
    let key = PrivateKey::from_seed("offline.example/log", &[7; 32]).expect("key");
    let public = t.path().join("log.pub");
    std::fs::write(&public, key.public().encode()).expect("write the public key");
    let log = t.path().join("log");
    write_log(&log, &key, "offline.example/log", 600);
    let (log_s, pub_s) = (
        log.to_str().expect("utf-8"),
        public.to_str().expect("utf-8"),
    );

    let fsck = proof(&["tiles", "fsck", log_s, "--public-key", pub_s]);
    assert_eq!(
        fsck.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&fsck.stdout) + String::from_utf8_lossy(&fsck.stderr)
    );

    let copy = t.path().join("copy");
    let copy_s = copy.to_str().expect("utf-8");
    let mirror = proof(&[
        "mirror",
        "--log-url",
        log_s,
        "--public-key",
        pub_s,
        "--dir",
        copy_s,
    ]);
    assert_eq!(
        mirror.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&mirror.stderr)
    );
    let of_copy = proof(&["tiles", "fsck", copy_s, "--public-key", pub_s]);
    assert_eq!(
        of_copy.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&of_copy.stderr)
    );

    // One hash of the first full level-0 tile changed: the tiles no longer make the signed root.
    let tile = log.join("tile/0/000");
    let mut bytes = std::fs::read(&tile).expect("read the tile");
    bytes[5] ^= 0x01;
    std::fs::write(&tile, bytes).expect("change the tile");
    let changed = proof(&["tiles", "fsck", log_s, "--public-key", pub_s]);
    assert_ne!(changed.status.code(), Some(0), "a changed tile passed fsck");
}

#[test]
fn verify_proof_calls_a_file_that_is_not_a_bundle_unusable() {
    let t = tempfile::tempdir().expect("tempdir");
    let key = PrivateKey::from_seed("offline.example/log", &[8; 32]).expect("key");
    let public = t.path().join("log.pub");
    std::fs::write(&public, key.public().encode()).expect("write the public key");
    let bundle = t.path().join("bundle.json");
    std::fs::write(&bundle, "this is not JSON").expect("write");
    let out = proof(&[
        "verify-proof",
        bundle.to_str().expect("utf-8"),
        "--public-key",
        public.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr) + String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("not a usable bundle"), "{said}");
}
