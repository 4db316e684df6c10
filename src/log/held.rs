//! What the log holds of a stream: the runs of consecutive sequences published since a time (a
//! stream's creation: recovery), the rows published on a stream of that name before it (an
//! earlier incarnation, when the stream was recreated), and where a recreated consumer resumes.

use chrono::{DateTime, Utc};

use super::Log;
use crate::db::{Ctx, DbError};

impl Log {
    /// The runs of sequences of `stream` the log holds among rows published at or after
    /// `since`, ascending, both ends included.
    pub(crate) async fn held_runs(
        &self,
        stream: &str,
        since: DateTime<Utc>,
    ) -> Result<Vec<[u64; 2]>, DbError> {
        let runs: Vec<(i64, i64)> = sqlx::query_as(
            "SELECT min(stream_seq) AS first, max(stream_seq) AS last FROM ( \
               SELECT stream_seq, stream_seq - row_number() OVER (ORDER BY stream_seq) AS island \
               FROM (SELECT DISTINCT stream_seq FROM audit.events \
                     WHERE stream = $1 AND published_at >= $2) d) s \
             GROUP BY island ORDER BY first",
        )
        .bind(stream)
        .bind(since)
        .fetch_all(self.pool())
        .await
        .ctx("read the sequences the log holds of a stream")?;
        Ok(runs
            .into_iter()
            .map(|(a, b)| [a.max(0) as u64, b.max(0) as u64])
            .collect())
    }

    /// How many rows of `stream` the log holds published before `since`, and their highest
    /// sequence; `None` when there are none.
    pub(crate) async fn rows_before(
        &self,
        stream: &str,
        since: DateTime<Utc>,
    ) -> Result<Option<(i64, i64)>, DbError> {
        let (rows, last): (i64, Option<i64>) = sqlx::query_as(
            "SELECT count(*) AS rows, max(stream_seq) AS last FROM audit.events \
             WHERE stream = $1 AND published_at < $2",
        )
        .bind(stream)
        .bind(since)
        .fetch_one(self.pool())
        .await
        .ctx("look for rows of a stream's earlier incarnation")?;
        Ok(last.filter(|_| rows > 0).map(|l| (rows, l)))
    }

    /// Where a recreated consumer resumes on `stream`, every sequence before `from` being in
    /// the log: the first sequence from `from` on that the log lacks (a message delivered but
    /// never committed) below the highest one it holds, else the one after that highest.
    pub(crate) async fn resume_point(&self, stream: &str, from: i64) -> Result<i64, DbError> {
        let from = from.max(1);
        let mut conn = self.db.acquire().await?;
        let top: Option<i64> = sqlx::query_scalar(
            "SELECT max(stream_seq) AS top FROM audit.events WHERE stream = $1 AND stream_seq >= $2",
        )
        .bind(stream)
        .bind(from)
        .fetch_one(&mut *conn)
        .await
        .ctx("find the last sequence in the log")?;
        let Some(top) = top else {
            return Ok(from);
        };
        let gap: Option<i64> = sqlx::query_scalar(
            "SELECT min(s) FROM generate_series($2::int8, $3::int8) AS s \
             WHERE NOT EXISTS (SELECT 1 FROM audit.events e WHERE e.stream = $1 AND e.stream_seq = s)",
        )
        .bind(stream)
        .bind(from)
        .bind(top)
        .fetch_one(&mut *conn)
        .await
        .ctx("find the first sequence missing from the log")?;
        Ok(gap.unwrap_or(top + 1))
    }
}
