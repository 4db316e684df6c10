//! Tampering and roles against real NATS JetStream and Postgres: `verify` names edited and
//! deleted rows, and the roles keep the log append-only.

use std::path::{Path, PathBuf};

use sqlx::PgPool;

use crate::support::app::{run_until_idle, settings};
use crate::support::records::{now_us, records};
use crate::support::witness::{verify_witness, write_keys, Witness};
use crate::support::{
    assert_verifies, count_rows, ingest_load, verify, TestDb, TestStream, Verify,
};
use event_audit::test_support::db::Db;
use event_audit::test_support::ingest::sink::Sink;
use event_audit::test_support::log::Reader;
use event_audit::test_support::verify::verify as verify_chain;

#[tokio::test]
async fn verify_names_an_edited_row_and_a_deleted_one() {
    edited_and_deleted(false).await;
}

/// The same tampering, found by the auditor's routine run (`verify --public-key` with a state
/// file, every row rehashed by default), which also remembers each break until acknowledged.
#[tokio::test]
async fn verify_with_the_public_key_and_a_state_names_the_same_breaks() {
    edited_and_deleted(true).await;
}

async fn edited_and_deleted(witnessed: bool) {
    let db = TestDb::create().await;
    let ts = TestStream::create("tamper").await;
    let tmp = tempfile::tempdir().expect("tmp");
    let check = if witnessed {
        Check::witnessed(&db, &ts, tmp.path()).await
    } else {
        ingest_load(&db, &ts, 40, 3, 10).await;
        Check::Plain
    };
    let (pool, url) = (&db.pool, db.url.as_str());

    // A superuser edits a row with the triggers off (replica mode): a row of the last link, so
    // that an earlier link exists for the deletion below.
    let k: i64 = sqlx::query_scalar(
        "SELECT min(e.stream_seq) FROM audit.events e JOIN audit.chain_links l ON l.batch_id = e.batch_id \
         WHERE l.link_seq = (SELECT max(link_seq) FROM audit.chain_links)",
    )
    .fetch_one(pool)
    .await
    .expect("row K");
    let ks = Some(k.to_string());
    let (orig_account, batch_k): (Option<String>, i64) =
        sqlx::query_as("SELECT account_number, batch_id FROM audit.events WHERE stream_seq = $1")
            .bind(k)
            .fetch_one(pool)
            .await
            .expect("row K");
    // `binds` fills the statement's parameters, in order.
    let as_replica = |sql: &'static str, binds: Vec<Option<String>>| {
        let pool = pool.clone();
        async move {
            let mut tx = pool.begin().await.expect("begin");
            sqlx::query("SET LOCAL session_replication_role = replica")
                .execute(&mut *tx)
                .await
                .expect("replica mode");
            let mut q = sqlx::query(sql);
            for b in binds {
                q = q.bind(b);
            }
            let n = q.execute(&mut *tx).await.expect("tamper").rows_affected();
            tx.commit().await.expect("commit");
            n
        }
    };
    let edited = as_replica(
        "UPDATE audit.events SET account_number = 'X' WHERE stream_seq = $1::text::bigint",
        vec![ks.clone()],
    )
    .await;
    assert_eq!(edited, 1);
    let v = check.run(url).await;
    assert_eq!(v.code, Some(1), "{v:?}");
    assert_eq!(v.report["ok"], false, "{v:?}");
    let at = format!("stream_seq={k} ");
    assert!(
        v.first_break().contains(&at) && v.first_break().contains("row edited"),
        "{v:?}"
    );
    assert!(
        v.stderr.contains("chain BROKEN") && v.stderr.contains(&at),
        "{v:?}"
    );

    // Put it back: the chain is intact again, so the walk really compares the columns.
    let restored = as_replica(
        "UPDATE audit.events SET account_number = $1 WHERE stream_seq = $2::text::bigint",
        vec![orig_account, ks.clone()],
    )
    .await;
    assert_eq!(restored, 1);
    check.intact_again(url, &v).await;

    // The payload column is checked against the raw message.
    let edited = as_replica(
        "UPDATE audit.events SET payload = '{\"x\": 1}' WHERE stream_seq = $1::text::bigint",
        vec![ks.clone()],
    )
    .await;
    assert_eq!(edited, 1);
    let v = check.run(url).await;
    assert_eq!(v.code, Some(1), "{v:?}");
    assert!(
        v.first_break().contains(&at) && v.first_break().contains("payload edited"),
        "{v:?}"
    );

    // A deleted row in a batch linked earlier than row K's is reported first, naming its batch.
    // (With concurrent writers link order need not follow batch ids, so go by link order.)
    let (d, batch_d): (i64, i64) = sqlx::query_as(
        "SELECT e.stream_seq, e.batch_id FROM audit.events e \
         JOIN audit.chain_links l ON l.batch_id = e.batch_id \
         WHERE l.link_seq < (SELECT l2.link_seq FROM audit.chain_links l2 WHERE l2.batch_id = $1) \
         ORDER BY l.link_seq, e.stream_seq LIMIT 1",
    )
    .bind(batch_k)
    .fetch_one(pool)
    .await
    .expect("a row linked before row K");
    let deleted = as_replica(
        "DELETE FROM audit.events WHERE stream_seq = $1::text::bigint",
        vec![Some(d.to_string())],
    )
    .await;
    assert_eq!(deleted, 1);
    let v = check.run(url).await;
    assert_eq!(v.code, Some(1), "{v:?}");
    let batch = format!("batch {batch_d} ");
    assert!(
        v.first_break().contains(&batch) && v.first_break().contains("rows deleted"),
        "{v:?}"
    );
    assert!(v.stderr.contains(&batch), "{v:?}");
}

/// Runs `sql` in a transaction as `role` (or as the superuser), then rolls back.
async fn as_role(pool: &PgPool, role: Option<&str>, sql: &str) -> Result<u64, sqlx::Error> {
    let mut tx = pool.begin().await.expect("begin");
    if let Some(r) = role {
        sqlx::query(&format!("SET LOCAL ROLE {r}"))
            .execute(&mut *tx)
            .await
            .expect("set role");
    }
    // Checks deferred to the commit (the chain head's) run at the statement instead.
    sqlx::query("SET CONSTRAINTS ALL IMMEDIATE")
        .execute(&mut *tx)
        .await
        .expect("immediate constraints");
    let res = sqlx::query(sql)
        .execute(&mut *tx)
        .await
        .map(|r| r.rows_affected());
    tx.rollback().await.expect("rollback");
    res
}

/// Asserts `sql` fails as `role` with SQLSTATE 42501, the message containing `says`.
async fn refused(pool: &PgPool, role: Option<&str>, sql: &str, says: &str) {
    match as_role(pool, role, sql).await {
        Ok(n) => panic!("{sql} as {role:?} succeeded ({n} rows)"),
        Err(sqlx::Error::Database(e)) => {
            assert_eq!(e.code().as_deref(), Some("42501"), "{sql} as {role:?}: {e}");
            assert!(e.message().contains(says), "{sql} as {role:?}: {e}");
        }
        Err(e) => panic!("{sql} as {role:?}: {e}"),
    }
}

/// A verify run recorded as "ok" (only the role that verifies may).
const RECORD_OK_RUN: &str =
    "SELECT audit.record_verify_run(true, 0, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL)";

/// What each role may and may not do: the writer (the daemon) appends; the owner and a superuser
/// hold the privileges but the triggers refuse changes; the auditor reads and records its runs.
#[tokio::test]
async fn the_log_is_append_only_for_writer_owner_and_auditor() {
    let db = TestDb::create().await;
    let pool = &db.pool;
    let n = 10;
    Sink::new(Db::from_pool(pool.clone()), "test")
        .write_batch(&mut records("ROLES", n, 1, now_us()))
        .await
        .expect("write");
    let writer = Some("event_audit_writer");
    let owner = Some("event_audit_owner");
    let auditor = Some("event_audit_auditor");
    let denied = "permission denied";
    let append_only = "append-only";
    let insert = "INSERT INTO audit.events (stream, stream_seq, published_at, received_at, subject, \
                  delivery_count, status, raw, batch_id, row_hash) \
                  VALUES ('ROLES', 1000, now(), now(), 'ROLES.x', 1, 'decoded', '\\x00', 0, '\\x00')";

    // The daemon's role: INSERT yes; UPDATE, DELETE, TRUNCATE no, on the table or a partition.
    assert_eq!(
        as_role(pool, writer, insert).await.expect("writer inserts"),
        1
    );
    assert_eq!(
        as_role(pool, writer, "SELECT * FROM event_log")
            .await
            .expect("writer reads"),
        n as u64
    );
    refused(
        pool,
        writer,
        "UPDATE audit.events SET account_number = 'X'",
        denied,
    )
    .await;
    refused(pool, writer, "DELETE FROM audit.events", denied).await;
    refused(pool, writer, "TRUNCATE audit.events", denied).await;
    refused(pool, writer, "DELETE FROM audit.events_default", denied).await;
    refused(
        pool,
        writer,
        "UPDATE audit.chain_links SET row_count = 0",
        denied,
    )
    .await;
    refused(pool, writer, "DELETE FROM audit.event_claims", denied).await;
    refused(pool, writer, "DELETE FROM audit.chain_head", denied).await;
    // It moves the head (it appends the links), but only onto the link appended after it, never
    // to a hash of its choosing; it records no verify run; it creates partitions.
    refused(
        pool,
        writer,
        "UPDATE audit.chain_head SET link_seq = link_seq + 1, hash = '\\x00'",
        "onto the link appended after it",
    )
    .await;
    refused(pool, writer, RECORD_OK_RUN, denied).await;
    refused(
        pool,
        writer,
        "INSERT INTO audit.verify_runs (ok, links, rows) VALUES (true, 0, 0)",
        denied,
    )
    .await;
    as_role(pool, writer, "SELECT audit.ensure_partitions(now(), 2)")
        .await
        .expect("the writer creates partitions");
    // It refreshes the partitioned log's statistics, which autovacuum never takes.
    as_role(pool, writer, "SELECT audit.analyze_log()")
        .await
        .expect("the writer refreshes the log's statistics");
    // Both run with their owner's rights, so they resolve no name through the caller's
    // search_path.
    let config: Vec<String> = sqlx::query_scalar(
        "SELECT unnest(proconfig) FROM pg_proc \
         WHERE proname IN ('ensure_partitions', 'analyze_log') ORDER BY proname",
    )
    .fetch_all(pool)
    .await
    .expect("proconfig");
    assert_eq!(
        config,
        vec!["search_path=pg_catalog, pg_temp".to_owned(); 2]
    );

    // The owner and a superuser have the privileges; the triggers refuse.
    for role in [owner, None] {
        refused(
            pool,
            role,
            "UPDATE audit.events SET account_number = 'X'",
            append_only,
        )
        .await;
        refused(pool, role, "DELETE FROM audit.events", append_only).await;
        refused(pool, role, "TRUNCATE audit.events", append_only).await;
        refused(pool, role, "DELETE FROM audit.chain_links", append_only).await;
        refused(
            pool,
            role,
            "UPDATE audit.chain_head SET link_seq = 0",
            "forward only",
        )
        .await;
    }

    // The auditor reads and writes nothing.
    assert_eq!(
        as_role(pool, auditor, "SELECT * FROM event_log")
            .await
            .expect("auditor reads"),
        n as u64
    );
    assert_eq!(
        as_role(pool, auditor, "SELECT * FROM audit.chain_links")
            .await
            .expect("auditor reads links"),
        1
    );
    refused(pool, auditor, insert, denied).await;
    refused(
        pool,
        auditor,
        "UPDATE audit.events SET account_number = 'X'",
        denied,
    )
    .await;
    refused(pool, auditor, "DELETE FROM audit.events", denied).await;
    refused(
        pool,
        auditor,
        "SELECT audit.ensure_partitions(now() + interval '10 years', 240)",
        denied,
    )
    .await;
    refused(
        pool,
        auditor,
        "UPDATE audit.chain_head SET link_seq = link_seq + 1",
        denied,
    )
    .await;
    refused(
        pool,
        auditor,
        "INSERT INTO audit.id_findings SELECT * FROM audit.id_findings",
        denied,
    )
    .await;
    // It records its verify runs (through the function), and reads the views.
    as_role(pool, auditor, RECORD_OK_RUN)
        .await
        .expect("the auditor records a verify run");

    assert_eq!(count_rows(pool).await, n as i64);
    let report = verify_chain(&Reader::new(Db::from_pool(pool.clone())))
        .await
        .expect("verify");
    assert!(report.ok && report.rows == n as i64, "{report:?}");
}

/// The daemon's writer refreshes the partitioned log's statistics (which autovacuum never takes)
/// once the log has grown by a tenth plus 1,000 rows since they were taken, and not before.
#[tokio::test]
async fn the_writer_refreshes_the_logs_statistics_when_it_grew() {
    let db = TestDb::create().await;
    let pool = &db.pool;
    let sink = Sink::new(Db::from_pool(pool.clone()), "test");
    let analyze = "SELECT audit.analyze_log()";
    let as_writer = |sql: &'static str| async move {
        let mut tx = pool.begin().await.expect("begin");
        sqlx::query("SET LOCAL ROLE event_audit_writer")
            .execute(&mut *tx)
            .await
            .expect("set role");
        let analyzed: bool = sqlx::query_scalar(sql)
            .fetch_one(&mut *tx)
            .await
            .expect("analyze_log");
        tx.commit().await.expect("commit");
        analyzed
    };
    let estimate = || async {
        sqlx::query_scalar::<_, f32>(
            "SELECT reltuples FROM pg_class WHERE oid = 'audit.events'::regclass",
        )
        .fetch_one(pool)
        .await
        .expect("reltuples")
    };
    sink.write_batch(&mut records("STATS", 500, 1, now_us()))
        .await
        .expect("write");
    assert!(!as_writer(analyze).await, "500 rows: under the threshold");
    assert!(estimate().await < 0.0, "never analyzed");
    sink.write_batch(&mut records("STATS2", 1000, 1, now_us()))
        .await
        .expect("write");
    assert!(as_writer(analyze).await, "1,500 rows: over the threshold");
    assert_eq!(estimate().await, 1500.0);
    assert!(!as_writer(analyze).await, "nothing new since");
}

/// How the tampering test verifies: plain `verify`, or the auditor's routine run.
enum Check {
    Plain,
    Witnessed {
        public: PathBuf,
        stream: String,
        state: String,
        _witness: Witness,
    },
}

impl Check {
    /// Records the same load as the plain case with a daemon that signs a checkpoint, and makes
    /// the auditor's first (genuine) run, which starts the state.
    async fn witnessed(db: &TestDb, ts: &TestStream, dir: &Path) -> Check {
        let stream = format!("{}_CP", ts.name);
        let witness = Witness(stream.clone());
        let (private, public, _) = write_keys(dir, &format!("event-audit/{}", db.name), 3);
        ts.publish_load(40, 3).await;
        let mut s = settings(db, ts);
        s.ingest.batch_size = 10;
        s.witness.signing_key_file = Some(private);
        s.witness.checkpoint_stream = stream.clone();
        run_until_idle(s).await;
        let check = Check::Witnessed {
            public,
            stream,
            state: dir.join("state.json").display().to_string(),
            _witness: witness,
        };
        let v = check.run(&db.url).await;
        assert_eq!(v.code, Some(0), "{v:?}");
        assert_eq!(v.report["rows"], 40, "{v:?}");
        assert_eq!(v.report["witness"]["witnessed_size"], 40, "{v:?}");
        check
    }

    async fn run(&self, url: &str) -> Verify {
        let Check::Witnessed {
            public,
            stream,
            state,
            ..
        } = self
        else {
            return verify(url).await;
        };
        let r = verify_witness(url, public, stream, &["--state-file", state]).await;
        Verify {
            code: r.code,
            report: serde_json::from_str(r.stdout.trim()).expect("one JSON document"),
            stdout: r.stdout,
            stderr: r.stderr,
        }
    }

    /// After the row is put back: plain `verify` holds again; the routine run still fails on
    /// the break it remembers (`broken`: the run that found it), until it is acknowledged.
    async fn intact_again(&self, url: &str, broken: &Verify) {
        let Check::Witnessed { state, .. } = self else {
            return assert_verifies(url, 40).await;
        };
        let id = broken.report["auditor_state"]["open_break"]["id"]
            .as_str()
            .expect("the break was remembered")
            .to_owned();
        let v = self.run(url).await;
        assert_eq!(v.code, Some(1), "{v:?}");
        assert_eq!(v.report["ok"], true, "{v:?}");
        assert!(v.stderr.contains(&id), "{v:?}");
        let Check::Witnessed { public, stream, .. } = self else {
            return;
        };
        let r = verify_witness(
            url,
            public,
            stream,
            &["--state-file", state, "--acknowledge-break", &id],
        )
        .await;
        assert_eq!(r.code, Some(0), "{r:?}");
        let v = self.run(url).await;
        assert_eq!(v.code, Some(0), "{v:?}");
        assert_eq!(v.report["rows"], 40, "{v:?}");
    }
}
