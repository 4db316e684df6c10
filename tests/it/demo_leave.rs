//! What the demo leaves behind when it stops, against real NATS JetStream and PostgreSQL (a
//! stream and a database of this test's own): with `--keep`, its stream and database; without,
//! neither, except a database that is not the demo's own, which is never dropped. The lines it
//! prints say which, and, kept, what they still answer (not a new reconciliation: the simulated
//! platform stops with the demo).

use crate::support::db::admin_url;
use crate::support::{TestDb, TestStream};
use event_audit::test_support::dev::demo::leave;

async fn stream_exists(ts: &TestStream) -> bool {
    ts.js.get_stream(&ts.name).await.is_ok()
}

async fn database_exists(name: &str) -> bool {
    let admin = sqlx::PgPool::connect(&admin_url()).await.expect("admin");
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_database WHERE datname = $1")
        .bind(name)
        .fetch_one(&admin)
        .await
        .expect("pg_database");
    n == 1
}

#[tokio::test]
async fn the_demo_drops_its_stream_and_its_own_database_unless_kept() {
    let db = TestDb::create().await;
    let nats = TestStream::create("demo_leave_a").await;
    let settings = nats.settings().nats;

    // --keep: both stay, and it says so.
    let said = |lines: Vec<Result<String, String>>| -> Vec<String> {
        lines
            .into_iter()
            .map(|l| l.unwrap_or_else(|e| panic!("a warning: {e}")))
            .collect()
    };
    let lines = said(leave(&settings, &nats.name, &db.url, true, true).await);
    assert!(
        lines[0].starts_with("--keep: left the demo's stream"),
        "{lines:?}"
    );
    // What is left answers reading commands; a new reconciliation is not promised.
    assert!(
        lines[1].contains("event-audit verify --database-url")
            && lines[1].contains("a new `reconcile` does not")
            && lines[1].contains("the simulated one stopped with the demo"),
        "{lines:?}"
    );
    assert!(stream_exists(&nats).await);
    assert!(database_exists(&db.name).await);

    // A database given with --database-url is never dropped; the stream is.
    let lines = said(leave(&settings, &nats.name, &db.url, false, false).await);
    assert_eq!(
        lines[0],
        format!("dropped the demo's stream {}", nats.name),
        "{lines:?}"
    );
    assert!(lines[1].starts_with("kept database"), "{lines:?}");
    assert!(!stream_exists(&nats).await);
    assert!(database_exists(&db.name).await);

    // Its own database is dropped with its stream.
    let other = TestStream::create("demo_leave_b").await;
    let lines = said(leave(&settings, &other.name, &db.url, true, false).await);
    assert!(
        lines[1].starts_with("dropped the demo's database"),
        "{lines:?}"
    );
    assert!(lines[2].contains("--keep"), "{lines:?}");
    assert!(!stream_exists(&other).await);
    assert!(!database_exists(&db.name).await);

    // What it cannot drop is a warning, not a line of its report.
    let gone = leave(&settings, &other.name, &db.url, false, false).await;
    assert!(
        gone[0]
            .as_ref()
            .is_err_and(|e| e.starts_with("could not drop the demo's stream")),
        "{gone:?}"
    );
}
