//! An erasure reaches only what precedes it in the log, against real NATS JetStream and
//! PostgreSQL: a time bound in the future is refused; rows published before an erasure's bound
//! but recorded after it are not covered by it, and one emptied afterwards by a superuser is a
//! break naming the erasure; an erased row given its data back breaks the erasure's count; the
//! eraser role cannot hold a partition whose month is not over.

use crate::support::cli::{event_audit, Run};
use crate::support::db::{as_superuser, EMPTY_ROW};
use crate::support::personal::created;
use crate::support::{run_until_idle, settings, verify, TestDb, TestStream};
use chrono::{SecondsFormat, Utc};

const EMAIL: &str = "gina.scope@example.com";

async fn erase_before(url: &str, before: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        "erase",
        "--database-url",
        url,
        "--published-before",
        before,
        "--reason",
        "retention by hand",
    ];
    args.extend_from_slice(extra);
    event_audit(&args, &[]).await
}

async fn publish(ts: &TestStream, from: usize, n: usize) {
    let subject = ts.subject("crafted");
    for i in from..from + n {
        let bytes = created(&format!("scope-{i}"), &format!("A-SCOPE-{i}"), EMAIL);
        ts.publish(&subject, &[], &bytes).await;
    }
}

#[tokio::test]
async fn an_erasure_by_time_reaches_only_the_rows_recorded_before_it() {
    let db = TestDb::create().await;
    let ts = TestStream::create("erasescope").await;
    let s = ts.name.clone();
    // Sequences 1–4 recorded; 5–7 published, then recorded only after the erasure.
    publish(&ts, 1, 4).await;
    run_until_idle(settings(&db, &ts)).await;
    publish(&ts, 5, 3).await;

    // A bound in the future is refused, dry or not.
    let tomorrow =
        (Utc::now() + chrono::Duration::days(1)).to_rfc3339_opts(SecondsFormat::Secs, true);
    for extra in [&["--dry-run"][..], &[]] {
        let r = erase_before(&db.url, &tomorrow, extra).await;
        assert_eq!(r.code, Some(2), "{r:?}");
        assert!(r.stderr.contains("lies in the future"), "{r:?}");
        assert_eq!(r.stderr.trim().lines().count(), 1, "one line: {r:?}");
    }

    // Now: every row published so far is before the bound; only the four recorded ones erased.
    let now = Utc::now().to_rfc3339_opts(SecondsFormat::Micros, true);
    let done = erase_before(&db.url, &now, &[]).await;
    assert_eq!(done.code, Some(0), "{done:?}");
    assert!(
        done.stdout.contains("erased the personal data of 4 rows"),
        "{done:?}"
    );
    run_until_idle(settings(&db, &ts)).await;
    let v = verify(&db.url).await;
    assert_eq!(v.code, Some(0), "{v:?}");
    assert_eq!(v.report["erasures"]["rows_erased"], 4, "{v:?}");

    // Sequence 5, published before the bound but recorded after the erasure, emptied by a
    // superuser: a break that names the erasure.
    let sql = format!("{EMPTY_ROW} stream = '{s}' AND stream_seq = 5");
    assert_eq!(as_superuser(&db.pool, &sql).await, 1);
    let v = verify(&db.url).await;
    assert_eq!(v.code, Some(1), "{v:?}");
    let first = v.first_break();
    assert!(
        first.contains(&format!("row stream={s} stream_seq=5"))
            && first.contains("personal data removed after erasure 1 was recorded"),
        "{v:?}"
    );
    assert_eq!(v.report["breaks_total"], 1, "{v:?}");
}

#[tokio::test]
async fn an_erasure_by_time_is_held_to_its_count() {
    let db = TestDb::create().await;
    let ts = TestStream::create("erasecount").await;
    let s = ts.name.clone();
    publish(&ts, 1, 3).await;
    run_until_idle(settings(&db, &ts)).await;
    // A copy of row 2's personal columns, as a backup would keep them.
    as_superuser(
        &db.pool,
        &format!("CREATE TABLE public.kept AS SELECT raw, salt, payload, headers, event_id, account_number, errors FROM audit.events WHERE stream = '{s}' AND stream_seq = 2"),
    )
    .await;
    let now = Utc::now().to_rfc3339_opts(SecondsFormat::Micros, true);
    let done = erase_before(&db.url, &now, &[]).await;
    assert_eq!(done.code, Some(0), "{done:?}");
    assert_eq!(verify(&db.url).await.code, Some(0));

    // Row 2 given its data back: its hash holds again, but the erasure emptied 3 rows and its
    // range now holds 2 emptied ones.
    let restore = format!(
        "UPDATE audit.events e SET raw = k.raw, salt = k.salt, payload = k.payload, headers = k.headers, \
           event_id = k.event_id, account_number = k.account_number, errors = k.errors \
         FROM public.kept k WHERE e.stream = '{s}' AND e.stream_seq = 2"
    );
    assert_eq!(as_superuser(&db.pool, &restore).await, 1);
    let v = verify(&db.url).await;
    assert_eq!(v.code, Some(1), "{v:?}");
    let all = v.report["breaks"].to_string();
    assert!(
        all.contains("erasure record 1: 2 row(s) recorded before it in its range are emptied")
            && all.contains("the record says it emptied 3"),
        "{all}"
    );
}

#[tokio::test]
async fn the_eraser_cannot_hold_a_partition_whose_month_is_not_over() {
    let db = TestDb::create().await;
    let current = format!("events_{}", Utc::now().format("%Y_%m"));
    let mut tx = db.pool.begin().await.expect("begin");
    sqlx::query("SET LOCAL ROLE event_audit_eraser")
        .execute(&mut *tx)
        .await
        .expect("the eraser role");
    let e = sqlx::query("SELECT audit.hold_partition($1)")
        .bind(&current)
        .execute(&mut *tx)
        .await
        .expect_err("refused");
    assert!(e.to_string().contains("which has not passed"), "{e}");
}
