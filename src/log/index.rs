//! The account index's tables (`audit.index_*`, migration `account_index`): the rows of a leaf
//! range with the identifiers the catalogue marks in them, each update's writes, the labels
//! found by their identifiers' keyed hashes, and the reads a proof and `verify` make (a label's
//! leaves, the stored nodes and labels at a version, the updates' deltas in order).

use sqlx::PgConnection;

use crate::db::{Ctx, DbError};

mod history;
mod labels;
use crate::decode::catalogue::IDENTIFIER_PATHS;
use crate::tlog::index::{Label, Node, Value};
pub(crate) use history::{
    changes_between, delta_of, deltas, latest_values, version_by_seq, versions,
};
pub(crate) use labels::{
    erasures, forget_labels, labels_by_label, labels_of_subjects, pepper, StoredLabel,
};

/// One row of a leaf range: its leaf index, its row hash, whether it still holds its personal
/// data, and the identifiers it holds.
#[derive(Debug, Clone)]
pub(crate) struct IndexedRow {
    pub(crate) leaf_index: u64,
    pub(crate) row_hash: [u8; 32],
    pub(crate) held: bool,
    pub(crate) identifiers: Vec<String>,
}

/// An update as stored (its delta not read).
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct VersionRow {
    pub(crate) version: i64,
    pub(crate) seq: i64,
    pub(crate) root: Vec<u8>,
    pub(crate) labels: i64,
    pub(crate) record_leaf: i64,
}

/// What one update writes.
#[derive(Debug, Default)]
pub(crate) struct Writes {
    pub(crate) version: i64,
    pub(crate) seq: i64,
    pub(crate) root: [u8; 32],
    pub(crate) labels: i64,
    pub(crate) record_leaf: i64,
    /// The update's delta (`tlog::index::delta`).
    pub(crate) delta: Vec<u8>,
    /// Labels not stored before.
    pub(crate) new_labels: Vec<StoredLabel>,
    /// Each label changed: its new value and the leaves it gained.
    pub(crate) entries: Vec<(Label, Value, Vec<i64>)>,
    /// `(depth, prefix, node)`.
    pub(crate) nodes: Vec<(usize, u16, Node)>,
}

pub(super) const VERSION_COLS: &str = "version, seq, root, labels, record_leaf";

pub(super) fn label_of(b: &[u8]) -> Result<Label, DbError> {
    <Label>::try_from(b).map_err(|_| DbError::Corrupt {
        what: "the account index",
        why: "a label is not 32 bytes",
    })
}

pub(super) fn hash_of(b: &[u8]) -> Result<[u8; 32], DbError> {
    <[u8; 32]>::try_from(b).map_err(|_| DbError::Corrupt {
        what: "the account index",
        why: "a hash is not 32 bytes",
    })
}

pub(super) fn u64_of(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The rows of leaves `[from, to)`, in log order, with their leaf
/// indexes and the identifiers the catalogue marks in them (the account number column, and
/// each identifying field of their event's version that holds a string or a number). The
/// bounds are link ends but for an update replayed over restored leaves, whose links were cut
/// elsewhere: the links overlapping the range are read and the rows outside it dropped.
pub(crate) async fn rows_between(
    tx: &mut PgConnection,
    from: u64,
    to: u64,
) -> Result<Vec<IndexedRow>, DbError> {
    let (mut types, mut versions, mut paths) = (Vec::new(), Vec::new(), Vec::new());
    for (t, v, path, _) in IDENTIFIER_PATHS {
        types.push(*t);
        versions.push(*v);
        paths.push(*path);
    }
    let held = super::erasure::HELD;
    // Set-based: the paths cast once and joined to the rows by event version (a subquery per
    // row over every path cast its path again for each row: seven times slower).
    let sql = format!(
        "WITH p AS MATERIALIZED ( \
           SELECT t, ver, path::jsonpath AS path FROM unnest($3::text[], $4::text[], $5::text[]) AS p(t, ver, path)), \
         r AS ( \
           SELECT l.tree_size - l.row_count AS start, l.link_seq, e.stream, e.stream_seq, \
               e.published_at, e.row_hash, {held} AS held, e.account_number, e.event_type, \
               e.event_version, e.payload \
           FROM audit.chain_links l JOIN audit.events e ON e.batch_id = l.batch_id \
           WHERE l.tree_size > $1 AND l.tree_size - l.row_count < $2), \
         ids AS ( \
           SELECT r.link_seq, r.stream, r.stream_seq, r.published_at, \
               array_agg(DISTINCT v #>> '{{}}') AS xs \
           FROM r JOIN p ON p.t = r.event_type AND p.ver = r.event_version \
           CROSS JOIN LATERAL jsonb_path_query(r.payload, p.path, '{{}}', true) AS v \
           WHERE jsonb_typeof(v) IN ('string', 'number') \
           GROUP BY 1, 2, 3, 4) \
         SELECT r.start, r.link_seq, r.row_hash, r.held, r.account_number, ids.xs \
         FROM r LEFT JOIN ids USING (link_seq, stream, stream_seq, published_at) \
         ORDER BY r.link_seq, r.stream COLLATE \"C\", r.stream_seq, r.published_at"
    );
    type Row = (i64, i64, Vec<u8>, bool, Option<String>, Option<Vec<String>>);
    let rows: Vec<Row> = sqlx::query_as(&sql)
        .bind(i64_of(from))
        .bind(i64_of(to))
        .bind(&types)
        .bind(&versions)
        .bind(&paths)
        .persistent(false)
        .fetch_all(&mut *tx)
        .await
        .ctx("read the rows to index")?;
    let mut out = Vec::with_capacity(rows.len());
    let (mut link, mut rank) = (i64::MIN, 0u64);
    for (start, link_seq, row_hash, held, account, found) in rows {
        if link_seq != link {
            (link, rank) = (link_seq, 0);
        }
        let leaf_index = u64_of(start) + rank;
        rank += 1;
        if leaf_index < from || leaf_index >= to {
            continue;
        }
        let mut identifiers: Vec<String> = account
            .into_iter()
            .chain(found.into_iter().flatten())
            .filter(|x| !x.is_empty())
            .collect();
        identifiers.sort_unstable();
        identifiers.dedup();
        out.push(IndexedRow {
            leaf_index,
            row_hash: hash_of(&row_hash)?,
            held,
            identifiers,
        });
    }
    if out.len() as u64 != to.saturating_sub(from) {
        return Err(DbError::Corrupt {
            what: "audit.events",
            why: "the rows of the links do not make the tree size their links claim",
        });
    }
    Ok(out)
}

/// The link end at or after `from + rows` leaves, or the head's size when none is that far:
/// where an update of at most about `rows` rows stops.
pub(crate) async fn end_after(
    tx: &mut PgConnection,
    from: u64,
    rows: u64,
    head: u64,
) -> Result<u64, DbError> {
    let end: Option<i64> = sqlx::query_scalar(
        "SELECT min(tree_size) FROM audit.chain_links WHERE tree_size >= $1 AND tree_size <= $2",
    )
    .bind(i64_of(from.saturating_add(rows)))
    .bind(i64_of(head))
    .fetch_one(&mut *tx)
    .await
    .ctx("find where an index update stops")?;
    Ok(end.map_or(head, u64_of))
}

/// Serializes index updates across daemons, until the transaction ends.
pub(crate) async fn lock(tx: &mut PgConnection) -> Result<(), DbError> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('event-audit account index'))")
        .execute(&mut *tx)
        .await
        .ctx("lock the account index")?;
    Ok(())
}

/// The newest update, if any.
pub(crate) async fn newest(tx: &mut PgConnection) -> Result<Option<VersionRow>, DbError> {
    sqlx::query_as(&format!(
        "SELECT {VERSION_COLS} FROM audit.index_versions ORDER BY version DESC LIMIT 1"
    ))
    .fetch_optional(&mut *tx)
    .await
    .ctx("read the account index's newest version")
}

/// The newest update whose record is a leaf of the tree of `size` leaves.
pub(crate) async fn newest_within(
    tx: &mut PgConnection,
    size: u64,
) -> Result<Option<VersionRow>, DbError> {
    sqlx::query_as(&format!(
        "SELECT {VERSION_COLS} FROM audit.index_versions WHERE record_leaf < $1 \
         ORDER BY version DESC LIMIT 1"
    ))
    .bind(i64_of(size))
    .fetch_optional(&mut *tx)
    .await
    .ctx("read the account index's version within a checkpoint")
}

/// A read-only transaction over one snapshot (repeatable read): what a completeness proof
/// reads, so that its claims, its rows and its record are of one moment.
pub(crate) async fn snapshot(
    conn: &mut PgConnection,
) -> Result<sqlx::Transaction<'_, sqlx::Postgres>, DbError> {
    use sqlx::Connection;
    let mut tx = conn.begin().await.ctx("begin")?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .execute(&mut *tx)
        .await
        .ctx("read in one snapshot")?;
    Ok(tx)
}

/// The values of the labels within each `(lo, hi)` range, as of `version` (the newest at or
/// before it), sorted by label.
pub(crate) async fn values_in(
    tx: &mut PgConnection,
    ranges: &[(Label, Label)],
    version: i64,
) -> Result<Vec<(Label, Value)>, DbError> {
    if ranges.is_empty() {
        return Ok(Vec::new());
    }
    let lo: Vec<&[u8]> = ranges.iter().map(|r| &r.0[..]).collect();
    let hi: Vec<&[u8]> = ranges.iter().map(|r| &r.1[..]).collect();
    let rows: Vec<(Vec<u8>, i64, Vec<u8>)> = sqlx::query_as(
        // One range scan of the primary key per range (a join over the ranges was planned as
        // a nested loop over the whole table).
        "SELECT v.label, v.count, v.acc FROM unnest($1::bytea[], $2::bytea[]) AS r(lo, hi) \
         CROSS JOIN LATERAL (SELECT DISTINCT ON (e.label) e.label, e.count, e.acc \
             FROM audit.index_entries e WHERE e.label BETWEEN r.lo AND r.hi AND e.version <= $3 \
             ORDER BY e.label, e.version DESC) v \
         ORDER BY v.label",
    )
    .bind(&lo)
    .bind(&hi)
    .bind(version)
    .persistent(false)
    .fetch_all(&mut *tx)
    .await
    .ctx("read the account index's labels")?;
    rows.into_iter()
        .map(|(l, count, acc)| {
            Ok((
                label_of(&l)?,
                Value {
                    count: u64_of(count),
                    acc: hash_of(&acc)?,
                },
            ))
        })
        .collect()
}

/// The nonempty nodes at `depth` with a prefix in `lo..=hi`, as of `version`, sorted by
/// prefix: one probe of the primary key per prefix (the newest row at or before `version`).
pub(crate) async fn nodes(
    tx: &mut PgConnection,
    depth: usize,
    (lo, hi): (u16, u16),
    version: i64,
) -> Result<Vec<(u16, Node)>, DbError> {
    let rows: Vec<(i32, Vec<u8>, i64)> = sqlx::query_as(
        "SELECT p.prefix, n.hash, n.count FROM generate_series($2::int, $3::int) AS p(prefix) \
         CROSS JOIN LATERAL (SELECT hash, count FROM audit.index_nodes \
             WHERE depth = $1 AND prefix = p.prefix AND version <= $4 \
             ORDER BY version DESC LIMIT 1) n \
         WHERE n.count > 0 ORDER BY p.prefix",
    )
    .bind(i16::try_from(depth).unwrap_or(0))
    .bind(i32::from(lo))
    .bind(i32::from(hi))
    .bind(version)
    .persistent(false)
    .fetch_all(&mut *tx)
    .await
    .ctx("read the account index's nodes")?;
    rows.into_iter()
        .map(|(p, h, count)| {
            Ok((
                u16::try_from(p).unwrap_or(0),
                Node {
                    hash: hash_of(&h)?,
                    count: u64_of(count),
                },
            ))
        })
        .collect()
}

/// The leaves `label` holds as of `version`, in log order.
pub(crate) async fn leaves_of(
    tx: &mut PgConnection,
    label: &Label,
    version: i64,
) -> Result<Vec<u64>, DbError> {
    let rows: Vec<i64> = sqlx::query_scalar(
        "SELECT leaf FROM audit.index_entries e, unnest(e.leaves) AS leaf \
         WHERE e.label = $1 AND e.version <= $2 ORDER BY leaf",
    )
    .bind(&label[..])
    .bind(version)
    .fetch_all(&mut *tx)
    .await
    .ctx("read a label's leaves")?;
    Ok(rows.into_iter().map(u64_of).collect())
}

/// Writes one update's labels, values and nodes (before its record).
pub(crate) async fn write_index(tx: &mut PgConnection, w: &Writes) -> Result<(), DbError> {
    let ls: Vec<&[u8]> = w.new_labels.iter().map(|n| &n.subject[..]).collect();
    let ll: Vec<&[u8]> = w.new_labels.iter().map(|n| &n.label[..]).collect();
    let lp: Vec<&[u8]> = w.new_labels.iter().map(|n| &n.proof[..]).collect();
    sqlx::query(
        "INSERT INTO audit.index_labels (subject, label, proof) \
         SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[]) ON CONFLICT DO NOTHING",
    )
    .bind(&ls)
    .bind(&ll)
    .bind(&lp)
    .execute(&mut *tx)
    .await
    .ctx("store the account index's new labels")?;
    let el: Vec<&[u8]> = w.entries.iter().map(|(l, _, _)| &l[..]).collect();
    let ec: Vec<i64> = w.entries.iter().map(|(_, v, _)| i64_of(v.count)).collect();
    let ea: Vec<&[u8]> = w.entries.iter().map(|(_, v, _)| &v.acc[..]).collect();
    // The leaves of each entry as text (`{1,2,3}`): PostgreSQL's unnest cannot take an array
    // of arrays of different lengths.
    let elv: Vec<String> = w
        .entries
        .iter()
        .map(|(_, _, leaves)| {
            let parts: Vec<String> = leaves.iter().map(i64::to_string).collect();
            format!("{{{}}}", parts.join(","))
        })
        .collect();
    sqlx::query(
        "INSERT INTO audit.index_entries (label, version, count, acc, leaves) \
         SELECT l, $5, c, a, v::bigint[] \
         FROM unnest($1::bytea[], $2::int8[], $3::bytea[], $4::text[]) AS t(l, c, a, v)",
    )
    .bind(&el)
    .bind(&ec)
    .bind(&ea)
    .bind(&elv)
    .bind(w.version)
    .execute(&mut *tx)
    .await
    .ctx("store the account index's values")?;
    let nd: Vec<i16> = w
        .nodes
        .iter()
        .map(|n| i16::try_from(n.0).unwrap_or(0))
        .collect();
    let np: Vec<i32> = w.nodes.iter().map(|n| i32::from(n.1)).collect();
    let nh: Vec<&[u8]> = w.nodes.iter().map(|n| &n.2.hash[..]).collect();
    let nc: Vec<i64> = w.nodes.iter().map(|n| i64_of(n.2.count)).collect();
    sqlx::query(
        "INSERT INTO audit.index_nodes (depth, prefix, version, hash, count) \
         SELECT d, p, $5, h, c FROM unnest($1::int2[], $2::int4[], $3::bytea[], $4::int8[]) AS t(d, p, h, c)",
    )
    .bind(&nd)
    .bind(&np)
    .bind(&nh)
    .bind(&nc)
    .bind(w.version)
    .execute(&mut *tx)
    .await
    .ctx("store the account index's nodes")?;
    Ok(())
}

/// Writes one update's version row (after its record, whose number and leaf it holds).
pub(crate) async fn write_version(tx: &mut PgConnection, w: &Writes) -> Result<(), DbError> {
    sqlx::query(
        "INSERT INTO audit.index_versions (version, seq, root, labels, record_leaf, delta) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(w.version)
    .bind(w.seq)
    .bind(&w.root[..])
    .bind(w.labels)
    .bind(w.record_leaf)
    .bind(&w.delta)
    .execute(&mut *tx)
    .await
    .ctx("store the account index's version")?;
    Ok(())
}

/// The leaf index of the last row of link `link_seq`.
pub(crate) async fn last_leaf_of(tx: &mut PgConnection, link_seq: i64) -> Result<i64, DbError> {
    sqlx::query_scalar("SELECT tree_size - 1 FROM audit.chain_links WHERE link_seq = $1")
        .bind(link_seq)
        .fetch_one(&mut *tx)
        .await
        .ctx("read the index record's leaf")
}

/// The next number in `stream` (the log's own records are numbered from 1).
pub(crate) async fn next_seq(tx: &mut PgConnection, stream: &str) -> Result<i64, DbError> {
    sqlx::query_scalar(
        "SELECT coalesce(max(stream_seq), 0) + 1 FROM audit.events WHERE stream = $1",
    )
    .bind(stream)
    .fetch_one(&mut *tx)
    .await
    .ctx("number the index record")
}

/// Whether the log holds leaves a restore brought back at or after leaf `from` (their rows are
/// numbered by their leaf index in their stream).
pub(crate) async fn restored_from(tx: &mut PgConnection, from: u64) -> Result<bool, DbError> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM audit.events WHERE stream = $1 AND stream_seq >= $2)",
    )
    .bind(crate::row::restore::LEAVES)
    .bind(i64_of(from))
    .fetch_one(&mut *tx)
    .await
    .ctx("look for restored leaves the index has not covered")
}

/// The committed tree size (the head's).
pub(crate) async fn tree_size(tx: &mut PgConnection) -> Result<u64, DbError> {
    let size: i64 = sqlx::query_scalar("SELECT tree_size FROM audit.chain_head")
        .fetch_one(&mut *tx)
        .await
        .ctx("read the chain head")?;
    Ok(u64_of(size))
}
