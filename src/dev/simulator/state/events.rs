//! The events of a planned batch, in publish order: each account's import-process events as its
//! anomaly has them (some held back to be delivered late), an imported account's
//! `account.created` and registration events, then the order-process events.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use rand::rngs::StdRng;
use rand::Rng;
use serde_json::json;

use super::{step, time, Account, Anomaly, PlanConfig};
use crate::dev::sample;
use crate::reconcile::registration::Registration;

/// One event's envelope: CloudEvents for even accounts, EventBridge for odd ones.
pub(super) fn envelope(
    rng: &mut StdRng,
    i: usize,
    name: &str,
    t: DateTime<Utc>,
    payload: serde_json::Value,
) -> Vec<u8> {
    let id = sample::uuid(rng);
    if i % 2 == 0 {
        sample::cloudevents(name, &id, &time(t), &payload)
    } else {
        sample::eventbridge(name, &id, &time(t), &payload)
    }
}

/// The import-process events of the i-th account, as its anomaly has them: into `events`, or
/// into `late` for those delivered after the batch. `wrong` is the number a wrong identifier
/// names.
pub(super) fn import_events(
    acc: &Account,
    i: usize,
    wrong: &str,
    emit: &mut impl FnMut(&str, DateTime<Utc>, serde_json::Value) -> Vec<u8>,
    events: &mut Vec<Vec<u8>>,
    late: &mut Vec<Vec<u8>>,
) {
    let at = acc.at;
    let ext = acc.external.as_str();
    let complete = |id: &str| json!({"resource_type": "account", "external_identifier": ext, "identifier": id});
    let error = json!({"resource_type": "account", "external_identifier": ext,
        "error_code": "ACCOUNT_FAILED_VALIDATION", "error_detail": "customers.0.landline: invalid_phone_number"});
    let cancelled = json!({"resource_type": "account", "external_identifier": ext,
        "expiry_window_end": time(at + Duration::days(7))});
    match acc.anomaly {
        None
        | Some(
            Anomaly::RegistrationInFlight
            | Anomaly::RegistrationNeverRequested
            | Anomaly::RegistrationStalled
            | Anomaly::RegistrationCancelled
            | Anomaly::RegistrationReversed,
        ) => events.push(emit(
            "data_import.import_process.complete-v1",
            at,
            complete(&acc.number),
        )),
        Some(Anomaly::DropCompletion | Anomaly::LeftInProgress | Anomaly::LeftPending) => {}
        Some(Anomaly::WrongIdentifier) => events.push(emit(
            "data_import.import_process.complete-v1",
            at,
            complete(wrong),
        )),
        Some(Anomaly::ErrorButCreated | Anomaly::Failed) => {
            events.push(emit("data_import.import_process.error-v1", at, error))
        }
        Some(Anomaly::Cancelled | Anomaly::CancelledButImported) => events.push(emit(
            "data_import.import_process.cancelled-v1",
            at,
            cancelled,
        )),
        Some(Anomaly::DryRun) if i % 2 == 0 => events.push(emit(
            "data_import.import_process.dry_run_complete-v1",
            at,
            json!({"resource_type": "account", "external_identifier": ext}),
        )),
        Some(Anomaly::DryRun) => events.push(emit(
            "data_import.import_process.dry_run_error-v1",
            at,
            error,
        )),
        Some(Anomaly::DuplicateEvents) => {
            let e = emit(
                "data_import.import_process.complete-v1",
                at,
                complete(&acc.number),
            );
            late.push(e.clone());
            events.push(e);
        }
        Some(Anomaly::LateEvents) => {
            late.push(emit(
                "data_import.import_process.error-v1",
                at - Duration::seconds(2),
                error,
            ));
            events.push(emit(
                "data_import.import_process.complete-v1",
                at,
                complete(&acc.number),
            ));
        }
        Some(Anomaly::MissingInPlatform) => events.push(emit(
            "data_import.import_process.complete-v1",
            at,
            complete(&acc.number),
        )),
    }
}

/// An imported account's `account.created` event, then its registration events.
pub(super) fn imported_events(
    cfg: &PlanConfig,
    acc: &Account,
    i: usize,
    prefix: u32,
    emit: &mut impl FnMut(&str, DateTime<Utc>, serde_json::Value) -> Vec<u8>,
    events: &mut Vec<Vec<u8>>,
) {
    let created = json!({"account_number": acc.number,
        "account_user_emails": [format!("customer{i}@example.com")], "is_imported": true});
    events.push(emit(
        "account.created-v1",
        acc.at + Duration::milliseconds(1),
        created,
    ));
    let process = format!("JS-{prefix:05X}{i:07}");
    for (name, t, payload) in super::super::registration::events(
        &acc.number,
        &process,
        &acc.meter_points,
        acc.expected_registration()
            .unwrap_or(Registration::Registered),
        acc.at,
        cfg.now,
    ) {
        events.push(emit(name, t, payload));
    }
}

/// The order-process events (after the accounts'), each outcome drawn at random: the counts by
/// outcome, and the order ids with theirs.
pub(super) fn order_events(
    cfg: &PlanConfig,
    prefix: u32,
    rng: &mut StdRng,
    events: &mut Vec<Vec<u8>>,
) -> (BTreeMap<String, u64>, Vec<(String, &'static str)>) {
    let mut orders: BTreeMap<String, u64> = BTreeMap::new();
    let mut order_ids = Vec::with_capacity(cfg.orders);
    for k in 0..cfg.orders {
        let outcome = ["complete", "error", "cancelled"][rng.gen_range(0..3)];
        let order_id = format!("O{prefix:05X}{k:07}");
        let payload = match outcome {
            "complete" => json!({"external_order_id": order_id, "process_id": format!("P-{k}")}),
            "error" => {
                json!({"external_order_id": order_id, "error_code": "E", "error_detail": "order failed"})
            }
            _ => {
                json!({"external_order_id": order_id, "expiry_window_end": time(cfg.start + Duration::days(7))})
            }
        };
        let id = sample::uuid(rng);
        let t = step(cfg.start, k);
        events.push(sample::cloudevents(
            &format!("data_import.order_process.{outcome}-v1"),
            &id,
            &time(t),
            &payload,
        ));
        *orders.entry(outcome.to_owned()).or_default() += 1;
        order_ids.push((order_id, outcome));
    }
    (orders, order_ids)
}
