//! Metrics of reconciliation, derived from the stored runs by the daemon's poller (so runs of
//! the CLI and of any daemon alike appear within one poll), by supplier and batch (`batch` is a
//! registered batch's name, or `*` for a supplier-wide run; only open batches are exported):
//! accounts per verdict and per registration state of the latest completed run, when it
//! finished, the latest run's outcome, runs by outcome, and each open batch's size.

use prometheus::{IntCounterVec, IntGaugeVec};

use crate::telemetry::metrics::{counter_vec, gauge_vec, Registry};

/// The `batch` label of a supplier-wide scope.
pub(crate) const WHOLE_SUPPLIER: &str = "*";

pub(crate) struct ReconcileMetrics {
    /// Accounts per verdict in the latest completed run.
    pub(crate) accounts: IntGaugeVec,
    /// Accounts per registration state in the latest completed run (every state 0 when the run
    /// read no meter points).
    pub(crate) registrations: IntGaugeVec,
    /// Unix time of the latest completed run.
    pub(crate) last_run: IntGaugeVec,
    /// 1 for the latest run's outcome (`ok`, `mismatches`, `incomplete`), 0 for the others.
    pub(crate) last_outcome: IntGaugeVec,
    /// Stored runs by outcome.
    pub(crate) runs: IntCounterVec,
    /// Accounts in each open batch's manifest.
    pub(crate) batch_accounts: IntGaugeVec,
}

impl ReconcileMetrics {
    pub(crate) fn new(r: &Registry) -> ReconcileMetrics {
        ReconcileMetrics {
            accounts: gauge_vec(
                r,
                "event_audit_reconcile_accounts",
                "Accounts per verdict in the latest completed reconciliation run, by supplier and batch",
                &["supplier", "batch", "verdict"],
            ),
            registrations: gauge_vec(
                r,
                "event_audit_reconcile_registration_accounts",
                "Accounts per registration state (worst meter point) in the latest completed run, by supplier and batch",
                &["supplier", "batch", "registration"],
            ),
            last_run: gauge_vec(
                r,
                "event_audit_reconcile_last_run_timestamp_seconds",
                "Unix time of the latest completed reconciliation run, by supplier and batch",
                &["supplier", "batch"],
            ),
            last_outcome: gauge_vec(
                r,
                "event_audit_reconcile_last_outcome",
                "1 for the outcome of the latest reconciliation run (ok, mismatches, incomplete), 0 for the others",
                &["supplier", "batch", "outcome"],
            ),
            runs: counter_vec(
                r,
                "event_audit_reconcile_runs_total",
                "Stored reconciliation runs by supplier, batch and outcome (ok, mismatches, incomplete)",
                &["supplier", "batch", "outcome"],
            ),
            batch_accounts: gauge_vec(
                r,
                "event_audit_batch_accounts",
                "Accounts in the manifest of each open batch",
                &["supplier", "batch"],
            ),
        }
    }
}
