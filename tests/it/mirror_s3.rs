//! An auditor's mirror in an S3 bucket: `mirror --dir s3://bucket/prefix` pulls a log (served
//! over HTTP) into the bucket, under its origin's folder as in a directory, byte for byte the
//! log's files, then only the new tiles, then nothing; and `verify --mirror s3://...` checks
//! the database against a copy of the daemon's log pulled into a bucket (s3s-fs, SigV4
//! checked).

use std::path::Path;

use crate::mirror::log::{entries, key, serve, write_log};
use crate::support::cli::event_audit;
use crate::support::process::{run_until_idle, RunOpts};
use crate::support::s3::{Server, TestBucket};
use crate::support::witness::{signing_args, write_keys, Witness};
use crate::support::{TestDb, TestStream};

const ORIGIN: &str = "example.com/mirror-s3";

/// The hex SHA-256 of `origin`: its copy's folder under a mirror's prefix.
fn origin_dir(origin: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(origin.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Asserts that the bucket holds every file of the log in `logdir` under the origin's folder.
async fn holds_the_log(bucket: &TestBucket, logdir: &Path, origin: &str) {
    let files = crate::support::files::files(logdir);
    assert!(!files.is_empty());
    for (path, bytes) in files {
        let key = format!("{}/{path}", origin_dir(origin));
        let got = bucket.store.get(&key, 1 << 20).await.expect("get");
        assert_eq!(got.as_deref(), Some(&bytes[..]), "{key}");
    }
}

#[tokio::test]
async fn a_mirror_pulls_into_a_bucket_then_only_what_is_new() {
    let t = tempfile::tempdir().expect("tempdir");
    let logdir = t.path().join("log");
    let (k, public) = key(t.path(), ORIGIN, 1);
    let all = entries("s3", 700);
    write_log(&logdir, &k, &all[..300]);
    let (url, served) = serve(&logdir).await;
    let bucket = TestBucket::new(Server::S3sFs, false).await;
    let config = bucket.config_file(t.path());
    let store = bucket.url();
    let args = [
        "mirror",
        "--log-url",
        &url,
        "--public-key",
        public.to_str().expect("utf-8"),
        "--dir",
        &store,
        "--config",
        config.to_str().expect("utf-8"),
    ];
    let out = event_audit(&args, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains(&format!(
            "{ORIGIN}: mirrored at tree size 300 (300 leaves added)"
        )),
        "{out:?}"
    );
    holds_the_log(&bucket, &logdir, ORIGIN).await;
    served.take();

    write_log(&logdir, &k, &all);
    let out = event_audit(&args, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains("at tree size 700 (400 leaves added)"),
        "{out:?}"
    );
    holds_the_log(&bucket, &logdir, ORIGIN).await;
    served.take();
    let out = event_audit(&args, &[]).await;
    assert!(
        out.stdout.contains("up to date at tree size 700"),
        "{out:?}"
    );
    // An up-to-date pull reads the checkpoint and how many index deltas the log has.
    assert_eq!(
        served.take(),
        vec!["checkpoint".to_owned(), "index/latest".to_owned()]
    );
    bucket.name_every_key().await;
    bucket.remove().await.expect("remove the bucket");
}

#[tokio::test]
async fn verify_checks_the_database_against_a_mirror_in_a_bucket() {
    let db = TestDb::create().await;
    let ts = TestStream::create("vmirrors3").await;
    let tmp = tempfile::tempdir().expect("tmp");
    let origin = format!("event-audit/{}", db.name);
    let (key, public, _) = write_keys(tmp.path(), &origin, 4);
    let cps = format!("{}_CP", ts.name);
    let _w = Witness(cps.clone());
    let tiles = tmp.path().join("tiles");
    ts.publish_load(900, 71).await;
    let mut extra = signing_args(&key, &cps);
    extra.extend(["--tiles-dir".to_owned(), tiles.display().to_string()]);
    let opts = RunOpts {
        extra,
        ..RunOpts::default()
    };
    run_until_idle(&db.url, &ts, &opts).await;
    let bucket = TestBucket::new(Server::S3sFs, false).await;
    let config = bucket.config_file(tmp.path());
    let (store, config) = (bucket.url(), config.to_str().expect("utf-8").to_owned());
    let public = public.to_str().expect("utf-8");
    let tiles = tiles.to_str().expect("utf-8");
    let args = [
        "mirror",
        "--log-url",
        tiles,
        "--public-key",
        public,
        "--dir",
        &store,
        "--config",
        &config,
    ];
    let out = event_audit(&args, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");

    let nats = crate::support::nats_url();
    let verify = |mirror: String| {
        let (db, config, public, nats, cps) = (
            db.url.clone(),
            config.clone(),
            public.to_owned(),
            nats.clone(),
            cps.clone(),
        );
        async move {
            let args = [
                "verify",
                "--database-url",
                &db,
                "--skip-completeness",
                "--mirror",
                &mirror,
                "--config",
                &config,
                "--nats-url",
                &nats,
                "--public-key",
                &public,
                "--checkpoint-stream",
                &cps,
                "--no-state",
            ];
            event_audit(&args, &[]).await
        }
    };
    // The mirror's prefix, the log's copy found under its origin's folder by the key.
    let v = verify(store.clone()).await;
    assert_eq!(v.code, Some(0), "{v:?}");
    let m = &v.json()["mirror"];
    assert_eq!(m["mirror_size"], 900, "{m}");
    assert_eq!(m["compared"], 900, "{m}");
    assert_eq!(m["signature_checked"], true, "{m}");
    assert!(
        m["dir"].as_str().is_some_and(|d| d.starts_with("s3://")),
        "{m}"
    );
    // An empty prefix holds no copy: named, exit 2.
    let v = verify(format!("{store}nothing-here")).await;
    assert_eq!(v.code, Some(2), "{v:?}");
    assert!(v.stderr.contains("no checkpoint"), "{v:?}");
    bucket.name_every_key().await;
    bucket.remove().await.expect("remove the bucket");
}
