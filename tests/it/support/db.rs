//! A PostgreSQL database per test, migrated, dropped when the guard drops (a failing test
//! leaves nothing behind); databases left by killed test processes are swept at the next start.

use std::sync::atomic::{AtomicU32, Ordering};

use sqlx::postgres::PgPoolOptions;
use sqlx::{Executor, PgPool};

use event_audit::config::DatabaseSettings;
use event_audit::test_support::db::Db;

static N: AtomicU32 = AtomicU32::new(0);
const PREFIX: &str = "ea_test_";

/// The server URL of the test suite (`DATABASE_URL`, set by scripts/test.sh).
pub(crate) fn admin_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

fn url_for(db: &str) -> String {
    let mut url = url::Url::parse(&admin_url()).expect("DATABASE_URL is a URL");
    url.set_path(db);
    url.to_string()
}

async fn admin() -> PgPool {
    PgPoolOptions::new()
        .max_connections(1)
        .connect(&admin_url())
        .await
        .expect("connect to the test server (DATABASE_URL)")
}

fn pid_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Drops the databases of test processes that no longer run.
async fn sweep(admin: &PgPool) {
    let names: Vec<String> =
        sqlx::query_scalar("SELECT datname FROM pg_database WHERE datname LIKE 'ea\\_test\\_%'")
            .fetch_all(admin)
            .await
            .unwrap_or_default();
    for name in names {
        let pid = name
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('_').next())
            .and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|p| !pid_alive(p)) {
            let _ = admin
                .execute(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)").as_str())
                .await;
        }
    }
}

/// A migrated database of this test alone.
pub(crate) struct TestDb {
    pub name: String,
    /// Its URL (as the `postgres` superuser of the test server).
    pub url: String,
    /// A superuser pool on it (not the writer role).
    pub pool: PgPool,
}

impl TestDb {
    /// A new, migrated database.
    pub(crate) async fn create() -> TestDb {
        let db = TestDb::empty().await;
        Db::open_writer(&db.settings())
            .await
            .expect("migrate the test database");
        db
    }

    /// A new database without the audit schema.
    pub(crate) async fn empty() -> TestDb {
        let admin = admin().await;
        if N.load(Ordering::SeqCst) == 0 {
            sweep(&admin).await;
        }
        let name = format!(
            "{PREFIX}{}_{}_{:04x}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst),
            rand::random::<u16>()
        );
        admin
            .execute(format!("CREATE DATABASE \"{name}\"").as_str())
            .await
            .expect("create the test database");
        admin.close().await;
        let url = url_for(&name);
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .connect(&url)
            .await
            .expect("connect to the test database");
        TestDb { name, url, pool }
    }

    pub(crate) fn settings(&self) -> DatabaseSettings {
        DatabaseSettings {
            url: self.url.clone(),
            ..DatabaseSettings::default()
        }
    }

    /// `pg_dump -Fc` of this database: a nightly backup.
    pub(crate) fn backup(&self) -> Vec<u8> {
        let out = std::process::Command::new("pg_dump")
            .args(["-Fc", "-h", "127.0.0.1", "-U", "postgres", &self.name])
            .output()
            .expect("run pg_dump");
        assert!(out.status.success(), "pg_dump: {out:?}");
        out.stdout
    }

    /// A new database restored from `dump` (a backup brought back after the database was
    /// lost), as `pg_restore` does it.
    pub(crate) async fn restored(dump: &[u8]) -> TestDb {
        use std::io::Write;
        let db = TestDb::empty().await;
        let mut child = std::process::Command::new("pg_restore")
            .args(["-h", "127.0.0.1", "-U", "postgres", "-d", &db.name])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run pg_restore");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(dump)
            .expect("feed the dump");
        let out = child.wait_with_output().expect("pg_restore");
        assert!(out.status.success(), "pg_restore: {out:?}");
        db
    }

    /// The URL of a database that does not exist (for "never creates it" tests).
    pub(crate) fn missing_url() -> String {
        url_for(&format!(
            "{PREFIX}{}_missing_{:04x}",
            std::process::id(),
            rand::random::<u16>()
        ))
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        // The pool's connections belong to the test's runtime, which waits for us here: leave
        // them to `WITH (FORCE)`.
        let name = self.name.clone();
        let dropped = super::blocking(move || {
            Box::pin(async move {
                let admin = PgPoolOptions::new()
                    .max_connections(1)
                    .connect(&admin_url())
                    .await
                    .ok()?;
                admin
                    .execute(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)").as_str())
                    .await
                    .ok()
                    .map(|_| ())
            })
        });
        if dropped.is_none() {
            eprintln!("database {} may be left behind", self.name);
        }
    }
}

pub(crate) async fn count_rows(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM audit.events")
        .fetch_one(pool)
        .await
        .expect("count rows")
}

/// `(rows, distinct stream_seq, min stream_seq, max stream_seq)` of one stream.
pub(crate) async fn seq_stats(pool: &PgPool, stream: &str) -> (i64, i64, Option<i64>, Option<i64>) {
    sqlx::query_as(
        "SELECT count(*), count(DISTINCT stream_seq), min(stream_seq), max(stream_seq) \
         FROM audit.events WHERE stream = $1",
    )
    .bind(stream)
    .fetch_one(pool)
    .await
    .expect("sequence stats")
}

/// What a superuser writes to empty a row's personal columns as an erasure would, the
/// statement's `WHERE` to be appended.
pub(crate) const EMPTY_ROW: &str =
    "UPDATE audit.events SET raw = '\\x'::bytea, salt = NULL, payload = NULL, \
     headers = NULL, event_id = NULL, account_number = NULL, errors = NULL WHERE ";

/// Runs `sql` as a superuser with triggers bypassed (`session_replication_role = replica`, as
/// a database administrator could); returns the rows it changed.
pub(crate) async fn as_superuser(pool: &PgPool, sql: &str) -> u64 {
    superuser(pool, sql, None).await
}

/// [`as_superuser`] with `$1` bound to `seq`.
pub(crate) async fn as_superuser_at(pool: &PgPool, sql: &str, seq: i64) -> u64 {
    superuser(pool, sql, Some(seq)).await
}

async fn superuser(pool: &PgPool, sql: &str, seq: Option<i64>) -> u64 {
    let mut tx = pool.begin().await.expect("begin");
    sqlx::query("SET LOCAL session_replication_role = replica")
        .execute(&mut *tx)
        .await
        .expect("replica mode");
    let mut q = sqlx::query(sql);
    if let Some(seq) = seq {
        q = q.bind(seq);
    }
    let n = q.execute(&mut *tx).await.expect("tamper").rows_affected();
    tx.commit().await.expect("commit");
    n
}
