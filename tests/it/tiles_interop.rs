//! The log's C2SP tlog-tiles checked against code the project did not write. Go's
//! golang.org/x/mod/sumdb/tlog and sumdb/note (tests/go/tlogcheck, run as a process) open the
//! checkpoint with the log's key, rebuild every tile from the entry bundles and compare them
//! byte for byte, and prove inclusion and consistency through the tiles, over HTTP and from a
//! directory, for trees at the tiles' edges (1, 255, 256, 257, 65536 and 70000 leaves); a
//! reference log written from the spec text (tests/tiles_reference.py) holds the same files,
//! byte for byte, checkpoint included; a log grown in steps stays consistent and never changes
//! a full tile; a tampered tile, bundle or checkpoint is refused; and the daemon's own log
//! (`run --tiles-dir`, served at `GET /log/...`) passes the same check across two checkpoints
//! ([`daemon`]).

#[path = "tiles_interop/daemon.rs"]
mod daemon;
#[path = "tiles_interop/go.rs"]
pub(crate) mod go;
#[path = "tiles_interop/logs.rs"]
pub(crate) mod logs;
#[path = "tiles_interop/serve.rs"]
mod serve;

use std::collections::BTreeMap;
use std::path::Path;

use event_audit::test_support::log::tiles::Tiles;
use event_audit::tlog::cosign::WitnessSigner;
use event_audit::tlog::note::{self, PrivateKey};

/// Tree sizes at the edges of the tiles: one leaf, one short of a full tile, a full tile, one
/// past it, a full level-1 tile, and the spec's own example (273 full level-0 tiles, partial
/// tiles of widths 112, 17 and 1).
const SIZES: &[u64] = &[1, 255, 256, 257, 65536, 70000];

/// Asserts that a check of a log of `size` leaves compared every tile and bundle the spec says
/// the tree has, and proved something.
fn assert_checked(s: &serde_json::Value, size: u64) {
    let (tiles, bundles) = logs::tile_counts(size);
    assert_eq!(s["origin"], logs::ORIGIN, "{s}");
    assert_eq!(s["size"], size, "{s}");
    assert_eq!(s["root_ok"], true, "{s}");
    assert_eq!(s["tiles_compared"], tiles, "{s}");
    assert_eq!(s["bundles_read"], bundles, "{s}");
    assert!(s["inclusion_proofs"].as_u64() >= Some(1), "{s}");
    if size > 1 {
        assert!(s["consistency_proofs"].as_u64() >= Some(1), "{s}");
    }
}

/// Adds a witness's cosignature line and the log's own ML-DSA-44 line (its second key, of the
/// log's name) to the checkpoint in `dir`: signatures by keys Go's checker does not know, which
/// it must skip.
async fn cosign(dir: &Tiles) {
    let signed = dir.checkpoint().await.expect("read").expect("a checkpoint");
    let text = &signed[..signed.find("\n\n").expect("a signed note") + 1];
    let witness = WitnessSigner::from_seed("witness.example/w1", &[9; 32]).expect("key");
    let line = witness.cosign(text, 1_700_000_000);
    let origin = text.lines().next().expect("an origin line");
    let second = event_audit::tlog::mldsa::MlDsaSigner::from_seed(origin, &[9; 32]).expect("key");
    let pq = second.cosign(text, 0).expect("an ML-DSA-44 line");
    dir.write_checkpoint(&format!("{signed}{line}{pq}"))
        .await
        .expect("write the cosigned checkpoint");
}

fn path_of(dir: &Path) -> String {
    dir.to_str().expect("utf-8 path").to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn go_checks_the_projects_tiles_over_http_and_from_a_directory() {
    let tmp = tempfile::tempdir().expect("tmp");
    let key = logs::write_pub(tmp.path());
    let all = logs::entries(70_000);
    for &size in SIZES {
        let dir = logs::project(
            &tmp.path().join(format!("s{size}/log")),
            &all[..size as usize],
        )
        .await;
        if size == 70_000 {
            cosign(&dir).await;
        }
    }
    let served = serve::serve(tmp.path()).await;
    for &size in SIZES {
        let url = format!("{}/s{size}/log", served.url);
        let dir = path_of(&tmp.path().join(format!("s{size}/log")));
        for tiles in [url, dir] {
            let s = go::check(&tiles, &key, None).await.summary();
            assert_checked(&s, size);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_projects_log_is_the_reference_logs_byte_for_byte() {
    let tmp = tempfile::tempdir().expect("tmp");
    let key = logs::write_pub(tmp.path());
    let all = logs::entries(70_000);
    for &size in SIZES {
        let entries = &all[..size as usize];
        let (ours, theirs) = (
            tmp.path().join(format!("ours{size}")),
            tmp.path().join(format!("ref{size}")),
        );
        logs::project(&ours, entries).await;
        logs::reference(&theirs, entries);
        let (ours_files, ref_files) = (logs::files(&ours), logs::files(&theirs));
        let only_ours: Vec<_> = ours_files
            .keys()
            .filter(|p| !ref_files.contains_key(*p))
            .collect();
        let only_ref: Vec<_> = ref_files
            .keys()
            .filter(|p| !ours_files.contains_key(*p))
            .collect();
        assert!(
            only_ours.is_empty() && only_ref.is_empty(),
            "size {size}: files only in the project's log {only_ours:?}, only in the reference {only_ref:?}"
        );
        for (path, bytes) in &ref_files {
            assert!(
                ours_files[path] == *bytes,
                "size {size}: {path} differs from the reference's ({} and {} bytes)",
                ours_files[path].len(),
                bytes.len()
            );
        }
        assert!(ref_files.contains_key("checkpoint"));
        // The reference passes Go's check too: three implementations agree.
        assert_checked(
            &go::check(&path_of(&theirs), &key, None).await.summary(),
            size,
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_log_grown_in_steps_stays_consistent_and_keeps_its_full_tiles() {
    let tmp = tempfile::tempdir().expect("tmp");
    let key = logs::write_pub(tmp.path());
    let all = logs::entries(70_000);
    let root = tmp.path().join("log");
    let dir = Tiles::dir(&root);
    let old = tmp.path().join("old.checkpoint");
    let mut from = 0;
    for to in [1, 256, 300, 65_536, 65_600, 70_000] {
        let before = logs::files(&root);
        let published = logs::extend(&dir, from, &all[from as usize..to as usize]).await;
        let after = logs::files(&root);
        for (path, bytes) in before.iter().filter(|(p, _)| !logs::is_partial(p)) {
            if path != "checkpoint" {
                assert!(
                    after.get(path) == Some(bytes),
                    "{path} changed at size {to}"
                );
            }
        }
        let checked = go::check(&path_of(&root), &key, (from > 0).then_some(&*old)).await;
        let s = checked.summary();
        assert_checked(&s, to);
        if from > 0 {
            assert_eq!(s["old_size"], from, "{s}");
            assert_eq!(s["old_consistent"], true, "{s}");
        }
        std::fs::write(&old, published).expect("keep the checkpoint");
        from = to;
    }
    // What the reference writes at once, the grown log holds; besides it only partial tiles of
    // earlier sizes, which the spec lets a log keep.
    let reference = tmp.path().join("ref");
    logs::reference(&reference, &all);
    let (grown, reference) = (logs::files(&root), logs::files(&reference));
    for (path, bytes) in &reference {
        assert!(
            grown.get(path) == Some(bytes),
            "{path} differs from the reference's"
        );
    }
    let full = |files: &BTreeMap<String, Vec<u8>>| -> Vec<String> {
        files
            .keys()
            .filter(|p| !logs::is_partial(p))
            .cloned()
            .collect()
    };
    assert_eq!(full(&grown), full(&reference));
}

/// Flips one byte of a file of the log in `dir`, returning the original bytes.
fn flip(dir: &Path, path: &str, at: usize) -> Vec<u8> {
    let file = dir.join(path);
    let original = std::fs::read(&file).unwrap_or_else(|e| panic!("read {path}: {e}"));
    let mut bytes = original.clone();
    bytes[at] ^= 0x01;
    std::fs::write(&file, bytes).expect("tamper");
    original
}

#[tokio::test(flavor = "multi_thread")]
async fn go_refuses_a_tampered_log() {
    let tmp = tempfile::tempdir().expect("tmp");
    let key = logs::write_pub(tmp.path());
    let root = tmp.path().join("log");
    let dir = logs::project(&root, &logs::entries(70_000)).await;
    let tiles = path_of(&root);
    go::check(&tiles, &key, None).await.summary();

    // A hash tile off the proofs' paths (level 0); one that several of the tree's subtrees
    // share (level 1: Go's TileHashReader does not authenticate it against the root, so only
    // the full rebuild names it); partial tiles; a full and a partial bundle.
    for (path, at, named) in [
        ("tile/0/100", 100, "tile/0/100"),
        ("tile/1/000", 5000, "tile/1/000"),
        ("tile/0/273.p/112", 40, "tile/0/273.p/112"),
        ("tile/2/000.p/1", 3, "tile/2/000.p/1"),
        ("tile/entries/005", 10, "the checkpoint's root"),
        ("tile/entries/273.p/112", 0, "tile/entries/273.p/112"),
    ] {
        let original = flip(&root, path, at);
        go::check(&tiles, &key, None).await.assert_refused(named);
        std::fs::write(root.join(path), original).expect("restore");
    }

    // A missing partial tile; a checkpoint altered after signing; one signed by another key.
    let partial = root.join("tile/1/001.p/17");
    let kept = std::fs::read(&partial).expect("read");
    std::fs::remove_file(&partial).expect("remove");
    go::check(&tiles, &key, None)
        .await
        .assert_refused("tile/1/001.p/17");
    std::fs::write(&partial, kept).expect("restore");
    let checkpoint = dir.checkpoint().await.expect("read").expect("a checkpoint");
    let altered = checkpoint.replacen("\n70000\n", "\n69999\n", 1);
    dir.write_checkpoint(&altered).await.expect("write");
    go::check(&tiles, &key, None)
        .await
        .assert_refused("log's key");
    let stranger = PrivateKey::from_seed("tiles.example/other", &[8; 32]).expect("key");
    let other = stranger.sign(&note::claimed(&checkpoint).expect("a checkpoint"));
    dir.write_checkpoint(&other).await.expect("write");
    go::check(&tiles, &key, None)
        .await
        .assert_refused("log's key");

    // Restored, the log passes again: the refusals were the tampering's.
    dir.write_checkpoint(&checkpoint).await.expect("write");
    assert_checked(&go::check(&tiles, &key, None).await.summary(), 70_000);
}
