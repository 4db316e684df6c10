//! Archives in an S3 bucket: `archive --out s3://...` with `retention.archive_lock_for` into a
//! moto bucket created with Object Lock (each object's retention date kept, a delete of the
//! archive file refused as locked), `verify --archive s3://...`, the partition pruned only after
//! the upload, and the pruned row proven by `prove --archive s3://...`; against s3s-fs, which
//! ignores Object Lock, an archive asked to be locked is refused (nothing taken for a lock),
//! and one without the lock verifies.

use std::path::Path;
use std::time::Duration;

use chrono::{Datelike, TimeZone, Utc};

use crate::support::app::run_until_idle;
use crate::support::cli::{event_audit, Run};
use crate::support::personal::{month_before_last, write_old_rows};
use crate::support::s3::{Server, TestBucket};
use crate::support::witness::{signing, verify_witness, write_keys, Witness};
use crate::support::{TestDb, TestStream};
use event_audit::test_support::blobs::BlobError;

const EMAIL: &str = "dora.archive@example.com";
const OLD: &str = "ARCHS3";

/// The first instant of this month (UTC), RFC 3339.
fn this_month() -> String {
    let now = Utc::now();
    Utc.with_ymd_and_hms(now.year(), now.month(), 1, 0, 0, 0)
        .single()
        .expect("a month")
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

async fn archive(url: &str, out: &str, config: &Path, extra: &[&str]) -> Run {
    let before = this_month();
    let c = config.to_str().expect("utf-8");
    let mut args = vec![
        "archive",
        "--database-url",
        url,
        "--before",
        &before,
        "--out",
        out,
        "--config",
        c,
    ];
    args.extend_from_slice(extra);
    event_audit(&args, &[]).await
}

/// A log with a past month's rows (written straight into the log) and this month's, signed.
async fn log_with_a_past_month(
    tag: &str,
) -> (TestDb, TestStream, Witness, tempfile::TempDir, String) {
    let db = TestDb::create().await;
    let ts = TestStream::create(tag).await;
    let cps = format!("{}_CP", ts.name);
    let w = Witness(cps.clone());
    let tmp = tempfile::tempdir().expect("tmp");
    let origin = format!("event-audit/{}", db.name);
    let (private, _, _) = write_keys(tmp.path(), &origin, 12);
    write_old_rows(&db, OLD, 1, 21, EMAIL, month_before_last()).await;
    ts.publish_load(20, 6).await;
    let cpdir = tmp.path().join("checkpoints");
    run_until_idle(signing(&db, &ts, &private, &cps, &cpdir)).await;
    (db, ts, w, tmp, cps)
}

#[tokio::test]
async fn an_archive_in_a_locked_bucket_is_kept_verified_pruned_and_proven() {
    let (db, _ts, _w, tmp, cps) = log_with_a_past_month("archs3").await;
    let public = tmp.path().join("k12.pub");
    let bucket = TestBucket::new(Server::Moto, true).await;
    let config = bucket.config_file(tmp.path());
    let text = std::fs::read_to_string(&config).expect("settings");
    std::fs::write(&config, text + "[retention]\narchive_lock_for = \"25s\"\n").expect("write");
    let out = bucket.url();

    let a = archive(&db.url, &out, &config, &[]).await;
    assert_eq!(a.code, Some(0), "{a:?}");
    assert!(a.stdout.contains(&out), "{a:?}");
    let manifest = bucket
        .store
        .get("manifest.json", 1 << 20)
        .await
        .expect("get");
    let manifest: serde_json::Value =
        serde_json::from_slice(&manifest.expect("a manifest")).expect("json");
    let file = manifest["partitions"][0]["file"]
        .as_str()
        .expect("file")
        .to_owned();
    let head = bucket
        .store
        .head(&file)
        .await
        .expect("head")
        .expect("there");
    let until = head.lock_until.expect("locked");
    assert!(
        until > Utc::now() + chrono::Duration::seconds(10),
        "{until}"
    );
    let e = bucket
        .store
        .delete(&file)
        .await
        .expect_err("a locked file stays");
    assert!(matches!(e, BlobError::Locked { .. }), "{e}");

    let c = config.to_str().expect("utf-8");
    let v = verify_witness(&db.url, &public, &cps, &["--archive", &out, "--config", c]).await;
    assert_eq!(v.code, Some(0), "{v:?}");
    assert!(
        v.stderr.contains("21 rows, every row makes its row hash"),
        "{v:?}"
    );

    let p = archive(
        &db.url,
        &out,
        &config,
        &["--prune", "--reason", "s3 retention"],
    )
    .await;
    assert_eq!(p.code, Some(0), "{p:?}");
    assert!(p.stdout.contains("pruned partition events_"), "{p:?}");
    let checkpoints = tmp.path().join("checkpoints");
    let prove = [
        "prove",
        "--database-url",
        &db.url,
        "--stream",
        OLD,
        "--seq",
        "1",
        "--public-key",
        public.to_str().expect("utf-8"),
        "--checkpoint-dir",
        checkpoints.to_str().expect("utf-8"),
        "--archive",
        &out,
        "--config",
        c,
    ];
    let proven = event_audit(&prove, &[]).await;
    assert_eq!(proven.code, Some(0), "{proven:?}");
    assert!(proven.stdout.contains(EMAIL), "{proven:?}");

    // Removed once the locks have passed.
    bucket.key(&file);
    bucket.key("manifest.json");
    let wait = (until - Utc::now()).to_std().unwrap_or_default();
    tokio::time::sleep(wait + Duration::from_secs(1)).await;
    bucket.remove().await.expect("remove the bucket");
}

#[tokio::test]
async fn a_bucket_that_ignores_object_lock_is_refused_a_locked_archive() {
    let (db, _ts, _w, tmp, cps) = log_with_a_past_month("archs3fs").await;
    let public = tmp.path().join("k12.pub");
    let bucket = TestBucket::new(Server::S3sFs, false).await;
    let config = bucket.config_file(tmp.path());
    let locked = tmp.path().join("locked.toml");
    let text = std::fs::read_to_string(&config).expect("settings");
    std::fs::write(&locked, text + "[retention]\narchive_lock_for = \"1d\"\n").expect("write");
    let out = bucket.url();
    let a = archive(&db.url, &out, &locked, &[]).await;
    assert_ne!(a.code, Some(0), "{a:?}");
    assert!(a.stderr.contains("not supported"), "{a:?}");
    assert!(!a.stderr.contains("event-audit-test-secret"), "{a:?}");

    let a = archive(&db.url, &out, &config, &[]).await;
    assert_eq!(a.code, Some(0), "{a:?}");
    let c = config.to_str().expect("utf-8");
    let v = verify_witness(&db.url, &public, &cps, &["--archive", &out, "--config", c]).await;
    assert_eq!(v.code, Some(0), "{v:?}");
    assert!(
        v.stderr.contains("21 rows, every row makes its row hash"),
        "{v:?}"
    );
    bucket.name_every_key().await;
    bucket.remove().await.expect("remove the bucket");
}
