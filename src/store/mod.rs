//! The Postgres audit log: opening (create, migrate, writer role), and writing one batch in one
//! transaction (binary COPY + id findings + one hash-chain link). Only `store` writes SQL.

mod copy;
mod ids;
pub mod reconcile;
pub mod verify;

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use sqlx::migrate::MigrateDatabase;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, Executor, PgConnection, PgPool, Postgres, Row};

use crate::record::Record;
use copy::CopyBuf;
use ids::{id_findings, insert_findings};

/// Errors at the database boundary. Callers branch on [`StoreError::is_transient`]: a
/// transient error is retried (never quarantined, never acked); nothing here is permanent for
/// a message, because bad input is recorded as data.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database {action}: {source}")]
    Db {
        action: &'static str,
        #[source]
        source: sqlx::Error,
    },
    #[error("applying migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("invalid database URL: {0}")]
    Url(String),
}

impl StoreError {
    pub fn is_transient(&self) -> bool {
        matches!(self, StoreError::Db { .. })
    }

    fn sqlstate(&self) -> Option<String> {
        match self {
            StoreError::Db {
                source: sqlx::Error::Database(db),
                ..
            } => db.code().map(|c| c.into_owned()),
            _ => None,
        }
    }
}

trait Ctx<T> {
    fn ctx(self, action: &'static str) -> Result<T, StoreError>;
}

impl<T> Ctx<T> for Result<T, sqlx::Error> {
    fn ctx(self, action: &'static str) -> Result<T, StoreError> {
        self.map_err(|source| StoreError::Db { action, source })
    }
}

/// The role the daemon works as (it cannot UPDATE, DELETE or TRUNCATE the log).
pub const WRITER_ROLE: &str = "event_audit_writer";

const COLUMNS: &str = "stream, stream_seq, published_at, received_at, subject, delivery_count, \
    headers, envelope, event_id, event_type, event_version, status, errors, unknown_fields, \
    payload, account_number, occurred_at, raw, batch_id, row_hash";
const NCOLS: i16 = 20;

/// What one committed batch did.
#[derive(Debug, Default, Clone)]
pub struct BatchOutcome {
    /// Rows written.
    pub inserted: usize,
    /// Messages already in the log (redeliveries): acked, nothing added.
    pub redelivered: usize,
    pub duplicates: usize,
    pub conflicts: usize,
    /// The chain link this batch added (0 when it added no rows).
    pub link_seq: i64,
}

#[derive(Clone, Copy, Default)]
struct Mode {
    precheck: bool,
    null_payloads: bool,
}

/// The audit log.
#[derive(Clone)]
pub struct Store {
    pool: PgPool,
}

impl Store {
    /// Creates the database if missing, applies the migrations as the connecting user, and
    /// opens a pool whose connections work as [`WRITER_ROLE`].
    pub async fn open(url: &str, max_connections: u32) -> Result<Store, StoreError> {
        let opts: PgConnectOptions = url
            .parse()
            .map_err(|e: sqlx::Error| StoreError::Url(redact_error(&e.to_string())))?;
        if !Postgres::database_exists(url).await.ctx("lookup")? {
            if let Err(e) = Postgres::create_database(url).await {
                // Another instance may have created it meanwhile.
                if !Postgres::database_exists(url).await.ctx("lookup")? {
                    return Err(StoreError::Db {
                        action: "create",
                        source: e,
                    });
                }
            }
        }
        let mut conn = PgConnection::connect_with(&opts).await.ctx("connect")?;
        sqlx::migrate!("./migrations").run(&mut conn).await?;
        conn.close().await.ctx("close")?;
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .after_connect(|conn, _| {
                Box::pin(async move {
                    conn.execute(format!("SET ROLE {WRITER_ROLE}").as_str())
                        .await?;
                    Ok(())
                })
            })
            .connect_with(opts)
            .await
            .ctx("connect")?;
        let store = Store { pool };
        store.ensure_partitions(Utc::now()).await?;
        Ok(store)
    }

    /// Wraps an existing pool (tests); the caller decides the role.
    pub fn from_pool(pool: PgPool) -> Store {
        Store { pool }
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Monthly partitions from last month to three months ahead.
    pub async fn ensure_partitions(&self, now: DateTime<Utc>) -> Result<i32, StoreError> {
        sqlx::query_scalar("SELECT audit.ensure_partitions($1 - interval '1 month', 5)")
            .bind(now)
            .fetch_one(&self.pool)
            .await
            .ctx("create partitions")
    }

    /// Reachability, for `/readyz`.
    pub async fn ping(&self) -> bool {
        sqlx::query("SELECT 1").execute(&self.pool).await.is_ok()
    }

    /// `(link_seq, hash)` of the chain head.
    pub async fn chain_head(&self) -> Result<(i64, Vec<u8>), StoreError> {
        let row = sqlx::query("SELECT link_seq, hash FROM audit.chain_head")
            .fetch_one(&self.pool)
            .await
            .ctx("read chain head")?;
        Ok((row.get(0), row.get(1)))
    }

    /// Writes one batch in one transaction: rows, id findings, one chain link. Records already
    /// in the log (redeliveries) are skipped. On success every message of the batch may be acked.
    pub async fn write_batch(&self, recs: &mut [Record]) -> Result<BatchOutcome, StoreError> {
        recs.sort_by(|a, b| a.log_key().cmp(&b.log_key()));
        // Only a redelivery can already be in the log; anything else that is (a consumer
        // recreated over an old stream) shows up as a unique violation and takes this path too.
        let mut mode = Mode {
            precheck: recs.iter().any(|r| r.delivery_count > 1),
            null_payloads: false,
        };
        loop {
            match self.try_write(recs, mode).await {
                Ok(out) => return Ok(out),
                Err(e) => match e.sqlstate().as_deref() {
                    Some("23505") if !mode.precheck => mode.precheck = true,
                    Some(code) if code.starts_with("22") && !mode.null_payloads => {
                        tracing::warn!(
                            sqlstate = code,
                            "batch refused as data; retrying with payloads kept in raw only"
                        );
                        mode.null_payloads = true;
                    }
                    _ => return Err(e),
                },
            }
        }
    }

    async fn try_write(&self, recs: &[Record], mode: Mode) -> Result<BatchOutcome, StoreError> {
        let mut out = BatchOutcome::default();
        let mut tx = self.pool.begin().await.ctx("begin")?;
        let mut keep: Vec<bool> = vec![true; recs.len()];
        // Two deliveries of one message within a batch: keep the first.
        for i in 1..recs.len() {
            if recs[i - 1].log_key() == recs[i].log_key() {
                keep[i] = false;
            }
        }
        if mode.precheck {
            let mut by_stream: HashMap<&str, Vec<usize>> = HashMap::new();
            for (i, r) in recs.iter().enumerate() {
                by_stream.entry(&r.stream).or_default().push(i);
            }
            for (stream, idx) in by_stream {
                let seqs: Vec<i64> = idx.iter().map(|&i| recs[i].stream_seq).collect();
                let lo = idx.iter().map(|&i| recs[i].published_at).min();
                let hi = idx.iter().map(|&i| recs[i].published_at).max();
                let rows = sqlx::query(
                    "SELECT stream_seq, published_at FROM audit.events \
                     WHERE stream = $1 AND stream_seq = ANY($2) AND published_at BETWEEN $3 AND $4",
                )
                .bind(stream)
                .bind(&seqs)
                .bind(lo)
                .bind(hi)
                .fetch_all(&mut *tx)
                .await
                .ctx("look up redeliveries")?;
                let present: HashSet<(i64, DateTime<Utc>)> =
                    rows.iter().map(|r| (r.get(0), r.get(1))).collect();
                for &i in &idx {
                    if present.contains(&(recs[i].stream_seq, recs[i].published_at)) {
                        keep[i] = false;
                    }
                }
            }
        }
        out.redelivered = keep.iter().filter(|k| !**k).count();
        let live: Vec<&Record> = recs
            .iter()
            .zip(&keep)
            .filter_map(|(r, k)| k.then_some(r))
            .collect();
        if live.is_empty() {
            tx.commit().await.ctx("commit")?;
            return Ok(out);
        }
        let batch_id: i64 = sqlx::query_scalar("SELECT nextval('audit.batch_id_seq')")
            .fetch_one(&mut *tx)
            .await
            .ctx("allocate batch id")?;
        let t0 = std::time::Instant::now();
        let findings = id_findings(&mut tx, &live).await?;
        let t_ids = t0.elapsed();
        out.duplicates = findings.iter().filter(|f| f.duplicate).count();
        out.conflicts = findings.len() - out.duplicates;

        let body = copy_body(live.iter().copied(), batch_id, mode.null_payloads);
        let batch_digest = live
            .iter()
            .fold(Sha256::new(), |h, r| h.chain_update(r.row_hash));
        let mut copy = tx.copy_in_raw(&copy_statement()).await.ctx("start COPY")?;
        copy.send(body).await.ctx("COPY")?;
        copy.finish().await.ctx("finish COPY")?;
        let t_copy = t0.elapsed() - t_ids;
        if !findings.is_empty() {
            insert_findings(&mut tx, &live, &findings, batch_id).await?;
        }
        let batch_digest: [u8; 32] = batch_digest.finalize().into();
        let row_count = i32::try_from(live.len()).unwrap_or(i32::MAX);
        // One link per batch, under a short lock on the head (held until commit).
        let (link_seq,): (i64,) = sqlx::query_as(
            "WITH head AS (SELECT link_seq, hash FROM audit.chain_head WHERE id FOR UPDATE), \
             nl AS (SELECT link_seq + 1 AS link_seq, hash AS prev, \
                    sha256(hash || int8send(link_seq + 1) || int8send($1) || int4send($2) || $3) AS hash FROM head), \
             ins AS (INSERT INTO audit.chain_links (link_seq, batch_id, row_count, batch_digest, prev_hash, hash) \
                     SELECT link_seq, $1, $2, $3, prev, hash FROM nl) \
             UPDATE audit.chain_head h SET link_seq = nl.link_seq, hash = nl.hash FROM nl WHERE h.id \
             RETURNING h.link_seq",
        )
        .bind(batch_id)
        .bind(row_count)
        .bind(&batch_digest[..])
        .fetch_one(&mut *tx)
        .await
        .ctx("link chain")?;
        tx.commit().await.ctx("commit")?;
        out.inserted = live.len();
        tracing::trace!(
            rows = live.len(),
            ids_ms = t_ids.as_secs_f64() * 1e3,
            copy_ms = t_copy.as_secs_f64() * 1e3,
            link_commit_ms = (t0.elapsed() - t_ids - t_copy).as_secs_f64() * 1e3,
            "batch timings"
        );
        out.link_seq = link_seq;
        Ok(out)
    }
}

impl Store {
    /// One transaction holding one COPY of a prepared body and nothing else (the database
    /// ceiling of `scripts/bench-ingest.sh`: no id claims, no chain link).
    pub async fn copy_raw(&self, body: Vec<u8>) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await.ctx("begin")?;
        let mut copy = tx.copy_in_raw(&copy_statement()).await.ctx("start COPY")?;
        copy.send(body).await.ctx("COPY")?;
        copy.finish().await.ctx("finish COPY")?;
        tx.commit().await.ctx("commit")
    }
}

/// The COPY statement the writer uses.
pub fn copy_statement() -> String {
    format!("COPY audit.events ({COLUMNS}) FROM STDIN WITH (FORMAT binary)")
}

/// The binary COPY body for `recs`, written by the batch writer and, with the same bytes, by the
/// database-ceiling benchmark. `null_payloads` keeps every payload in `raw` only.
pub fn copy_body<'a, I>(recs: I, batch_id: i64, null_payloads: bool) -> Vec<u8>
where
    I: IntoIterator<Item = &'a Record>,
    I::IntoIter: Clone,
{
    let recs = recs.into_iter();
    let mut buf = CopyBuf::with_capacity(recs.clone().map(|r| r.raw.len() * 2 + 256).sum());
    for r in recs {
        encode(&mut buf, r, batch_id, null_payloads);
    }
    buf.finish()
}

fn encode(buf: &mut CopyBuf, r: &Record, batch_id: i64, null_payload: bool) {
    buf.row(NCOLS);
    buf.text(Some(&r.stream));
    buf.int8(r.stream_seq);
    buf.timestamptz(Some(r.published_at));
    buf.timestamptz(Some(r.received_at));
    buf.text(Some(&r.subject));
    buf.int4(r.delivery_count);
    buf.jsonb(r.headers.as_deref());
    buf.text(r.envelope);
    buf.text(r.event_id.as_deref());
    buf.text(r.event_type.as_deref());
    buf.text(r.event_version.as_deref());
    buf.text(Some(r.status.as_str()));
    buf.jsonb(r.errors.as_deref());
    buf.jsonb(r.unknown_fields.as_deref());
    buf.jsonb(if null_payload { None } else { r.payload_text() });
    buf.text(r.account_number.as_deref());
    buf.timestamptz(r.occurred_at);
    buf.bytea(&r.raw);
    buf.int8(batch_id);
    buf.bytea(&r.row_hash);
}

/// A database URL with its password replaced, for messages.
/// A database URL without its password and query string (`?password=` is valid for libpq).
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            if u.query().is_some() {
                u.set_query(Some("..."));
            }
            u.to_string()
        }
        Err(_) => "<unparsable database URL>".into(),
    }
}

/// Drops a database (the demo's own, recreated at each start).
pub async fn drop_database(url: &str) -> Result<(), StoreError> {
    Postgres::force_drop_database(url)
        .await
        .ctx("drop database")
}

fn redact_error(msg: &str) -> String {
    // sqlx's URL errors do not echo the URL; keep the message short anyway.
    msg.chars().take(200).collect()
}
