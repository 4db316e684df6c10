//! Whether the database is a read-only hot standby, and how far its view reaches: the last
//! chain link and published checkpoint it holds, and how long ago the transaction it replayed
//! last was committed on the primary. Reading commands report it; writing ones refuse.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::db::{Ctx, Db, DbError};

/// A standby's view of the log, as `verify` reports it.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub(crate) struct StandbyView {
    /// Seconds since the last transaction the standby replayed was committed on the primary
    /// (absent before any). It also grows while the primary is idle: compare the last link.
    pub replay_lag_seconds: Option<f64>,
    /// WAL received from the primary and WAL replayed, as LSNs.
    pub receive_lsn: Option<String>,
    pub replay_lsn: Option<String>,
    /// The newest chain link the standby holds, and when the primary wrote it.
    pub last_link: Option<i64>,
    pub last_link_at: Option<DateTime<Utc>>,
    /// The largest published checkpoint (of the rows' tree) the standby holds.
    pub last_checkpoint_size: Option<i64>,
}

impl StandbyView {
    /// One line for stderr.
    pub(crate) fn line(&self) -> String {
        let or_none = |v: Option<i64>| v.map_or_else(|| "none".to_owned(), |v| v.to_string());
        format!(
            "the database is a read-only standby: its view ends at chain link {} (written {}), checkpoint size {}; last replayed transaction {} ago",
            or_none(self.last_link),
            self.last_link_at
                .map_or_else(|| "never".to_owned(), |t| t.to_rfc3339()),
            or_none(self.last_checkpoint_size),
            self.replay_lag_seconds
                .map_or_else(|| "never".to_owned(), |s| format!("{s:.1}s")),
        )
    }
}

impl Db {
    /// Whether the server is in recovery (a hot standby): it takes no writes.
    pub(crate) async fn is_standby(&self) -> Result<bool, DbError> {
        sqlx::query_scalar("SELECT pg_is_in_recovery()")
            .fetch_one(self.pool())
            .await
            .ctx("ask whether the server is a standby")
    }

    /// The standby's view of the log; `None` on a primary.
    pub(crate) async fn standby_view(&self) -> Result<Option<StandbyView>, DbError> {
        if !self.is_standby().await? {
            return Ok(None);
        }
        sqlx::query_as(
            "SELECT extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8 \
                    AS replay_lag_seconds, \
                    pg_last_wal_receive_lsn()::text AS receive_lsn, \
                    pg_last_wal_replay_lsn()::text AS replay_lsn, \
                    l.link_seq AS last_link, l.linked_at AS last_link_at, \
                    (SELECT max(tree_size) FROM audit.checkpoints \
                      WHERE log = 'events' AND published) AS last_checkpoint_size \
             FROM (SELECT 1) one \
             LEFT JOIN LATERAL (SELECT link_seq, linked_at FROM audit.chain_links \
                                ORDER BY link_seq DESC LIMIT 1) l ON true",
        )
        .fetch_one(self.pool())
        .await
        .ctx("read the standby's view")
        .map(Some)
    }
}
