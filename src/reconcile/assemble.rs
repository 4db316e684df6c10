//! One account's result from both sides: the verdict, the evidence (event and platform), a short
//! explanation where the verdict is not self-evident, and (on request) meter point statuses.

use std::collections::HashSet;

use chrono::{DateTime, Duration, Utc};
use futures::StreamExt;

use super::client::{RestClient, RestError};
use super::model::AccountResult;
use super::platform::Resolved;
use super::records::MeterPointStatus;
use super::verdict::{self, EventKind, Platform, Verdict};
use crate::store::reconcile::OutcomeRow;

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

/// Adds the meter point statuses of every imported account.
pub(super) async fn add_meter_points(
    client: &RestClient,
    results: &mut [AccountResult],
) -> Result<(), RestError> {
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
    for (i, answer) in found {
        match answer {
            Ok(points) => results[i].meter_points = Some(points.unwrap_or_default()),
            Err(e) if e.is_unavailable() => {
                let d = results[i].detail.take();
                results[i].detail = Some(
                    d.into_iter()
                        .chain(["meter point statuses unavailable".to_owned()])
                        .collect::<Vec<_>>()
                        .join("; "),
                );
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
