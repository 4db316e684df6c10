//! The redelivery check: which messages of a batch are already in the log (same stream,
//! sequence and bus time). Run only when a message was delivered before, or after a unique
//! violation.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::db::{Ctx, DbError};
use crate::row::record::Record;

/// Clears `keep[i]` for every record already in the log.
pub(super) async fn skip_present(
    tx: &mut PgConnection,
    recs: &[Record],
    keep: &mut [bool],
) -> Result<(), DbError> {
    let mut by_stream: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, r) in recs.iter().enumerate() {
        by_stream.entry(&r.stream).or_default().push(i);
    }
    for (stream, idx) in by_stream {
        let seqs: Vec<i64> = idx.iter().map(|&i| recs[i].stream_seq).collect();
        let lo = idx.iter().map(|&i| recs[i].published_at).min();
        let hi = idx.iter().map(|&i| recs[i].published_at).max();
        let rows: Vec<(i64, DateTime<Utc>)> = sqlx::query_as(
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
        let present: HashSet<(i64, DateTime<Utc>)> = rows.into_iter().collect();
        for &i in &idx {
            if present.contains(&(recs[i].stream_seq, recs[i].published_at)) {
                keep[i] = false;
            }
        }
    }
    Ok(())
}
