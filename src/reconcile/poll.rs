//! The reconciliation metrics, derived from the stored runs: the daemon polls the latest state of
//! every open batch and of every supplier-wide scope with a run in the last seven days, so runs
//! of the CLI and of any daemon reach `/metrics` within one poll. The only writer of
//! `event_audit_reconcile_*` and `event_audit_batch_accounts`. Series of scopes that are gone
//! (a closed batch) are removed.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};

use super::model::Outcome;
use super::registration::Registration;
use super::store::{ReconcileStore, ScopeState};
use super::verdict::Verdict;
use crate::db::DbError;
use crate::reconcile::metrics::{ReconcileMetrics, WHOLE_SUPPLIER};

/// Supplier-wide scopes are exported while they had a run this recently.
const SUPPLIER_SCOPES_FOR: i64 = 7;

const OUTCOMES: [Outcome; 3] = [Outcome::Ok, Outcome::Mismatches, Outcome::Incomplete];

/// What the poller exported last time.
#[derive(Default)]
pub(crate) struct Poller {
    /// Runs counted so far per (supplier, batch, outcome).
    runs: HashMap<[String; 3], u64>,
    /// The (supplier, batch) pairs exported.
    scopes: HashSet<[String; 2]>,
}

fn labels(s: &ScopeState) -> [String; 2] {
    [
        s.supplier.clone(),
        s.batch.clone().unwrap_or_else(|| WHOLE_SUPPLIER.to_owned()),
    ]
}

impl Poller {
    /// Reads the stored runs once and updates `m`.
    pub(crate) async fn poll(
        &mut self,
        store: &ReconcileStore,
        m: &ReconcileMetrics,
        now: DateTime<Utc>,
    ) -> Result<(), DbError> {
        let states = store
            .scope_states(now - Duration::days(SUPPLIER_SCOPES_FOR))
            .await?;
        self.apply(&states, m);
        Ok(())
    }

    /// Exports `states`, removing the series of scopes no longer among them.
    pub(crate) fn apply(&mut self, states: &[ScopeState], m: &ReconcileMetrics) {
        let mut seen = HashSet::new();
        for s in states {
            let [supplier, batch] = labels(s);
            let (sl, bl) = (supplier.as_str(), batch.as_str());
            for o in OUTCOMES {
                let total = s.runs.get(o.as_str()).copied().unwrap_or(0);
                let key = [supplier.clone(), batch.clone(), o.as_str().to_owned()];
                let before = self.runs.get(&key).copied().unwrap_or(0);
                let c = m.runs.with_label_values(&[sl, bl, o.as_str()]);
                if total < before {
                    c.reset();
                    c.inc_by(total);
                } else {
                    c.inc_by(total - before);
                }
                self.runs.insert(key, total);
                if !s.runs.is_empty() {
                    m.last_outcome
                        .with_label_values(&[sl, bl, o.as_str()])
                        .set(i64::from(s.last_outcome == o));
                }
            }
            if let Some(n) = s.batch_accounts {
                m.batch_accounts
                    .with_label_values(&[sl, bl])
                    .set(i64::try_from(n).unwrap_or(i64::MAX));
            }
            if let Some(at) = s.completed_at {
                m.last_run.with_label_values(&[sl, bl]).set(at.timestamp());
                set_all(
                    &m.accounts,
                    sl,
                    bl,
                    Verdict::ALL.map(|v| v.as_str()),
                    &s.counts,
                );
                // Every state, 0 when the run read no meter points: a panel shows 0, not "No
                // data", on a healthy daemon.
                let names = Registration::ALL.map(|r| r.as_str());
                set_all(&m.registrations, sl, bl, names, &s.registrations);
            }
            seen.insert([supplier, batch]);
        }
        for gone in self.scopes.difference(&seen) {
            let [sl, bl] = [gone[0].as_str(), gone[1].as_str()];
            for o in OUTCOMES {
                let _ = m.runs.remove_label_values(&[sl, bl, o.as_str()]);
                let _ = m.last_outcome.remove_label_values(&[sl, bl, o.as_str()]);
                self.runs
                    .remove(&[gone[0].clone(), gone[1].clone(), o.as_str().to_owned()]);
            }
            let _ = m.last_run.remove_label_values(&[sl, bl]);
            let _ = m.batch_accounts.remove_label_values(&[sl, bl]);
            for v in Verdict::ALL {
                let _ = m.accounts.remove_label_values(&[sl, bl, v.as_str()]);
            }
            for r in Registration::ALL {
                let _ = m.registrations.remove_label_values(&[sl, bl, r.as_str()]);
            }
        }
        self.scopes = seen;
    }
}

fn set_all<const N: usize>(
    g: &prometheus::IntGaugeVec,
    supplier: &str,
    batch: &str,
    names: [&str; N],
    counts: &BTreeMap<String, u64>,
) {
    for name in names {
        let n = counts.get(name).copied().unwrap_or(0);
        g.with_label_values(&[supplier, batch, name])
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::metrics::{render, Registry};

    fn state(batch: Option<&str>, runs: &[(&str, u64)], matched: u64) -> ScopeState {
        ScopeState {
            scope: batch.map_or("suppliers:S".into(), |b| format!("batch:{b}")),
            supplier: "S".into(),
            batch: batch.map(str::to_owned),
            batch_accounts: batch.map(|_| 10),
            last_outcome: Outcome::Mismatches,
            completed_at: DateTime::from_timestamp(1_800_000_000, 0),
            counts: [("matched".to_owned(), matched)].into_iter().collect(),
            registrations: [("stalled".to_owned(), 2)].into_iter().collect(),
            runs: runs.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect(),
        }
    }

    #[test]
    fn counters_follow_the_stored_runs_and_gone_scopes_disappear() {
        let registry = Registry::new();
        let m = &ReconcileMetrics::new(&registry);
        let mut p = Poller::default();
        p.apply(
            &[
                state(Some("w1"), &[("ok", 2)], 7),
                state(None, &[("mismatches", 1)], 3),
            ],
            m,
        );
        p.apply(&[state(Some("w1"), &[("ok", 3), ("incomplete", 1)], 8)], m);
        let text = render(&registry);
        for line in [
            r#"event_audit_reconcile_runs_total{batch="w1",outcome="ok",supplier="S"} 3"#,
            r#"event_audit_reconcile_runs_total{batch="w1",outcome="incomplete",supplier="S"} 1"#,
            r#"event_audit_reconcile_accounts{batch="w1",supplier="S",verdict="matched"} 8"#,
            r#"event_audit_reconcile_accounts{batch="w1",supplier="S",verdict="failed"} 0"#,
            r#"event_audit_reconcile_registration_accounts{batch="w1",registration="stalled",supplier="S"} 2"#,
            r#"event_audit_reconcile_last_outcome{batch="w1",outcome="mismatches",supplier="S"} 1"#,
            r#"event_audit_reconcile_last_outcome{batch="w1",outcome="ok",supplier="S"} 0"#,
            r#"event_audit_batch_accounts{batch="w1",supplier="S"} 10"#,
        ] {
            assert!(text.contains(line), "{line} missing:\n{text}");
        }
        assert!(
            !text.contains(r#"batch="*""#),
            "the gone scope stays:\n{text}"
        );
    }

    #[test]
    fn a_run_without_meter_points_exports_every_registration_state_at_zero() {
        let registry = Registry::new();
        let mut s = state(Some("w2"), &[("ok", 1)], 4);
        s.registrations.clear();
        Poller::default().apply(&[s], &ReconcileMetrics::new(&registry));
        let text = render(&registry);
        for r in Registration::ALL {
            let line = format!(
                r#"event_audit_reconcile_registration_accounts{{batch="w2",registration="{}",supplier="S"}} 0"#,
                r.as_str()
            );
            assert!(text.contains(&line), "{line} missing:\n{text}");
        }
    }
}
