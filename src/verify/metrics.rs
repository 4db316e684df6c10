//! Metrics of the audit log's evidence: the chain head and the last verification (its result,
//! time, duration, rows, completeness gaps by kind, and whether the witnessed checkpoints held),
//! written only by the daemon's chain poller (they can move through other processes, so they
//! are read from the database, never inferred).

use prometheus::{Gauge, IntGauge, IntGaugeVec};

use crate::telemetry::metrics::{float_gauge, gauge, gauge_vec, Registry};

/// The gap kinds of a completeness report (the `kind` label's vocabulary).
pub(crate) const GAP_KINDS: [&str; 4] = ["purged", "deleted", "missing", "pending"];

pub(crate) struct ChainMetrics {
    /// Sequence number of the latest chain link.
    pub(crate) head: IntGauge,
    /// 1 when the last verification passed, 0 when it failed, -1 never run.
    pub(crate) verify_ok: IntGauge,
    pub(crate) verify_time: IntGauge,
    /// How long the last verification took.
    pub(crate) verify_duration: Gauge,
    /// Rows the last verification rehashed.
    pub(crate) verify_rows: IntGauge,
    /// Gaps (runs of absent stream sequences) the last verification found, by kind.
    pub(crate) verify_gaps: IntGaugeVec,
    /// 1 when the last verification held against the witnessed checkpoints, 0 when it did not,
    /// -1 not checked.
    pub(crate) verify_witness_ok: IntGauge,
}

impl ChainMetrics {
    pub(crate) fn new(r: &Registry) -> ChainMetrics {
        let verify_ok = gauge(
            r,
            "event_audit_verify_ok",
            "1 when the last chain verification passed, 0 when it failed, -1 never run",
        );
        verify_ok.set(-1);
        let verify_witness_ok = gauge(
            r,
            "event_audit_verify_witness_ok",
            "1 when the last verification held against the witnessed checkpoints, 0 when it did not, -1 not checked",
        );
        verify_witness_ok.set(-1);
        let verify_gaps = gauge_vec(
            r,
            "event_audit_verify_gaps",
            "Runs of stream sequences absent from the log at the last verification, by kind (purged, deleted: gone from the bus before it was read; missing: on the bus, not recorded; pending: not read yet)",
            &["kind"],
        );
        for kind in GAP_KINDS {
            verify_gaps.with_label_values(&[kind]).set(0);
        }
        ChainMetrics {
            head: gauge(
                r,
                "event_audit_chain_head_link",
                "Sequence number of the latest hash-chain link",
            ),
            verify_ok,
            verify_time: gauge(
                r,
                "event_audit_verify_timestamp_seconds",
                "Unix time of the last chain verification",
            ),
            verify_duration: float_gauge(
                r,
                "event_audit_verify_duration_seconds",
                "How long the last verification took",
            ),
            verify_rows: gauge(
                r,
                "event_audit_verify_rows",
                "Rows the last verification rehashed",
            ),
            verify_gaps,
            verify_witness_ok,
        }
    }
}
