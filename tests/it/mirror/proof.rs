//! `verify-proof --tiles`: a bundle of real row encodings checked against a mirror's copy, the
//! log's directory and the log over HTTP, its own proof hashes unused (a bundle whose proof
//! hashes are broken is proven from the tiles); rejected when the tiles hold another tree (a
//! bundle of a fork the log showed someone else) or another leaf where the entry is; unusable
//! when the tiles are behind the bundle.

use std::path::Path;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::log::{copy_of, key, serve, write_log};
use super::{mirror, path, ORIGIN};
use crate::support::bundle::{bundle, flip, row};
use crate::support::cli::{event_audit, Run};
use crate::support::records::{now_us, records};
use event_audit::tlog::merkle::Hash;

/// `n` rows' leaf data, from stream `stream`.
fn leaves(stream: &str, n: usize) -> Vec<Vec<u8>> {
    records(stream, n, 1, now_us())
        .iter()
        .map(|r| r.canon().encode())
        .collect()
}

/// The log's entries: each row's hash.
fn row_hashes(leaves: &[Vec<u8>]) -> Vec<Hash> {
    leaves.iter().map(|d| Sha256::digest(d).into()).collect()
}

/// `verify-proof` of bundle `b` with key file `public` and `--tiles at`.
async fn verify_proof(dir: &Path, b: &Value, public: &Path, tiles: Option<&str>) -> Run {
    let file = dir.join(format!("bundle-{}.json", rand::random::<u32>()));
    std::fs::write(&file, b.to_string()).expect("write the bundle");
    let mut args = vec!["verify-proof", path(&file), "--public-key", path(public)];
    if let Some(t) = tiles {
        args.extend(["--tiles", t]);
    }
    event_audit(&args, &[]).await
}

#[tokio::test]
async fn a_bundle_is_proven_from_a_mirror_the_log_directory_and_http_without_its_proof() {
    let t = tempfile::tempdir().expect("tempdir");
    let (logdir, mdir) = (t.path().join("log"), t.path().join("mirror"));
    let (k, public) = key(t.path(), ORIGIN, 1);
    let data = leaves("MIRROR", 300);
    write_log(&logdir, &k, &row_hashes(&data));
    let out = mirror(path(&logdir), &public, &mdir, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let good = bundle(
        ORIGIN,
        &k,
        &data,
        &[(2, &row(&data[2])), (270, &row(&data[270]))],
    );
    let (url, _served) = serve(&logdir).await;
    for at in [path(&mdir), path(&logdir), url.as_str()] {
        let out = verify_proof(t.path(), &good, &public, Some(at)).await;
        assert_eq!(out.code, Some(0), "--tiles {at}: {out:?}");
        assert!(
            out.stderr.contains("OK: 2 entries proven")
                && out.stderr.contains("inclusion read from the tiles"),
            "{out:?}"
        );
    }
    let mut broken = good.clone();
    let proof = broken["entries"][0]["inclusion_proof"][0]
        .as_str()
        .expect("a proof hash")
        .to_owned();
    broken["entries"][0]["inclusion_proof"][0] = flip(&proof, 0).into();
    let out = verify_proof(t.path(), &broken, &public, None).await;
    assert_eq!(out.code, Some(1), "its own proof is broken: {out:?}");
    let out = verify_proof(t.path(), &broken, &public, Some(path(&mdir))).await;
    assert_eq!(
        out.code,
        Some(0),
        "the tiles prove it, not its proof: {out:?}"
    );
}

#[tokio::test]
async fn a_bundle_the_mirrors_tiles_contradict_is_rejected() {
    let t = tempfile::tempdir().expect("tempdir");
    let (logdir, mdir) = (t.path().join("log"), t.path().join("mirror"));
    let (k, public) = key(t.path(), ORIGIN, 1);
    let data = leaves("MIRROR", 300);
    write_log(&logdir, &k, &row_hashes(&data));
    let out = mirror(path(&logdir), &public, &mdir, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");

    // The log showed someone a fork where row 2 is another one, signed with its key.
    let mut forked = data.clone();
    forked[2] = leaves("FORKED", 3).swap_remove(2);
    let b = bundle(ORIGIN, &k, &forked, &[(2, &row(&forked[2]))]);
    assert_eq!(
        verify_proof(t.path(), &b, &public, None).await.code,
        Some(0)
    );
    let out = verify_proof(t.path(), &b, &public, Some(path(&mdir))).await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains("REJECTED") && out.stderr.contains("another root for tree size 300"),
        "{out:?}"
    );

    // The mirror's level-0 tile where row 2's leaf is (the root at 300 is read above it).
    let good = bundle(ORIGIN, &k, &data, &[(2, &row(&data[2]))]);
    let tile = copy_of(&mdir, ORIGIN).join("tile/0/000");
    let mut bytes = std::fs::read(&tile).expect("read");
    bytes[2 * 32] ^= 0x01;
    std::fs::write(&tile, bytes).expect("write");
    let out = verify_proof(t.path(), &good, &public, Some(path(&mdir))).await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains("another leaf hash at index 2"),
        "{out:?}"
    );
}

#[tokio::test]
async fn tiles_behind_the_bundle_cannot_prove_it() {
    let t = tempfile::tempdir().expect("tempdir");
    let (logdir, mdir) = (t.path().join("log"), t.path().join("mirror"));
    let (k, public) = key(t.path(), ORIGIN, 1);
    let data = leaves("MIRROR", 120);
    let hashes = row_hashes(&data);
    write_log(&logdir, &k, &hashes[..100]);
    let out = mirror(path(&logdir), &public, &mdir, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let b = bundle(ORIGIN, &k, &data, &[(110, &row(&data[110]))]);
    let out = verify_proof(t.path(), &b, &public, Some(path(&mdir))).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr.contains("UNUSABLE") && out.stderr.contains("fewer than the bundle's 120"),
        "{out:?}"
    );
}
