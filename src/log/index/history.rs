//! The account index's history: its updates in order (with their deltas, streamed for `verify`
//! and the tiles), one update by number, the labels changed between two updates (a consistency
//! proof), and every label's newest value (`verify`'s last check).

use futures::stream::BoxStream;
use sqlx::PgConnection;

use super::{label_of, u64_of, VersionRow, VERSION_COLS};
use crate::db::{Ctx, DbError};
use crate::tlog::index::Label;

/// A label's stored value: label, count, fold.
pub(crate) type StoredValue = (Vec<u8>, i64, Vec<u8>);

/// The update numbered `seq`.
pub(crate) async fn version_by_seq(
    tx: &mut PgConnection,
    seq: i64,
) -> Result<Option<VersionRow>, DbError> {
    sqlx::query_as(&format!(
        "SELECT {VERSION_COLS} FROM audit.index_versions WHERE seq = $1"
    ))
    .bind(seq)
    .fetch_optional(&mut *tx)
    .await
    .ctx("read an account index update")
}

/// Each label that gained leaves after version `from` up to version `to`, with those leaves in
/// log order, by label.
pub(crate) async fn changes_between(
    tx: &mut PgConnection,
    from: i64,
    to: i64,
) -> Result<Vec<(Label, Vec<u64>)>, DbError> {
    let rows: Vec<(Vec<u8>, Vec<i64>)> = sqlx::query_as(
        "SELECT e.label, array_agg(leaf ORDER BY leaf) FROM audit.index_entries e, \
             unnest(e.leaves) AS leaf \
         WHERE e.version > $1 AND e.version <= $2 GROUP BY e.label ORDER BY e.label",
    )
    .bind(from)
    .bind(to)
    .fetch_all(&mut *tx)
    .await
    .ctx("read the account index's changes between two updates")?;
    rows.into_iter()
        .map(|(l, leaves)| Ok((label_of(&l)?, leaves.into_iter().map(u64_of).collect())))
        .collect()
}

/// Every update, oldest first (their deltas not read).
pub(crate) async fn versions(tx: &mut PgConnection) -> Result<Vec<VersionRow>, DbError> {
    sqlx::query_as(&format!(
        "SELECT {VERSION_COLS} FROM audit.index_versions ORDER BY version"
    ))
    .fetch_all(&mut *tx)
    .await
    .ctx("read the account index's versions")
}

/// The update numbered `seq`, with its delta.
pub(crate) async fn delta_of(
    tx: &mut PgConnection,
    seq: i64,
) -> Result<Option<(VersionRow, Vec<u8>)>, DbError> {
    type Row = (i64, i64, Vec<u8>, i64, i64, Vec<u8>);
    let row: Option<Row> = sqlx::query_as(&format!(
        "SELECT {VERSION_COLS}, delta FROM audit.index_versions WHERE seq = $1"
    ))
    .bind(seq)
    .fetch_optional(&mut *tx)
    .await
    .ctx("read an account index update")?;
    Ok(row.map(|(version, seq, root, labels, record_leaf, delta)| {
        (
            VersionRow {
                version,
                seq,
                root,
                labels,
                record_leaf,
            },
            delta,
        )
    }))
}

/// Every update's delta, oldest first, streamed (`verify` rebuilds the index from them).
pub(crate) fn deltas(pool: &sqlx::PgPool) -> BoxStream<'_, Result<(i64, Vec<u8>), sqlx::Error>> {
    sqlx::query_as("SELECT seq, delta FROM audit.index_versions ORDER BY version").fetch(pool)
}

/// Every label's newest value, by label, streamed (`verify` holds them against the rebuilt
/// index).
pub(crate) fn latest_values(
    pool: &sqlx::PgPool,
) -> BoxStream<'_, Result<StoredValue, sqlx::Error>> {
    sqlx::query_as(
        "SELECT DISTINCT ON (label) label, count, acc FROM audit.index_entries \
         ORDER BY label, version DESC",
    )
    .fetch(pool)
}
