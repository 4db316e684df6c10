//! The SQL of `drift`: aggregates of `audit.field_observations` over a time range (grouped in
//! PostgreSQL; the table holds one row per batch and observation, never raw bytes).

use chrono::{DateTime, Utc};
use sqlx::Row;

use super::{Range, Rows};
use crate::db::{Ctx, Db, DbError};

/// Reads drift aggregates.
pub(crate) struct DriftStore {
    db: Db,
}

impl DriftStore {
    pub(crate) fn new(db: Db) -> DriftStore {
        DriftStore { db }
    }

    /// Every aggregate of the range, grouped by (what, event, status, path, kind, code).
    pub(crate) async fn rows(&self, range: &Range, fingerprint: &str) -> Result<Rows, DbError> {
        let rows = sqlx::query(
            "SELECT what, event, status, path, kind, code, sum(count)::int8 AS n, \
                 min(first_at) AS first_at, max(last_at) AS last_at, \
                 COALESCE(bit_or(declared_seen) FILTER (WHERE catalogue = $3), 0) AS seen \
             FROM audit.field_observations \
             WHERE ($1::timestamptz IS NULL OR last_at >= $1) AND ($2::timestamptz IS NULL OR first_at < $2) \
             GROUP BY what, event, status, path, kind, code \
             ORDER BY event, what, path, kind, code, status",
        )
        .bind(range.since)
        .bind(range.until)
        .bind(fingerprint)
        .fetch_all(self.db.pool())
        .await
        .ctx("read field observations")?;
        let mut out = Rows::default();
        for r in rows {
            let get = |c: &str| r.try_get::<String, _>(c).ctx("read field observations");
            let first: DateTime<Utc> = r.try_get("first_at").ctx("read field observations")?;
            let last: DateTime<Utc> = r.try_get("last_at").ctx("read field observations")?;
            let n: i64 = r.try_get("n").ctx("read field observations")?;
            let seen: i64 = r.try_get("seen").ctx("read field observations")?;
            out.push(super::Agg {
                what: get("what")?,
                event: get("event")?,
                status: get("status")?,
                path: get("path")?,
                kind: get("kind")?,
                code: get("code")?,
                count: u64::try_from(n).unwrap_or(0),
                declared_seen: seen as u64,
                first,
                last,
            });
        }
        Ok(out)
    }
}
