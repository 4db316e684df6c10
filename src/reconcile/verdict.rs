//! The verdict of one account: a pure function of its event-side outcome, its platform-side
//! status, the time and the grace period. The vocabulary is fixed; reports, metrics, exit codes
//! and the stored runs all use [`Verdict::as_str`].
//!
//! The table, plus one addition: `not_found` — no outcome event and no platform record
//! of an import (404, `UNKNOWN`, or absent from every list), typically a manifest line the
//! platform never heard of. Other choices where the table is silent:
//! - A dry run counts as "no event" against an imported account: `missing_event` after the grace
//!   period, `awaiting_event` within it (the table names dry-run-only next to `missing_event`).
//! - An imported account whose creation time the platform did not give is treated as older than
//!   the grace period (`missing_event`, never a silent `awaiting_event`).
//! - `in_progress` and `unverified` win over every event-side outcome, as the table says "any".
//! - `erased`: a member whose personal data was erased on request (`event-audit erase`): the
//!   platform is not asked about it, nothing of it is stored, it never counts as a mismatch and
//!   has no registration.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

/// The reconciliation verdicts. Serialized as their snake_case names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    Matched,
    IdentifierMismatch,
    MissingInPlatform,
    MissingEvent,
    AwaitingEvent,
    ErrorButImported,
    Failed,
    Cancelled,
    CancelledButImported,
    DryRunOnly,
    Pending,
    InProgress,
    NotFound,
    Unverified,
    Erased,
}

impl Verdict {
    /// Every verdict, in report order.
    pub(crate) const ALL: [Verdict; 15] = [
        Verdict::Matched,
        Verdict::IdentifierMismatch,
        Verdict::MissingInPlatform,
        Verdict::MissingEvent,
        Verdict::AwaitingEvent,
        Verdict::ErrorButImported,
        Verdict::Failed,
        Verdict::Cancelled,
        Verdict::CancelledButImported,
        Verdict::DryRunOnly,
        Verdict::Pending,
        Verdict::InProgress,
        Verdict::NotFound,
        Verdict::Unverified,
        Verdict::Erased,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Verdict::Matched => "matched",
            Verdict::IdentifierMismatch => "identifier_mismatch",
            Verdict::MissingInPlatform => "missing_in_platform",
            Verdict::MissingEvent => "missing_event",
            Verdict::AwaitingEvent => "awaiting_event",
            Verdict::ErrorButImported => "error_but_imported",
            Verdict::Failed => "failed",
            Verdict::Cancelled => "cancelled",
            Verdict::CancelledButImported => "cancelled_but_imported",
            Verdict::DryRunOnly => "dry_run_only",
            Verdict::Pending => "pending",
            Verdict::InProgress => "in_progress",
            Verdict::NotFound => "not_found",
            Verdict::Unverified => "unverified",
            Verdict::Erased => "erased",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Verdict> {
        Verdict::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kind of an account's latest `data_import.import_process.*` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum EventKind {
    Complete,
    Error,
    Cancelled,
    DryRunComplete,
    DryRunError,
}

impl EventKind {
    /// From the event type (`data_import.import_process.complete`); `None` for other types.
    pub(crate) fn from_event_type(t: &str) -> Option<EventKind> {
        match t.strip_prefix("data_import.import_process.")? {
            "complete" => Some(EventKind::Complete),
            "error" => Some(EventKind::Error),
            "cancelled" => Some(EventKind::Cancelled),
            "dry_run_complete" => Some(EventKind::DryRunComplete),
            "dry_run_error" => Some(EventKind::DryRunError),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventKind::Complete => "complete",
            EventKind::Error => "error",
            EventKind::Cancelled => "cancelled",
            EventKind::DryRunComplete => "dry_run_complete",
            EventKind::DryRunError => "dry_run_error",
        }
    }

    pub(crate) fn is_dry_run(self) -> bool {
        matches!(self, EventKind::DryRunComplete | EventKind::DryRunError)
    }
}

/// What the platform says about one account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Platform {
    /// An account exists (imported list, or `COMPLETED`). The number may be missing.
    Imported {
        account_number: Option<String>,
        created_at: Option<DateTime<Utc>>,
    },
    /// `IN_PROGRESS`.
    InProgress,
    /// Staged and not imported (pending list, or `UNKNOWN` for a staged account).
    Pending,
    /// `UNKNOWN`: an import process exists, no account.
    Unknown,
    /// 404 from the single-status endpoint.
    NotFound,
    /// In no list and not asked (e.g. another supplier's account).
    Absent,
    /// The service did not answer after retries.
    Unverified,
}

impl Platform {
    /// The status word reports and the store use.
    pub(crate) fn status(&self) -> &'static str {
        match self {
            Platform::Imported { .. } => "imported",
            Platform::InProgress => "in_progress",
            Platform::Pending => "pending",
            Platform::Unknown => "unknown",
            Platform::NotFound => "not_found",
            Platform::Absent => "absent",
            Platform::Unverified => "unverified",
        }
    }

    pub(crate) fn account_number(&self) -> Option<&str> {
        match self {
            Platform::Imported { account_number, .. } => account_number.as_deref(),
            _ => None,
        }
    }
}

/// The verdict for an account whose latest outcome event is `event` (kind and, for `complete`,
/// its `identifier`) and whose platform status is `platform`, at `now` with `grace`.
pub(crate) fn decide(
    event: Option<(EventKind, Option<&str>)>,
    platform: &Platform,
    now: DateTime<Utc>,
    grace: Duration,
) -> Verdict {
    let (account_number, created_at) = match platform {
        Platform::Unverified => return Verdict::Unverified,
        Platform::InProgress => return Verdict::InProgress,
        Platform::Imported {
            account_number,
            created_at,
        } => (Some(account_number.as_deref()), *created_at),
        _ => (None, None),
    };
    let imported = account_number.is_some();
    match event {
        Some((EventKind::Complete, identifier)) => match account_number {
            Some(number) if number.is_some() && number == identifier => Verdict::Matched,
            Some(_) => Verdict::IdentifierMismatch,
            None => Verdict::MissingInPlatform,
        },
        Some((EventKind::Error, _)) if imported => Verdict::ErrorButImported,
        Some((EventKind::Error, _)) => Verdict::Failed,
        Some((EventKind::Cancelled, _)) if imported => Verdict::CancelledButImported,
        Some((EventKind::Cancelled, _)) => Verdict::Cancelled,
        Some((k, _)) if k.is_dry_run() && !imported => Verdict::DryRunOnly,
        // No event, or only a dry run, against an imported account.
        _ if imported => match created_at {
            Some(t) if t > now - grace => Verdict::AwaitingEvent,
            _ => Verdict::MissingEvent,
        },
        _ => match platform {
            Platform::Pending => Verdict::Pending,
            _ => Verdict::NotFound,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn imported(n: &str, minutes_ago: Option<i64>) -> Platform {
        Platform::Imported {
            account_number: Some(n.to_owned()),
            created_at: minutes_ago.map(|m| now() - Duration::minutes(m)),
        }
    }

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default()
    }

    fn v(event: Option<(EventKind, Option<&str>)>, p: &Platform) -> Verdict {
        decide(event, p, now(), Duration::minutes(15))
    }

    const NOT_IMPORTED: [Platform; 4] = [
        Platform::Pending,
        Platform::Unknown,
        Platform::NotFound,
        Platform::Absent,
    ];

    #[test]
    fn every_row_of_the_table() {
        use EventKind::*;
        let x = Some("A-1");
        // matched / identifier_mismatch
        assert_eq!(
            v(Some((Complete, x)), &imported("A-1", Some(60))),
            Verdict::Matched
        );
        assert_eq!(
            v(Some((Complete, x)), &imported("A-2", Some(60))),
            Verdict::IdentifierMismatch
        );
        // missing_in_platform: pending, UNKNOWN, 404, absent
        for p in &NOT_IMPORTED {
            assert_eq!(
                v(Some((Complete, x)), p),
                Verdict::MissingInPlatform,
                "{p:?}"
            );
        }
        // missing_event / awaiting_event, with no event or a dry run only
        for e in [
            None,
            Some((DryRunComplete, None)),
            Some((DryRunError, None)),
        ] {
            assert_eq!(v(e, &imported("A-1", Some(60))), Verdict::MissingEvent);
            assert_eq!(v(e, &imported("A-1", Some(5))), Verdict::AwaitingEvent);
            assert_eq!(v(e, &imported("A-1", None)), Verdict::MissingEvent);
        }
        // error_but_imported / failed
        assert_eq!(
            v(Some((Error, None)), &imported("A-1", Some(1))),
            Verdict::ErrorButImported
        );
        for p in &NOT_IMPORTED {
            assert_eq!(v(Some((Error, None)), p), Verdict::Failed, "{p:?}");
        }
        // cancelled / cancelled_but_imported
        assert_eq!(
            v(Some((Cancelled, None)), &imported("A-1", Some(1))),
            Verdict::CancelledButImported
        );
        for p in &NOT_IMPORTED {
            assert_eq!(v(Some((Cancelled, None)), p), Verdict::Cancelled, "{p:?}");
        }
        // dry_run_only
        for p in &NOT_IMPORTED {
            assert_eq!(v(Some((DryRunComplete, None)), p), Verdict::DryRunOnly);
            assert_eq!(v(Some((DryRunError, None)), p), Verdict::DryRunOnly);
        }
        // pending
        assert_eq!(v(None, &Platform::Pending), Verdict::Pending);
        // the addition: no event and no import record
        for p in [Platform::Unknown, Platform::NotFound, Platform::Absent] {
            assert_eq!(v(None, &p), Verdict::NotFound, "{p:?}");
        }
    }

    #[test]
    fn in_progress_and_unverified_win_over_any_event() {
        use EventKind::*;
        let events = [
            None,
            Some((Complete, Some("A-1"))),
            Some((Error, None)),
            Some((Cancelled, None)),
            Some((DryRunComplete, None)),
            Some((DryRunError, None)),
        ];
        for e in events {
            assert_eq!(v(e, &Platform::InProgress), Verdict::InProgress);
            assert_eq!(v(e, &Platform::Unverified), Verdict::Unverified);
        }
    }

    #[test]
    fn an_imported_account_without_number_never_matches() {
        let p = Platform::Imported {
            account_number: None,
            created_at: None,
        };
        assert_eq!(
            v(Some((EventKind::Complete, Some("A-1"))), &p),
            Verdict::IdentifierMismatch
        );
        assert_eq!(
            v(Some((EventKind::Complete, None)), &p),
            Verdict::IdentifierMismatch
        );
        assert_eq!(v(None, &p), Verdict::MissingEvent);
    }

    #[test]
    fn grace_boundary_is_exclusive() {
        let p = imported("A-1", Some(15));
        assert_eq!(v(None, &p), Verdict::MissingEvent);
    }

    #[test]
    fn names_round_trip() {
        for verdict in Verdict::ALL {
            assert_eq!(Verdict::parse(verdict.as_str()), Some(verdict));
            assert_eq!(
                serde_json::to_value(verdict).ok(),
                Some(serde_json::Value::from(verdict.as_str()))
            );
        }
        assert_eq!(
            EventKind::from_event_type("data_import.import_process.dry_run_error"),
            Some(EventKind::DryRunError)
        );
        assert_eq!(
            EventKind::from_event_type("data_import.order_process.complete"),
            None
        );
    }
}
