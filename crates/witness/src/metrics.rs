//! The independent witness's metrics (`witness serve`): cosignatures given per log, refusals of
//! validly signed checkpoints by reason (evidence of a misbehaving log), and every error answer
//! by status.

use prometheus::IntCounterVec;

use event_audit_base::metrics::{counter_vec, Registry};

/// The independent witness's metrics (`witness serve`): cosignatures given, requests refused.
pub struct WitnessServerMetrics {
    pub cosigned: IntCounterVec,
    /// Refused requests whose checkpoint signature was valid: evidence of a misbehaving log.
    pub refused: IntCounterVec,
    /// Every answer with an error status, by status ([`WITNESS_CODES`]; `other` for the rest).
    pub rejected: IntCounterVec,
}

impl WitnessServerMetrics {
    /// A validly signed checkpoint refused: evidence of a misbehaving log, logged and counted by
    /// reason in one call.
    pub fn refused_evidence(
        &self,
        origin: &str,
        size: u64,
        known: Option<u64>,
        reason: &str,
        status: u16,
    ) {
        self.refused.with_label_values(&[origin, reason]).inc();
        tracing::warn!(%origin, size, known = known.unwrap_or(0), reason, status, "refused a checkpoint signed by the log's key: the log shows a history that does not extend what this witness cosigned");
    }
}

/// The `reason` vocabulary of refused requests.
pub const WITNESS_REFUSALS: &[&str] = &["old_size", "conflict", "empty_root", "inconsistent"];

/// The `code` vocabulary of the witness's error answers; any other status is `other`.
pub const WITNESS_CODES: &[&str] = &[
    "400", "403", "404", "405", "408", "409", "413", "422", "431", "500", "503",
];

impl WitnessServerMetrics {
    pub fn new(r: &Registry, origins: &[String]) -> WitnessServerMetrics {
        let m = WitnessServerMetrics {
            cosigned: counter_vec(
                r,
                "event_audit_witness_cosignatures_total",
                "Checkpoints this witness cosigned (by log origin)",
                &["origin"],
            ),
            refused: counter_vec(
                r,
                "event_audit_witness_refusals_total",
                "Validly signed checkpoints this witness refused: evidence of the log misbehaving (by origin and reason)",
                &["origin", "reason"],
            ),
            rejected: counter_vec(
                r,
                "event_audit_witness_rejected_requests_total",
                "Requests the witness answered with an error status, by status: every refusal (malformed, too large or too slow 400/413/408, unknown origin 404, bad signature 403, a stale old size 409 the client retries, 422); those that are evidence against the log are also in event_audit_witness_refusals_total",
                &["code"],
            ),
        };
        for o in origins {
            m.cosigned.with_label_values(&[o]);
            for reason in WITNESS_REFUSALS {
                m.refused.with_label_values(&[o.as_str(), reason]);
            }
        }
        for code in WITNESS_CODES.iter().chain(&["other"]) {
            m.rejected.with_label_values(&[code]);
        }
        m
    }
}
