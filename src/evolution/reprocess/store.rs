//! The SQL of `reprocess`: stored rows (with their latest verdicts) by key pages, each judged
//! page written with its changed verdicts, runs opened, resumed and closed (the closing hash chained under an advisory lock).

use futures::TryStreamExt;
use sqlx::Row;

use super::{Cursor, Latest, Selection, Stored, Transition};
use crate::db::{Ctx, Db, DbError};
use crate::row::reverdict::{recanonical_errors, recanonical_strings, run_hash, Reverdict};

/// Serializes the closing of runs (the chain of run ends).
const RUN_END_LOCK: i64 = 0x7265_7665_7264_6963; // "reverdic"

pub struct ReprocessStore {
    db: Db,
}

/// A run to resume (see [`ReprocessStore::run`]).
#[derive(Debug, Clone)]
pub struct Resume {
    pub(crate) catalogue: String,
    pub(crate) selection: String,
    pub(crate) closed: bool,
    pub(crate) cursor: Cursor,
    /// Each recorded page's transitions, in key order.
    pub(crate) pages: Vec<Vec<Transition>>,
}

/// One judged page as written: its re-verdicts, where it ends, its counts.
#[derive(Debug, Clone)]
pub struct Page {
    pub(crate) reverdicts: Vec<(Reverdict, Option<String>)>,
    pub(crate) last: Cursor,
    pub(crate) rows: u64,
    pub(crate) transitions: Vec<Transition>,
}

/// A closed run.
#[derive(Debug, Clone)]
pub(crate) struct RunEnd {
    pub(crate) changed: i64,
    pub(crate) hash: [u8; 32],
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
        // Erased rows (no raw message, no personal column) are not judged again: there is
        // nothing left to judge, and an empty message's verdict cannot change.
        // Each row comes with its latest verdict (its latest re-verdict, else the original), which
        // the new verdict is compared with.
        let mut sql = String::from(
            "SELECT e.stream, e.stream_seq, e.published_at, e.envelope, e.event_type, \
                 e.event_version, e.raw, COALESCE(rv.status, e.status) AS latest_status, \
                 CASE WHEN rv.status IS NULL THEN e.errors ELSE rv.errors END::text AS latest_errors, \
                 CASE WHEN rv.status IS NULL THEN e.unknown_fields ELSE rv.unknown_fields END::text \
                     AS latest_unknown \
             FROM audit.log_rows e LEFT JOIN LATERAL ( \
                 SELECT r.status, r.errors, r.unknown_fields FROM audit.reverdicts r \
                 WHERE r.stream = e.stream AND r.stream_seq = e.stream_seq \
                     AND r.published_at = e.published_at \
                 ORDER BY r.run_id DESC LIMIT 1) rv ON true \
             WHERE (e.stream, e.stream_seq, e.published_at) > ($1::text, $2::int8, $3::timestamptz) \
                 AND NOT (octet_length(e.raw) = 0 AND e.salt IS NULL AND e.payload IS NULL \
                     AND e.headers IS NULL AND e.event_id IS NULL AND e.account_number IS NULL \
                     AND e.errors IS NULL)",
        );
        let mut n = 3;
        let mut next = |cond: &str| {
            n += 1;
            format!(" AND {}", cond.replace('$', &format!("${n}")))
        };
        if sel.since.is_some() {
            sql += &next("e.published_at >= $::timestamptz");
        }
        if sel.until.is_some() {
            sql += &next("e.published_at < $::timestamptz");
        }
        if sel.stream.is_some() {
            sql += &next("e.stream = $::text");
        }
        if sel.seq.is_some() {
            sql += &next("e.stream_seq >= $::int8");
            sql += &next("e.stream_seq <= $::int8");
        }
        if !sel.statuses.is_empty() {
            sql += &next("e.status = ANY($::text[])");
        }
        sql += &format!(
            " ORDER BY e.stream, e.stream_seq, e.published_at LIMIT ${}",
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
                raw: r.try_get("raw").ctx("read a stored row")?,
                latest: Latest {
                    status: r.try_get("latest_status").ctx("read a stored row")?,
                    errors: recanonical_errors(
                        r.try_get::<Option<String>, _>("latest_errors")
                            .ctx("read a stored row")?
                            .as_deref(),
                    ),
                    unknown_fields: recanonical_strings(
                        r.try_get::<Option<String>, _>("latest_unknown")
                            .ctx("read a stored row")?
                            .as_deref(),
                    ),
                },
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

    /// A run to resume: its catalogue, its selection, whether it is closed, its cursor (after its
    /// last recorded page) and the transitions of its recorded pages, in key order.
    pub async fn run(&self, id: i64) -> Result<Option<Resume>, DbError> {
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
        let pages = sqlx::query(
            "SELECT last_stream, last_seq, last_at, transitions::text AS transitions \
             FROM audit.reprocess_pages WHERE run_id = $1 \
             ORDER BY last_stream, last_seq, last_at",
        )
        .bind(id)
        .fetch_all(self.db.pool())
        .await
        .ctx("read the pages of a reprocess run")?;
        let mut cursor = Cursor::start();
        let mut done = Vec::with_capacity(pages.len());
        for p in pages {
            cursor = Cursor(
                p.try_get("last_stream").ctx("read a page")?,
                p.try_get("last_seq").ctx("read a page")?,
                p.try_get("last_at").ctx("read a page")?,
            );
            let text: String = p.try_get("transitions").ctx("read a page")?;
            let t: Vec<Transition> = serde_json::from_str(&text).map_err(|_| DbError::Corrupt {
                what: "a page of a reprocess run (audit.reprocess_pages)",
                why: "its transitions are not readable",
            })?;
            done.push(t);
        }
        Ok(Some(Resume {
            catalogue: r.try_get("catalogue").ctx("read a run")?,
            selection: r.try_get("selection").ctx("read a run")?,
            closed: r.try_get("closed").ctx("read a run")?,
            cursor,
            pages: done,
        }))
    }

    /// Writes one judged page in one transaction: its re-verdicts (the changed verdicts) and its
    /// record (where it ends, its counts and transitions).
    pub async fn write(&self, run_id: i64, page: &Page) -> Result<(), DbError> {
        let mut tx = self.db.pool().begin().await.ctx("begin")?;
        Self::insert_reverdicts(&mut tx, &page.reverdicts).await?;
        let transitions = serde_json::to_string(&page.transitions).unwrap_or_else(|_| "[]".into());
        sqlx::query(
            "INSERT INTO audit.reprocess_pages \
                 (run_id, last_stream, last_seq, last_at, rows, changed, transitions) \
             VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb)",
        )
        .bind(run_id)
        .bind(&page.last.0)
        .bind(page.last.1)
        .bind(page.last.2)
        .bind(i64::try_from(page.rows).unwrap_or(i64::MAX))
        .bind(i64::try_from(page.reverdicts.len()).unwrap_or(i64::MAX))
        .bind(transitions)
        .execute(&mut *tx)
        .await
        .ctx("record a reprocessed page")?;
        tx.commit().await.ctx("commit")?;
        Ok(())
    }

    /// Inserts re-verdicts (none: nothing).
    async fn insert_reverdicts(
        tx: &mut sqlx::PgConnection,
        page: &[(Reverdict, Option<String>)],
    ) -> Result<(), DbError> {
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
        .execute(&mut *tx)
        .await
        .ctx("write re-verdicts")?;
        Ok(())
    }

    /// Closes a run that judged `rows` rows: digest of its re-verdict hashes in key order,
    /// chained to the previous closed run's hash.
    pub(crate) async fn close(
        &self,
        run_id: i64,
        rows: u64,
        transitions: &str,
    ) -> Result<RunEnd, DbError> {
        let rows = i64::try_from(rows).unwrap_or(i64::MAX);
        let mut tx = self.db.pool().begin().await.ctx("begin")?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(RUN_END_LOCK)
            .execute(&mut *tx)
            .await
            .ctx("lock the chain of reprocess runs")?;
        let (digest, changed) = {
            let mut hashes = sqlx::query(
                "SELECT row_hash FROM audit.reverdicts WHERE run_id = $1 \
                 ORDER BY stream, stream_seq, published_at",
            )
            .bind(run_id)
            .fetch(&mut *tx);
            let mut h = <sha2::Sha256 as sha2::Digest>::new();
            let mut changed = 0i64;
            while let Some(r) = hashes.try_next().await.ctx("read re-verdict hashes")? {
                let b: Vec<u8> = r.try_get("row_hash").ctx("read a re-verdict hash")?;
                sha2::Digest::update(&mut h, &b);
                changed += 1;
            }
            let d: [u8; 32] = sha2::Digest::finalize(h).into();
            (d, changed)
        };
        let prev: Vec<u8> = sqlx::query_scalar(
            "SELECT e.hash FROM audit.reprocess_run_ends e WHERE NOT EXISTS \
                 (SELECT 1 FROM audit.reprocess_run_ends n WHERE n.prev_hash = e.hash) LIMIT 1",
        )
        .fetch_optional(&mut *tx)
        .await
        .ctx("find the last closed reprocess run")?
        .unwrap_or_else(|| vec![0; 32]);
        let hash = run_hash(&prev, run_id, rows, changed, &digest);
        sqlx::query(
            "INSERT INTO audit.reprocess_run_ends \
                 (run_id, rows, changed, transitions, digest, prev_hash, hash) \
             VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7)",
        )
        .bind(run_id)
        .bind(rows)
        .bind(changed)
        .bind(transitions)
        .bind(digest.to_vec())
        .bind(&prev)
        .bind(hash.to_vec())
        .execute(&mut *tx)
        .await
        .ctx("close a reprocess run")?;
        tx.commit().await.ctx("commit")?;
        Ok(RunEnd { changed, hash })
    }
}
