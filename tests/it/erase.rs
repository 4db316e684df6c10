//! Erasure against real NATS JetStream and PostgreSQL: a scripted erasure request leaves no
//! trace of the person in the database while the log, its witnessed checkpoints and the
//! erased rows' bundles still verify; tampering (a payload removed without a recorded
//! erasure, an erasure written outside the log) is still a break; the writer and the auditor
//! cannot erase; a log of row encodings 2 and 3, erased in both, verifies.

use std::path::Path;

use crate::support::app::run_until_idle;
use crate::support::bundle::{expect, expect_text, flip};
use crate::support::cli::{event_audit, Run};
use crate::support::db::as_superuser;
use crate::support::personal::{created, pg_dump};
use crate::support::records::{now_us, records};
use crate::support::witness::{signing, verify_witness, write_keys, Witness};
use crate::support::{ingest_load, verify, TestDb, TestStream};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use event_audit::test_support::db::Db;
use event_audit::test_support::ingest::sink::Sink;

const EMAIL: &str = "alice.erasure@example.com";
const ACCOUNT: &str = "A-ERASE-7";

async fn erase(url: &str, which: &[&str], extra: &[&str]) -> Run {
    erase_with(url, which, extra, &[]).await
}

/// `erase` with environment variables.
async fn erase_with(url: &str, which: &[&str], extra: &[&str], envs: &[(&str, &str)]) -> Run {
    let mut args = vec!["erase", "--database-url", url];
    args.extend_from_slice(which);
    args.extend(["--reason", "erasure request 2026-117"]);
    args.extend_from_slice(extra);
    event_audit(&args, envs).await
}

async fn prove(db: &TestDb, public: &Path, dir: &Path, stream: &str, seq: u64) -> Run {
    let (p, d, seq) = (
        public.to_str().expect("utf-8"),
        dir.to_str().expect("utf-8"),
        seq.to_string(),
    );
    let args = [
        "prove",
        "--database-url",
        &db.url,
        "--stream",
        stream,
        "--seq",
        &seq,
        "--public-key",
        p,
        "--checkpoint-dir",
        d,
    ];
    event_audit(&args, &[]).await
}

#[tokio::test]
async fn an_erasure_request_leaves_no_trace_and_the_log_still_verifies() {
    let db = TestDb::create().await;
    let ts = TestStream::create("erase").await;
    let cps = format!("{}_CP", ts.name);
    let _w = Witness(cps.clone());
    let tmp = tempfile::tempdir().expect("tmp");
    let origin = format!("event-audit/{}", db.name);
    let (private, public, key) = write_keys(tmp.path(), &origin, 9);
    let dir = tmp.path().join("checkpoints");
    // Account A: its creation (the address in the payload and in a header), the same message
    // again (an envelope-id finding) and an event that is invalid; account B beside it.
    let subject = ts.subject("crafted");
    let a1 = created("erase-a-1", ACCOUNT, EMAIL);
    let mut seqs = vec![ts.publish(&subject, &[("X-User", EMAIL)], &a1).await];
    seqs.push(ts.publish(&subject, &[], &a1).await);
    let bad = format!(
        r#"{{"event":"account.created-v1","id":"erase-a-3","payload":{{"account_number":"{ACCOUNT}","account_user_emails":"{EMAIL}"}}}}"#
    );
    seqs.push(ts.publish(&subject, &[], bad.as_bytes()).await);
    let b = ts
        .publish(
            &subject,
            &[],
            &created("erase-b-1", "B-KEEP-1", "bob@example.com"),
        )
        .await;
    ts.publish_load(10, 7).await;
    run_until_idle(signing(&db, &ts, &private, &cps, &dir)).await;
    assert!(
        pg_dump(&db).contains(EMAIL),
        "the address is in the log before"
    );

    // The daemon owns the test's stream: its environment names it, as the daemon's does.
    let owned = [("EVENT_AUDIT_STREAM", ts.name.as_str())];
    assert_eq!(
        seqs,
        [seqs[0], seqs[0] + 1, seqs[0] + 2],
        "published in a row"
    );
    let range = format!("{}-{}", seqs[0], seqs[2]);

    // A dry run changes nothing; an erasure that matches nothing is exit 2.
    let dry = erase_with(&db.url, &["--account", ACCOUNT], &["--dry-run"], &owned).await;
    assert_eq!(dry.code, Some(0), "{dry:?}");
    assert!(
        dry.stdout
            .contains("would erase the personal data of 3 rows"),
        "{dry:?}"
    );
    let would = format!(
        "would delete from the bus: stream {} sequences {range}\n",
        ts.name
    );
    assert!(dry.stdout.contains(&would), "{dry:?}");
    assert!(pg_dump(&db).contains(EMAIL), "a dry run erased: {dry:?}");
    let none = erase(&db.url, &["--account", "NOBODY"], &[]).await;
    assert_eq!(none.code, Some(2), "{none:?}");
    assert!(none.stderr.contains("nothing changed"), "{none:?}");

    // Erased: the messages go from the daemon's stream too.
    let done = erase_with(&db.url, &["--account", ACCOUNT], &[], &owned).await;
    assert_eq!(done.code, Some(0), "{done:?}");
    assert!(
        done.stdout
            .contains("erased the personal data of 3 rows (0 of encodings 1 and 2"),
        "{done:?}"
    );
    assert!(done.stdout.contains("recorded as erasure 1"), "{done:?}");
    let deleted = format!(
        "deleted from the bus: stream {} sequences {range}\n",
        ts.name
    );
    assert!(done.stdout.contains(&deleted), "{done:?}");
    let stream = ts.js.get_stream(&ts.name).await.expect("stream");
    for &seq in &seqs {
        assert!(
            stream.get_raw_message(seq).await.is_err(),
            "message {seq} is still on the bus"
        );
    }
    assert!(
        stream.get_raw_message(b).await.is_ok(),
        "B's message was deleted"
    );
    // Erased already: nothing left to erase.
    let again = erase(&db.url, &["--account", ACCOUNT], &[]).await;
    assert_eq!(again.code, Some(2), "{again:?}");
    // The next checkpoint covers the erasure record.
    run_until_idle(signing(&db, &ts, &private, &cps, &dir)).await;

    let dump = pg_dump(&db);
    assert!(!dump.contains(EMAIL), "pg_dump still holds the address");
    assert!(
        !dump.contains(ACCOUNT),
        "pg_dump still holds the account number"
    );
    assert!(
        !dump.contains("erase-a-1"),
        "pg_dump still holds A's envelope id"
    );
    assert!(dump.contains("bob@example.com"), "B's data is kept");

    // verify against the witnessed checkpoints (every row rehashed), with an auditor's state.
    let st = tmp.path().join("auditor.state");
    let w = verify_witness(
        &db.url,
        &public,
        &cps,
        &["--state-file", st.to_str().expect("utf-8")],
    )
    .await;
    assert_eq!(w.code, Some(0), "{w:?}");
    assert!(
        w.stderr
            .contains("1 recorded erasure(s) (1): 3 erased rows whose hash still holds"),
        "{w:?}"
    );
    let report = w.json();
    assert_eq!(report["erasures"]["rows_erased"], 3, "{report}");
    assert_eq!(
        report["erasures"]["records"][0]["reason"],
        "erasure request 2026-117"
    );
    let plain = verify(&db.url).await;
    assert_eq!(plain.code, Some(0), "{plain:?}");

    // A's bundles: proven by both verifiers, without any trace of A.
    let k = key.public().encode();
    let mut last = None;
    for &seq in &seqs {
        let p = prove(&db, &public, &dir, &ts.name, seq).await;
        assert_eq!(p.code, Some(0), "{p:?}");
        for trace in [EMAIL, ACCOUNT, "erase-a-"] {
            assert!(
                !p.stdout.contains(trace),
                "the bundle holds {trace}: {}",
                p.stdout
            );
        }
        let v: serde_json::Value = serde_json::from_str(&p.stdout).expect("json");
        assert_eq!(v["entries"][0]["opening"], serde_json::Value::Null);
        assert_eq!(v["entries"][0]["raw"], "");
        expect_text(&p.stdout, &k, &["--origin", &origin], &[], 0, "OK: 1 entry");
        last = Some(v);
    }
    // An erased entry shows no raw bytes and none of the personal columns, or it is refused.
    let erased = last.expect("an erased row's bundle");
    let mut b1 = erased.clone();
    b1["entries"][0]["raw"] = B64.encode(b"{}").into();
    expect(&b1, &k, &[], &[], 1, "entry 0 (stream");
    let mut b2 = erased.clone();
    b2["entries"][0]["columns"]["account_number"] = ACCOUNT.into();
    expect(&b2, &k, &[], &[], 2, "columns.account_number: not a column");
    // B's bundle still opens to its payload; the erasure record is a leaf of the witnessed log.
    let pb = prove(&db, &public, &dir, &ts.name, b).await;
    assert!(
        pb.stdout.contains("bob@example.com") && pb.code == Some(0),
        "{pb:?}"
    );
    let vb: serde_json::Value = serde_json::from_str(&pb.stdout).expect("json");
    expect(&vb, &k, &[], &[], 0, "OK: 1 entry");
    let mut b3 = vb.clone();
    let opening = vb["entries"][0]["opening"].as_str().expect("an opening");
    b3["entries"][0]["opening"] = flip(opening, 40).into();
    expect(
        &b3,
        &k,
        &[],
        &[],
        1,
        "leaf data: opening: SHA-256 of the opening is not the leaf's commitment",
    );
    // The account itself is no longer found; the answer says an erasure may be why.
    let (p, d) = (
        public.to_str().expect("utf-8"),
        dir.to_str().expect("utf-8"),
    );
    let by_account = [
        "prove",
        "--database-url",
        &db.url,
        "--account",
        ACCOUNT,
        "--public-key",
        p,
        "--checkpoint-dir",
        d,
    ];
    let pa = event_audit(&by_account, &[]).await;
    assert_eq!(pa.code, Some(2), "{pa:?}");
    assert!(
        pa.stderr
            .contains(&format!("no row for account {ACCOUNT};"))
            && pa
                .stderr
                .contains("1 erasure(s) by account and 0 by publication time")
            && !pa.stderr.contains("in that time"),
        "{pa:?}"
    );
    let pe = prove(&db, &public, &dir, "event-audit.erasures", 1).await;
    assert_eq!(pe.code, Some(0), "{pe:?}");
    assert!(pe.stdout.contains("erasure request 2026-117"), "{pe:?}");
    expect_text(&pe.stdout, &k, &[], &[], 0, "OK: 1 entry");
}

/// `sql` as `role`: the error's text, if refused.
async fn as_role(pool: &sqlx::PgPool, role: &str, sql: &str) -> Option<String> {
    let mut tx = pool.begin().await.expect("begin");
    sqlx::query(&format!("SET LOCAL ROLE {role}"))
        .execute(&mut *tx)
        .await
        .expect("set role");
    let r = sqlx::query(sql).execute(&mut *tx).await;
    let _ = tx.rollback().await;
    r.err().map(|e| e.to_string())
}

const ERASE_SQL: &str = "UPDATE audit.events SET raw = '\\x'::bytea, salt = NULL, payload = NULL, \
     headers = NULL, event_id = NULL, account_number = NULL, errors = NULL WHERE stream_seq = 5";

#[tokio::test]
async fn tampering_is_still_caught_and_only_the_eraser_erases() {
    let db = TestDb::create().await;
    let ts = TestStream::create("erasetamper").await;
    ingest_load(&db, &ts, 30, 5, 10).await;
    let pool = &db.pool;

    // Neither the writer nor the auditor can erase; the eraser changes nothing but that.
    for role in ["event_audit_writer", "event_audit_auditor"] {
        let e = as_role(pool, role, ERASE_SQL).await.expect("refused");
        assert!(e.contains("permission denied"), "{role}: {e}");
        let member: bool =
            sqlx::query_scalar("SELECT pg_has_role($1, 'event_audit_eraser', 'MEMBER')")
                .bind(role)
                .fetch_one(pool)
                .await
                .expect("membership");
        assert!(!member, "{role} is a member of the eraser role");
    }
    let eraser = "event_audit_eraser";
    let e = as_role(
        pool,
        eraser,
        "UPDATE audit.events SET status = 'x' WHERE stream_seq = 5",
    )
    .await;
    assert!(e.is_some_and(|e| e.contains("permission denied")));
    let e = as_role(
        pool,
        eraser,
        "UPDATE audit.events SET account_number = 'Y' WHERE stream_seq = 5",
    )
    .await;
    assert!(e.is_some_and(|e| e.contains("append-only")));
    assert_eq!(as_role(pool, eraser, ERASE_SQL).await, None);

    // A login that is not a member of the eraser role: refused, naming the GRANT (exit 2).
    let login = format!(
        "ea_noeraser_{}_{:04x}",
        std::process::id(),
        rand::random::<u16>()
    );
    sqlx::query(&format!("CREATE ROLE {login} LOGIN"))
        .execute(pool)
        .await
        .expect("create a login");
    let mut url = url::Url::parse(&db.url).expect("url");
    url.set_username(&login).expect("user");
    let s = ts.name.as_str();
    let denied = erase(url.as_str(), &["--stream", s, "--seq", "3..4"], &[]).await;
    sqlx::query(&format!("DROP ROLE {login}"))
        .execute(pool)
        .await
        .expect("drop the login");
    assert_eq!(denied.code, Some(2), "{denied:?}");
    let grant = format!("GRANT event_audit_eraser TO {login};");
    assert!(
        denied.stderr.contains(&grant) && denied.stderr.lines().count() == 1,
        "{denied:?}"
    );

    // A recorded erasure verifies.
    let done = erase(&db.url, &["--stream", s, "--seq", "3..4"], &[]).await;
    assert_eq!(done.code, Some(0), "{done:?}");
    // Not the daemon's stream (nothing names it): the operator is told what to do.
    let told = format!(
        "the bus still holds them: stream {s} sequences 3-4 (the daemon does not own stream {s}"
    );
    assert!(
        done.stdout.contains(&told) && done.stdout.contains("nats stream rmm"),
        "{done:?}"
    );
    let v = verify(&db.url).await;
    assert_eq!(v.code, Some(0), "{v:?}");
    assert_eq!(v.report["erasures"]["rows_erased"], 2, "{v:?}");

    // Row 5's personal data removed without a recorded erasure; row 6's payload overwritten.
    let unrecorded = ERASE_SQL.replace(
        "stream_seq = 5",
        &format!("stream = '{s}' AND stream_seq = 5"),
    );
    assert_eq!(as_superuser(pool, &unrecorded).await, 1);
    let edit = format!(
        "UPDATE audit.events SET payload = '{{\"x\": 1}}' WHERE stream = '{s}' AND stream_seq = 6"
    );
    assert_eq!(as_superuser(pool, &edit).await, 1);
    let v = verify(&db.url).await;
    assert_eq!(v.code, Some(1), "{v:?}");
    let all = v.report["breaks"].to_string();
    assert!(
        all.contains(&format!("row stream={s} stream_seq=5"))
            && all.contains("without a recorded erasure"),
        "{all}"
    );
    assert!(
        all.contains(&format!("row stream={s} stream_seq=6")),
        "{all}"
    );

    // An erasure record written straight into the database: an index entry without its row in
    // the log, and a record row outside the chain naming row 7 (whose data it then removes).
    let fresh = TestDb::create().await;
    let ts2 = TestStream::create("eraseforge").await;
    ingest_load(&fresh, &ts2, 12, 6, 10).await;
    let s2 = ts2.name.as_str();
    as_superuser(
        &fresh.pool,
        "INSERT INTO audit.erasures VALUES (7, now(), 'forged', 'account', 1, '\\x00')",
    )
    .await;
    let v = verify(&fresh.url).await;
    assert_eq!(v.code, Some(1), "{v:?}");
    assert!(
        v.first_break()
            .contains("erasure 7 in audit.erasures has no record of its own"),
        "{v:?}"
    );
    let forged = format!(
        "INSERT INTO audit.events (stream, stream_seq, published_at, received_at, subject, delivery_count, status, raw, batch_id, row_hash) \
         SELECT 'event-audit.erasures', 1, now(), now(), 'event-audit.erasure', 1, 'unknown_type', \
           convert_to('{{\"erasure\":1,\"at\":\"x\",\"reason\":\"r\",\"selector\":\"account\",\"rows\":[{{\"stream\":\"{s2}\",\"stream_seq\":7,\"row_hash\":\"' || encode(row_hash, 'hex') || '\"}}]}}', 'UTF8'), 999999, sha256('x'::bytea) \
         FROM audit.events WHERE stream = '{s2}' AND stream_seq = 7"
    );
    assert_eq!(as_superuser(&fresh.pool, &forged).await, 1);
    let erase7 = ERASE_SQL.replace(
        "stream_seq = 5",
        &format!("stream = '{s2}' AND stream_seq = 7"),
    );
    assert_eq!(as_superuser(&fresh.pool, &erase7).await, 1);
    let v = verify(&fresh.url).await;
    let all = v.report["breaks"].to_string();
    assert_eq!(v.code, Some(1), "{v:?}");
    assert!(
        all.contains(&format!("row stream={s2} stream_seq=7"))
            && all.contains("without a recorded erasure"),
        "{all}"
    );
    assert!(all.contains("has no chain link"), "{all}");
}

/// A log of rows written in row encoding 2 (before version 3) and in version 3, erased in
/// both: it verifies, the old rows reported as erased with their contents unverifiable.
#[tokio::test]
async fn a_log_of_encodings_2_and_3_erased_in_both_verifies() {
    let db = TestDb::create().await;
    let sink = Sink::new(Db::from_pool(db.pool.clone()), "test");
    let mut old = records("OLDENC", 8, 1, now_us());
    for r in &mut old {
        r.as_encoding_2();
    }
    sink.write_batch(&mut old).await.expect("write v2 rows");
    sink.write_batch(&mut records("NEWENC", 8, 1, now_us()))
        .await
        .expect("write v3 rows");
    let (v2, v3): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE commitment IS NULL), count(*) FILTER (WHERE commitment IS NOT NULL) FROM audit.events",
    )
    .fetch_one(&db.pool)
    .await
    .expect("count");
    assert_eq!((v2, v3), (8, 8));
    for stream in ["OLDENC", "NEWENC"] {
        let done = erase(&db.url, &["--stream", stream, "--seq", "2..4"], &[]).await;
        assert_eq!(done.code, Some(0), "{done:?}");
    }
    let v = verify(&db.url).await;
    assert_eq!(v.code, Some(0), "{v:?}");
    assert_eq!(v.report["erasures"]["rows_erased"], 3, "{v:?}");
    assert_eq!(v.report["erasures"]["rows_unverifiable"], 3, "{v:?}");
    assert_eq!(
        v.report["erasures"]["records"].as_array().map(Vec::len),
        Some(2)
    );
    assert!(
        v.stderr.contains("3 erased, contents unverifiable"),
        "{v:?}"
    );
    // reprocess judges again what is left: 16 rows and 2 erasure records, less the 6 erased.
    let args = [
        "reprocess",
        "--database-url",
        &db.url,
        "--dry-run",
        "--format",
        "json",
    ];
    let r = event_audit(&args, &[]).await;
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(r.json()["rows"], 12, "{r:?}");
}
