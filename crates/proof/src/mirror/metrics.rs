//! The mirror's metrics (`mirror --follow --metrics-listen`), in its own registry, and the log
//! line that states the same fact as each pull's count: one call ([`MirrorMetrics::pulled`])
//! makes both.

use std::collections::HashSet;

use prometheus::{Gauge, IntCounter, IntCounterVec, IntGauge};

use super::{PullError, Pulled};
use crate::metrics::{counter, counter_vec, float_gauge, gauge, Registry};

/// Every pull outcome (the `outcome` label's vocabulary).
pub const OUTCOMES: &[&str] = &[
    "ok",
    "unchanged",
    "refused",
    "unreachable",
    "rollback",
    "fork",
    "store_failed",
];

pub struct MirrorMetrics {
    /// Tree size of the mirror checkpoint.
    tree_size: IntGauge,
    last_success: Gauge,
    pulls: IntCounterVec,
    leaves: IntCounter,
    /// 1 once the log signed a tree that contradicts the copy (rollback or fork).
    inconsistent: IntGauge,
    /// The pairs of notes (the mirror's, the log's) already logged at ERROR.
    logged: std::sync::Mutex<HashSet<(String, String)>>,
}

impl MirrorMetrics {
    pub fn new(r: &Registry) -> MirrorMetrics {
        let pulls = counter_vec(
            r,
            "event_audit_mirror_pulls_total",
            "Pulls of the log by the mirror, by outcome",
            &["outcome"],
        );
        for o in OUTCOMES {
            pulls.with_label_values(&[o]);
        }
        MirrorMetrics {
            tree_size: gauge(
                r,
                "event_audit_mirror_tree_size",
                "Tree size (leaves) of the mirror checkpoint: what the copy holds",
            ),
            last_success: float_gauge(
                r,
                "event_audit_mirror_last_success_timestamp_seconds",
                "Unix time of the last pull that found the copy up to date or extended it",
            ),
            pulls,
            leaves: counter(
                r,
                "event_audit_mirror_leaves_added_total",
                "Leaves added to the copy by this process",
            ),
            inconsistent: gauge(
                r,
                "event_audit_mirror_inconsistent",
                "1 once the log signed a tree the copy contradicts (rollback or fork); the copy is then kept as it is",
            ),
            logged: std::sync::Mutex::new(HashSet::new()),
        }
    }

    /// The copy's size.
    fn set_size(&self, size: u64) {
        self.tree_size.set(i64::try_from(size).unwrap_or(i64::MAX));
    }

    /// Whether a rollback or fork was seen.
    pub fn is_inconsistent(&self) -> bool {
        self.inconsistent.get() == 1
    }

    /// Counts a pull and logs it: an addition at INFO, a refusal at WARN, a rollback or fork at
    /// ERROR once per distinct pair of notes.
    pub fn pulled(&self, result: &Result<Pulled, PullError>) {
        let outcome = match result {
            Ok(Pulled::Added { .. }) => "ok",
            Ok(Pulled::Unchanged { .. }) => "unchanged",
            Err(e) => e.outcome(),
        };
        self.pulls.with_label_values(&[outcome]).inc();
        match result {
            Ok(p) => {
                self.set_size(p.size());
                self.last_success.set(now());
                if let Pulled::Added { origin, from, size } = p {
                    self.leaves.inc_by(size - from);
                    tracing::info!(origin, from, size, "mirror: copied {} leaves", size - from);
                }
            }
            Err(PullError::Inconsistent { mirror, log, .. }) => {
                self.inconsistent.set(1);
                self.set_size(mirror.cp.size);
                let pair = (mirror.note.clone(), log.note.clone());
                let new = self.logged.lock().is_ok_and(|mut seen| seen.insert(pair));
                if new {
                    let e = result.as_ref().err().map(ToString::to_string);
                    tracing::error!(
                        outcome,
                        mirror_size = mirror.cp.size,
                        log_size = log.cp.size,
                        mirror_note = ?mirror.note,
                        log_note = ?log.note,
                        "{}",
                        e.unwrap_or_default()
                    );
                }
            }
            Err(e) => tracing::warn!(outcome, "mirror: {e}"),
        }
    }
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
