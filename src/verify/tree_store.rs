//! The SQL of the Merkle tree's readers (`verify` against the witness, `prove`): the links with
//! their tree, the stored subtree hashes (height 8, 16, …), the row hashes of a leaf range (the
//! links covering it, then their batches' rows in log order), a row's leaf index, and the
//! row hashes in log order after a tree size. Reads only; every read is O(log n) rows or a
//! range, never a scan, but for the streamed row hashes.

use std::collections::HashMap;

use futures::stream::BoxStream;

use super::store::StoredRow;
use crate::audit::columns;
use crate::audit::tlog::{self, Hash, Node};
use crate::db::{Ctx, Db, DbError};

/// The height step of the stored subtrees (the writer stores one per `2^8` leaves).
pub const TILE_HEIGHT: u32 = 8;

/// A link with the tree after its batch.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TreeLink {
    pub link_seq: i64,
    pub batch_id: i64,
    pub row_count: i32,
    pub tree_size: Option<i64>,
    pub tree_root: Option<Vec<u8>>,
}

/// One row hash in log order, with its link.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LeafRow {
    pub link_seq: i64,
    pub row_hash: Vec<u8>,
}

/// A row found by its stream and sequence: its place in the tree.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RowPlace {
    pub stream: String,
    pub stream_seq: i64,
    pub leaf_index: i64,
}

/// What the tree's readers read.
#[derive(Clone)]
pub struct TreeStore {
    db: Db,
}

fn to_hash(v: &[u8]) -> Result<Hash, DbError> {
    Hash::try_from(v).map_err(|_| DbError::Corrupt {
        what: "a stored hash",
        why: "is not 32 bytes",
    })
}

/// The rows of the links covering leaves `[$1, $2)`, each with its leaf index.
const LEAVES_SQL: &str = "WITH l AS (SELECT batch_id, tree_size - row_count AS start FROM audit.chain_links \
      WHERE tree_size > $1 AND tree_size - row_count < $2) \
   SELECT (l.start + row_number() OVER (PARTITION BY e.batch_id \
          ORDER BY e.stream COLLATE \"C\", e.stream_seq, e.published_at) - 1)::int8 AS leaf, e.row_hash \
   FROM l JOIN audit.events e ON e.batch_id = l.batch_id";

impl TreeStore {
    pub fn new(db: Db) -> TreeStore {
        TreeStore { db }
    }

    pub fn db(&self) -> &Db {
        &self.db
    }

    /// The head's link and tree size.
    pub async fn head(&self) -> Result<(i64, i64), DbError> {
        sqlx::query_as("SELECT link_seq, tree_size FROM audit.chain_head")
            .fetch_one(self.db.pool())
            .await
            .ctx("read the chain head")
    }

    /// The link whose tree has exactly `size` leaves, if any.
    pub async fn link_at_size(&self, size: i64) -> Result<Option<TreeLink>, DbError> {
        sqlx::query_as(
            "SELECT link_seq, batch_id, row_count, tree_size, tree_root FROM audit.chain_links \
             WHERE tree_size = $1 ORDER BY link_seq LIMIT 1",
        )
        .bind(size)
        .fetch_optional(self.db.pool())
        .await
        .ctx("find the link of a tree size")
    }

    /// The links from `after_size` on (those whose tree is larger), in order.
    pub async fn links_after(&self, after_size: i64) -> Result<Vec<TreeLink>, DbError> {
        sqlx::query_as(
            "SELECT link_seq, batch_id, row_count, tree_size, tree_root FROM audit.chain_links \
             WHERE tree_size > $1 OR tree_size IS NULL ORDER BY link_seq",
        )
        .bind(after_size)
        .fetch_all(self.db.pool())
        .await
        .ctx("read chain links")
    }

    /// The stored row hashes of the rows of links `first..=last`, whose batch ids lie in
    /// `batches`, in log order (link, then the batch's row order): one streamed query. The batch
    /// id bounds let PostgreSQL read one range of the batch index instead of probing it per link;
    /// the statement is planned with these values (not persistent), as the walk's COPY is.
    pub fn leaves_of(
        &self,
        first: i64,
        last: i64,
        batches: (i64, i64),
    ) -> BoxStream<'_, Result<LeafRow, sqlx::Error>> {
        sqlx::query_as(
            "SELECT l.link_seq, e.row_hash FROM audit.chain_links l \
             JOIN audit.events e ON e.batch_id = l.batch_id \
             WHERE l.link_seq BETWEEN $1 AND $2 AND l.tree_size IS NOT NULL \
                 AND e.batch_id BETWEEN $3 AND $4 \
             ORDER BY l.link_seq, e.stream COLLATE \"C\", e.stream_seq, e.published_at",
        )
        .bind(first)
        .bind(last)
        .bind(batches.0)
        .bind(batches.1)
        .persistent(false)
        .fetch(self.db.pool())
    }

    /// Every stored subtree hash, by node.
    pub async fn stored_nodes(&self) -> Result<HashMap<Node, Vec<u8>>, DbError> {
        let rows: Vec<(i16, i64, Vec<u8>)> =
            sqlx::query_as("SELECT height, idx, hash FROM audit.tree_nodes")
                .fetch_all(self.db.pool())
                .await
                .ctx("read the stored subtrees")?;
        Ok(rows
            .into_iter()
            .map(|(h, i, x)| {
                (
                    Node {
                        level: u32::try_from(h).unwrap_or(0),
                        index: u64::try_from(i).unwrap_or(0),
                    },
                    x,
                )
            })
            .collect())
    }

    /// The leaf hashes of leaves `[from, to)`.
    async fn leaves(&self, from: u64, to: u64) -> Result<Vec<Hash>, DbError> {
        let rows: Vec<(i64, Vec<u8>)> = sqlx::query_as(LEAVES_SQL)
            .bind(i64::try_from(from).unwrap_or(i64::MAX))
            .bind(i64::try_from(to).unwrap_or(i64::MAX))
            .fetch_all(self.db.pool())
            .await
            .ctx("read the row hashes of a leaf range")?;
        let mut out = vec![None; usize::try_from(to - from).unwrap_or(0)];
        for (leaf, h) in rows {
            if let Some(i) = u64::try_from(leaf).ok().filter(|l| (from..to).contains(l)) {
                out[(i - from) as usize] = Some(tlog::leaf_hash(&h));
            }
        }
        out.into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or(DbError::Corrupt {
                what: "audit.events",
                why: "a leaf of the tree has no row (rows missing for a link)",
            })
    }

    /// The stored subtrees of `height` with indexes `[from, to)`.
    async fn stored(&self, height: u32, from: u64, to: u64) -> Result<Vec<Hash>, DbError> {
        let rows: Vec<(i64, Vec<u8>)> = sqlx::query_as(
            "SELECT idx, hash FROM audit.tree_nodes WHERE height = $1 AND idx >= $2 AND idx < $3 ORDER BY idx",
        )
        .bind(i16::try_from(height).unwrap_or(i16::MAX))
        .bind(i64::try_from(from).unwrap_or(i64::MAX))
        .bind(i64::try_from(to).unwrap_or(i64::MAX))
        .fetch_all(self.db.pool())
        .await
        .ctx("read stored subtrees")?;
        if rows.len() as u64 != to - from {
            return Err(DbError::Corrupt {
                what: "audit.tree_nodes",
                why: "a stored subtree is missing",
            });
        }
        rows.iter().map(|(_, h)| to_hash(h)).collect()
    }

    /// The hash of one perfect subtree: a stored one, or made from at most 255 hashes one
    /// stored height below it (stored subtrees, or the rows' hashes at the bottom).
    pub async fn node(&self, n: Node) -> Result<Hash, DbError> {
        let base = n.level / TILE_HEIGHT * TILE_HEIGHT;
        if base == n.level && base > 0 {
            return self.stored(base, n.index, n.index + 1).await.map(|v| v[0]);
        }
        let span = 1u64 << (n.level - base);
        let first = n.index << (n.level - base);
        let parts = if base == 0 {
            self.leaves(first, first + span).await?
        } else {
            self.stored(base, first, first + span).await?
        };
        Ok(tlog::root_of(&parts))
    }

    /// The hashes of `ranges` (the elements of a proof, or a root).
    pub async fn ranges(&self, ranges: &[(u64, u64)]) -> Result<Vec<Hash>, DbError> {
        let mut got = HashMap::new();
        for n in tlog::nodes_needed(ranges) {
            got.insert(n, self.node(n).await?);
        }
        let r: Result<Vec<Hash>, DbError> = tlog::assemble(ranges, |n| {
            got.get(&n).copied().ok_or(DbError::Corrupt {
                what: "the tree",
                why: "a subtree could not be read",
            })
        });
        r
    }

    /// The root of the first `size` leaves, from the stored tree.
    pub async fn root(&self, size: u64) -> Result<Hash, DbError> {
        if size == 0 {
            return Ok(tlog::empty_root());
        }
        Ok(self.ranges(&[(0, size)]).await?[0])
    }

    pub async fn inclusion(&self, index: u64, size: u64) -> Result<Vec<Hash>, DbError> {
        self.ranges(&tlog::inclusion_ranges(index, size)).await
    }

    pub async fn consistency(&self, from: u64, to: u64) -> Result<Vec<Hash>, DbError> {
        self.ranges(&tlog::consistency_ranges(from, to)).await
    }

    /// The leaf index of the row `stream`/`seq`, if the log holds it.
    pub async fn place(&self, stream: &str, seq: i64) -> Result<Option<RowPlace>, DbError> {
        self.places(
            "e.stream = $1 AND e.stream_seq = $2::int8",
            &[stream.to_owned(), seq.to_string()],
        )
        .await
        .map(|v| v.into_iter().next())
    }

    /// The leaf indexes of an account's rows, with `occurred_at` within the bounds (RFC 3339
    /// texts, either may be empty).
    pub async fn account_places(
        &self,
        account: &str,
        since: &str,
        until: &str,
    ) -> Result<Vec<RowPlace>, DbError> {
        self.places(
            "e.account_number = $1 AND ($2 = '' OR e.occurred_at >= $2::timestamptz) \
             AND ($3 = '' OR e.occurred_at < $3::timestamptz)",
            &[account.to_owned(), since.to_owned(), until.to_owned()],
        )
        .await
    }

    async fn places(&self, filter: &str, binds: &[String]) -> Result<Vec<RowPlace>, DbError> {
        let sql = format!(
            "WITH hit AS (SELECT e.stream, e.stream_seq, e.published_at, e.batch_id FROM audit.events e WHERE {filter}) \
             SELECT h.stream, h.stream_seq, (l.tree_size - l.row_count + ( \
                SELECT count(*) FROM audit.events o WHERE o.batch_id = h.batch_id AND \
                (o.stream, o.stream_seq, o.published_at) < (h.stream, h.stream_seq, h.published_at)))::int8 AS leaf_index \
             FROM hit h JOIN audit.chain_links l ON l.batch_id = h.batch_id \
             WHERE l.tree_size IS NOT NULL ORDER BY leaf_index"
        );
        let mut q = sqlx::query_as::<_, RowPlace>(&sql);
        for b in binds {
            q = q.bind(b);
        }
        q.fetch_all(self.db.pool())
            .await
            .ctx("find rows in the tree")
    }

    /// The row `stream`/`seq`, every column by name.
    pub async fn stored_row(&self, stream: &str, seq: i64) -> Result<Option<StoredRow>, DbError> {
        let sql = format!(
            "SELECT {} FROM audit.events e WHERE e.stream = $1 AND e.stream_seq = $2 LIMIT 1",
            columns::select_list("e")
        );
        sqlx::query_as(&sql)
            .bind(stream)
            .bind(seq)
            .fetch_optional(self.db.pool())
            .await
            .ctx("read a row")
    }
}
