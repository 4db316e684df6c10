//! Personal data in tests: an `account.created-v1` message carrying an account number and an
//! e-mail address, rows of an old month holding one written straight into the log, and the
//! whole database dumped (`pg_dump`) to search for such a value after an erasure, a retention
//! run or a prune.

use bytes::Bytes;
use chrono::{DateTime, Datelike, TimeZone, Utc};
use event_audit::test_support::db::Db;
use event_audit::test_support::ingest::sink::Sink;
use event_audit::test_support::row::record::{record, Naming};

use super::records::meta;
use super::TestDb;

/// An `account.created-v1` message with envelope id `id` for `account`, carrying `email`.
pub(crate) fn created(id: &str, account: &str, email: &str) -> Vec<u8> {
    format!(
        r#"{{"event":"account.created-v1","id":"{id}","time":"2026-01-02T03:04:05Z","payload":{{"account_number":"{account}","account_user_emails":["{email}"]}}}}"#
    )
    .into_bytes()
}

/// The test's whole database as `pg_dump` writes it.
pub(crate) fn pg_dump(db: &TestDb) -> String {
    let out = std::process::Command::new("pg_dump")
        .args(["-h", "127.0.0.1", "-U", "postgres", &db.name])
        .output()
        .expect("run pg_dump");
    assert!(out.status.success(), "pg_dump: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A time in the month before last (UTC), at the microsecond precision of the column: its
/// partition ends over a month before now, well past a `rows_for` of one day on any date.
pub(crate) fn month_before_last() -> DateTime<Utc> {
    let now = Utc::now();
    let first = Utc
        .with_ymd_and_hms(now.year(), now.month(), 1, 12, 0, 0)
        .single()
        .expect("the first of this month");
    // 40 days before the first of a month is in the month before the last (every month has
    // 28 to 31 days).
    first - chrono::Duration::days(40)
}

/// Writes `n` rows of `stream` (sequences `first..first + n`) published from `t0` a millisecond
/// apart, through the writer's sink as ingest builds them, each holding `email`; creates their
/// month's partition first (the migrations create last month's onwards). Returns the
/// partition's name.
pub(crate) async fn write_old_rows(
    db: &TestDb,
    stream: &str,
    first: u64,
    n: u64,
    email: &str,
    t0: DateTime<Utc>,
) -> String {
    sqlx::query("SELECT audit.ensure_partitions($1, 1)")
        .bind(t0)
        .execute(&db.pool)
        .await
        .expect("create the old month's partition");
    let naming = Naming::default();
    let mut recs: Vec<_> = (first..first + n)
        .map(|seq| {
            let bytes = created(
                &format!("old-{stream}-{seq}"),
                &format!("R-OLD-{seq}"),
                email,
            );
            let published = t0 + chrono::Duration::milliseconds(seq as i64);
            record(
                meta(stream, seq, published, 1),
                Bytes::from(bytes),
                &naming,
                published + chrono::Duration::seconds(1),
            )
        })
        .collect();
    let out = Sink::new(Db::from_pool(db.pool.clone()), "test")
        .write_batch(&mut recs)
        .await
        .expect("write the old rows");
    assert_eq!(out.inserted, n as usize);
    format!("events_{}", t0.format("%Y_%m"))
}
