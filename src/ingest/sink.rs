//! The sink: writes one batch in one transaction through the log's [`Appender`] (which owns the
//! transaction, the rows' binary COPY and the hash-chain link), adding ingest's own writes in
//! it (envelope-id claims and findings, drift observations). On success every message of the
//! batch may be acked.

mod drift;
mod ids;
mod refused;

use std::time::{Duration, Instant};

use sqlx::PgConnection;

use crate::db::{backend_pid, forget, Class, Ctx, Db, DbError};
use crate::log::append::{Appender, BatchWrites};
use crate::row::record::Record;
use ids::{id_findings, insert_findings};

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
    /// Payloads PostgreSQL refused as jsonb although they passed the check (kept in `raw`).
    pub(crate) refused: usize,
    /// Rows PostgreSQL refused as data, kept as bus facts and `raw` with the reason.
    pub(crate) reduced: usize,
    /// Per event: undeclared field paths the log had never seen before this batch.
    pub new_fields: Vec<(String, u64)>,
}

/// Writes batches into the audit log.
#[derive(Clone)]
pub struct Sink {
    db: Db,
    /// Undeclared field paths the log is known to hold.
    known_paths: std::sync::Arc<drift::KnownPaths>,
    /// This daemon's name in the links it writes.
    instance: std::sync::Arc<str>,
    /// A recent batch repeated envelope ids (see `ids::id_findings`).
    replaying: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Sink {
    /// The log this sink appends to.
    pub(crate) fn log(&self) -> crate::log::Log {
        crate::log::Log::new(self.db.clone(), &self.instance)
    }

    pub fn new(db: Db, instance: &str) -> Sink {
        Sink {
            db,
            known_paths: std::sync::Arc::default(),
            instance: std::sync::Arc::from(instance),
            replaying: std::sync::Arc::default(),
        }
    }

    fn pool(&self) -> &sqlx::PgPool {
        self.db.pool()
    }

    /// Records that this binary's catalogue judges rows from now on (first use only).
    pub(crate) async fn register_catalogue(&self, fingerprint: &str) -> Result<(), DbError> {
        sqlx::query(
            "INSERT INTO audit.catalogues (fingerprint) VALUES ($1) ON CONFLICT DO NOTHING",
        )
        .bind(fingerprint)
        .execute(self.pool())
        .await
        .ctx("record the catalogue fingerprint")?;
        Ok(())
    }

    /// Writes one batch in one transaction: rows, id findings, one chain link. Records already
    /// in the log (redeliveries) are skipped; a payload PostgreSQL refuses as jsonb is kept in
    /// `raw` only, with the reason, for that message alone; a row PostgreSQL still refuses as
    /// data is reduced to its bus facts and `raw`, with the reason. On success every message of
    /// the batch may be acked.
    ///
    /// The whole write, connection included, is bounded by `database.write_timeout`: past it
    /// the connection is forgotten (never returned to the pool) and `DbError::Timeout`
    /// (transient) returned, so a silent network costs a retry, never the pipeline.
    pub async fn write_batch(&self, recs: &mut [Record]) -> Result<BatchOutcome, DbError> {
        recs.sort_by(|a, b| a.log_key().cmp(&b.log_key()));
        let limit = self.db.write_timeout();
        let mut held = None;
        // The connection's server process, so that a write cut off by the timeout can end its
        // session (one round trip per batch, outside the transaction).
        let mut pid = None;
        let written = tokio::time::timeout(limit, async {
            let conn = held.insert(self.db.acquire().await?);
            pid = Some(backend_pid(conn).await?);
            self.write_on(conn, recs).await
        })
        .await;
        match written {
            Ok(r) => r,
            Err(_) => {
                if let Some(conn) = held.take() {
                    forget(conn);
                }
                if let Some(pid) = pid {
                    self.db.end_session(pid).await;
                }
                Err(self.db.timed_out("batch write", limit))
            }
        }
    }

    async fn write_on(
        &self,
        conn: &mut PgConnection,
        recs: &mut [Record],
    ) -> Result<BatchOutcome, DbError> {
        // Only a redelivery (or a message fetched by its sequence, delivery count 0) can already
        // be in the log; anything else that is (a consumer recreated over an old stream) shows
        // up as a unique violation and takes this path too.
        let mut precheck = recs.iter().any(|r| r.delivery_count != 1);
        let (mut isolated, mut reduced) = (0usize, 0usize);
        let mut tried_isolating = false;
        let mut tried_reducing = false;
        // A concurrent writer (a redelivery in another batch, another daemon) may commit a row
        // of this batch after the check: check again, a few times.
        let mut rechecks = 3;
        loop {
            match self.try_write(conn, recs, precheck, true).await {
                Ok(mut out) => {
                    out.refused = isolated;
                    out.reduced = reduced;
                    return Ok(out);
                }
                Err(e) => match e.class() {
                    Class::Duplicate if !precheck => precheck = true,
                    Class::Duplicate if rechecks > 0 => rechecks -= 1,
                    Class::Data if !tried_isolating => {
                        tried_isolating = true;
                        isolated = refused::isolate(conn, recs).await?;
                        tracing::warn!(
                            sqlstate = e.sqlstate().as_deref().unwrap_or("-"),
                            refused = isolated,
                            "payloads refused as jsonb are kept in raw only, with the reason"
                        );
                    }
                    Class::Data if !tried_reducing => {
                        tried_reducing = true;
                        reduced = self.reduce_refused_rows(conn, recs, precheck).await?;
                        tracing::warn!(
                            sqlstate = e.sqlstate().as_deref().unwrap_or("-"),
                            rows = reduced,
                            "rows PostgreSQL refuses as data are kept as bus facts and raw bytes, with the reason"
                        );
                    }
                    _ => return Err(e),
                },
            }
        }
    }

    /// Finds, by bisection in transactions that are rolled back, the records whose rows
    /// PostgreSQL refuses as data although their payloads pass, and reduces each to what it
    /// cannot refuse ([`Record::reduce_to_raw`]). Returns how many.
    async fn reduce_refused_rows(
        &self,
        conn: &mut PgConnection,
        recs: &mut [Record],
        precheck: bool,
    ) -> Result<usize, DbError> {
        let mut pending: Vec<Vec<usize>> = vec![(0..recs.len()).collect()];
        let mut refused: Vec<(usize, String)> = Vec::new();
        while let Some(group) = pending.pop() {
            if group.is_empty() {
                continue;
            }
            let probe: Vec<Record> = group.iter().map(|&i| recs[i].clone()).collect();
            match self.try_write(conn, &probe, precheck, false).await {
                Ok(_) => {}
                Err(e) if e.class() == Class::Data => {
                    if group.len() == 1 {
                        let code = e.sqlstate().unwrap_or_default();
                        refused.push((
                            group[0],
                            format!("row_refused_by_postgres: SQLSTATE {code}"),
                        ));
                    } else {
                        let (a, b) = group.split_at(group.len() / 2);
                        pending.push(a.to_vec());
                        pending.push(b.to_vec());
                    }
                }
                // A duplicate in a probe is not this message's fault: the real write sorts it out.
                Err(e) if e.class() == Class::Duplicate => {}
                Err(e) => return Err(e),
            }
        }
        let n = refused.len();
        for (i, reason) in refused {
            recs[i].reduce_to_raw(reason);
        }
        Ok(n)
    }

    /// The batch's transaction, through the log's appender; committed when `commit`, else
    /// rolled back (a probe). Ingest's writes inside it: the envelope-id claims (before the
    /// rows), the id findings and, when committing, the drift observations (after them).
    async fn try_write(
        &self,
        conn: &mut PgConnection,
        recs: &[Record],
        precheck: bool,
        commit: bool,
    ) -> Result<BatchOutcome, DbError> {
        let mut writes = IngestWrites {
            sink: self,
            commit,
            findings: Vec::new(),
            observed: drift::Observed::default(),
            t_ids: Duration::ZERO,
            t_obs: Duration::ZERO,
        };
        let appender = Appender::begin(conn, &self.instance).await?;
        let a = appender.batch(recs, precheck, commit, &mut writes).await?;
        let mut out = BatchOutcome {
            redelivered: a.redelivered,
            ..BatchOutcome::default()
        };
        out.duplicates = writes.findings.iter().filter(|f| f.duplicate).count();
        out.conflicts = writes.findings.len() - out.duplicates;
        if !commit || a.inserted == 0 {
            return Ok(out);
        }
        out.inserted = a.inserted;
        out.new_fields = writes.observed.new_paths;
        self.known_paths.remember(writes.observed.pairs);
        let (t_ids, t_copy, t_obs) = (writes.t_ids, a.copy, writes.t_obs);
        let total = a.started.map_or(Duration::ZERO, |t| t.elapsed());
        tracing::trace!(
            rows = a.inserted,
            ids_ms = t_ids.as_secs_f64() * 1e3,
            copy_ms = t_copy.as_secs_f64() * 1e3,
            observe_ms = t_obs.as_secs_f64() * 1e3,
            link_commit_ms = total.saturating_sub(t_ids + t_copy + t_obs).as_secs_f64() * 1e3,
            "batch timings"
        );
        out.link_seq = a.link_seq;
        Ok(out)
    }
}

/// Ingest's writes inside a batch's transaction, and what they found.
struct IngestWrites<'s> {
    sink: &'s Sink,
    /// A committed write (a probe observes no drift).
    commit: bool,
    findings: Vec<ids::Finding>,
    observed: drift::Observed,
    t_ids: Duration,
    t_obs: Duration,
}

impl BatchWrites for IngestWrites<'_> {
    async fn before_rows(
        &mut self,
        tx: &mut PgConnection,
        live: &[&Record],
        batch_id: i64,
    ) -> Result<(), DbError> {
        let t = Instant::now();
        self.findings = id_findings(tx, live, batch_id, &self.sink.replaying).await?;
        self.t_ids = t.elapsed();
        Ok(())
    }

    async fn after_rows(
        &mut self,
        tx: &mut PgConnection,
        live: &[&Record],
        batch_id: i64,
    ) -> Result<(), DbError> {
        if !self.findings.is_empty() {
            insert_findings(tx, live, &self.findings, batch_id).await?;
        }
        let t = Instant::now();
        if self.commit {
            let fp = crate::decode::catalogue::FINGERPRINT;
            self.observed = drift::observe(tx, live, batch_id, fp, &self.sink.known_paths).await?;
        }
        self.t_obs = t.elapsed();
        Ok(())
    }
}

impl Sink {
    /// One transaction holding one COPY of a prepared body into `table` and nothing else (the database
    /// ceiling of `scripts/bench-ingest.sh`: no id claims, no chain link).
    #[cfg(feature = "dev")]
    pub(crate) async fn copy_raw(&self, body: Vec<u8>, table: &str) -> Result<(), DbError> {
        let mut tx = self.pool().begin().await.ctx("begin")?;
        let mut copy = tx
            .copy_in_raw(&crate::log::append::copy_statement_into(table))
            .await
            .ctx("start COPY")?;
        copy.send(body).await.ctx("COPY")?;
        copy.finish().await.ctx("finish COPY")?;
        tx.commit().await.ctx("commit")
    }
}
