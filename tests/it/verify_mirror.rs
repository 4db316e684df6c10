//! `verify --mirror`: the database checked against an auditor's copy of the log's tiles, with
//! no witness and no NATS reachable. Intact, then a row's hash changed (one leaf changed, none
//! lost), then a row deleted (one row deleted, named at its leaf between the rows beside it,
//! the later leaves not counted again), then the log wiped: each named by leaf index, with the
//! rows the database still holds.

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
    assert!(
        v.stderr
            .contains("NOT checked with a key (no --public-key)"),
        "what it trusts is said: {v:?}"
    );

    // A row's hash changed (its content rewritten): named with the row the database has there.
    let (stream, seq, hash): (String, i64, Vec<u8>) = sqlx::query_as(
        "SELECT stream, stream_seq, row_hash FROM audit.events ORDER BY stream_seq LIMIT 1 OFFSET 100",
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
    assert_eq!(m["lost"], 0, "a changed row is not also lost: {m}");
    assert_eq!(m["inserted"], 0, "{m}");
    let d = &m["differences"][0];
    assert_eq!(d["kind"], "changed", "{d}");
    assert_eq!(d["database_row"]["stream"], stream.as_str());
    assert_eq!(d["database_row"]["stream_seq"], seq);
    assert!(d["mirror_row"].is_null(), "{d}");
    let changed_at = d["leaf_index"].as_u64().expect("a leaf index");
    assert!(
        v.stderr.contains(&format!(
            "mirror DIFFERS: 1 changed, 0 deleted, 0 inserted of the mirror's 900 leaves (database tree: 900); first: leaf {changed_at} changed (stream={stream} stream_seq={seq})"
        )),
        "{v:?}"
    );

    // The hash put back, a row deleted: one row deleted, at its leaf, between the rows beside
    // it; the 499 rows after it are not counted again.
    let back: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    as_owner(
        &db.pool,
        &format!("UPDATE audit.events SET row_hash = '\\x{back}'::bytea WHERE stream_seq = {seq}"),
    )
    .await;
    let gone = seq + 300;
    as_owner(
        &db.pool,
        &format!("DELETE FROM audit.events WHERE stream_seq = {gone}"),
    )
    .await;
    let v = verify_mirror(&db.url, &mirror, None).await;
    assert_eq!(v.code, Some(1), "{v:?}");
    let m = &v.json()["mirror"];
    assert_eq!(
        (&m["changed"], &m["lost"], &m["inserted"]),
        (&0.into(), &1.into(), &0.into()),
        "{m}"
    );
    assert_eq!(m["database_size"], 899, "{m}");
    let d = &m["differences"][0];
    assert_eq!(d["kind"], "deleted", "{d}");
    let at = changed_at + 300;
    assert_eq!(d["leaf_index"], at, "{d}");
    assert_eq!(d["after_row"]["stream_seq"], gone - 1, "{d}");
    assert_eq!(d["before_row"]["stream_seq"], gone + 1, "{d}");
    assert!(d["database_entry"].is_null(), "{d}");
    assert!(
        v.stderr.contains(&format!(
            "mirror DIFFERS: 0 changed, 1 deleted, 0 inserted of the mirror's 900 leaves (database tree: 899); first: 1 row deleted at leaf {at} (between stream={stream} stream_seq={} and stream={stream} stream_seq={})",
            gone - 1,
            gone + 1
        )),
        "{v:?}"
    );

    // The log wiped: the auditor still holds what it was, every leaf named lost, and the
    // mirror's checkpoint is checked with the log's key.
    as_owner(&db.pool, "DELETE FROM audit.events").await;
    let v = verify_mirror(&db.url, &mirror, Some((&public, &cps))).await;
    let m = &v.json()["mirror"];
    assert_eq!(m["lost"], 900, "{m}");
    assert_eq!(m["signature_checked"], true, "{m}");
    assert_eq!(v.code, Some(1), "{v:?}");
}
