//! The PostgreSQL connection: opening the audit log as its writer (create the database if
//! missing, migrate, work as the writer role) or as a reader (never create, never migrate), and
//! the one place where database errors are classified by SQLSTATE; whether it is a standby.

mod error;
mod tls;

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, Executor, PgConnection, PgPool, Postgres};

use crate::config::{redact_url, DatabaseSettings};
pub(crate) use error::{Class, Ctx, DbError};

/// The role the daemon works as (it cannot UPDATE, DELETE or TRUNCATE the log).
pub(crate) const WRITER_ROLE: &str = "event_audit_writer";

/// How long a readiness ping may take.
const PING_TIMEOUT: Duration = Duration::from_secs(2);

/// How many times applying the migrations is tried when a deadlock rolls one back.
const MIGRATION_ATTEMPTS: u32 = 3;

/// A pool on the audit log's database. Cheap to clone.
#[derive(Clone)]
pub struct Db {
    pool: PgPool,
    /// Host, port and database, for messages (never credentials).
    place: String,
    /// The client-side bound of one batch write (`database.write_timeout`).
    write_timeout: Duration,
    /// Whether its sessions are encrypted (TLS), as the server says; `None` when not asked.
    encrypted: Option<bool>,
}

/// `host:port/database` of a URL, for messages.
fn place_of(opts: &PgConnectOptions) -> String {
    format!(
        "{}:{}/{}",
        opts.get_host(),
        opts.get_port(),
        opts.get_database().unwrap_or("?")
    )
}

fn options(s: &DatabaseSettings) -> Result<PgConnectOptions, DbError> {
    if let Some(why) = crate::config::urls::database_url_problem(&s.url) {
        return Err(DbError::Url {
            url: redact_url(&s.url),
            reason: why.to_owned(),
        });
    }
    let opts: PgConnectOptions = s.url.parse().map_err(|e: sqlx::Error| DbError::Url {
        url: redact_url(&s.url),
        reason: e.to_string().chars().take(200).collect(),
    })?;
    let opts = tls::apply(opts, s)?;
    Ok(opts.log_slow_statements(LIBRARY_NOTICES, SLOW_STATEMENT))
}

/// The same server's maintenance database `postgres`, to look up and create the log's own.
fn maintenance(opts: &PgConnectOptions) -> PgConnectOptions {
    opts.clone().database("postgres")
}

/// Whether the database of `opts` exists (asked of the maintenance database, with the same
/// TLS and credentials).
async fn database_exists(opts: &PgConnectOptions) -> Result<bool, sqlx::Error> {
    let name = opts.get_database().unwrap_or("postgres").to_owned();
    let mut conn = PgConnection::connect_with(&maintenance(opts)).await?;
    let exists = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
        .bind(name)
        .fetch_one(&mut conn)
        .await;
    let _ = conn.close().await;
    exists
}

/// Creates the database of `opts`.
async fn create_database(opts: &PgConnectOptions) -> Result<(), sqlx::Error> {
    let name = opts
        .get_database()
        .unwrap_or("postgres")
        .replace('"', "\"\"");
    let mut conn = PgConnection::connect_with(&maintenance(opts)).await?;
    let created = conn
        .execute(format!("CREATE DATABASE \"{name}\"").as_str())
        .await;
    let _ = conn.close().await;
    created.map(|_| ())
}

/// Whether the sessions of `pool` are encrypted (asked of the server), and a WARN when a
/// database on another machine is reached in clear.
/// Asked on a connection of the login role (a session's `pg_stat_ssl` row is hidden from a role
/// it switched to).
async fn check_encrypted(
    conn: &mut PgConnection,
    place: &str,
    opts: &PgConnectOptions,
) -> Option<bool> {
    let ask =
        sqlx::query_scalar::<_, bool>("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            .fetch_one(conn);
    let encrypted = tokio::time::timeout(PING_TIMEOUT, ask).await.ok()?.ok()?;
    if !encrypted && !tls::is_local(opts) {
        tracing::warn!(place = %place, "the connection to PostgreSQL is not encrypted: the audit log's payloads cross the network in clear; set sslmode=verify-full (database.tls_mode) and database.tls_ca_file");
    } else if !encrypted && !tls::may_be_plain(opts) {
        tracing::debug!(place = %place, "PostgreSQL session not encrypted");
    }
    Some(encrypted)
}

/// The level of sqlx's own notices of a statement slower than [`SLOW_STATEMENT`] and of a slow
/// pool acquire (its default is WARN, which put known long statements, such as the statistics
/// refresh `audit.analyze_log()`, and waits for a busy pool among the daemon's warnings): INFO,
/// below the default filter's `sqlx=warn`, shown by `RUST_LOG=info`. What is too slow is the
/// daemon's own to say (its bounds, metrics and WARN lines).
const LIBRARY_NOTICES: log::LevelFilter = log::LevelFilter::Info;

/// What sqlx calls a slow statement (its default).
const SLOW_STATEMENT: Duration = Duration::from_secs(1);

async fn bounded<T>(
    place: &str,
    limit: Duration,
    action: &'static str,
    f: impl std::future::Future<Output = Result<T, sqlx::Error>>,
) -> Result<T, DbError> {
    match tokio::time::timeout(limit, f).await {
        Ok(r) => r.ctx(action),
        Err(_) => Err(DbError::Timeout {
            action,
            place: place.to_owned(),
            after: limit,
        }),
    }
}

impl Db {
    /// Whether the server answers (and lets this user look up its databases), changing nothing:
    /// what `run` checks before it creates anything. Returns whether the database exists.
    pub(crate) async fn reach(s: &DatabaseSettings) -> Result<bool, DbError> {
        tls::explained(Self::reach_as_is(s).await, s).await
    }

    async fn reach_as_is(s: &DatabaseSettings) -> Result<bool, DbError> {
        let opts = options(s)?;
        let place = place_of(&opts);
        bounded(
            &place,
            s.connect_timeout.get(),
            "look up the database",
            database_exists(&opts),
        )
        .await
        .map_err(|e| e.at(&place))
    }

    /// The writer's pool: creates the database if missing, applies the migrations as the
    /// connecting user, then opens connections that work as `WRITER_ROLE`.
    pub async fn open_writer(s: &DatabaseSettings) -> Result<Db, DbError> {
        tls::explained(Self::open_writer_as_is(s).await, s).await
    }

    async fn open_writer_as_is(s: &DatabaseSettings) -> Result<Db, DbError> {
        let opts = options(s)?;
        let place = place_of(&opts);
        let limit = s.connect_timeout.get();
        let exists = bounded(
            &place,
            limit,
            "look up the database",
            database_exists(&opts),
        )
        .await
        .map_err(|e| e.at(&place))?;
        if !exists {
            let created =
                bounded(&place, limit, "create the database", create_database(&opts)).await;
            // Another instance may have created it meanwhile.
            if let Err(e) = created {
                let exists = bounded(
                    &place,
                    limit,
                    "look up the database",
                    database_exists(&opts),
                )
                .await;
                if !exists.unwrap_or(false) {
                    return Err(e.at(&place));
                }
            }
        }
        // A deadlock with another session (a migration's DDL against another daemon's
        // writes) rolls the migration back: try again on a new connection, a few times.
        let mut attempt = 1u32;
        let mut encrypted = None;
        loop {
            let mut conn = bounded(&place, limit, "connect", PgConnection::connect_with(&opts))
                .await
                .map_err(|e| e.at(&place))?;
            let ran = sqlx::migrate!("./migrations").run(&mut conn).await;
            if let Err(sqlx::migrate::MigrateError::VersionMissing(_)) = &ran {
                let newer = error::newer_schema(&mut conn, &place).await;
                let _ = conn.close().await;
                return Err(newer);
            }
            if encrypted.is_none() {
                encrypted = check_encrypted(&mut conn, &place, &opts).await;
            }
            let _ = conn.close().await;
            match ran {
                Ok(()) => break,
                Err(e) if attempt < MIGRATION_ATTEMPTS && error::migration_may_retry(&e) => {
                    tracing::warn!(attempt, place = %place, error = %e, "applying migrations met a deadlock; trying again");
                    tokio::time::sleep(Duration::from_millis(250 * u64::from(attempt))).await;
                    attempt += 1;
                }
                Err(e) => {
                    return Err(DbError::Migrate {
                        place: place.clone(),
                        message: e.to_string(),
                    })
                }
            }
        }
        // Every statement and every idle moment inside a transaction is bounded on the server
        // (a transaction left open by a vanished client must not hold the chain head's lock);
        // the migrations above ran without these bounds.
        let bound = format!("{}ms", s.statement_timeout.get().as_millis().max(1));
        let opts = opts.application_name("event-audit").options([
            ("statement_timeout", bound.as_str()),
            ("idle_in_transaction_session_timeout", bound.as_str()),
            ("jit", "off"),
        ]);
        let pool = PgPoolOptions::new()
            .max_connections(s.connections)
            .acquire_timeout(limit)
            .acquire_slow_level(LIBRARY_NOTICES)
            .after_connect(|conn, _| {
                Box::pin(async move {
                    conn.execute(format!("SET ROLE {WRITER_ROLE}").as_str())
                        .await?;
                    Ok(())
                })
            })
            .connect_with(opts)
            .await
            .ctx("connect")
            .map_err(|e| e.at(&place))?;
        let db = Db {
            pool,
            place,
            write_timeout: s.write_timeout.get(),
            encrypted,
        };
        db.ensure_partitions(Utc::now()).await?;
        Ok(db)
    }

    /// A pool on an existing audit log, as the connecting user: never creates the database and never migrates. A missing database is
    /// [`DbError::Missing`]; a database without the audit schema is [`DbError::NotMigrated`].
    pub(crate) async fn open_existing(
        s: &DatabaseSettings,
        connections: u32,
    ) -> Result<Db, DbError> {
        tls::explained(Self::open_existing_as_is(s, connections).await, s).await
    }

    async fn open_existing_as_is(s: &DatabaseSettings, connections: u32) -> Result<Db, DbError> {
        // No JIT: compiling a plan over every partition cost more (0.6 s) than a proof's reads.
        let opts = options(s)?.options([("jit", "off")]);
        let place = place_of(&opts);
        let limit = s.connect_timeout.get();
        // One connection first, outside the pool: the pool retries a refused connection until
        // its acquire timeout, and would report a server that is down only then, as a timeout.
        let mut first = bounded(&place, limit, "connect", PgConnection::connect_with(&opts))
            .await
            .map_err(|e| e.at(&place))?;
        let migrated: bool =
            sqlx::query_scalar("SELECT to_regclass('public._sqlx_migrations') IS NOT NULL")
                .fetch_one(&mut first)
                .await
                .ctx("look up the audit schema")
                .map_err(|e| e.at(&place))?;
        let encrypted = check_encrypted(&mut first, &place, &opts).await;
        let _ = first.close().await;
        if !migrated {
            return Err(DbError::NotMigrated { place });
        }
        let pool = PgPoolOptions::new()
            .max_connections(connections.max(1))
            .acquire_timeout(limit)
            .acquire_slow_level(LIBRARY_NOTICES)
            .connect_with(opts)
            .await
            .ctx("connect")
            .map_err(|e| e.at(&place))?;
        Ok(Db {
            pool,
            place,
            write_timeout: s.write_timeout.get(),
            encrypted,
        })
    }

    /// Wraps an existing pool (tests); the caller decides the role.
    pub fn from_pool(pool: PgPool) -> Db {
        let place = place_of(&pool.connect_options());
        Db {
            pool,
            place,
            write_timeout: crate::config::defaults::DB_WRITE_TIMEOUT.get(),
            encrypted: None,
        }
    }

    /// Whether its sessions are encrypted, as the server said at open (`None`: not asked).
    pub(crate) fn encrypted(&self) -> Option<bool> {
        self.encrypted
    }

    /// The client-side bound of one batch write.
    pub(crate) fn write_timeout(&self) -> Duration {
        self.write_timeout
    }

    /// A connection of the pool, within the pool's acquire timeout (the connect timeout).
    pub(crate) async fn acquire(&self) -> Result<PoolConnection<Postgres>, DbError> {
        self.pool
            .acquire()
            .await
            .ctx("acquire a connection")
            .map_err(|e| e.at(&self.place))
    }

    /// The error of a call cut off after `after`. The caller must [`forget`] the connection
    /// the call was using.
    pub(crate) fn timed_out(&self, action: &'static str, after: Duration) -> DbError {
        DbError::Timeout {
            action,
            place: self.place.clone(),
            after,
        }
    }

    pub(crate) fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// `host:port/database`, for messages.
    pub fn place(&self) -> &str {
        &self.place
    }

    /// Monthly partitions from last month to three months ahead.
    pub(crate) async fn ensure_partitions(&self, now: DateTime<Utc>) -> Result<i32, DbError> {
        sqlx::query_scalar("SELECT audit.ensure_partitions($1 - interval '1 month', 5)")
            .bind(now)
            .fetch_one(&self.pool)
            .await
            .ctx("create partitions")
    }

    /// Refreshes the statistics of the partitioned log when it has grown by a tenth since they
    /// were taken (autovacuum analyzes only its partitions); whether it did.
    pub(crate) async fn analyze_log(&self) -> Result<bool, DbError> {
        sqlx::query_scalar("SELECT audit.analyze_log()")
            .fetch_one(&self.pool)
            .await
            .ctx("analyze the log")
    }

    /// Ends the server session of a connection that was forgotten after a timeout. A silent
    /// network can leave that session waiting on its client in the middle of a statement (a
    /// COPY): PostgreSQL does not cancel a statement that waits on the client, so its
    /// transaction would keep its row locks and its claimed envelope ids until TCP gives up
    /// (hours), and the retry of the same batch would wait on them. Runs with the session's own
    /// login role (`SET LOCAL ROLE NONE`: the writer role may not end sessions); bounded by two
    /// seconds; a failure is logged, and the server's own timeouts remain the fallback.
    pub(crate) async fn end_session(&self, pid: i32) {
        let end = async {
            let mut tx = self.pool.begin().await?;
            sqlx::query("SET LOCAL ROLE NONE").execute(&mut *tx).await?;
            let ended: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
                .bind(pid)
                .fetch_one(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok::<bool, sqlx::Error>(ended)
        };
        match tokio::time::timeout(PING_TIMEOUT, end).await {
            Ok(Ok(ended)) => tracing::info!(pid, ended, "ended the session of a silent connection"),
            Ok(Err(cause)) => {
                let e = DbError::Sql {
                    action: "end the session of a silent connection",
                    place: Some(self.place.clone()),
                    cause,
                };
                tracing::warn!(
                    pid,
                    error = %e,
                    "could not end the session of a silent connection; the server ends it at its own timeouts"
                );
            }
            Err(_) => tracing::warn!(
                pid,
                "no answer within 2s ending the session of a silent connection; the server ends it at its own timeouts"
            ),
        }
    }

    /// Whether a connection answers a ping within two seconds. A connection that does not is
    /// forgotten, never returned to the pool (whose check on return would wait for ever on a
    /// silent network).
    pub(crate) async fn ping(&self) -> bool {
        let Ok(Ok(mut conn)) = tokio::time::timeout(PING_TIMEOUT, self.pool.acquire()).await else {
            return false;
        };
        match tokio::time::timeout(PING_TIMEOUT, conn.ping()).await {
            Ok(r) => r.is_ok(),
            Err(_) => {
                forget(conn);
                false
            }
        }
    }
}

/// The server process behind a connection: what [`Db::end_session`] needs if the connection
/// later goes silent.
pub(crate) async fn backend_pid(conn: &mut PgConnection) -> Result<i32, DbError> {
    sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(conn)
        .await
        .ctx("read the server process id")
}

/// Takes a connection out of its pool and closes its socket without a word to the server: for
/// a connection whose call was cut off by a timeout (its state is unknown, and the pool's check
/// on return could wait for ever). The pool opens a replacement when it needs one; the server
/// ends the session on its own (`idle_in_transaction_session_timeout`, or the closed socket).
pub(crate) fn forget(conn: PoolConnection<Postgres>) {
    drop(conn.detach());
}

/// Drops a database (the demo's own, recreated at each start).
#[cfg(feature = "dev")]
pub(crate) async fn drop_database(url: &str) -> Result<(), DbError> {
    use sqlx::migrate::MigrateDatabase;
    Postgres::force_drop_database(url)
        .await
        .ctx("drop database")
}

/// Creates `table` (dropped first if it exists), a plain table of the log's columns with its
/// primary key only, that the writer role may fill: the floor of the ingest benchmarks.
#[cfg(feature = "dev")]
pub(crate) async fn create_primary_key_only_copy(
    url: &str,
    table: &str,
    like: &str,
) -> Result<(), DbError> {
    let limit = Duration::from_secs(30);
    let place = redact_url(url);
    let mut conn = bounded(&place, limit, "connect", PgConnection::connect(url)).await?;
    for sql in [
        format!("DROP TABLE IF EXISTS {table}"),
        format!("CREATE TABLE {table} (LIKE {like} INCLUDING DEFAULTS)"),
        format!("ALTER TABLE {table} ADD PRIMARY KEY (stream, stream_seq, published_at)"),
        format!("GRANT INSERT ON {table} TO {WRITER_ROLE}"),
    ] {
        bounded(
            &place,
            limit,
            "create the benchmark's table",
            sqlx::query(&sql).execute(&mut conn),
        )
        .await?;
    }
    Ok(())
}
