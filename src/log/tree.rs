//! The stored Merkle tree, read: the SQL of its readers (the checkpoint signer, `verify`
//! against the witness, `prove`): the links with their tree, the stored subtree hashes (height 8, 16, …), the row hashes of a leaf range (the
//! links covering it, then their batches' rows in log order), a row's leaf index, and the
//! row hashes in log order after a tree size. Reads only; every read is O(log n) rows or a
//! range, never a scan, but for the streamed row hashes.

use std::collections::{BTreeMap, HashMap};

use futures::stream::BoxStream;
use futures::TryStreamExt;

use crate::db::{Ctx, Db, DbError};
use crate::tlog::merkle::{self, Hash, Node};
use crate::tlog::tile::TILE_HEIGHT;

/// A link with the tree after its batch.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct TreeLink {
    pub(crate) link_seq: i64,
}

/// One row hash in log order, with its link.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct LeafRow {
    pub(crate) row_hash: Vec<u8>,
}

/// A row found by its stream and sequence: its place in the tree.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RowPlace {
    pub(crate) stream: String,
    pub(crate) stream_seq: i64,
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

/// How many chain links' rows one query reads when the tree is extended.
pub(crate) const LINKS_PER_READ: usize = 64;

/// Spans of one height at most this far apart are read in one query.
const MERGE_GAP: u64 = 256;

/// The links covering leaves `[$1, $2)`: their batch and first leaf.
const LINKS_OF_LEAVES_SQL: &str =
    "SELECT batch_id, tree_size - row_count AS start FROM audit.chain_links \
     WHERE tree_size > $1 AND tree_size - row_count < $2";

/// The row hashes of batches `$1` in log order within each batch. Read by batch id alone (the
/// B-tree on it) and planned with the values at hand: whatever the statistics say, a proof
/// reads its few batches, never the table.
const BATCH_HASHES_SQL: &str = "SELECT e.batch_id, e.row_hash FROM audit.events e \
     WHERE e.batch_id = ANY($1) ORDER BY e.batch_id, e.stream COLLATE \"C\", e.stream_seq, e.published_at";

/// Where one row sits in its batch: how many of the batch's rows come before it in log order.
/// The row comparison stays outside the batch's read (`OFFSET 0`), so PostgreSQL does not
/// combine it with the primary key into a scan of half the table.
const RANK_IN_BATCH_SQL: &str = "SELECT count(*) FROM (SELECT stream, stream_seq, published_at \
     FROM audit.events WHERE batch_id = $1 OFFSET 0) b \
     WHERE (b.stream COLLATE \"C\", b.stream_seq, b.published_at) < ($2 COLLATE \"C\", $3, $4)";

impl TreeStore {
    pub fn new(db: Db) -> TreeStore {
        TreeStore { db }
    }

    pub(crate) fn db(&self) -> &Db {
        &self.db
    }

    /// The head's link and tree size.
    pub(crate) async fn head(&self) -> Result<(i64, i64), DbError> {
        sqlx::query_as("SELECT link_seq, tree_size FROM audit.chain_head")
            .fetch_one(self.db.pool())
            .await
            .ctx("read the chain head")
    }

    /// The links from `after_size` on (those whose tree is larger), in order.
    pub(crate) async fn links_after(&self, after_size: i64) -> Result<Vec<TreeLink>, DbError> {
        sqlx::query_as(
            "SELECT link_seq FROM audit.chain_links \
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
    pub(crate) fn leaves_of(
        &self,
        first: i64,
        last: i64,
        batches: (i64, i64),
    ) -> BoxStream<'_, Result<LeafRow, sqlx::Error>> {
        sqlx::query_as(
            "SELECT e.row_hash FROM audit.chain_links l \
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

    /// Link ends from `from` to `to` (a link's tree size) about `chunk` leaves apart, `to`
    /// last: where a long read of row hashes can stop and go on.
    pub(crate) async fn chunk_ends(
        &self,
        from: u64,
        to: u64,
        chunk: u64,
    ) -> Result<Vec<u64>, DbError> {
        if to <= from {
            return Ok(Vec::new());
        }
        let sizes: Vec<i64> = sqlx::query_scalar(
            "SELECT tree_size FROM audit.chain_links \
             WHERE tree_size > $1 AND tree_size < $2 ORDER BY tree_size",
        )
        .bind(i64::try_from(from).unwrap_or(i64::MAX))
        .bind(i64::try_from(to).unwrap_or(i64::MAX))
        .fetch_all(self.db.pool())
        .await
        .ctx("read the link ends of a leaf range")?;
        let mut out = Vec::new();
        let mut last = from;
        for s in sizes.into_iter().filter_map(|s| u64::try_from(s).ok()) {
            if s >= last + chunk {
                out.push(s);
                last = s;
            }
        }
        out.push(to);
        Ok(out)
    }

    /// The stored row hashes of leaves `[from, to)` (`to` a link's tree size), in log order,
    /// each given to `each`; an error when a link's rows are missing or no link ends at `to`.
    pub(crate) async fn rows_between(
        &self,
        from: u64,
        to: u64,
        mut each: impl FnMut(&[u8]),
    ) -> Result<(), DbError> {
        if to <= from {
            return Ok(());
        }
        let links: Vec<(i64, i64, i32, i64)> = sqlx::query_as(
            "SELECT link_seq, batch_id, row_count, tree_size FROM audit.chain_links \
             WHERE tree_size > $1 AND tree_size <= $2 ORDER BY link_seq",
        )
        .bind(i64::try_from(from).unwrap_or(i64::MAX))
        .bind(i64::try_from(to).unwrap_or(i64::MAX))
        .fetch_all(self.db.pool())
        .await
        .ctx("read the links of a leaf range")?;
        // Leaves of the first link before `from` are in the tree already.
        let mut skip = links.first().map_or(0, |&(_, _, count, size)| {
            u64::try_from(size - i64::from(count))
                .ok()
                .map_or(0, |start| from.saturating_sub(start))
        });
        let mut at = from;
        for chunk in links.chunks(LINKS_PER_READ) {
            let lo = chunk.iter().map(|l| l.1).min().unwrap_or(0);
            let hi = chunk.iter().map(|l| l.1).max().unwrap_or(0);
            let mut rows = self.leaves_of(chunk[0].0, chunk[chunk.len() - 1].0, (lo, hi));
            while let Some(r) = rows.try_next().await.ctx("read row hashes in log order")? {
                if skip > 0 {
                    skip -= 1;
                    continue;
                }
                each(&r.row_hash);
                at += 1;
            }
        }
        if at != to {
            return Err(DbError::Corrupt {
                what: "audit.events",
                why: "the rows of the links do not make the tree size their links claim",
            });
        }
        Ok(())
    }

    /// Every stored subtree hash, by node.
    pub(crate) async fn stored_nodes(&self) -> Result<HashMap<Node, Vec<u8>>, DbError> {
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

    /// The leaf hashes of leaves `[from, to)`: the links covering them, then their batches' rows.
    async fn leaves(&self, from: u64, to: u64) -> Result<Vec<Hash>, DbError> {
        let links: Vec<(i64, i64)> = sqlx::query_as(LINKS_OF_LEAVES_SQL)
            .bind(i64::try_from(from).unwrap_or(i64::MAX))
            .bind(i64::try_from(to).unwrap_or(i64::MAX))
            .persistent(false)
            .fetch_all(self.db.pool())
            .await
            .ctx("read the links of a leaf range")?;
        let start: HashMap<i64, i64> = links.iter().copied().collect();
        let batches: Vec<i64> = links.iter().map(|(b, _)| *b).collect();
        let rows: Vec<(i64, Vec<u8>)> = sqlx::query_as(BATCH_HASHES_SQL)
            .bind(&batches)
            .persistent(false)
            .fetch_all(self.db.pool())
            .await
            .ctx("read the row hashes of a leaf range")?;
        let mut out = vec![None; usize::try_from(to - from).unwrap_or(0)];
        let mut rank = (i64::MIN, 0i64);
        for (batch, h) in rows {
            rank = if rank.0 == batch {
                (batch, rank.1 + 1)
            } else {
                (batch, 0)
            };
            let leaf = start.get(&batch).map(|s| s + rank.1);
            if let Some(i) = leaf
                .and_then(|l| u64::try_from(l).ok())
                .filter(|l| (from..to).contains(l))
            {
                out[(i - from) as usize] = Some(merkle::leaf_hash(&h));
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

    /// What a perfect subtree is made of: `[first, end)` at its base height (a multiple of
    /// [`TILE_HEIGHT`]: stored subtrees, or the rows' hashes at height 0).
    fn parts_of(n: Node) -> (u32, u64, u64) {
        let base = n.level / TILE_HEIGHT * TILE_HEIGHT;
        if base == n.level && base > 0 {
            return (base, n.index, n.index + 1);
        }
        let first = n.index << (n.level - base);
        (base, first, first + (1u64 << (n.level - base)))
    }

    /// The hashes `[first, end)` at height `base`.
    async fn read_parts(&self, base: u32, first: u64, end: u64) -> Result<Vec<Hash>, DbError> {
        if base == 0 {
            self.leaves(first, end).await
        } else {
            self.stored(base, first, end).await
        }
    }

    /// The hashes of `ranges` (the elements of a proof, or a root). The subtrees needed are
    /// read together: per base height, spans at most [`MERGE_GAP`] apart in one query (a
    /// proof's siblings below one stored height share a tile, so one read of its rows).
    pub(crate) async fn ranges(&self, ranges: &[(u64, u64)]) -> Result<Vec<Hash>, DbError> {
        let needed = merkle::nodes_needed(ranges);
        let mut spans: BTreeMap<u32, Vec<(u64, u64)>> = BTreeMap::new();
        for n in &needed {
            let (base, first, end) = Self::parts_of(*n);
            spans.entry(base).or_default().push((first, end));
        }
        // (base, first, the hashes read from there on)
        let mut read: Vec<(u32, u64, Vec<Hash>)> = Vec::new();
        for (base, mut v) in spans {
            v.sort_unstable();
            let mut groups: Vec<(u64, u64)> = Vec::new();
            for (a, b) in v {
                match groups.last_mut() {
                    Some(g) if a <= g.1 + MERGE_GAP => g.1 = g.1.max(b),
                    _ => groups.push((a, b)),
                }
            }
            for (a, b) in groups {
                read.push((base, a, self.read_parts(base, a, b).await?));
            }
        }
        // Each subtree's hash: a stored one, or made from at most 255 hashes one stored height
        // below it, all within what was read above.
        let mut got = HashMap::new();
        for n in needed {
            let (base, first, end) = Self::parts_of(n);
            let parts = read.iter().find_map(|(b, at, hashes)| {
                let from = usize::try_from(first.checked_sub(*at)?).ok()?;
                let to = usize::try_from(end - at).ok()?;
                (*b == base && to <= hashes.len()).then(|| &hashes[from..to])
            });
            if let Some(parts) = parts {
                got.insert(n, merkle::root_of(parts));
            }
        }
        let r: Result<Vec<Hash>, DbError> = merkle::assemble(ranges, |n| {
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
            return Ok(merkle::empty_root());
        }
        Ok(self.ranges(&[(0, size)]).await?[0])
    }

    pub async fn inclusion(&self, index: u64, size: u64) -> Result<Vec<Hash>, DbError> {
        self.ranges(&merkle::inclusion_ranges(index, size)).await
    }

    pub async fn consistency(&self, from: u64, to: u64) -> Result<Vec<Hash>, DbError> {
        self.ranges(&merkle::consistency_ranges(from, to)).await
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
    pub(crate) async fn account_places(
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
        // The rows, with the first leaf of their batch's link; then each one's rank in its batch.
        let sql = format!(
            "SELECT e.stream, e.stream_seq, e.published_at, e.batch_id, \
                 l.tree_size - l.row_count AS start \
             FROM audit.events e JOIN audit.chain_links l ON l.batch_id = e.batch_id \
             WHERE {filter} AND l.tree_size IS NOT NULL"
        );
        let mut q =
            sqlx::query_as::<_, (String, i64, chrono::DateTime<chrono::Utc>, i64, i64)>(&sql);
        for b in binds {
            q = q.bind(b);
        }
        let hits = q
            .fetch_all(self.db.pool())
            .await
            .ctx("find rows in the tree")?;
        let mut out = Vec::with_capacity(hits.len());
        for (stream, stream_seq, published_at, batch_id, start) in hits {
            let before: i64 = sqlx::query_scalar(RANK_IN_BATCH_SQL)
                .bind(batch_id)
                .bind(&stream)
                .bind(stream_seq)
                .bind(published_at)
                .persistent(false)
                .fetch_one(self.db.pool())
                .await
                .ctx("find a row's place in its batch")?;
            out.push(RowPlace {
                stream,
                stream_seq,
                leaf_index: start + before,
            });
        }
        out.sort_by_key(|p| p.leaf_index);
        Ok(out)
    }
}

/// The rows at these leaves (ascending): each one's place and row hash, in the order given; an
/// error when a leaf is not in the tree.
pub(crate) async fn rows_at(
    tx: &mut sqlx::PgConnection,
    leaves: &[u64],
) -> Result<Vec<(RowPlace, Hash)>, DbError> {
    let want: Vec<i64> = leaves
        .iter()
        .map(|l| i64::try_from(*l).unwrap_or(i64::MAX))
        .collect();
    // Each leaf's link (the first whose tree is larger), then its row by rank in the batch.
    let rows: Vec<(i64, String, i64, Vec<u8>)> = sqlx::query_as(
        "SELECT x.leaf, r.stream, r.stream_seq, r.row_hash FROM unnest($1::int8[]) AS x(leaf) \
         CROSS JOIN LATERAL (SELECT batch_id, tree_size - row_count AS start \
             FROM audit.chain_links WHERE tree_size > x.leaf ORDER BY tree_size LIMIT 1) l \
         CROSS JOIN LATERAL (SELECT e.stream, e.stream_seq, e.row_hash FROM audit.events e \
             WHERE e.batch_id = l.batch_id \
             ORDER BY e.stream COLLATE \"C\", e.stream_seq, e.published_at \
             OFFSET x.leaf - l.start LIMIT 1) r \
         ORDER BY x.leaf",
    )
    .bind(&want)
    .persistent(false)
    .fetch_all(&mut *tx)
    .await
    .ctx("find the rows at leaves")?;
    if rows.len() != want.len() {
        return Err(DbError::Corrupt {
            what: "audit.chain_links",
            why: "a leaf the account index holds is not in the tree",
        });
    }
    rows.into_iter()
        .map(|(leaf, stream, stream_seq, h)| {
            Ok((
                RowPlace {
                    stream,
                    stream_seq,
                    leaf_index: leaf,
                },
                to_hash(&h)?,
            ))
        })
        .collect()
}
