//! The order in which a report lists its accounts: by how much attention each needs, the most
//! first. An account's import verdict decides first, its registration (the follow-through on a
//! matched account) second, its number last:
//!
//! 1. import problems, worst first: `identifier_mismatch` (the customer's data may sit in another
//!    account), `missing_in_platform`, `error_but_imported`, `cancelled_but_imported`,
//!    `missing_event`, `failed`, `not_found`, then `unverified` (the platform did not answer),
//!    `dry_run_only` and `cancelled`;
//! 2. matched accounts whose registration went wrong: `reversed`, `stalled`, `cancelled`,
//!    `never_requested`, `no_meter_points`, then `unverified`;
//! 3. what is expected to settle by itself: `awaiting_event`, `in_progress`, `pending`, then
//!    matched accounts whose registration is `in_flight`;
//! 4. matched and settled (`registered`, or not followed up), and `erased` members.
//!
//! The HTML page and the terminal table use it; CSV and JSON keep the account-number order (a
//! file compared line by line between runs).

use std::cmp::Reverse;

use crate::reconcile::model::AccountResult;
use crate::reconcile::registration::Registration;
use crate::reconcile::verdict::Verdict;

/// How much attention an import verdict needs, higher first; 0 for `matched`.
fn verdict_weight(v: Verdict) -> u8 {
    match v {
        Verdict::IdentifierMismatch => 40,
        Verdict::MissingInPlatform => 39,
        Verdict::ErrorButImported => 38,
        Verdict::CancelledButImported => 37,
        Verdict::MissingEvent => 36,
        Verdict::Failed => 35,
        Verdict::NotFound => 34,
        Verdict::Unverified => 33,
        Verdict::DryRunOnly => 32,
        Verdict::Cancelled => 31,
        // Below every registration problem of a matched account (20..): these settle by
        // themselves.
        Verdict::AwaitingEvent => 12,
        Verdict::InProgress => 11,
        Verdict::Pending => 10,
        // Needs nothing: the person asked to be forgotten; last of all.
        Verdict::Matched | Verdict::Erased => 0,
    }
}

/// How much attention a registration roll-up needs, higher first; 0 when settled or absent.
fn registration_weight(r: Option<Registration>) -> u8 {
    match r {
        Some(Registration::Reversed) => 26,
        Some(Registration::Stalled) => 25,
        Some(Registration::Cancelled) => 24,
        Some(Registration::NeverRequested) => 23,
        Some(Registration::NoMeterPoints) => 22,
        Some(Registration::Unverified) => 21,
        // Below the waiting import verdicts.
        Some(Registration::InFlight) => 5,
        Some(Registration::Registered) | None => 0,
    }
}

/// The sort key of an account: its tier (the import verdict's weight, else, for a matched
/// account, its registration's), then the registration, then the account number.
fn key(a: &AccountResult) -> (Reverse<u8>, Reverse<u8>, &str) {
    let reg = registration_weight(a.registration);
    let tier = match a.verdict {
        Verdict::Matched => reg,
        v => verdict_weight(v),
    };
    (
        Reverse(tier),
        Reverse(reg),
        a.external_account_number.as_str(),
    )
}

/// `accounts` ordered by the attention each needs, the most first.
pub(crate) fn ordered(accounts: &[AccountResult]) -> Vec<&AccountResult> {
    let mut rows: Vec<&AccountResult> = accounts.iter().collect();
    rows.sort_by(|a, b| key(a).cmp(&key(b)));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::report::tests::report;

    fn acct(ext: &str, v: Verdict, reg: Option<Registration>) -> AccountResult {
        let mut a = report().results[0].clone();
        a.external_account_number = ext.into();
        a.verdict = v;
        a.registration = reg;
        a
    }

    #[test]
    fn import_problems_first_then_registration_problems_then_waits_then_settled() {
        use Registration as R;
        use Verdict as V;
        let accounts = vec![
            acct("A01", V::Matched, Some(R::Registered)),
            acct("A02", V::Matched, Some(R::Stalled)),
            acct("A03", V::Matched, Some(R::InFlight)),
            acct("A04", V::AwaitingEvent, None),
            acct("A05", V::MissingEvent, Some(R::Registered)),
            acct("A06", V::Matched, None),
            acct("A07", V::IdentifierMismatch, Some(R::Registered)),
            acct("A08", V::Matched, Some(R::NeverRequested)),
            acct("A09", V::ErrorButImported, Some(R::Stalled)),
            acct("A10", V::Pending, None),
            acct("A11", V::Matched, Some(R::Reversed)),
            acct("A12", V::Unverified, None),
            acct("A13", V::ErrorButImported, None),
        ];
        let order: Vec<&str> = ordered(&accounts)
            .iter()
            .map(|a| a.external_account_number.as_str())
            .collect();
        assert_eq!(
            order,
            [
                "A07", // identifier_mismatch
                "A09", "A13", // error_but_imported, the one also stalled first
                "A05", // missing_event
                "A12", // unverified
                "A11", "A02", "A08", // matched: reversed, stalled, never_requested
                "A04", "A10", // awaiting_event, pending
                "A03", // matched, in flight
                "A01", "A06", // matched and settled, by number
            ]
        );
    }

    #[test]
    fn every_verdict_and_registration_has_a_place() {
        // Import problems all rank above every registration problem of a matched account,
        // which all rank above every wait.
        let problems = Verdict::ALL
            .iter()
            .filter(|v| !matches!(v, Verdict::Matched))
            .filter(|v| verdict_weight(**v) > 12);
        for v in problems {
            assert!(verdict_weight(*v) > registration_weight(Some(Registration::Reversed)));
        }
        for r in Registration::ALL {
            let w = registration_weight(Some(r));
            assert!(
                w == 0 || w == 5 || w > verdict_weight(Verdict::AwaitingEvent),
                "{r:?}"
            );
        }
    }
}
