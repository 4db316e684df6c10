//! One reconciliation run, phase by phase, each timed: the event side and the supplier lists
//! (read together), the accounts of the run, the per-account requests for what the lists do
//! not settle, the `account.created` lookup, the verdicts, and (for a batch) the registration
//! follow-through. Nothing is stored here: [`super::execute`] stores the run.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use futures::StreamExt;

use super::model::{AccountResult, RunReport};
use super::platform::{self, Lists, Resolved};
use super::rest::client::RestClient;
use super::store::{OutcomeRow, ReconcileStore};
use super::verdict::Platform;
use super::{assemble, run_report, Params, Progress, ReconcileError};

/// Runs one reconciliation (nothing stored).
pub(super) async fn reconcile(
    store: &ReconcileStore,
    client: &RestClient,
    p: &Params,
    progress: &dyn Progress,
) -> Result<RunReport, ReconcileError> {
    let started_at = Utc::now();
    let mut clock = Clock::start();
    client.begin_run().await?;
    let (events, orders, lists) = read_both_sides(store, client, p).await?;
    clock.lap("events_and_lists");
    let (accounts, erased) = without_erased(store, accounts_of(p, &events, &lists)).await?;
    let resolved = resolve(client, p, &accounts, &events, &lists, progress).await?;
    clock.lap("account_requests");
    let lookup = created_lookup(&accounts, &resolved, &events);
    let created = store.imported_account_created(&lookup).await?;
    clock.lap("account_created_lookup");
    let now = Utc::now();
    let mut results = Vec::with_capacity(accounts.len());
    for (ext, r) in accounts.into_iter().zip(resolved) {
        let r = r.unwrap_or(Resolved {
            supplier: 0,
            platform: Platform::Absent,
            detail: None,
        });
        let ev = events.get(&ext);
        results.push(assemble::result(
            ext,
            r,
            ev,
            &p.suppliers,
            p.grace,
            now,
            &created,
        ));
    }
    let supplier = p.suppliers.first().map_or("", String::as_str);
    results.extend(erased.into_iter().map(|t| assemble::erased(t, supplier)));
    clock.lap("verdicts");
    if p.meter_points {
        follow_registrations(store, client, p, &mut results, now, &mut clock).await?;
    }
    let mut report = run_report(p, client, started_at, results, None);
    report.order_processes = orders;
    report.timings_ms = clock.laps;
    Ok(report)
}

/// The event side (latest import-process outcome per account, order-process counts) and the
/// supplier lists, read together.
async fn read_both_sides(
    store: &ReconcileStore,
    client: &RestClient,
    p: &Params,
) -> Result<(HashMap<String, OutcomeRow>, BTreeMap<String, u64>, Lists), ReconcileError> {
    let manifest = p.manifest.as_ref().map(|m| m.accounts.as_slice());
    let orders_listed = p.manifest.as_ref().map(|m| m.orders.as_slice());
    let (events, orders, lists) = tokio::try_join!(
        async { Ok::<_, ReconcileError>(store.import_outcomes(p.since, p.until, manifest).await?) },
        async {
            Ok(match orders_listed {
                None => store.order_outcome_counts(p.since, p.until).await?,
                Some([]) => Default::default(),
                Some(o) => store.order_outcome_counts_for(p.since, p.until, o).await?,
            })
        },
        async { Ok(platform::read_lists(client, &p.suppliers).await?) },
    )?;
    let events = events
        .into_iter()
        .map(|r| (r.external.clone(), r))
        .collect();
    Ok((events, orders, lists))
}

/// The run's accounts: the manifest's; else every account with an outcome event and every
/// account listed (within the window, when one is given), in order.
fn accounts_of(p: &Params, events: &HashMap<String, OutcomeRow>, lists: &Lists) -> Vec<String> {
    let windowed = p.since.is_some() || p.until.is_some();
    match p.manifest.as_ref().map(|m| m.accounts.as_slice()) {
        Some(m) => m.to_vec(),
        None => events
            .keys()
            .chain(
                lists
                    .accounts()
                    .filter(|ext| !windowed || in_window(lists.find(ext), p.since, p.until)),
            )
            .collect::<BTreeSet<_>>()
            .into_iter()
            .cloned()
            .collect(),
    }
}

/// The run's accounts less its erased members (a batch's tombstones, and any number
/// `event-audit erase` erased): the live ones, and the erased members' tombstones (each once).
/// Nothing is asked of the platform, nor stored, about an erased member.
async fn without_erased(
    store: &ReconcileStore,
    accounts: Vec<String>,
) -> Result<(Vec<String>, Vec<String>), ReconcileError> {
    let (tombs, candidates): (Vec<String>, Vec<String>) = accounts
        .into_iter()
        .partition(|a| a.starts_with(super::batch::TOMBSTONE_PREFIX));
    let hashed = store.erased_among(&candidates).await?;
    let mut erased: BTreeSet<String> = tombs.into_iter().collect();
    let mut live = Vec::with_capacity(candidates.len());
    for a in candidates {
        match hashed.get(&a) {
            Some(t) => {
                erased.insert(t.clone());
            }
            None => live.push(a),
        }
    }
    Ok((live, erased.into_iter().collect()))
}

/// Each account's platform side: settled by the lists where they can, else asked of the
/// per-account endpoint (concurrently, the progress told).
async fn resolve(
    client: &RestClient,
    p: &Params,
    accounts: &[String],
    events: &HashMap<String, OutcomeRow>,
    lists: &Lists,
    progress: &dyn Progress,
) -> Result<Vec<Option<Resolved>>, ReconcileError> {
    let mut resolved: Vec<Option<Resolved>> = Vec::with_capacity(accounts.len());
    let mut asks = Vec::new();
    for (i, ext) in accounts.iter().enumerate() {
        let r = platform::settled(lists.find(ext), events.contains_key(ext), p.check_pending);
        if r.is_none() {
            asks.push(i);
        }
        resolved.push(r);
    }
    progress.start(asks.len() as u64);
    let width = client.config().concurrency.max(1) * 2;
    let mut answers = futures::stream::iter(asks)
        .map(|i| async move {
            let ext = &accounts[i];
            (
                i,
                platform::ask(client, &p.suppliers, ext, lists.find(ext)).await,
            )
        })
        .buffer_unordered(width);
    while let Some((i, answer)) = answers.next().await {
        resolved[i] = Some(answer?);
        progress.advance();
    }
    Ok(resolved)
}

/// The account numbers whose `account.created` event is looked up: the platform's, else (for
/// an account the platform does not show imported) the `complete` event's identifier.
fn created_lookup(
    accounts: &[String],
    resolved: &[Option<Resolved>],
    events: &HashMap<String, OutcomeRow>,
) -> Vec<String> {
    accounts
        .iter()
        .zip(resolved)
        .filter_map(|(ext, r)| {
            let r = r.as_ref()?;
            r.platform.account_number().map(str::to_owned).or_else(|| {
                events
                    .get(ext)
                    .and_then(|e| e.identifier.clone())
                    .filter(|_| !matches!(r.platform, Platform::Imported { .. }))
            })
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The registration follow-through of the imported accounts: their meter points' statuses,
/// joined with the join-supplier events.
async fn follow_registrations(
    store: &ReconcileStore,
    client: &RestClient,
    p: &Params,
    results: &mut [AccountResult],
    now: DateTime<Utc>,
    clock: &mut Clock,
) -> Result<(), ReconcileError> {
    let rest = assemble::read_meter_points(client, results).await?;
    clock.lap("meter_points");
    let numbers: Vec<String> = rest
        .iter()
        .filter_map(|(i, _)| results[*i].platform_account_number.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let joins = store.join_supplier_events(&numbers).await?;
    clock.lap("join_supplier_events");
    assemble::add_registrations(results, rest, &joins, now, p.registration_grace);
    clock.lap("registrations");
    Ok(())
}

/// Phase timings.
struct Clock {
    last: std::time::Instant,
    laps: std::collections::BTreeMap<String, u64>,
}

impl Clock {
    fn start() -> Clock {
        Clock {
            last: std::time::Instant::now(),
            laps: Default::default(),
        }
    }

    fn lap(&mut self, name: &str) {
        let now = std::time::Instant::now();
        let ms = (now - self.last).as_millis();
        self.laps
            .insert(name.to_owned(), u64::try_from(ms).unwrap_or(u64::MAX));
        self.last = now;
    }
}

/// Whether a listed account belongs to a run windowed on `[since, until)`: imported within it
/// (or at a time the platform does not give), or not imported (pending, being processed).
fn in_window(
    listed: Option<(usize, &platform::Listed)>,
    since: Option<DateTime<Utc>>,
    until: Option<DateTime<Utc>>,
) -> bool {
    match listed {
        Some((
            _,
            platform::Listed::Imported {
                created_at: Some(t),
                ..
            },
        )) => since.is_none_or(|s| *t >= s) && until.is_none_or(|u| *t < u),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use platform::Listed;

    #[test]
    fn a_window_keeps_imports_within_it_and_everything_not_imported() {
        let t = |h: i64| DateTime::from_timestamp(1_800_000_000 + h * 3600, 0);
        let imported = |at: Option<DateTime<Utc>>| Listed::Imported {
            number: Some("A-1".into()),
            created_at: at,
            note: None,
        };
        let (since, until) = (t(0), t(10));
        let inside = imported(t(5));
        let before = imported(t(-1));
        let after = imported(t(10));
        let unknown = imported(None);
        assert!(in_window(Some((0, &inside)), since, until));
        assert!(!in_window(Some((0, &before)), since, until));
        assert!(!in_window(Some((0, &after)), since, until));
        assert!(in_window(Some((0, &unknown)), since, until));
        assert!(in_window(Some((0, &Listed::Pending)), since, until));
        assert!(in_window(Some((0, &Listed::AllOnly)), since, until));
        assert!(in_window(Some((0, &before)), None, until));
    }
}
