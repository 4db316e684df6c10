//! The metrics of a restore: restores made, leaves restored, and whether the database's tree
//! is behind the checkpoint the log's key signed with no copy to restore it from, or the
//! signer's memory file was missing at start-up (and when: the alert outlives the few seconds
//! until the signer writes it again).

use prometheus::{IntCounter, IntGauge};

use crate::telemetry::metrics::{counter, gauge, Registry};

pub(crate) struct RestoreMetrics {
    pub(crate) restores: IntCounter,
    pub(crate) leaves: IntCounter,
    pub(crate) behind: IntGauge,
    pub(crate) memory_missing: IntGauge,
    pub(crate) memory_lost_at: IntGauge,
}

impl RestoreMetrics {
    pub(crate) fn new(r: &Registry) -> RestoreMetrics {
        RestoreMetrics {
            restores: counter(
                r,
                "event_audit_log_restores_total",
                "Restores of the log's lost leaves from a copy of its tiles, recorded in the log (a database restored from a backup behind the last signed checkpoint)",
            ),
            leaves: counter(
                r,
                "event_audit_log_restored_leaves_total",
                "Leaves brought back from a copy of the log's tiles by a restore",
            ),
            behind: gauge(
                r,
                "event_audit_log_behind_signed",
                "1 when the database's tree is smaller than the checkpoint the log's key signed and no copy could restore the lost leaves (nothing is signed)",
            ),
            memory_missing: gauge(
                r,
                "event_audit_signer_memory_missing",
                "1 from a start-up that found the signer's memory file missing although its key had signed checkpoints (it is rebuilt from them, wherever they are found) until the signer has written the file again",
            ),
            memory_lost_at: gauge(
                r,
                "event_audit_signer_memory_lost_timestamp_seconds",
                "Unix time of the last start-up that found the signer's memory file missing although its key had signed checkpoints (0: never since this process started)",
            ),
        }
    }
}
