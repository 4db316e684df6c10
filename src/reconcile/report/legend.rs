//! What each verdict and each registration state means, and what to do next: the legend of
//! the HTML report (and the tables of docs/operators.md say the same).

/// What each verdict means and what to do next (the HTML legend, docs/operators.md's table).
pub(crate) const LEGEND: [(&str, &str, &str); 15] = [
    ("matched", "The outcome event and the platform agree: imported, with the account number the event names.", "Nothing."),
    ("identifier_mismatch", "The complete event names one platform account; the platform imported another.", "Find out which account holds the customer's data; fix the mapping and re-run."),
    ("missing_in_platform", "A complete event, but the platform has no imported account.", "Ask the platform team whether the import was rolled back; re-import the account."),
    ("missing_event", "Imported longer ago than the grace period, but no outcome event was recorded.", "Check the publisher and the bus: the account is fine, its event is lost."),
    ("awaiting_event", "Imported within the grace period; its outcome event has not arrived yet.", "Wait, and re-run after the grace period."),
    ("error_but_imported", "An error event, yet the platform imported the account.", "Check the account for partial data; decide whether to keep it."),
    ("failed", "An error event and no import.", "Fix the error (see the event) and submit the account again."),
    ("cancelled", "Cancelled; not imported.", "Submit the account again if it should migrate."),
    ("cancelled_but_imported", "A cancelled event, yet the platform imported the account.", "Ask the platform team whether the account stays."),
    ("dry_run_only", "Only a dry run; not imported.", "Run the import for real."),
    ("pending", "Staged, not processed, no outcome event.", "Process the staged account."),
    ("in_progress", "The platform is creating the account now.", "Wait, and re-run."),
    ("not_found", "No outcome event and no platform record: a manifest line nobody knows.", "Check the number in the manifest; stage the account if it was missed."),
    ("unverified", "The REST service did not answer for this account after retries.", "Re-run; if it persists, check the platform's health."),
    ("erased", "The person's data was erased on request (event-audit erase): the member keeps its place in the batch, under a tombstone; the platform is not asked about it.", "Nothing: never act on an erased member."),
];

/// What each registration state means and what to do next.
pub(crate) const REGISTRATION_LEGEND: [(&str, &str, &str); 8] = [
    (
        "registered",
        "Every meter point's registration completed (join-supplier completed).",
        "Nothing.",
    ),
    (
        "in_flight",
        "A registration was requested within the registration grace and has not completed yet.",
        "Wait.",
    ),
    (
        "never_requested",
        "No registration was requested for a meter point.",
        "Submit the registration flows (send-registration-flows).",
    ),
    (
        "stalled",
        "Requested longer ago than the registration grace, never completed.",
        "Chase the registration with the platform team.",
    ),
    (
        "cancelled",
        "A registration was cancelled (or its cancellation requested).",
        "Find out why; request it again if the customer still joins.",
    ),
    (
        "reversed",
        "A completed registration was reversed (or its reversal requested).",
        "Find out why with the platform team.",
    ),
    (
        "no_meter_points",
        "The platform lists no meter points for the imported account.",
        "Check the account's supply addresses.",
    ),
    (
        "unverified",
        "The meter point statuses did not answer after retries.",
        "Re-run.",
    ),
];
