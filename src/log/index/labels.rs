//! The account index's labels (`audit.index_labels`): each identifier's label and VRF proof,
//! found by the identifier's keyed hash with the database's pepper, or by the label; an
//! erasure forgets the person's.

use sqlx::PgConnection;

use super::{hash_of, label_of};
use crate::db::{Ctx, DbError};
use crate::tlog::index::Label;

/// A label stored for an identifier: its keyed hash (`SHA-256(pepper ‖ identifier)`), the
/// label and its VRF proof.
#[derive(Debug, Clone)]
pub(crate) struct StoredLabel {
    pub(crate) subject: [u8; 32],
    pub(crate) label: Label,
    pub(crate) proof: Vec<u8>,
}

/// The pepper of `audit.erasure_pepper`, which identifiers are hashed with.
pub(crate) async fn pepper(tx: &mut PgConnection) -> Result<Vec<u8>, DbError> {
    sqlx::query_scalar("SELECT pepper FROM audit.erasure_pepper")
        .fetch_one(&mut *tx)
        .await
        .ctx("read the database's pepper")
}

/// How many erasures the log records (the updater forgets its labels when this changes).
pub(crate) async fn erasures(tx: &mut PgConnection) -> Result<i64, DbError> {
    sqlx::query_scalar("SELECT count(*) FROM audit.erasures")
        .fetch_one(&mut *tx)
        .await
        .ctx("count the erasures")
}

/// The labels stored for these subjects (identifiers' keyed hashes).
pub(crate) async fn labels_of_subjects(
    tx: &mut PgConnection,
    subjects: &[[u8; 32]],
) -> Result<Vec<StoredLabel>, DbError> {
    let keys: Vec<&[u8]> = subjects.iter().map(|s| &s[..]).collect();
    let rows: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> = sqlx::query_as(
        "SELECT subject, label, proof FROM audit.index_labels WHERE subject = ANY($1)",
    )
    .bind(&keys)
    .fetch_all(&mut *tx)
    .await
    .ctx("read the account index's labels by identifier")?;
    stored(rows)
}

/// The labels stored as these (their VRF proofs; an erased person's are not kept).
pub(crate) async fn labels_by_label(
    tx: &mut PgConnection,
    labels: &[Label],
) -> Result<Vec<StoredLabel>, DbError> {
    let keys: Vec<&[u8]> = labels.iter().map(|l| &l[..]).collect();
    let rows: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> = sqlx::query_as(
        "SELECT subject, label, proof FROM audit.index_labels WHERE label = ANY($1)",
    )
    .bind(&keys)
    .fetch_all(&mut *tx)
    .await
    .ctx("read the account index's label proofs")?;
    stored(rows)
}

fn stored(rows: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)>) -> Result<Vec<StoredLabel>, DbError> {
    rows.into_iter()
        .map(|(s, l, p)| {
            Ok(StoredLabel {
                subject: hash_of(&s)?,
                label: label_of(&l)?,
                proof: p,
            })
        })
        .collect()
}

/// Forgets the labels of these identifiers (an erasure: `SHA-256(pepper ‖ identifier)` each,
/// computed here with the database's pepper). Returns how many were stored.
pub(crate) async fn forget_labels(tx: &mut PgConnection, ids: &[String]) -> Result<u64, DbError> {
    let done = sqlx::query(
        "DELETE FROM audit.index_labels WHERE subject IN \
         (SELECT sha256(p.pepper || convert_to(i.id, 'UTF8')) \
          FROM audit.erasure_pepper p, unnest($1::text[]) AS i(id))",
    )
    .bind(ids)
    .execute(&mut *tx)
    .await
    .ctx("forget the erased person's index labels")?;
    Ok(done.rows_affected())
}
