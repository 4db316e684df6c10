//! The Postgres audit log: opening (create, migrate, writer role), and writing one batch in one
//! transaction (binary COPY + id findings + one hash-chain link). Only `store` writes SQL.

mod copy;
pub mod verify;

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use sqlx::migrate::MigrateDatabase;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, Executor, PgConnection, PgPool, Postgres, Row};

use crate::record::Record;
use copy::CopyBuf;

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
        recs.sort_by(|a, b| {
            (&*a.stream, a.stream_seq, a.published_at).cmp(&(
                &*b.stream,
                b.stream_seq,
                b.published_at,
            ))
        });
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
            let (a, b) = (&recs[i - 1], &recs[i]);
            if a.stream == b.stream
                && a.stream_seq == b.stream_seq
                && a.published_at == b.published_at
            {
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
        let findings = id_findings(&mut tx, &live).await?;
        out.duplicates = findings.iter().filter(|f| f.duplicate).count();
        out.conflicts = findings.len() - out.duplicates;

        let mut buf = CopyBuf::with_capacity(live.iter().map(|r| r.raw.len() * 2 + 256).sum());
        let mut batch_digest = Sha256::new();
        for r in &live {
            encode(&mut buf, r, batch_id, mode.null_payloads);
            batch_digest.update(r.row_hash);
        }
        let mut copy = tx.copy_in_raw(&copy_statement()).await.ctx("start COPY")?;
        copy.send(buf.finish()).await.ctx("COPY")?;
        copy.finish().await.ctx("finish COPY")?;
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
        out.link_seq = link_seq;
        Ok(out)
    }
}

/// The COPY statement the writer uses.
pub fn copy_statement() -> String {
    format!("COPY audit.events ({COLUMNS}) FROM STDIN WITH (FORMAT binary)")
}

/// The binary COPY body for `recs` (benchmarks: the database ceiling uses the same bytes).
pub fn copy_body(recs: &[Record], batch_id: i64) -> Vec<u8> {
    let mut buf = CopyBuf::with_capacity(recs.iter().map(|r| r.raw.len() * 2 + 256).sum());
    for r in recs {
        encode(&mut buf, r, batch_id, false);
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

/// A later message with an envelope id already seen.
struct Finding {
    idx: usize,
    duplicate: bool,
    first: (String, i64, DateTime<Utc>),
}

/// The first occurrence of an envelope id, as a later one is compared with it.
struct First {
    at: (String, i64, DateTime<Utc>),
    digest: Vec<u8>,
    event_type: Option<String>,
    event_version: Option<String>,
    payload: Option<String>,
}

impl First {
    fn of(r: &Record) -> First {
        First {
            at: (r.stream.to_string(), r.stream_seq, r.published_at),
            digest: r.id_digest.map(|d| d.to_vec()).unwrap_or_default(),
            event_type: r.event_type.clone(),
            event_version: r.event_version.clone(),
            payload: r.payload_text().map(str::to_owned),
        }
    }

    /// Same event, same payload (byte for byte, or up to formatting: compared as JSON values).
    fn same_event(&self, r: &Record) -> bool {
        r.id_digest.is_some_and(|d| d[..] == self.digest[..])
            || (self.event_type == r.event_type
                && self.event_version == r.event_version
                && match (self.payload.as_deref(), r.payload_text()) {
                    (Some(a), Some(b)) => {
                        serde_json::from_str::<serde_json::Value>(a).ok()
                            == serde_json::from_str::<serde_json::Value>(b).ok()
                    }
                    _ => false,
                })
    }

    fn finding(&self, idx: usize, r: &Record) -> Finding {
        Finding {
            idx,
            duplicate: self.same_event(r),
            first: self.at.clone(),
        }
    }
}

/// Claims the batch's envelope ids; reports those already claimed as duplicates (same name and
/// payload) or conflicts (different). A repeat within the batch is compared with, and points
/// to, the id's first occurrence: an earlier batch's when there is one, else the batch's own.
async fn id_findings(tx: &mut PgConnection, live: &[&Record]) -> Result<Vec<Finding>, StoreError> {
    let mut first_in_batch: HashMap<&str, usize> = HashMap::new();
    let mut repeats: Vec<(usize, usize)> = Vec::new();
    let mut findings = Vec::new();
    let (mut ids, mut streams, mut seqs, mut times, mut digests) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, r) in live.iter().enumerate() {
        let (Some(id), Some(digest)) = (r.event_id.as_deref(), r.id_digest) else {
            continue;
        };
        if let Some(&j) = first_in_batch.get(id) {
            repeats.push((i, j));
            continue;
        }
        first_in_batch.insert(id, i);
        ids.push(id);
        streams.push(&*r.stream);
        seqs.push(r.stream_seq);
        times.push(r.published_at);
        digests.push(digest.to_vec());
    }
    if ids.is_empty() {
        return Ok(findings);
    }
    let claimed: Vec<String> = sqlx::query_scalar(
        "INSERT INTO audit.event_ids (event_id, stream, stream_seq, published_at, digest) \
         SELECT * FROM unnest($1::text[], $2::text[], $3::int8[], $4::timestamptz[], $5::bytea[]) \
         ON CONFLICT (event_id) DO NOTHING RETURNING event_id",
    )
    .bind(&ids)
    .bind(&streams)
    .bind(&seqs)
    .bind(&times)
    .bind(&digests)
    .fetch_all(&mut *tx)
    .await
    .ctx("claim event ids")?;
    // Ids first seen in an earlier batch.
    let mut earlier: HashMap<String, First> = HashMap::new();
    if claimed.len() != ids.len() {
        let claimed: HashSet<&str> = claimed.iter().map(String::as_str).collect();
        let seen: Vec<&str> = ids
            .iter()
            .copied()
            .filter(|id| !claimed.contains(id))
            .collect();
        let rows = sqlx::query(
            "SELECT i.event_id, i.stream, i.stream_seq, i.published_at, i.digest, e.event_type, e.event_version, e.payload::text \
             FROM audit.event_ids i LEFT JOIN audit.events e \
               ON e.stream = i.stream AND e.stream_seq = i.stream_seq AND e.published_at = i.published_at \
             WHERE i.event_id = ANY($1)",
        )
        .bind(&seen)
        .fetch_all(&mut *tx)
        .await
        .ctx("look up event ids")?;
        for row in rows {
            let id: String = row.get(0);
            let Some(&i) = first_in_batch.get(id.as_str()) else {
                continue;
            };
            let first = First {
                at: (row.get(1), row.get(2), row.get(3)),
                digest: row.get(4),
                event_type: row.get(5),
                event_version: row.get(6),
                payload: row.get(7),
            };
            findings.push(first.finding(i, live[i]));
            earlier.insert(id, first);
        }
    }
    for (i, j) in repeats {
        let id = live[i].event_id.as_deref().unwrap_or_default();
        let finding = match earlier.get(id) {
            Some(first) => first.finding(i, live[i]),
            None => First::of(live[j]).finding(i, live[i]),
        };
        findings.push(finding);
    }
    Ok(findings)
}

async fn insert_findings(
    tx: &mut PgConnection,
    live: &[&Record],
    findings: &[Finding],
    batch_id: i64,
) -> Result<(), StoreError> {
    let rec = |f: &Finding| live[f.idx];
    let streams: Vec<&str> = findings.iter().map(|f| &*rec(f).stream).collect();
    let seqs: Vec<i64> = findings.iter().map(|f| rec(f).stream_seq).collect();
    let times: Vec<DateTime<Utc>> = findings.iter().map(|f| rec(f).published_at).collect();
    let ids: Vec<&str> = findings
        .iter()
        .map(|f| rec(f).event_id.as_deref().unwrap_or_default())
        .collect();
    let kinds: Vec<&str> = findings
        .iter()
        .map(|f| if f.duplicate { "duplicate" } else { "conflict" })
        .collect();
    let fs: Vec<&str> = findings.iter().map(|f| f.first.0.as_str()).collect();
    let fq: Vec<i64> = findings.iter().map(|f| f.first.1).collect();
    let ft: Vec<DateTime<Utc>> = findings.iter().map(|f| f.first.2).collect();
    sqlx::query(
        "INSERT INTO audit.id_findings (stream, stream_seq, published_at, event_id, finding, \
         first_stream, first_stream_seq, first_published_at, batch_id) \
         SELECT *, $9 FROM unnest($1::text[], $2::int8[], $3::timestamptz[], $4::text[], $5::text[], \
         $6::text[], $7::int8[], $8::timestamptz[])",
    )
    .bind(&streams)
    .bind(&seqs)
    .bind(&times)
    .bind(&ids)
    .bind(&kinds)
    .bind(&fs)
    .bind(&fq)
    .bind(&ft)
    .bind(batch_id)
    .execute(&mut *tx)
    .await
    .ctx("record id findings")?;
    Ok(())
}

/// A database URL with its password replaced, for messages.
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        Ok(u) => u.to_string(),
        Err(_) => "<unparsable database URL>".into(),
    }
}

fn redact_error(msg: &str) -> String {
    // sqlx's URL errors do not echo the URL; keep the message short anyway.
    msg.chars().take(200).collect()
}
