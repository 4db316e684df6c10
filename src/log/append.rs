//! The log's one appender, [`Appender`]: it owns the transaction a batch is written in (a
//! batch of events, with the writer's own writes run inside it through [`BatchWrites`], or one
//! of the log's own rows: an erasure or restore record, restored leaves) and writes the batch
//! the one way: a batch id, the rows by binary COPY, the chain link. One link per batch,
//! appended under the chain head's row lock (held until the commit, so links are serialized
//! while rows are written concurrently). The link also extends the Merkle tree over the rows:
//! the head keeps the tree's right edge, the link records the tree's size and root (and its
//! hash covers them, version 2), and every perfect subtree of height 8, 16, … the batch
//! completes is stored in `audit.tree_nodes`.

use std::time::{Duration, Instant};

use sqlx::{Connection, PgConnection, Postgres, Transaction};

use crate::db::{Ctx, DbError};
use crate::row::chain::{batch_digest, link_hash_v2};
use crate::row::columns;
use crate::row::pgcopy::CopyBuf;
use crate::row::record::Record;
use crate::tlog::merkle::{leaf_hash, Frontier, Hash};

/// What a batch's writer adds inside the batch's transaction, beside the log's own writes (the
/// rows and the link): ingest's envelope-id claims before the rows, its id findings and drift
/// observations after them. The log's own rows add nothing (`()`).
pub(crate) trait BatchWrites {
    /// Runs once the batch has its id, before its rows are copied.
    async fn before_rows(
        &mut self,
        tx: &mut PgConnection,
        live: &[&Record],
        batch_id: i64,
    ) -> Result<(), DbError>;

    /// Runs once the rows are copied, before the chain link.
    async fn after_rows(
        &mut self,
        tx: &mut PgConnection,
        live: &[&Record],
        batch_id: i64,
    ) -> Result<(), DbError>;
}

impl BatchWrites for () {
    async fn before_rows(
        &mut self,
        _: &mut PgConnection,
        _: &[&Record],
        _: i64,
    ) -> Result<(), DbError> {
        Ok(())
    }

    async fn after_rows(
        &mut self,
        _: &mut PgConnection,
        _: &[&Record],
        _: i64,
    ) -> Result<(), DbError> {
        Ok(())
    }
}

/// What [`Appender::batch`] wrote.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Appended {
    /// Records already in the log (redeliveries, or a second delivery within the batch).
    pub(crate) redelivered: usize,
    /// Rows written (0 for a probe, which is rolled back).
    pub(crate) inserted: usize,
    /// The batch's chain link (0 when it wrote no rows, or was a probe).
    pub(crate) link_seq: i64,
    /// The binary COPY's time.
    pub(crate) copy: Duration,
    /// When the batch had its id (the timings of the batch's writes count from here).
    pub(crate) started: Option<Instant>,
}

/// The log's one appender: the transaction a batch, or a record of the log's own, is written
/// in. The caller's writes that must share it (an erasure's selection and emptying, a
/// restore's numbering) run on [`Appender::tx`]; the appender commits it.
pub(crate) struct Appender<'c> {
    tx: Transaction<'c, Postgres>,
    instance: &'c str,
}

impl<'c> Appender<'c> {
    /// Begins the transaction on `conn`; `instance` names this process in the links.
    pub(crate) async fn begin(
        conn: &'c mut PgConnection,
        instance: &'c str,
    ) -> Result<Appender<'c>, DbError> {
        let tx = conn.begin().await.ctx("begin")?;
        Ok(Appender { tx, instance })
    }

    /// The transaction, for the caller's writes inside it.
    pub(crate) fn tx(&mut self) -> &mut PgConnection {
        &mut self.tx
    }

    /// Commits; `what` names the write in an error.
    pub(crate) async fn commit(self, what: &'static str) -> Result<(), DbError> {
        self.tx.commit().await.ctx(what)
    }

    /// Rolls back (a dry run, a probe).
    pub(crate) async fn rollback(self, what: &'static str) -> Result<(), DbError> {
        self.tx.rollback().await.ctx(what)
    }

    /// Writes one batch of events and finishes the transaction: the records in log order
    /// (`recs` sorted by [`Record::log_key`]) but a second delivery of one message within the
    /// batch and, with `precheck`, those the log holds already (redeliveries); then `writes`
    /// around the rows and the link. Committed when `commit`, else rolled back (a probe). A
    /// batch with nothing left to write commits at once.
    pub(crate) async fn batch<W: BatchWrites>(
        mut self,
        recs: &[Record],
        precheck: bool,
        commit: bool,
        writes: &mut W,
    ) -> Result<Appended, DbError> {
        let mut live: Vec<&Record> = recs.iter().collect();
        live.dedup_by_key(|r| r.log_key());
        if precheck {
            super::present::retain_absent(&mut self.tx, &mut live).await?;
        }
        let mut out = Appended {
            redelivered: recs.len() - live.len(),
            ..Appended::default()
        };
        if live.is_empty() {
            self.commit("commit").await?;
            return Ok(out);
        }
        let (_, link_seq) = write(&mut self.tx, &live, self.instance, writes, &mut out).await?;
        if !commit {
            self.rollback("roll back a probe").await?;
            return Ok(out);
        }
        self.commit("commit").await?;
        out.inserted = live.len();
        out.link_seq = link_seq;
        Ok(out)
    }

    /// Appends `recs` (in log order) as one batch of their own: a batch id, the rows, the chain
    /// link and the tree, as a batch of events is written (no envelope-id claims, no drift
    /// observations: rows the daemon makes itself, such as an erasure record). Returns
    /// `(batch_id, link_seq)`; the transaction stays open.
    pub(crate) async fn own_rows(&mut self, recs: &[Record]) -> Result<(i64, i64), DbError> {
        let live: Vec<&Record> = recs.iter().collect();
        let mut out = Appended::default();
        write(&mut self.tx, &live, self.instance, &mut (), &mut out).await
    }
}

/// The one sequence a batch is written in: its id, `writes` before the rows, the rows by
/// binary COPY, `writes` after them, the chain link. Returns `(batch_id, link_seq)`.
async fn write<W: BatchWrites>(
    tx: &mut PgConnection,
    live: &[&Record],
    instance: &str,
    writes: &mut W,
    out: &mut Appended,
) -> Result<(i64, i64), DbError> {
    let batch_id = batch_id(tx).await?;
    out.started = Some(Instant::now());
    writes.before_rows(tx, live, batch_id).await?;
    let digest = batch_digest(live.iter().map(|r| &r.row_hash));
    let t_copy = Instant::now();
    copy_rows(tx, live.iter().copied(), batch_id).await?;
    out.copy = t_copy.elapsed();
    writes.after_rows(tx, live, batch_id).await?;
    let row_hashes: Vec<[u8; 32]> = live.iter().map(|r| r.row_hash).collect();
    let link_seq = link(tx, batch_id, &row_hashes, &digest, instance).await?;
    Ok((batch_id, link_seq))
}

/// A new batch's id (the order of its rows' digest, not of the chain: links are serialized by
/// the head's lock, in commit order).
async fn batch_id(tx: &mut PgConnection) -> Result<i64, DbError> {
    sqlx::query_scalar("SELECT nextval('audit.batch_id_seq')")
        .fetch_one(&mut *tx)
        .await
        .ctx("allocate batch id")
}

/// The rows of batch `batch_id`, by binary COPY, in the order given (the log's order).
async fn copy_rows<'a, I>(tx: &mut PgConnection, recs: I, batch_id: i64) -> Result<(), DbError>
where
    I: IntoIterator<Item = &'a Record>,
    I::IntoIter: Clone,
{
    let mut copy = tx.copy_in_raw(&copy_statement()).await.ctx("start COPY")?;
    copy.send(copy_body(recs, batch_id)).await.ctx("COPY")?;
    copy.finish().await.ctx("finish COPY")?;
    Ok(())
}

/// Appends the link covering `batch_id` (whose rows have `row_hashes`, in log order) and moves
/// the head; returns the link's sequence.
async fn link(
    tx: &mut PgConnection,
    batch_id: i64,
    row_hashes: &[Hash],
    digest: &[u8; 32],
    instance: &str,
) -> Result<i64, DbError> {
    let row_count = i32::try_from(row_hashes.len()).unwrap_or(i32::MAX);
    let (head_seq, prev, tree_size, front): (i64, Vec<u8>, i64, Vec<u8>) = sqlx::query_as(
        "SELECT link_seq, hash, tree_size, frontier FROM audit.chain_head WHERE id FOR UPDATE",
    )
    .fetch_one(&mut *tx)
    .await
    .ctx("lock the chain head")?;
    let mut tree = u64::try_from(tree_size)
        .ok()
        .and_then(|n| Frontier::from_bytes(n, &front))
        .ok_or(DbError::Corrupt {
            what: "audit.chain_head.frontier",
            why: "does not hold one hash per set bit of the tree size",
        })?;
    let (mut heights, mut idxs, mut hashes) = (Vec::new(), Vec::new(), Vec::new());
    for r in row_hashes {
        tree.append(leaf_hash(r), |node, h| {
            if crate::tlog::tile::is_stored(&node) {
                heights.push(node.level as i16);
                idxs.push(i64::try_from(node.index).unwrap_or(i64::MAX));
                hashes.push(h.to_vec());
            }
        });
    }
    let size = i64::try_from(tree.size()).unwrap_or(i64::MAX);
    let root = tree.root();
    let link_seq = head_seq + 1;
    let hash = link_hash_v2(&prev, link_seq, batch_id, row_count, digest, size, &root);
    // The head's trigger checks at commit that it moved onto this link.
    sqlx::query(
        "WITH ins AS (INSERT INTO audit.chain_links \
            (link_seq, batch_id, row_count, batch_digest, prev_hash, hash, instance, tree_size, tree_root, version) \
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 2)), \
         nodes AS (INSERT INTO audit.tree_nodes (height, idx, hash) \
            SELECT * FROM unnest($10::int2[], $11::int8[], $12::bytea[])) \
         UPDATE audit.chain_head SET link_seq = $1, hash = $6, tree_size = $8, frontier = $13 WHERE id",
    )
    .bind(link_seq)
    .bind(batch_id)
    .bind(row_count)
    .bind(&digest[..])
    .bind(&prev)
    .bind(&hash[..])
    .bind(instance)
    .bind(size)
    .bind(&root[..])
    .bind(&heights)
    .bind(&idxs)
    .bind(&hashes)
    .bind(tree.to_bytes())
    .execute(&mut *tx)
    .await
    .ctx("link chain")?;
    Ok(link_seq)
}

/// The log's rows (a partitioned table).
pub(crate) const EVENTS: &str = "audit.events";

/// The COPY statement the writer uses.
pub(crate) fn copy_statement() -> String {
    copy_statement_into(EVENTS)
}

/// The writer's COPY statement into `table`, a table with the log's columns.
pub(crate) fn copy_statement_into(table: &str) -> String {
    format!(
        "COPY {table} ({}) FROM STDIN WITH (FORMAT binary)",
        columns::copy_list()
    )
}

/// The binary COPY body for `recs`, written by the batch writer and, with the same bytes, by the
/// database-ceiling benchmark.
pub(crate) fn copy_body<'a, I>(recs: I, batch_id: i64) -> Vec<u8>
where
    I: IntoIterator<Item = &'a Record>,
    I::IntoIter: Clone,
{
    let recs = recs.into_iter();
    let mut buf = CopyBuf::with_capacity(recs.clone().map(|r| r.raw.len() * 2 + 256).sum());
    for r in recs {
        encode(&mut buf, r, batch_id);
    }
    buf.finish()
}

fn encode(buf: &mut CopyBuf, r: &Record, batch_id: i64) {
    r.view(batch_id).encode(buf);
}
