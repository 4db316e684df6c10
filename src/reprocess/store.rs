//! The SQL of `reprocess`: stored rows by key pages, re-verdicts written per page, runs opened,
//! resumed and closed (the closing hash chained under an advisory lock).

use futures::TryStreamExt;
use sqlx::Row;

use super::{Cursor, Selection, Stored, Transition};
use crate::audit::reverdict::{run_hash, Reverdict};
use crate::db::{Ctx, Db, DbError};

/// Serializes the closing of runs (the chain of run ends).
const RUN_END_LOCK: i64 = 0x7265_7665_7264_6963; // "reverdic"

pub struct ReprocessStore {
    db: Db,
}

/// A closed run.
#[derive(Debug, Clone)]
pub struct RunEnd {
    pub rows: i64,
    pub digest: [u8; 32],
    pub hash: [u8; 32],
}

impl ReprocessStore {
    pub fn new(db: Db) -> ReprocessStore {
        ReprocessStore { db }
    }

    /// Up to `limit` stored rows of the selection after `after`, in key order.
    pub async fn page(
        &self,
        sel: &Selection,
        after: &Cursor,
        limit: i64,
    ) -> Result<Vec<Stored>, DbError> {
        // Only the filters given: a plain keyset scan of the primary key when there are none
        // (a generic plan of `$n IS NULL OR ...` could scan the whole log per page).
        let mut sql = String::from(
            "SELECT stream, stream_seq, published_at, envelope, event_type, event_version, status, raw \
             FROM audit.events WHERE (stream, stream_seq, published_at) > ($1::text, $2::int8, $3::timestamptz)",
        );
        let mut n = 3;
        let mut next = |cond: &str| {
            n += 1;
            format!(" AND {}", cond.replace('$', &format!("${n}")))
        };
        if sel.since.is_some() {
            sql += &next("published_at >= $::timestamptz");
        }
        if sel.until.is_some() {
            sql += &next("published_at < $::timestamptz");
        }
        if sel.stream.is_some() {
            sql += &next("stream = $::text");
        }
        if sel.seq.is_some() {
            sql += &next("stream_seq >= $::int8");
            sql += &next("stream_seq <= $::int8");
        }
        if !sel.statuses.is_empty() {
            sql += &next("status = ANY($::text[])");
        }
        sql += &format!(
            " ORDER BY stream, stream_seq, published_at LIMIT ${}",
            n + 1
        );
        let mut q = sqlx::query(&sql).bind(&after.0).bind(after.1).bind(after.2);
        if let Some(t) = sel.since {
            q = q.bind(t);
        }
        if let Some(t) = sel.until {
            q = q.bind(t);
        }
        if let Some(st) = &sel.stream {
            q = q.bind(st.as_str());
        }
        if let Some((a, b)) = sel.seq {
            q = q.bind(a).bind(b);
        }
        if !sel.statuses.is_empty() {
            q = q.bind(&sel.statuses);
        }
        let rows = q
            .bind(limit)
            .fetch_all(self.db.pool())
            .await
            .ctx("read stored rows to reprocess")?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            out.push(Stored {
                stream: r.try_get("stream").ctx("read a stored row")?,
                stream_seq: r.try_get("stream_seq").ctx("read a stored row")?,
                published_at: r.try_get("published_at").ctx("read a stored row")?,
                envelope: r.try_get("envelope").ctx("read a stored row")?,
                event_type: r.try_get("event_type").ctx("read a stored row")?,
                event_version: r.try_get("event_version").ctx("read a stored row")?,
                status: r.try_get("status").ctx("read a stored row")?,
                raw: r.try_get("raw").ctx("read a stored row")?,
            });
        }
        Ok(out)
    }

    /// Opens a run; returns its id.
    pub async fn open_run(&self, catalogue: &str, selection: &str) -> Result<i64, DbError> {
        sqlx::query_scalar(
            "INSERT INTO audit.reprocess_runs (catalogue, selection) VALUES ($1, $2::jsonb) RETURNING id",
        )
        .bind(catalogue)
        .bind(selection)
        .fetch_one(self.db.pool())
        .await
        .ctx("open a reprocess run")
    }

    /// A run to resume: its catalogue, its selection, whether it is closed, and its cursor.
    pub async fn run(&self, id: i64) -> Result<Option<(String, String, bool, Cursor)>, DbError> {
        let Some(r) = sqlx::query(
            "SELECT r.catalogue, r.selection::text AS selection, \
                 EXISTS (SELECT 1 FROM audit.reprocess_run_ends x WHERE x.run_id = r.id) AS closed \
             FROM audit.reprocess_runs r WHERE r.id = $1",
        )
        .bind(id)
        .fetch_optional(self.db.pool())
        .await
        .ctx("look up a reprocess run")?
        else {
            return Ok(None);
        };
        let last = sqlx::query(
            "SELECT stream, stream_seq, published_at FROM audit.reverdicts WHERE run_id = $1 \
             ORDER BY stream DESC, stream_seq DESC, published_at DESC LIMIT 1",
        )
        .bind(id)
        .fetch_optional(self.db.pool())
        .await
        .ctx("find where a reprocess run stopped")?;
        let cursor = match last {
            Some(l) => Cursor(
                l.try_get("stream").ctx("read a cursor")?,
                l.try_get("stream_seq").ctx("read a cursor")?,
                l.try_get("published_at").ctx("read a cursor")?,
            ),
            None => Cursor::start(),
        };
        Ok(Some((
            r.try_get("catalogue").ctx("read a run")?,
            r.try_get("selection").ctx("read a run")?,
            r.try_get("closed").ctx("read a run")?,
            cursor,
        )))
    }

    /// Writes one page of re-verdicts (one transaction).
    pub async fn write(&self, page: &[(Reverdict, Option<String>)]) -> Result<(), DbError> {
        if page.is_empty() {
            return Ok(());
        }
        let n = page.len();
        let (mut run, mut st, mut seq, mut at) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        let (mut cat, mut old, mut new, mut err, mut unk, mut ev, mut hash) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for (r, event) in page {
            run.push(r.run_id);
            st.push(r.stream.as_str());
            seq.push(r.stream_seq);
            at.push(r.published_at);
            cat.push(r.catalogue.as_str());
            old.push(r.old_status.as_str());
            new.push(r.status.as_str());
            err.push(r.errors.as_deref());
            unk.push(r.unknown_fields.as_deref());
            ev.push(event.as_deref());
            hash.push(r.hash().to_vec());
        }
        sqlx::query(
            "INSERT INTO audit.reverdicts (run_id, stream, stream_seq, published_at, catalogue, \
                 old_status, status, errors, unknown_fields, event, row_hash) \
             SELECT * FROM UNNEST($1::int8[], $2::text[], $3::int8[], $4::timestamptz[], $5::text[], \
                 $6::text[], $7::text[], $8::text[]::jsonb[], $9::text[]::jsonb[], $10::text[], $11::bytea[])",
        )
        .bind(&run)
        .bind(&st)
        .bind(&seq)
        .bind(&at)
        .bind(&cat)
        .bind(&old)
        .bind(&new)
        .bind(&err)
        .bind(&unk)
        .bind(&ev)
        .bind(&hash)
        .execute(self.db.pool())
        .await
        .ctx("write re-verdicts")?;
        Ok(())
    }

    /// The run's transitions from the stored re-verdicts: (event, old, new) → count and up to
    /// `examples` keys each (a resumed run counts whole).
    pub async fn transitions(
        &self,
        run_id: i64,
        examples: i64,
    ) -> Result<Vec<Transition>, DbError> {
        let rows = sqlx::query(
            "SELECT COALESCE(event, '') AS event, old_status, status, count(*) AS n, \
                 (array_agg(stream || ':' || stream_seq ORDER BY stream, stream_seq))[1:$2] AS examples \
             FROM audit.reverdicts WHERE run_id = $1 \
             GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
        )
        .bind(run_id)
        .bind(examples)
        .fetch_all(self.db.pool())
        .await
        .ctx("count a run's transitions")?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let n: i64 = r.try_get("n").ctx("read transitions")?;
            out.push(Transition {
                event: r.try_get("event").ctx("read transitions")?,
                old: r.try_get("old_status").ctx("read transitions")?,
                new: r.try_get("status").ctx("read transitions")?,
                count: u64::try_from(n).unwrap_or(0),
                examples: r.try_get("examples").ctx("read transitions")?,
            });
        }
        Ok(out)
    }

    /// Closes a run: digest of its re-verdict hashes in key order, chained to the previous
    /// closed run's hash.
    pub async fn close(&self, run_id: i64, transitions: &str) -> Result<RunEnd, DbError> {
        let mut tx = self.db.pool().begin().await.ctx("begin")?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(RUN_END_LOCK)
            .execute(&mut *tx)
            .await
            .ctx("lock the chain of reprocess runs")?;
        let (digest, rows) = {
            let mut hashes = sqlx::query(
                "SELECT row_hash FROM audit.reverdicts WHERE run_id = $1 \
                 ORDER BY stream, stream_seq, published_at",
            )
            .bind(run_id)
            .fetch(&mut *tx);
            let mut h = <sha2::Sha256 as sha2::Digest>::new();
            let mut rows = 0i64;
            while let Some(r) = hashes.try_next().await.ctx("read re-verdict hashes")? {
                let b: Vec<u8> = r.try_get("row_hash").ctx("read a re-verdict hash")?;
                sha2::Digest::update(&mut h, &b);
                rows += 1;
            }
            let d: [u8; 32] = sha2::Digest::finalize(h).into();
            (d, rows)
        };
        let prev: Vec<u8> = sqlx::query_scalar(
            "SELECT e.hash FROM audit.reprocess_run_ends e WHERE NOT EXISTS \
                 (SELECT 1 FROM audit.reprocess_run_ends n WHERE n.prev_hash = e.hash) LIMIT 1",
        )
        .fetch_optional(&mut *tx)
        .await
        .ctx("find the last closed reprocess run")?
        .unwrap_or_else(|| vec![0; 32]);
        let hash = run_hash(&prev, run_id, rows, &digest);
        sqlx::query(
            "INSERT INTO audit.reprocess_run_ends (run_id, rows, transitions, digest, prev_hash, hash) \
             VALUES ($1, $2, $3::jsonb, $4, $5, $6)",
        )
        .bind(run_id)
        .bind(rows)
        .bind(transitions)
        .bind(digest.to_vec())
        .bind(&prev)
        .bind(hash.to_vec())
        .execute(&mut *tx)
        .await
        .ctx("close a reprocess run")?;
        tx.commit().await.ctx("commit")?;
        Ok(RunEnd { rows, digest, hash })
    }
}
