//! Metrics of the witnessed log, written only by the daemon's checkpoint signer.

use prometheus::{IntCounter, IntGauge};

use super::{counter, gauge, Registry};

pub struct WitnessMetrics {
    /// Tree size of the last checkpoint this daemon published.
    pub size: IntGauge,
    /// Unix time of the last checkpoint this daemon published.
    pub time: IntGauge,
    pub failures: IntCounter,
    /// Signed checkpoints not yet published.
    pub backlog: IntGauge,
}

impl WitnessMetrics {
    pub fn new(r: &Registry) -> WitnessMetrics {
        WitnessMetrics {
            size: gauge(
                r,
                "event_audit_checkpoint_size_rows",
                "Tree size (rows) of the last checkpoint published to the witness",
            ),
            time: gauge(
                r,
                "event_audit_checkpoint_timestamp_seconds",
                "Unix time the last checkpoint was published to the witness",
            ),
            failures: counter(
                r,
                "event_audit_checkpoint_publish_failures_total",
                "Checkpoint rounds that could not publish to the witness (retried)",
            ),
            backlog: gauge(
                r,
                "event_audit_checkpoint_backlog_checkpoints",
                "Signed checkpoints waiting to be published to the witness",
            ),
        }
    }
}
