//! Retention's metrics, written only by the daemon's retention job: the rows whose personal
//! data it erased, and its runs by outcome (a bounded vocabulary, [`Outcome`]).

use prometheus::{IntCounter, IntCounterVec};

use crate::telemetry::metrics::{counter, counter_vec, Registry};

/// How a retention run ended: each step's outcome, the worst one winning (a run that erased
/// and then failed to archive is `failed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Outcome {
    /// Nothing was past its period.
    Nothing,
    /// Something was erased or archived, and nothing failed.
    Done,
    /// A step failed (its WARN or ERROR line says why); retried at the next run.
    Failed,
}

impl Outcome {
    /// Every outcome (the `outcome` label's vocabulary).
    pub(crate) const ALL: [Outcome; 3] = [Outcome::Done, Outcome::Nothing, Outcome::Failed];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Done => "done",
            Outcome::Nothing => "nothing",
            Outcome::Failed => "failed",
        }
    }
}

pub(crate) struct RetentionMetrics {
    /// Rows whose personal data a retention run erased.
    pub(crate) erased_rows: IntCounter,
    runs: IntCounterVec,
}

impl RetentionMetrics {
    pub(crate) fn new(r: &Registry) -> RetentionMetrics {
        let runs = counter_vec(
            r,
            "event_audit_retention_runs_total",
            "Retention runs of the daemon, by outcome (done: something erased or archived; nothing: nothing past its period; failed: see the WARN or ERROR line)",
            &["outcome"],
        );
        for o in Outcome::ALL {
            runs.with_label_values(&[o.as_str()]);
        }
        RetentionMetrics {
            erased_rows: counter(
                r,
                "event_audit_retention_erased_rows_total",
                "Rows whose personal data retention erased (retention.payloads_for)",
            ),
            runs,
        }
    }

    /// One run ended so.
    pub(crate) fn ran(&self, outcome: Outcome) {
        self.runs.with_label_values(&[outcome.as_str()]).inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_is_exported_from_the_start_and_the_worst_wins() {
        let r = Registry::new();
        let m = RetentionMetrics::new(&r);
        m.ran(Outcome::Nothing.max(Outcome::Done));
        let text = crate::telemetry::metrics::render(&r);
        assert!(
            text.contains("event_audit_retention_runs_total{outcome=\"done\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("event_audit_retention_runs_total{outcome=\"failed\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("event_audit_retention_erased_rows_total 0"),
            "{text}"
        );
        assert_eq!(Outcome::Done.max(Outcome::Failed), Outcome::Failed);
    }
}
