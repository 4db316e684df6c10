//! The account index's metrics, written only by its updater (the signer's round).

use prometheus::{Histogram, IntCounter, IntGauge};

use crate::telemetry::metrics::{counter, gauge, histogram, Registry};

pub(crate) struct IndexMetrics {
    /// Updates recorded in the log.
    pub(crate) updates: IntCounter,
    /// Updates that failed (the WARN line says why; retried at the next round).
    pub(crate) failures: IntCounter,
    /// Rows indexed.
    pub(crate) rows: IntCounter,
    /// Updates replayed from a copy of the tiles after a restore.
    pub(crate) replayed: IntCounter,
    /// Labels new to the log (a VRF proof made for each).
    pub(crate) new_labels: IntCounter,
    /// Labels the index holds after the last update.
    pub(crate) labels: IntGauge,
    /// The log size the last update covers.
    pub(crate) size: IntGauge,
    /// How long one update took.
    pub(crate) seconds: Histogram,
}

impl IndexMetrics {
    pub(crate) fn new(r: &Registry) -> IndexMetrics {
        IndexMetrics {
            updates: counter(
                r,
                "event_audit_index_updates_total",
                "Account index updates recorded as rows of the log",
            ),
            failures: counter(
                r,
                "event_audit_index_failures_total",
                "Account index updates that failed (retried at the next checkpoint round)",
            ),
            rows: counter(
                r,
                "event_audit_index_rows_total",
                "Rows of the log indexed by the account index",
            ),
            replayed: counter(
                r,
                "event_audit_index_replayed_updates_total",
                "Account index updates a restored database lost, replayed from the deltas a copy of the log's tiles publishes",
            ),
            new_labels: counter(
                r,
                "event_audit_index_new_labels_total",
                "Identifiers new to the account index (a VRF proof made for each)",
            ),
            labels: gauge(
                r,
                "event_audit_index_labels",
                "Labels (identifiers) the account index holds after its last update",
            ),
            size: gauge(
                r,
                "event_audit_index_size",
                "The log size the account index's last update covers",
            ),
            seconds: histogram(
                r,
                "event_audit_index_update_seconds",
                "How long one account index update took",
                vec![0.005, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0],
            ),
        }
    }
}
