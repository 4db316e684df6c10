//! Run-to-run changes, pure: which accounts changed verdict (or registration) between two runs
//! of the same scope, with counts per transition (`awaiting_event → matched`). An account in
//! only one of the runs changes from or to `(none)`. Served by `reconcile diff`,
//! `/reports/reconciliation/diff` and the "changed since the previous run" line of each report.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::model::{AccountResult, RunReport};
use super::settings::RunSettings;

/// What a missing side is called in a transition.
pub(crate) const NONE: &str = "(none)";

/// One account that changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Change {
    pub(crate) external_account_number: String,
    /// The verdicts in the earlier and the later run (`None`: not in that run).
    pub(crate) from: Option<String>,
    pub(crate) to: Option<String>,
    /// The registration roll-ups, when read.
    pub(crate) from_registration: Option<String>,
    pub(crate) to_registration: Option<String>,
    /// The later run's explanation.
    pub(crate) detail: Option<String>,
}

impl Change {
    pub(crate) fn verdict_changed(&self) -> bool {
        self.from != self.to
    }

    pub(crate) fn registration_changed(&self) -> bool {
        self.from_registration != self.to_registration
    }
}

/// The changes from run `from` to run `to`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Diff {
    pub(crate) scope: String,
    /// The registered batch the runs reconciled (`SUPPLIER/NAME`), if any: what the pages
    /// name instead of the scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) batch: Option<String>,
    pub(crate) from_run: i64,
    pub(crate) to_run: i64,
    pub(crate) from_finished_at: DateTime<Utc>,
    pub(crate) to_finished_at: DateTime<Utc>,
    /// Each run's trigger (`cli`, `daemon`) and settings (`None`: stored before runs recorded
    /// them).
    pub(crate) from_trigger: String,
    pub(crate) to_trigger: String,
    pub(crate) from_settings: Option<RunSettings>,
    pub(crate) to_settings: Option<RunSettings>,
    /// The settings that differ between the runs (`registration grace 7d → 30m`), when both
    /// were recorded: changes may then come from the settings, not from either side's data.
    pub(crate) settings_differ: Vec<String>,
    /// `from → to` verdict transitions and how many accounts made each.
    pub(crate) transitions: BTreeMap<String, u64>,
    /// `from → to` registration transitions.
    pub(crate) registration_transitions: BTreeMap<String, u64>,
    /// Accounts whose verdict or registration is the same in both runs.
    pub(crate) unchanged: u64,
    /// Every account that changed, by external account number.
    pub(crate) changes: Vec<Change>,
}

impl Diff {
    /// No account changed.
    pub(crate) fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// The warning when the runs used different settings; `None` when they did not (or when
    /// either run's were not recorded).
    pub(crate) fn settings_warning(&self) -> Option<String> {
        (!self.settings_differ.is_empty()).then(|| {
            format!(
                "runs {} and {} used different settings ({}): changes may come from the \
                 settings, not from the events or the platform",
                self.from_run,
                self.to_run,
                self.settings_differ.join(", ")
            )
        })
    }

    /// What the runs compared: `batch ACME/week-1`, else the scope (`scope suppliers:ACME`).
    pub(crate) fn what(&self) -> String {
        match &self.batch {
            Some(b) => format!("batch {b}"),
            None => format!("scope {}", self.scope),
        }
    }
}

/// `a → b`, either side `(none)` when absent.
pub(crate) fn transition(a: Option<&str>, b: Option<&str>) -> String {
    format!("{} → {}", a.unwrap_or(NONE), b.unwrap_or(NONE))
}

fn verdict(r: &AccountResult) -> String {
    r.verdict.as_str().to_owned()
}

/// The later run's explanation, or, where the verdict needs none (`matched`), what the
/// platform and the event say now: the diff page's "Detail (now)" is never empty.
fn detail_now(r: &AccountResult) -> String {
    r.detail.clone().unwrap_or_else(|| {
        format!(
            "platform {}; event {}",
            r.platform_status,
            r.event_outcome.as_deref().unwrap_or("none")
        )
    })
}

fn registration(r: &AccountResult) -> Option<String> {
    r.registration.map(|x| x.as_str().to_owned())
}

/// The changes from `a` (earlier) to `b` (later); the caller checks they share a scope.
pub(crate) fn diff(a: &RunReport, b: &RunReport) -> Diff {
    let before: HashMap<&str, &AccountResult> = a
        .results
        .iter()
        .map(|r| (r.external_account_number.as_str(), r))
        .collect();
    let after: HashMap<&str, &AccountResult> = b
        .results
        .iter()
        .map(|r| (r.external_account_number.as_str(), r))
        .collect();
    let mut keys: Vec<&str> = before.keys().chain(after.keys()).copied().collect();
    keys.sort_unstable();
    keys.dedup();
    let mut d = Diff {
        scope: b.scope.clone(),
        batch: b
            .batch
            .as_ref()
            .map(|x| format!("{}/{}", x.supplier, x.name)),
        from_run: a.run_id.unwrap_or_default(),
        to_run: b.run_id.unwrap_or_default(),
        from_finished_at: a.finished_at,
        to_finished_at: b.finished_at,
        from_trigger: a.trigger.clone(),
        to_trigger: b.trigger.clone(),
        from_settings: a.settings.clone(),
        to_settings: b.settings.clone(),
        settings_differ: match (&a.settings, &b.settings) {
            (Some(x), Some(y)) => x.differences(y),
            _ => Vec::new(),
        },
        transitions: BTreeMap::new(),
        registration_transitions: BTreeMap::new(),
        unchanged: 0,
        changes: Vec::new(),
    };
    for ext in keys {
        let (x, y) = (before.get(ext), after.get(ext));
        let c = Change {
            external_account_number: ext.to_owned(),
            from: x.map(|r| verdict(r)),
            to: y.map(|r| verdict(r)),
            from_registration: x.and_then(|r| registration(r)),
            to_registration: y.and_then(|r| registration(r)),
            detail: y.map(|r| detail_now(r)),
        };
        if !c.verdict_changed() && !c.registration_changed() {
            d.unchanged += 1;
            continue;
        }
        if c.verdict_changed() {
            *d.transitions
                .entry(transition(c.from.as_deref(), c.to.as_deref()))
                .or_default() += 1;
        }
        if c.registration_changed() {
            *d.registration_transitions
                .entry(transition(
                    c.from_registration.as_deref(),
                    c.to_registration.as_deref(),
                ))
                .or_default() += 1;
        }
        d.changes.push(c);
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::model::{Outcome, RestSummary};
    use crate::reconcile::registration::Registration;
    use crate::reconcile::verdict::Verdict;

    fn acct(ext: &str, v: Verdict, reg: Option<Registration>) -> AccountResult {
        AccountResult {
            external_account_number: ext.into(),
            supplier: "S".into(),
            verdict: v,
            event_outcome: None,
            event_type: None,
            event_id: None,
            event_identifier: None,
            event_time: None,
            platform_status: "imported".into(),
            platform_account_number: None,
            platform_created_at: None,
            account_created_event: false,
            detail: Some(format!("detail of {ext}")),
            registration: reg,
            meter_points: None,
        }
    }

    fn run(id: i64, results: Vec<AccountResult>) -> RunReport {
        let now = Utc::now();
        RunReport {
            run_id: Some(id),
            batch: None,
            scope: "batch:1".into(),
            started_at: now,
            finished_at: now,
            trigger: "cli".into(),
            suppliers: vec!["S".into()],
            parameters: serde_json::json!({}),
            settings: None,
            outcome: Outcome::Ok,
            exit_code: 0,
            accounts: results.len() as u64,
            counts: Default::default(),
            registration_counts: Default::default(),
            order_processes: Default::default(),
            rest: RestSummary::default(),
            error: None,
            timings_ms: Default::default(),
            results,
        }
    }

    #[test]
    fn transitions_are_counted_per_pair() {
        use Registration::*;
        use Verdict::*;
        let a = run(
            1,
            vec![
                acct("E1", AwaitingEvent, None),
                acct("E2", AwaitingEvent, None),
                acct("E3", Matched, Some(InFlight)),
                acct("E4", Matched, Some(Registered)),
                acct("E5", Pending, None),
            ],
        );
        let b = run(
            2,
            vec![
                acct("E1", Matched, None),
                acct("E2", Matched, None),
                acct("E3", Matched, Some(Registered)),
                acct("E4", Matched, Some(Registered)),
                acct("E6", NotFound, None),
            ],
        );
        let d = diff(&a, &b);
        assert_eq!((d.from_run, d.to_run, d.unchanged), (1, 2, 1));
        let t: Vec<(&str, u64)> = d
            .transitions
            .iter()
            .map(|(k, n)| (k.as_str(), *n))
            .collect();
        assert_eq!(
            t,
            vec![
                ("(none) → not_found", 1),
                ("awaiting_event → matched", 2),
                ("pending → (none)", 1)
            ]
        );
        assert_eq!(d.registration_transitions["in_flight → registered"], 1);
        let changed: Vec<&str> = d
            .changes
            .iter()
            .map(|c| c.external_account_number.as_str())
            .collect();
        assert_eq!(changed, vec!["E1", "E2", "E3", "E5", "E6"]);
        assert_eq!(d.changes[0].detail.as_deref(), Some("detail of E1"));
        assert!(diff(&b, &b).is_empty());
    }

    #[test]
    fn runs_with_other_settings_say_which() {
        use crate::reconcile::Params;
        let mut p = Params::new(vec!["S".into()], chrono::Duration::minutes(15), "daemon");
        p.meter_points = true;
        p.registration_grace = chrono::Duration::seconds(1800);
        let mut a = run(1, vec![acct("E1", Verdict::Matched, None)]);
        let mut b = run(2, vec![acct("E1", Verdict::Matched, None)]);
        a.settings = Some(RunSettings::of(&p));
        p.registration_grace = chrono::Duration::days(7);
        b.settings = Some(RunSettings::of(&p));
        let d = diff(&a, &b);
        assert_eq!(d.settings_differ, vec!["registration grace 30m → 7d"]);
        b.settings = a.settings.clone();
        assert!(diff(&a, &b).settings_differ.is_empty());
        // Not recorded (a run stored before runs recorded their settings): nothing claimed.
        b.settings = None;
        assert!(diff(&a, &b).settings_differ.is_empty());
    }
}
