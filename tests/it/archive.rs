//! Archive and prune against real NATS JetStream and PostgreSQL: a past month's partition is
//! written as JSON Lines with a manifest, checked by `verify --archive`, then pruned: the
//! database keeps no personal data of it, the log still verifies against its witnessed
//! checkpoints with the prune named as a recorded erasure, a pruned row is proven from the
//! archive and its bundle passes `verify-proof`, and an edited archive line is named. A bound in
//! the future is refused, and a prune reaches only the rows recorded before it: a row of its
//! month recorded after it and then emptied is a break. A manifest naming a file outside the
//! folder (an absolute path, `../`, a symlink out) is refused by `prove --archive`, the file
//! never opened. A prune and a reader of `audit.events` never deadlock.

use std::path::Path;

use crate::support::app::run_until_idle;
use crate::support::bundle::expect_text;
use crate::support::cli::{event_audit, verify, Run};
use crate::support::db::{as_superuser, EMPTY_ROW};
use crate::support::personal::{month_before_last, pg_dump, write_old_rows};
use crate::support::witness::{signing, verify_witness, write_keys, Witness};
use crate::support::{TestDb, TestStream};
use chrono::{Datelike, TimeZone, Utc};

const EMAIL: &str = "carol.archive@example.com";
/// The stream of the past month's rows (written straight into the log, not the bus).
const OLD: &str = "ARCHOLD";

/// The first instant of `month` months from now (UTC), RFC 3339.
fn month_start(months: i32) -> String {
    let now = Utc::now();
    let m0 = now.year() * 12 + now.month0() as i32 + months;
    Utc.with_ymd_and_hms(m0.div_euclid(12), m0.rem_euclid(12) as u32 + 1, 1, 0, 0, 0)
        .single()
        .expect("a month")
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

async fn archive(url: &str, before: &str, dir: &Path, extra: &[&str]) -> Run {
    let d = dir.to_str().expect("utf-8");
    let mut args = vec![
        "archive",
        "--database-url",
        url,
        "--before",
        before,
        "--out",
        d,
    ];
    args.extend_from_slice(extra);
    event_audit(&args, &[]).await
}

#[tokio::test]
async fn a_partition_is_archived_pruned_and_still_proven() {
    let db = TestDb::create().await;
    let ts = TestStream::create("archive").await;
    let cps = format!("{}_CP", ts.name);
    let _w = Witness(cps.clone());
    let tmp = tempfile::tempdir().expect("tmp");
    let origin = format!("event-audit/{}", db.name);
    let (private, public, key) = write_keys(tmp.path(), &origin, 11);
    let cpdir = tmp.path().join("checkpoints");
    let out = tmp.path().join("archive");
    // A past month's rows, and this month's through the bus.
    let t0 = month_before_last();
    write_old_rows(&db, OLD, 1, 21, EMAIL, t0).await;
    let seq = 1;
    ts.publish_load(20, 5).await;
    let mut run = signing(&db, &ts, &private, &cps, &cpdir);
    run.witness.tiles_dir = Some(cpdir.with_file_name("tiles"));
    run_until_idle(run).await;
    let o = out.to_str().expect("utf-8");

    // A bound in the future is refused: nothing written.
    let future = archive(&db.url, &month_start(1), &out, &[]).await;
    assert_eq!(future.code, Some(2), "{future:?}");
    assert!(
        future.stderr.contains("lies in the future") && future.stderr.lines().count() == 1,
        "{future:?}"
    );
    assert!(!out.exists(), "a refused archive leaves nothing");
    let before = month_start(0);

    // Nothing ends by then: exit 2, and nothing left behind (no directory, no manifest).
    let empty = tmp.path().join("empty").join("archive");
    let none = archive(&db.url, "2000-01-01T00:00:00Z", &empty, &[]).await;
    assert_eq!(none.code, Some(2), "{none:?}");
    assert!(none.stderr.contains("nothing archived"), "{none:?}");
    assert!(!tmp.path().join("empty").exists(), "{none:?}");

    // Written, not pruned: the archive holds the payloads, and checks against the log.
    let a = archive(&db.url, &before, &out, &[]).await;
    assert_eq!(a.code, Some(0), "{a:?}");
    assert!(a.stdout.contains("archived partition events_"), "{a:?}");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).expect("manifest"))
            .expect("json");
    let entry = &manifest["partitions"][0];
    assert_eq!(entry["rows"], 21, "{manifest}");
    let file = out.join(entry["file"].as_str().expect("file"));
    let text = std::fs::read_to_string(&file).expect("archive file");
    assert!(text.contains(EMAIL), "the archive holds the payload");
    assert_eq!(text.lines().count(), 21);
    let v = verify_witness(
        &db.url,
        &public,
        &cps,
        &["--archive", out.to_str().expect("utf-8")],
    )
    .await;
    assert_eq!(v.code, Some(0), "{v:?}");
    assert!(
        v.stderr.contains("21 rows, every row makes its row hash"),
        "{v:?}"
    );

    // Pruned: no trace in the database; the log verifies and names the prune.
    let p = archive(
        &db.url,
        &before,
        &out,
        &["--prune", "--reason", "retention test"],
    )
    .await;
    assert_eq!(p.code, Some(0), "{p:?}");
    assert!(p.stdout.contains("pruned partition events_"), "{p:?}");
    assert!(
        !pg_dump(&db).contains(EMAIL),
        "the database still holds the address"
    );
    let w = verify_witness(
        &db.url,
        &public,
        &cps,
        &["--archive", out.to_str().expect("utf-8")],
    )
    .await;
    assert_eq!(w.code, Some(0), "{w:?}");
    let report = w.json();
    assert_eq!(
        report["erasures"]["records"][0]["reason"], "retention test",
        "{report}"
    );
    assert_eq!(report["archive"]["rows_pruned"], 21, "{report}");
    assert!(
        report["erasures"]["records"][0]["selector"]
            .as_str()
            .is_some_and(|s| s.starts_with("partition events_")),
        "{report}"
    );
    // Against the log's tiles (a mirror's copy would do): every archived row at its leaf.
    let tiles = cpdir.with_file_name("tiles");
    let t = tiles.to_str().expect("utf-8");
    let m = verify_witness(&db.url, &public, &cps, &["--archive", o, "--mirror", t]).await;
    assert_eq!(m.code, Some(0), "{m:?}");
    assert_eq!(m.json()["archive"]["rows_in_mirror"], 21, "{m:?}");
    assert!(
        m.stderr
            .contains("21 at their leaf index in the mirror's tiles"),
        "{m:?}"
    );
    // Nothing left to archive: exit 2, nothing changed (the manifest not even rewritten).
    let kept = std::fs::read(out.join("manifest.json")).expect("manifest");
    let again = archive(&db.url, &before, &out, &["--prune", "--reason", "again"]).await;
    assert_eq!(again.code, Some(2), "{again:?}");
    assert_eq!(
        std::fs::read(out.join("manifest.json")).expect("manifest"),
        kept
    );

    // A pruned row, proven from the archive: its payload shown, its bundle accepted.
    let (pk, cd, s) = (
        public.to_str().expect("utf-8"),
        cpdir.to_str().expect("utf-8"),
        seq.to_string(),
    );
    let base = [
        "prove",
        "--database-url",
        &db.url,
        "--stream",
        OLD,
        "--seq",
        &s,
        "--public-key",
        pk,
        "--checkpoint-dir",
        cd,
    ];
    let without = event_audit(&base, &[]).await;
    assert_eq!(without.code, Some(0), "{without:?}");
    assert!(!without.stdout.contains(EMAIL), "{without:?}");
    let mut with = base.to_vec();
    with.extend(["--archive", o]);
    let proven = event_audit(&with, &[]).await;
    assert_eq!(proven.code, Some(0), "{proven:?}");
    assert!(proven.stdout.contains(EMAIL), "{proven:?}");
    let k = key.public().encode();
    expect_text(
        &proven.stdout,
        &k,
        &["--origin", &origin],
        &[],
        0,
        "OK: 1 entry",
    );

    // An edited payload column is named, and not proven from.
    let edited = text.replacen(EMAIL, "mallory@example.com", 1);
    std::fs::write(&file, &edited).expect("edit the archive");
    let bad = verify_witness(&db.url, &public, &cps, &["--archive", o]).await;
    assert_eq!(bad.code, Some(1), "{bad:?}");
    assert!(bad.stderr.contains("problem(s)"), "{bad:?}");
    assert!(
        !bad.stderr.contains("mallory"),
        "a value in a message: {bad:?}"
    );
    let shown = event_audit(&with, &[]).await;
    assert!(
        shown.code != Some(0) && shown.stderr.contains("archived copy"),
        "{shown:?}"
    );
    assert!(!shown.stderr.contains("mallory"), "{shown:?}");
    // An edited raw message no longer makes the row hash: not proven from.
    let hex = |t: &str| t.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    let forged = text.replacen(&hex("carol"), &hex("carla"), 1);
    assert_ne!(forged, text, "the raw message is in the line as hex");
    std::fs::write(&file, forged).expect("edit the archive");
    let refused = event_audit(&with, &[]).await;
    assert_ne!(refused.code, Some(0), "{refused:?}");
    assert!(refused.stderr.contains("archived copy"), "{refused:?}");
    let bad = verify_witness(&db.url, &public, &cps, &["--archive", o]).await;
    assert_eq!(bad.code, Some(1), "{bad:?}");

    // The prune reaches only the rows recorded before it: a row of its month recorded after it
    // (late from the bus), then emptied by a superuser, is a break naming the prune.
    write_old_rows(&db, OLD, 22, 1, EMAIL, t0).await;
    let sql = format!("{EMPTY_ROW} stream = '{OLD}' AND stream_seq = 22");
    assert_eq!(as_superuser(&db.pool, &sql).await, 1);
    let late = verify(&db.url).await;
    assert_eq!(late.code, Some(1), "{late:?}");
    let all = late.report["breaks"].to_string();
    assert!(
        all.contains(&format!("row stream={OLD} stream_seq=22"))
            && all.contains("personal data removed after erasure 1 was recorded"),
        "{all}"
    );

    // The operators choose the archive's paths: none leads `prove --archive` out of the folder
    // (a watched copy of the archive file outside it is never opened).
    let outside = tmp.path().join("outside.jsonl");
    let sentinel = crate::support::bounded::Sentinel::new(&outside, text.as_bytes());
    std::os::unix::fs::symlink(&outside, out.join("link.jsonl")).expect("symlink");
    let current: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).expect("manifest"))
            .expect("json");
    let abs = outside.to_str().expect("utf-8");
    for (file, says) in [
        (abs, "not a file name inside"),
        ("../outside.jsonl", "not a file name inside"),
        ("link.jsonl", "leads outside"),
    ] {
        let mut m = current.clone();
        m["partitions"][0]["file"] = file.into();
        std::fs::write(out.join("manifest.json"), m.to_string()).expect("write manifest");
        let r = event_audit(&with, &[]).await;
        assert_eq!(r.code, Some(2), "{file}: {r:?}");
        let line = r.stderr.trim_end();
        assert!(
            line.starts_with("event-audit: ") && !line.contains('\n') && line.contains(says),
            "{file}: one line saying {says:?}: {r:?}"
        );
        assert!(!sentinel.touched(), "{file}: the file outside was opened");
    }
}

/// A prune never locks `audit.events` itself: a reader that holds it (as every query through
/// the parent does, before it reaches the partitions) and then waits for the held partition
/// waits for the prune to commit, and neither is cancelled as a deadlock.
#[tokio::test]
async fn a_prune_and_a_reader_of_the_log_never_deadlock() {
    let db = TestDb::create().await;
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("archive");
    write_old_rows(&db, OLD, 1, 21, EMAIL, month_before_last()).await;
    let before = month_start(0);
    let a = archive(&db.url, &before, &out, &[]).await;
    assert_eq!(a.code, Some(0), "{a:?}");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).expect("manifest"))
            .expect("json");
    let part = manifest["partitions"][0]["partition"]
        .as_str()
        .expect("partition")
        .to_string();

    let mut reader = db.pool.begin().await.expect("begin");
    sqlx::query("LOCK TABLE ONLY audit.events IN ACCESS SHARE MODE")
        .execute(&mut *reader)
        .await
        .expect("hold audit.events as a reader does");
    let prune = {
        let (url, out, before) = (db.url.clone(), out.clone(), before.clone());
        tokio::spawn(async move {
            archive(&url, &before, &out, &["--prune", "--reason", "locks"]).await
        })
    };
    let started = std::time::Instant::now();
    loop {
        let held: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation \
             WHERE c.relname = $1 AND l.mode = 'AccessExclusiveLock' AND l.granted)",
        )
        .bind(&part)
        .fetch_one(&db.pool)
        .await
        .expect("read the locks");
        // The prune locks the partition alone, so it may also finish inside one poll's sleep
        // (it never waits for the reader's lock on audit.events): then it is over, not stuck.
        if held || prune.is_finished() {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the prune neither held {part} nor finished"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let read: Result<i64, sqlx::Error> =
        sqlx::query_scalar("SELECT count(*) FROM audit.events WHERE stream = $1")
            .bind(OLD)
            .fetch_one(&mut *reader)
            .await;
    assert!(
        read.is_ok(),
        "the reader waits for the prune, never cancelled: {read:?}"
    );
    reader.commit().await.expect("commit the reader");
    let p = prune.await.expect("join the prune");
    assert_eq!(p.code, Some(0), "{p:?}");
    assert!(p.stdout.contains("pruned partition events_"), "{p:?}");
    let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM audit.events WHERE stream = $1")
        .bind(OLD)
        .fetch_one(&db.pool)
        .await
        .expect("count the kept rows");
    assert_eq!(kept, 21, "every row kept, emptied");
}
