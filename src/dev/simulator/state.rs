//! The simulated batch, planned up front and deterministic for a seed: the accounts (external
//! and platform numbers), the anomaly of each (at most one, so that verdict counts add up), the
//! platform's state of each, the events to publish in order, and the verdict reconciliation must
//! give (the ground truth written by `--expected`).
//!
//! Anomalies and what they do (expected verdict with `--grace` below `--age`):
//! - drop-completion: imported, `account.created` published, no outcome event → `missing_event`
//! - wrong-identifier: the complete event names another account number → `identifier_mismatch`
//! - error-but-created: an error event, yet the account was created → `error_but_imported`
//! - cancelled: a cancelled event; staged data gone (status 404) → `cancelled`
//! - cancelled-but-imported: a cancelled event, yet the account was created → `cancelled_but_imported`
//! - dry-run: only a dry-run event (complete or error, alternating); still staged → `dry_run_only`
//! - duplicate-events: the complete event published twice with one envelope id → `matched`
//! - late-events: an error event of an earlier attempt (envelope time 2 s before the completion)
//!   delivered after the batch, i.e. after the completion in stream order → `matched` (latest is
//!   by envelope time, then stream order)
//! - left-in-progress: processing never finished, no event; `IN_PROGRESS`, in the all list only
//!   → `in_progress`
//! - left-pending: staged, never processed, no event → `pending`
//! - failed: an error event; still staged (`UNKNOWN`) → `failed`
//! - missing-in-platform: a complete event, no account (status 404) → `missing_in_platform`
//!
//! Every imported account also gets its registration events ([`super::registration`]); the
//! registration anomalies (import verdict `matched`) change only those. The events themselves
//! are made in `events`.

mod events;

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use serde_json::json;

use crate::reconcile::manifest::Manifest;
use crate::reconcile::registration::Registration;
use crate::reconcile::verdict::Verdict;
use events::{envelope, import_events, imported_events, order_events};

/// The anomalies, each a flag with a rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Anomaly {
    DropCompletion,
    WrongIdentifier,
    ErrorButCreated,
    Cancelled,
    CancelledButImported,
    DryRun,
    DuplicateEvents,
    LateEvents,
    LeftInProgress,
    LeftPending,
    Failed,
    MissingInPlatform,
    RegistrationInFlight,
    RegistrationNeverRequested,
    RegistrationStalled,
    RegistrationCancelled,
    RegistrationReversed,
}

impl Anomaly {
    /// The command-line flag.
    pub(crate) fn flag(self) -> &'static str {
        match self {
            Anomaly::DropCompletion => "--drop-completion",
            Anomaly::WrongIdentifier => "--wrong-identifier",
            Anomaly::ErrorButCreated => "--error-but-created",
            Anomaly::Cancelled => "--cancelled",
            Anomaly::CancelledButImported => "--cancelled-but-imported",
            Anomaly::DryRun => "--dry-run",
            Anomaly::DuplicateEvents => "--duplicate-events",
            Anomaly::LateEvents => "--late-events",
            Anomaly::LeftInProgress => "--left-in-progress",
            Anomaly::LeftPending => "--left-pending",
            Anomaly::Failed => "--failed",
            Anomaly::MissingInPlatform => "--missing-in-platform",
            Anomaly::RegistrationInFlight => "--registration-in-flight",
            Anomaly::RegistrationNeverRequested => "--registration-never-requested",
            Anomaly::RegistrationStalled => "--registration-stalled",
            Anomaly::RegistrationCancelled => "--registration-cancelled",
            Anomaly::RegistrationReversed => "--registration-reversed",
        }
    }

    /// The verdict reconciliation must give an account with this anomaly.
    pub(crate) fn expected(self) -> Verdict {
        match self {
            Anomaly::DropCompletion => Verdict::MissingEvent,
            Anomaly::WrongIdentifier => Verdict::IdentifierMismatch,
            Anomaly::ErrorButCreated => Verdict::ErrorButImported,
            Anomaly::Cancelled => Verdict::Cancelled,
            Anomaly::CancelledButImported => Verdict::CancelledButImported,
            Anomaly::DryRun => Verdict::DryRunOnly,
            Anomaly::DuplicateEvents
            | Anomaly::LateEvents
            | Anomaly::RegistrationInFlight
            | Anomaly::RegistrationNeverRequested
            | Anomaly::RegistrationStalled
            | Anomaly::RegistrationCancelled
            | Anomaly::RegistrationReversed => Verdict::Matched,
            Anomaly::LeftInProgress => Verdict::InProgress,
            Anomaly::LeftPending => Verdict::Pending,
            Anomaly::Failed => Verdict::Failed,
            Anomaly::MissingInPlatform => Verdict::MissingInPlatform,
        }
    }
}

/// The platform's state of one account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Imported,
    /// Staged, not processed (pending list; status `UNKNOWN`).
    Pending,
    /// `IN_PROGRESS`; in the all list only.
    InProgress,
    /// No import process (status 404; in no list).
    Gone,
}

/// One simulated account.
#[derive(Debug, Clone)]
pub(crate) struct Account {
    pub(crate) external: String,
    pub(crate) number: String,
    pub(crate) anomaly: Option<Anomaly>,
    pub(crate) state: State,
    /// Simulated processing time (the account's creation time when imported).
    pub(crate) at: DateTime<Utc>,
    /// The per-account endpoints always answer 503 for it (`--rest-down`).
    pub(crate) down: bool,
    pub(crate) meter_points: Vec<String>,
}

impl Account {
    pub(crate) fn expected(&self) -> Verdict {
        self.anomaly.map_or(Verdict::Matched, Anomaly::expected)
    }

    /// The registration follow-through must give (imported accounts only).
    pub(crate) fn expected_registration(&self) -> Option<Registration> {
        let r = match self.anomaly {
            Some(Anomaly::RegistrationInFlight) => Registration::InFlight,
            Some(Anomaly::RegistrationNeverRequested) => Registration::NeverRequested,
            Some(Anomaly::RegistrationStalled) => Registration::Stalled,
            Some(Anomaly::RegistrationCancelled) => Registration::Cancelled,
            Some(Anomaly::RegistrationReversed) => Registration::Reversed,
            _ => Registration::Registered,
        };
        (self.state == State::Imported).then_some(r)
    }
}

/// What to plan.
#[derive(Debug, Clone)]
pub(crate) struct PlanConfig {
    pub(crate) supplier: String,
    pub(crate) accounts: usize,
    pub(crate) seed: u64,
    pub(crate) start: DateTime<Utc>,
    pub(crate) rates: BTreeMap<Anomaly, f64>,
    pub(crate) rest_down: f64,
    pub(crate) orders: usize,
    /// The play time (registrations requested "now" are requested at it).
    pub(crate) now: DateTime<Utc>,
}

/// The planned batch.
#[derive(Debug, Clone)]
pub struct Plan {
    pub(crate) supplier: String,
    pub(crate) accounts: Vec<Account>,
    /// Envelopes in publish order.
    pub(crate) events: Vec<Vec<u8>>,
    /// Order-process events by outcome.
    pub(crate) orders: BTreeMap<String, u64>,
    /// The external order ids and their outcome, in order.
    pub(crate) order_ids: Vec<(String, &'static str)>,
}

/// A deterministic 64-bit mix (splitmix64) for per-item decisions.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a of bytes, then mixed: a stable hash (not `DefaultHasher`, which may change).
pub(crate) fn hash(seed: u64, parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325 ^ seed;
    for p in parts {
        for b in *p {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01B3);
        }
        h ^= 0xFF;
        h = h.wrapping_mul(0x0100_0000_01B3);
    }
    mix(h)
}

/// A fraction in [0, 1) from a hash.
pub(crate) fn unit(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Plans the batch. Errors when the anomaly rates add up to more than 1.
pub(crate) fn plan(cfg: &PlanConfig) -> Result<Plan, String> {
    let n = cfg.accounts;
    let mut rng = StdRng::seed_from_u64(cfg.seed);
    let prefix: u32 = rng.gen_range(0x10000..0xFFFFF);
    let numbers = Numbers {
        mul: rng.gen::<u32>() | 1,
        xor: rng.gen::<u32>(),
    };
    let anomalies = assign_anomalies(cfg, &mut rng)?;
    let mut accounts = Vec::with_capacity(n);
    let mut events = Vec::with_capacity(n * 2 + cfg.orders);
    let mut late = Vec::new();
    for (i, anomaly) in anomalies.into_iter().enumerate() {
        let acc = account(cfg, i, anomaly, prefix, &numbers);
        let mut emit = |name: &str, t: DateTime<Utc>, payload: serde_json::Value| {
            envelope(&mut rng, i, name, t, payload)
        };
        let wrong = numbers.of(n + i);
        import_events(&acc, i, &wrong, &mut emit, &mut events, &mut late);
        if acc.state == State::Imported {
            imported_events(cfg, &acc, i, prefix, &mut emit, &mut events);
        }
        accounts.push(acc);
    }
    events.append(&mut late);
    let (orders, order_ids) = order_events(cfg, prefix, &mut rng, &mut events);
    Ok(Plan {
        supplier: cfg.supplier.clone(),
        accounts,
        events,
        orders,
        order_ids,
    })
}

/// The platform's account numbers: the i-th account's, scrambled per seed.
struct Numbers {
    mul: u32,
    xor: u32,
}

impl Numbers {
    fn of(&self, i: usize) -> String {
        format!("A-{:08X}", (i as u32).wrapping_mul(self.mul) ^ self.xor)
    }
}

/// The time of the i-th account's (or order's) processing: 10 ms apart from the start.
fn step(start: DateTime<Utc>, i: usize) -> DateTime<Utc> {
    start + Duration::milliseconds(10) * i32::try_from(i).unwrap_or(i32::MAX)
}

/// Each account's anomaly, at most one: each anomaly's count from its rate, spread over the
/// accounts in a shuffled order. Errors on a rate outside [0, 1] or counts over the batch.
fn assign_anomalies(cfg: &PlanConfig, rng: &mut StdRng) -> Result<Vec<Option<Anomaly>>, String> {
    let n = cfg.accounts;
    let mut counts = Vec::new();
    let mut total = 0usize;
    for (&a, &rate) in &cfg.rates {
        if !(0.0..=1.0).contains(&rate) {
            return Err(format!("{} must be between 0 and 1", a.flag()));
        }
        let c = (rate * n as f64).round() as usize;
        total += c;
        counts.push((a, c));
    }
    if total > n {
        return Err(format!(
            "the anomaly rates add up to {total} accounts, more than the batch's {n}"
        ));
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(rng);
    let mut anomaly = vec![None; n];
    let mut next = order.into_iter();
    for (a, c) in counts {
        for i in next.by_ref().take(c) {
            anomaly[i] = Some(a);
        }
    }
    Ok(anomaly)
}

/// The i-th account: its numbers, the platform's state its anomaly leaves it in, whether its
/// endpoints are down, its meter points.
fn account(
    cfg: &PlanConfig,
    i: usize,
    anomaly: Option<Anomaly>,
    prefix: u32,
    numbers: &Numbers,
) -> Account {
    let external = format!("X{prefix:05X}{i:07}");
    let state = match anomaly {
        Some(Anomaly::Cancelled | Anomaly::MissingInPlatform) => State::Gone,
        Some(Anomaly::DryRun | Anomaly::LeftPending | Anomaly::Failed) => State::Pending,
        Some(Anomaly::LeftInProgress) => State::InProgress,
        _ => State::Imported,
    };
    Account {
        number: numbers.of(i),
        down: unit(hash(cfg.seed, &[b"down", external.as_bytes()])) < cfg.rest_down,
        meter_points: (0..1 + i % 2)
            .map(|k| {
                format!(
                    "{:013}",
                    mix(cfg.seed ^ (i as u64) << 1 ^ k as u64) % 10_000_000_000_000
                )
            })
            .collect(),
        external,
        anomaly,
        state,
        at: step(cfg.start, i),
    }
}

impl Plan {
    /// The batch's manifest: its accounts and its orders.
    pub(crate) fn manifest(&self) -> Manifest {
        Manifest {
            name: self.supplier.clone(),
            accounts: self.accounts.iter().map(|a| a.external.clone()).collect(),
            orders: self.order_ids.iter().map(|(id, _)| id.clone()).collect(),
        }
    }

    /// The ground truth: verdict counts, registration counts and per-account verdicts.
    pub(crate) fn expected(&self) -> serde_json::Value {
        let mut counts: BTreeMap<&str, u64> =
            Verdict::ALL.iter().map(|v| (v.as_str(), 0)).collect();
        let mut registrations: BTreeMap<&str, u64> =
            Registration::ALL.iter().map(|r| (r.as_str(), 0)).collect();
        for a in &self.accounts {
            *counts.entry(a.expected().as_str()).or_default() += 1;
            if let Some(r) = a.expected_registration() {
                *registrations.entry(r.as_str()).or_default() += 1;
            }
        }
        let results: Vec<serde_json::Value> = self
            .accounts
            .iter()
            .map(|a| {
                json!({
                    "external_account_number": a.external,
                    "verdict": a.expected(),
                    "registration": a.expected_registration(),
                    "anomaly": a.anomaly,
                    "platform_account_number": (a.state == State::Imported).then_some(&a.number),
                    "rest_down": a.down,
                })
            })
            .collect();
        json!({
            "supplier": self.supplier,
            "accounts": self.accounts.len(),
            "events": self.events.len(),
            "counts": counts,
            "registration_counts": registrations,
            "order_processes": self.orders,
            "orders": self.order_ids.iter()
                .map(|(id, outcome)| json!({"external_order_id": id, "outcome": outcome}))
                .collect::<Vec<_>>(),
            "results": results,
        })
    }
}

#[cfg(test)]
mod tests;
