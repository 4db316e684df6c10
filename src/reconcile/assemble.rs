//! One account's result from both sides: the verdict, the evidence (event and platform), a short
//! explanation where the verdict is not self-evident, and (on request) the registration
//! follow-through: meter point statuses joined with the join-supplier events.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use futures::StreamExt;

use super::model::AccountResult;
use super::platform::Resolved;
use super::registration::{self, JoinEvent, MeterPoint, Registration};
use super::rest::client::{RestClient, RestError};
use super::rest::records::MeterPointStatus;
use super::store::OutcomeRow;
use super::verdict::{self, EventKind, Platform, Verdict};

/// An erased member's result: its tombstone, the verdict `erased`, nothing else (the platform
/// is not asked, nothing of the person is kept).
pub(super) fn erased(tombstone: String, supplier: &str) -> AccountResult {
    AccountResult {
        supplier: supplier.to_owned(),
        verdict: Verdict::Erased,
        event_outcome: None,
        event_type: None,
        event_id: None,
        event_identifier: None,
        event_time: None,
        platform_status: "erased".into(),
        platform_account_number: None,
        platform_created_at: None,
        account_created_event: false,
        detail: None,
        registration: None,
        meter_points: None,
        external_account_number: tombstone,
    }
}

/// One account's result from both sides.
pub(super) fn result(
    ext: String,
    r: Resolved,
    ev: Option<&OutcomeRow>,
    suppliers: &[String],
    grace: Duration,
    now: DateTime<Utc>,
    created: &HashSet<String>,
) -> AccountResult {
    let kind = ev.and_then(|e| EventKind::from_event_type(&e.event_type));
    let identifier = ev.and_then(|e| e.identifier.as_deref());
    let verdict = verdict::decide(kind.map(|k| (k, identifier)), &r.platform, now, grace);
    let number = r.platform.account_number();
    let created_at = match &r.platform {
        Platform::Imported { created_at, .. } => *created_at,
        _ => None,
    };
    let imported = matches!(r.platform, Platform::Imported { .. });
    let key = if imported { number } else { identifier };
    let mut detail: Vec<String> = explain(verdict, identifier, number, created_at, now)
        .into_iter()
        .collect();
    detail.extend(r.detail);
    AccountResult {
        supplier: suppliers.get(r.supplier).cloned().unwrap_or_default(),
        verdict,
        event_outcome: kind.map(|k| k.as_str().to_owned()),
        event_type: ev.map(|e| e.event_type.clone()),
        event_id: ev.and_then(|e| e.event_id.clone()),
        event_identifier: identifier.map(str::to_owned),
        event_time: ev.and_then(|e| e.occurred_at),
        platform_status: r.platform.status().to_owned(),
        platform_account_number: number.map(str::to_owned),
        platform_created_at: created_at,
        account_created_event: key.is_some_and(|k| created.contains(k)),
        detail: (!detail.is_empty()).then(|| detail.join("; ")),
        registration: None,
        meter_points: None,
        external_account_number: ext,
    }
}

/// A short explanation of a verdict that is not self-evident.
fn explain(
    verdict: Verdict,
    identifier: Option<&str>,
    number: Option<&str>,
    created_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Option<String> {
    let ago = |t: DateTime<Utc>| {
        let m = (now - t).num_minutes();
        if m < 120 {
            format!("{m} min ago")
        } else {
            format!("{} h ago", m / 60)
        }
    };
    match verdict {
        Verdict::IdentifierMismatch => Some(format!(
            "the complete event names {}, the platform imported {}",
            identifier.unwrap_or("no account"),
            number.unwrap_or("an account without number")
        )),
        Verdict::MissingEvent => Some(match created_at {
            Some(t) => format!("imported {}, no outcome event", ago(t)),
            None => "imported (creation time not given), no outcome event".into(),
        }),
        Verdict::AwaitingEvent => {
            created_at.map(|t| format!("imported {}, within the grace period", ago(t)))
        }
        _ => None,
    }
}

/// The REST side of the registration follow-through: the meter points of every imported
/// account (`Some(empty)` on 404), `None` where the service did not answer (noted in the
/// detail). Other errors stop the run.
pub(super) async fn read_meter_points(
    client: &RestClient,
    results: &mut [AccountResult],
) -> Result<Vec<(usize, Option<Vec<MeterPointStatus>>)>, RestError> {
    let width = client.config().concurrency.max(1) * 2;
    let asks: Vec<usize> = (0..results.len())
        .filter(|&i| results[i].platform_status == "imported")
        .collect();
    type Found = (usize, Result<Option<Vec<MeterPointStatus>>, RestError>);
    let found: Vec<Found> = futures::stream::iter(asks)
        .map(|i| {
            let (supplier, ext) = (
                results[i].supplier.clone(),
                results[i].external_account_number.clone(),
            );
            async move { (i, client.meter_points(&supplier, &ext).await) }
        })
        .buffer_unordered(width)
        .collect()
        .await;
    let mut out = Vec::with_capacity(found.len());
    for (i, answer) in found {
        match answer {
            Ok(points) => out.push((i, Some(points.unwrap_or_default()))),
            Err(e) if e.is_unavailable() => {
                add_detail(
                    &mut results[i],
                    "meter point statuses unavailable".to_owned(),
                );
                out.push((i, None));
            }
            Err(e) => return Err(e),
        }
    }
    out.sort_by_key(|(i, _)| *i);
    Ok(out)
}

fn add_detail(r: &mut AccountResult, more: String) {
    r.detail = Some(match r.detail.take() {
        Some(d) => format!("{d}; {more}"),
        None => more,
    });
}

/// The event side: each listed meter point's registration from the account's join-supplier
/// events (by platform account number and mpxn), rolled up into the account's result.
pub(super) fn add_registrations(
    results: &mut [AccountResult],
    rest: Vec<(usize, Option<Vec<MeterPointStatus>>)>,
    events: &[JoinEvent],
    now: DateTime<Utc>,
    grace: Duration,
) {
    let mut by: HashMap<(&str, &str), Vec<&JoinEvent>> = HashMap::new();
    let mut points_of: HashMap<&str, HashSet<&str>> = HashMap::new();
    for e in events {
        by.entry((e.account_number.as_str(), e.mpxn.as_str()))
            .or_default()
            .push(e);
        points_of
            .entry(e.account_number.as_str())
            .or_default()
            .insert(e.mpxn.as_str());
    }
    for (i, listed) in rest {
        let r = &mut results[i];
        let Some(listed) = listed else {
            r.registration = Some(Registration::Unverified);
            continue;
        };
        let number = r.platform_account_number.clone().unwrap_or_default();
        let points: Vec<MeterPoint> = listed
            .iter()
            .map(|p| {
                let evs = by
                    .get(&(number.as_str(), p.mpxn.as_str()))
                    .map_or(&[][..], Vec::as_slice);
                registration::decide(&p.mpxn, &p.status, evs, now, grace)
            })
            .collect();
        let unlisted = points_of.get(number.as_str()).map_or(0, |named| {
            named
                .iter()
                .filter(|m| !listed.iter().any(|p| p.mpxn == **m))
                .count()
        });
        r.registration = Some(registration::rollup(&points));
        if let Some(why) = registration::explain(&points, now) {
            add_detail(r, why);
        }
        if unlisted > 0 {
            add_detail(
                r,
                format!(
                    "join-supplier events name {unlisted} meter point(s) the platform does not list"
                ),
            );
        }
        r.meter_points = Some(points);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn imported(ext: &str, number: &str) -> AccountResult {
        AccountResult {
            external_account_number: ext.into(),
            supplier: "S".into(),
            verdict: Verdict::Matched,
            event_outcome: None,
            event_type: None,
            event_id: None,
            event_identifier: None,
            event_time: None,
            platform_status: "imported".into(),
            platform_account_number: Some(number.into()),
            platform_created_at: None,
            account_created_event: true,
            detail: None,
            registration: None,
            meter_points: None,
        }
    }

    fn event(number: &str, mpxn: &str, kind: &str, seq: i64) -> JoinEvent {
        JoinEvent {
            account_number: number.into(),
            mpxn: mpxn.into(),
            event_type: format!("lifecycle.join-supplier.{kind}"),
            occurred_at: Some(Utc::now() - Duration::hours(1)),
            requested_at: None,
            process: None,
            stream_seq: seq,
        }
    }

    #[test]
    fn events_join_by_account_number_and_mpxn() {
        let mut results = vec![
            imported("E1", "A-1"),
            imported("E2", "A-2"),
            imported("E3", "A-3"),
        ];
        let point = |m: &str| MeterPointStatus {
            mpxn: m.into(),
            status: "PRE_REGISTRATION".into(),
        };
        let rest = vec![
            (0, Some(vec![point("M1"), point("M2")])),
            (1, Some(vec![point("M3")])),
            (2, None),
        ];
        let events = [
            event("A-1", "M1", "requested", 1),
            event("A-1", "M1", "completed", 2),
            event("A-1", "M2", "requested", 3),
            // Another account's meter point of the same mpxn does not count for A-1.
            event("A-2", "M2", "completed", 4),
            event("A-2", "M3", "completed", 5),
            event("A-2", "M9", "requested", 6),
        ];
        add_registrations(
            &mut results,
            rest,
            &events,
            Utc::now(),
            Duration::minutes(30),
        );
        assert_eq!(results[0].registration, Some(Registration::Stalled));
        let points = results[0].meter_points.as_ref().expect("points");
        assert_eq!(points[0].registration, Some(Registration::Registered));
        assert_eq!(points[1].registration, Some(Registration::Stalled));
        assert_eq!(results[1].registration, Some(Registration::Registered));
        let detail = results[1].detail.as_deref().unwrap_or_default();
        assert!(
            detail.contains("name 2 meter point(s) the platform does not list"),
            "{detail}"
        );
        assert_eq!(results[2].registration, Some(Registration::Unverified));
        assert!(results[2].meter_points.is_none());
    }
}
