//! `verify` as an auditor would run it, against real PostgreSQL and NATS JetStream: as the
//! read-only auditor role, on a missing database (exit 2, never created), listing every break,
//! and reporting completeness (sequences deleted on the bus before they were read, rows removed
//! from the log); at the default log level its stderr is the one-line summary, even when a
//! statement waited over a second; NATS down or
//! PostgreSQL refusing is said at once, naming what to try.

use serde_json::Value;
use sqlx::PgPool;

use crate::support::cli::event_audit;
use crate::support::db::as_superuser;
use crate::support::records::{now_us, records};
use crate::support::{run_until_idle, settings, TestDb, TestStream};
use event_audit::test_support::db::Db;
use event_audit::test_support::ingest::sink::Sink;

/// `verify` on `url` with `extra` arguments: exit code, JSON report, stderr.
async fn verify(url: &str, extra: &[&str]) -> (Option<i32>, Value, String) {
    let mut args = vec!["verify", "--database-url", url];
    args.extend_from_slice(extra);
    let run = event_audit(&args, &[]).await;
    let report = serde_json::from_str(run.stdout.trim()).unwrap_or(Value::Null);
    (run.code, report, run.stderr)
}

/// A login role in the auditor group, dropped when the guard drops.
struct Auditor {
    name: String,
    admin: PgPool,
}

impl Auditor {
    async fn create(admin: &PgPool) -> Auditor {
        let name = format!(
            "ea_auditor_{}_{:04x}",
            std::process::id(),
            rand::random::<u16>()
        );
        sqlx::query(&format!(
            "CREATE ROLE {name} LOGIN IN ROLE event_audit_auditor"
        ))
        .execute(admin)
        .await
        .expect("create the auditor login");
        Auditor {
            name,
            admin: admin.clone(),
        }
    }

    async fn drop_role(self) {
        sqlx::query(&format!("DROP ROLE IF EXISTS {}", self.name))
            .execute(&self.admin)
            .await
            .expect("drop the auditor login");
    }
}

#[tokio::test]
async fn the_auditor_role_verifies_and_records_the_run_and_a_missing_database_is_exit_2() {
    let db = TestDb::create().await;
    Sink::new(Db::from_pool(db.pool.clone()), "test")
        .write_batch(&mut records("AUDITOR", 30, 1, now_us()))
        .await
        .expect("write");
    let auditor = Auditor::create(&db.pool).await;
    let mut url = url::Url::parse(&db.url).expect("url");
    url.set_username(&auditor.name).expect("user");
    let (code, report, stderr) = verify(url.as_str(), &["--skip-completeness"]).await;
    let runs: Vec<(bool, i64, Option<i64>)> =
        sqlx::query_as("SELECT ok, rows, breaks FROM audit.verify_runs")
            .fetch_all(&db.pool)
            .await
            .expect("runs");
    // The auditor still cannot write the runs table itself.
    let mut tx = db.pool.begin().await.expect("begin");
    sqlx::query(&format!("SET LOCAL ROLE {}", auditor.name))
        .execute(&mut *tx)
        .await
        .expect("set role");
    let direct = sqlx::query("INSERT INTO audit.verify_runs (ok, links, rows) VALUES (true, 0, 0)")
        .execute(&mut *tx)
        .await;
    tx.rollback().await.expect("rollback");
    auditor.drop_role().await;
    assert_eq!(code, Some(0), "{report} {stderr}");
    assert_eq!(report["rows"], 30, "{report}");
    assert!(stderr.contains("chain intact"), "{stderr}");
    assert_eq!(runs, vec![(true, 30, Some(0))]);
    assert!(direct.is_err(), "the auditor inserted into verify_runs");

    // A mistyped database name: exit 2, named, and not created.
    let missing = TestDb::missing_url();
    let name = missing.rsplit('/').next().expect("name").to_owned();
    let (code, report, stderr) = verify(&missing, &["--skip-completeness"]).await;
    assert_eq!(code, Some(2), "{report} {stderr}");
    assert!(
        stderr.contains(&name) && stderr.contains("does not exist"),
        "{stderr}"
    );
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(&name)
            .fetch_one(&db.pool)
            .await
            .expect("look up");
    assert!(!exists, "verify created {name}");
}

#[tokio::test]
async fn every_break_is_listed_in_log_order_the_first_named() {
    let db = TestDb::create().await;
    let sink = Sink::new(Db::from_pool(db.pool.clone()), "test");
    let t0 = now_us();
    let mut all = records("BREAKS", 40, 1, t0);
    while !all.is_empty() {
        let mut batch: Vec<_> = all.drain(..10).collect();
        sink.write_batch(&mut batch).await.expect("write");
    }
    // Edit a row of link 3 and one of link 1; delete a row of link 4.
    for sql in [
        "UPDATE audit.events SET account_number = 'X' WHERE stream_seq = 25",
        "UPDATE audit.events SET subject = 'elsewhere' WHERE stream_seq = 3",
        "DELETE FROM audit.events WHERE stream_seq = 38",
    ] {
        assert_eq!(as_superuser(&db.pool, sql).await, 1, "{sql}");
    }
    // And a row inserted outside the chain (a copy of row 10 under another sequence and batch).
    let mut tx = db.pool.begin().await.expect("begin");
    for sql in [
        "CREATE TEMP TABLE t ON COMMIT DROP AS SELECT * FROM audit.events WHERE stream_seq = 10",
        "UPDATE t SET stream_seq = 1000, batch_id = 999",
        "INSERT INTO audit.events SELECT * FROM t",
    ] {
        sqlx::query(sql).execute(&mut *tx).await.expect(sql);
    }
    tx.commit().await.expect("commit");
    let (code, report, stderr) = verify(&db.url, &["--skip-completeness"]).await;
    assert_eq!(code, Some(1), "{report} {stderr}");
    assert_eq!(report["rows"], 39, "{report}");
    // The copy of row 10 also repeats its envelope id without an id finding.
    assert_eq!(report["breaks_total"], 5, "{report}");
    let whys: Vec<&str> = report["breaks"]
        .as_array()
        .expect("breaks")
        .iter()
        .map(|b| b["why"].as_str().expect("why"))
        .collect();
    assert!(
        whys[0].contains("stream_seq=3 ") && whys[0].contains("row edited"),
        "{whys:?}"
    );
    assert!(
        whys[1].contains("stream_seq=25 ") && whys[1].contains("row edited"),
        "{whys:?}"
    );
    assert!(
        whys[2].contains("rows deleted") && whys[2].contains("link 4"),
        "{whys:?}"
    );
    assert!(
        whys[3].contains("stream_seq=1000:") && whys[3].contains("no chain link"),
        "{whys:?}"
    );
    assert!(
        whys[4].contains("stream_seq=1000:") && whys[4].contains("finding deleted"),
        "{whys:?}"
    );
    assert_eq!(report["first_break"], whys[0]);
    assert_eq!(report["breaks"][1]["stream_seq"], 25);
    assert_eq!(report["breaks"][1]["link"], 3);
    assert!(stderr.contains("5 break(s)"), "{stderr}");
}

/// The gaps of `stream` in a report, as `(from, to, kind)`.
fn gaps_of(report: &Value, stream: &str) -> Vec<(u64, u64, String)> {
    report["completeness"]["streams"]
        .as_array()
        .expect("completeness")
        .iter()
        .filter(|s| s["stream"] == stream)
        .flat_map(|s| s["gaps"].as_array().expect("gaps").clone())
        .map(|g| {
            (
                g["from"].as_u64().expect("from"),
                g["to"].as_u64().expect("to"),
                g["kind"].as_str().expect("kind").to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn completeness_tells_deleted_on_the_bus_from_not_recorded() {
    let db = TestDb::create().await;
    let ts = TestStream::create("gaps").await;
    ts.publish_load(30, 5).await;
    // Deleted on the bus before the daemon reads them: 5..=7 and 12.
    let stream = ts.js.get_stream(&ts.name).await.expect("stream");
    for seq in [5u64, 6, 7, 12] {
        assert!(stream.delete_message(seq).await.expect("delete"), "{seq}");
    }
    run_until_idle(settings(&db, &ts)).await;
    let (code, report, stderr) = verify(&db.url, &[]).await;
    assert_eq!(code, Some(0), "{report} {stderr}");
    assert_eq!(report["rows"], 26, "{report}");
    assert_eq!(
        gaps_of(&report, &ts.name),
        vec![(5, 7, "deleted".into()), (12, 12, "deleted".into())]
    );
    let s = &report["completeness"]["streams"][0];
    assert_eq!(s["held"], serde_json::json!([[1, 4], [8, 11], [13, 30]]));
    assert_eq!(s["bus"]["last_seq"], 30);
    // At the default log level, stderr is the one-line summary (a routine NATS close is no
    // warning).
    let quiet = crate::support::bin()
        .args(["verify", "--database-url", &db.url])
        .env_remove("RUST_LOG")
        .output()
        .await
        .expect("verify");
    let err = String::from_utf8_lossy(&quiet.stderr);
    assert_eq!(quiet.status.code(), Some(0), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines.len() == 1
            && lines[0].starts_with("chain intact: ")
            && lines[0].ends_with(" 26 rows, every row rehashed"),
        "{err}"
    );
    // Nor is a statement that waited over a second (for a lock another session holds): sqlx's
    // slow-statement notice is below the default filter.
    let mut tx = db.pool.begin().await.expect("begin");
    sqlx::query("LOCK TABLE audit.chain_links IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *tx)
        .await
        .expect("lock");
    let waiting = crate::support::bin()
        .args(["verify", "--database-url", &db.url])
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("verify");
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    tx.commit().await.expect("unlock");
    let slow = waiting.wait_with_output().await.expect("verify");
    let err = String::from_utf8_lossy(&slow.stderr);
    assert_eq!(slow.status.code(), Some(0), "{err}");
    assert!(
        err.lines().count() == 1 && err.starts_with("chain intact: "),
        "{err}"
    );
    // NATS down: exit 2, naming the way to verify without it.
    let (code, _, stderr) = verify(&db.url, &["--nats-url", "nats://127.0.0.1:1"]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("127.0.0.1:1") && stderr.contains("--skip-completeness"),
        "{stderr}"
    );
    // PostgreSQL refuses: said at once, not after the connect timeout.
    let started = std::time::Instant::now();
    let (code, _, stderr) = verify("postgres://postgres@127.0.0.1:1/x", &[]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("refused"), "{stderr}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));

    // A superuser removes a row from the log: a gap of the second kind, a break.
    assert_eq!(
        as_superuser(&db.pool, "DELETE FROM audit.events WHERE stream_seq = 20").await,
        1
    );
    let (code, report, stderr) = verify(&db.url, &[]).await;
    assert_eq!(code, Some(1), "{report} {stderr}");
    assert!(
        gaps_of(&report, &ts.name).contains(&(20, 20, "missing".into())),
        "{report}"
    );
    let whys = report["breaks"].to_string();
    assert!(whys.contains("rows deleted"), "{whys}");
    assert!(
        whys.contains(&format!(
            "stream {} sequences 20..20: on the bus but not in the log",
            ts.name
        )),
        "{whys}"
    );
    // The run is recorded with its gaps for the daemon's metrics.
    let (missing, deleted): (Option<i64>, Option<i64>) = sqlx::query_as(
        "SELECT gaps_missing, gaps_deleted FROM audit.verify_runs ORDER BY id DESC LIMIT 1",
    )
    .fetch_one(&db.pool)
    .await
    .expect("last run");
    assert_eq!((missing, deleted), (Some(1), Some(2)));
}
