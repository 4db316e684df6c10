//! `verify --mirror`: the database checked against an auditor's copy of the log's tiles, with
//! no witness and no NATS reachable. Intact, then a row's hash changed, then a row deleted,
//! then the log wiped: each named by leaf index, with the rows the database still holds.

use std::path::Path;

use crate::support::cli::{event_audit, Run};
use crate::support::process::{run_until_idle, RunOpts};
use crate::support::witness::{signing_args, write_keys, Witness};
use crate::support::{TestDb, TestStream};

/// Copies a directory tree (the auditor's copy of the log's tiles).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read dir") {
        let p = e.expect("entry").path();
        let dest = to.join(p.file_name().expect("name"));
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).expect("copy");
        }
    }
}

/// `verify --mirror`, with no NATS reachable (the check against a mirror needs none), or with
/// the log's key and its checkpoint stream (`witnessed`: the key checks the mirror's checkpoint
/// too, and the witness pass runs beside it).
async fn verify_mirror(url: &str, mirror: &Path, witnessed: Option<(&Path, &str)>) -> Run {
    let nats = crate::support::nats_url();
    let mut args = vec![
        "verify",
        "--database-url",
        url,
        "--skip-completeness",
        "--mirror",
        mirror.to_str().expect("utf-8"),
    ];
    match witnessed {
        Some((p, stream)) => args.extend([
            "--nats-url",
            &nats,
            "--public-key",
            p.to_str().expect("utf-8"),
            "--checkpoint-stream",
            stream,
            "--no-state",
        ]),
        None => args.extend(["--nats-url", "nats://127.0.0.1:1"]),
    }
    event_audit(&args, &[]).await
}

/// Runs `sql` with the audit log's triggers off (as the database's owner could).
async fn as_owner(pool: &sqlx::PgPool, sql: &str) {
    let mut tx = pool.begin().await.expect("begin");
    sqlx::query("SET LOCAL session_replication_role = replica")
        .execute(&mut *tx)
        .await
        .expect("replica mode");
    sqlx::query(sql).execute(&mut *tx).await.expect(sql);
    tx.commit().await.expect("commit");
}

#[tokio::test]
async fn the_database_is_checked_against_the_auditor_s_copy() {
    let db = TestDb::create().await;
    let ts = TestStream::create("vmirror").await;
    let tmp = tempfile::tempdir().expect("tmp");
    let (key, public, _) = write_keys(tmp.path(), &format!("event-audit/{}", db.name), 4);
    let cps = format!("{}_CP", ts.name);
    let _w = Witness(cps.clone());
    let tiles = tmp.path().join("tiles");
    ts.publish_load(900, 51).await;
    let mut extra = signing_args(&key, &cps);
    extra.extend(["--tiles-dir".to_owned(), tiles.display().to_string()]);
    run_until_idle(
        &db.url,
        &ts,
        &RunOpts {
            extra,
            ..RunOpts::default()
        },
    )
    .await;
    let mirror = tmp.path().join("mirror");
    copy_dir(&tiles, &mirror);

    let v = verify_mirror(&db.url, &mirror, None).await;
    assert_eq!(v.code, Some(0), "{v:?}");
    let m = &v.json()["mirror"];
    assert_eq!(m["mirror_size"], 900);
    assert_eq!(m["compared"], 900);
    assert_eq!(m["signature_checked"], false);
    assert!(v.stderr.contains("mirror holds"), "{v:?}");

    // A row's hash changed (its content rewritten): named with the row the database has there.
    let (stream, seq): (String, i64) = sqlx::query_as(
        "SELECT stream, stream_seq FROM audit.events ORDER BY stream_seq LIMIT 1 OFFSET 100",
    )
    .fetch_one(&db.pool)
    .await
    .expect("a row");
    as_owner(
        &db.pool,
        &format!("UPDATE audit.events SET row_hash = sha256('x'::bytea) WHERE stream_seq = {seq}"),
    )
    .await;
    let v = verify_mirror(&db.url, &mirror, None).await;
    assert_eq!(v.code, Some(1), "{v:?}");
    let m = &v.json()["mirror"];
    assert_eq!(m["changed"], 1, "{m}");
    assert_eq!(m["lost"], 1, "the original row hash is held by no row: {m}");
    let d = &m["differences"][0];
    assert_eq!(d["database_row"]["stream"], stream.as_str());
    assert_eq!(d["database_row"]["stream_seq"], seq);
    assert!(d["mirror_row"].is_null(), "{d}");
    assert!(v.stderr.contains("mirror DIFFERS"), "{v:?}");

    // A row deleted: lost, and every later leaf shifted.
    as_owner(
        &db.pool,
        &format!("DELETE FROM audit.events WHERE stream_seq = {}", seq + 300),
    )
    .await;
    let v = verify_mirror(&db.url, &mirror, None).await;
    assert_eq!(v.code, Some(1), "{v:?}");
    let m = &v.json()["mirror"];
    assert_eq!(m["lost"], 2, "{m}");
    assert_eq!(m["database_size"], 899, "{m}");

    // The log wiped: the auditor still holds what it was, every leaf named lost, and the
    // mirror's checkpoint is checked with the log's key.
    as_owner(&db.pool, "DELETE FROM audit.events").await;
    let v = verify_mirror(&db.url, &mirror, Some((&public, &cps))).await;
    let m = &v.json()["mirror"];
    assert_eq!(m["lost"], 900, "{m}");
    assert_eq!(m["signature_checked"], true, "{m}");
    assert_eq!(v.code, Some(1), "{v:?}");
}
