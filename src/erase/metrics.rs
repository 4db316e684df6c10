//! Erasure's metric, derived from the stored erasures by the daemon's poller (erasures are made
//! by the `erase` command, another process): `event_audit_erased_people_total`, the people
//! erased by `erase --account`. The only writer of it.

use prometheus::IntCounter;

use crate::db::{Db, DbError};
use crate::telemetry::metrics::{counter, Registry};

pub(crate) struct ErasureMetrics {
    /// People erased (`erase --account`), as `audit.erasures` counts them.
    pub(crate) people: IntCounter,
}

impl ErasureMetrics {
    pub(crate) fn new(r: &Registry) -> ErasureMetrics {
        ErasureMetrics {
            people: counter(
                r,
                "event_audit_erased_people_total",
                "People erased on request (event-audit erase --account), as the log's erasure records count them",
            ),
        }
    }

    /// Reads the count of people erased and raises the counter to it (never lowers it).
    pub(crate) async fn poll(&self, db: &Db) -> Result<(), DbError> {
        let n = crate::log::erasure::people_erased(db).await?;
        let n = u64::try_from(n).unwrap_or(0);
        let now = self.people.get();
        if n > now {
            self.people.inc_by(n - now);
        }
        Ok(())
    }
}
