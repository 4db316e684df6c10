//! The HTML pages: a run's report and an account's timeline. Self-contained (one inline style,
//! no scripts, no external resources) so that they pass the report routes' CSP. The run page
//! opens with what changed since the previous run of its scope, then the counts (verdicts and
//! registrations, orders), a legend (meaning and next step of each), and the accounts: one
//! table that fits 1000 px without breaking an identifier, each account linking to its timeline.

use std::fmt::Write;

use chrono::{DateTime, Utc};

use super::super::diff::Diff;
use super::super::model::{AccountResult, RunReport};
use super::super::store::TimelineEntry;
use super::{esc, time, LEGEND, REGISTRATION_LEGEND};

/// The colour class of a verdict or registration state: ok, wait (expected to settle),
/// unknown, or bad.
pub(crate) fn tone(v: &str) -> &'static str {
    match v {
        "matched" | "registered" => "ok",
        "awaiting_event" | "pending" | "in_progress" | "in_flight" => "wait",
        "unverified" | "(none)" => "unknown",
        _ => "bad",
    }
}

/// The colour class of an order-process outcome: complete is done, an order without events
/// may still run, a cancelled one is neither done nor failing.
fn order_tone(v: &str) -> &'static str {
    match v {
        "complete" => "ok",
        "no_event" => "wait",
        "cancelled" => "unknown",
        _ => "bad",
    }
}

/// Identifiers (`.id`: account numbers, identifiers, meter points), states (`.tag`) and
/// timestamps (`.nw`) never wrap inside; only the detail column wraps anywhere (`.wide
/// td.detail`, at least 10rem wide). The accounts table fits a 1000 px window without a
/// mid-token wrap (`tests/it/reports_browser.rs` measures it at 1000 and 1400 px).
pub(crate) const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1.5rem;color:#1b1f24}\
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:1.6rem}\
table{border-collapse:collapse;font-size:.85rem}th,td{border:1px solid #d0d7de;padding:.25rem .45rem;text-align:left;vertical-align:top}\
th{background:#f6f8fa;white-space:nowrap}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}.meta{color:#57606a}\
.tag{display:inline-block;padding:0 .4rem;border-radius:.6rem;font-weight:600;white-space:nowrap}\
.ok{background:#dafbe1;color:#116329}.wait{background:#fff8c5;color:#7d4e00}\
.unknown{background:#eaeef2;color:#424a53}.bad{background:#ffebe9;color:#a40e26}\
.side{display:flex;gap:2rem;flex-wrap:wrap;align-items:flex-start}\
section#changes{border-left:4px solid #0969da;padding:.4rem .8rem;background:#f6f8fa}\
.wide{width:100%;table-layout:auto}.nw,.id{white-space:nowrap}\
.wide td.detail,.wide th.detail{overflow-wrap:anywhere;width:40%;min-width:10rem}\
.mp{font-size:.8rem;color:#57606a}#timeline th{white-space:normal}\
.mono,.id{font-family:ui-monospace,monospace;font-size:.8rem}a{color:#0969da}";

/// The page around `body`.
pub(crate) fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>{t}</title>\
         <style>{STYLE}</style></head><body>\n<h1>{t}</h1>\n{body}</body></html>\n",
        t = esc(title)
    )
}

/// A URL path segment, percent-encoded (unreserved characters kept).
pub(crate) fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The link to an account's timeline page.
pub(crate) fn timeline_link(ext: &str) -> String {
    format!("/accounts/{}/events?format=html", segment(ext))
}

/// The line saying which accounts the run covers.
pub(crate) fn manifest_line(r: &RunReport) -> String {
    let m = &r.parameters["manifest"];
    let n = |k: &str| m[k].as_u64().unwrap_or(0);
    match (&r.batch, m.is_object()) {
        (Some(b), _) => format!(
            "batch {} of supplier {}: {} accounts, {} orders",
            b.name,
            b.supplier,
            n("accounts"),
            n("orders")
        ),
        (None, true) => format!(
            "manifest {}: {} accounts, {} orders",
            m["file"].as_str().unwrap_or("(unnamed)"),
            n("accounts"),
            n("orders")
        ),
        (None, false) => "none: every account the suppliers list or that has outcome events".into(),
    }
}

fn tag(v: &str) -> String {
    format!("<span class=\"tag {}\">{}</span>", tone(v), esc(v))
}

/// A timestamp: date and time to the second on one line, in a `<time>` whose `datetime` and
/// tooltip hold the exact value (milliseconds included).
pub(crate) fn when(t: Option<DateTime<Utc>>) -> String {
    let Some(t) = t else {
        return String::new();
    };
    let exact = time(Some(t));
    format!(
        "<time class=\"nw\" datetime=\"{exact}\" title=\"{exact}\">{}</time>",
        t.format("%Y-%m-%d %H:%M:%SZ")
    )
}

/// "Changed since the previous run": the transitions, and a link to the accounts.
pub(crate) fn changes_section(changes: Option<&Diff>) -> String {
    let mut o = String::from("<section id=\"changes\"><b>Changed since the previous run</b>: ");
    match changes {
        None => o.push_str("this is the first completed run of its scope."),
        Some(d) if d.is_empty() => {
            let _ = write!(
                o,
                "nothing: no account changed since run {} ({}).",
                d.from_run,
                when(Some(d.from_finished_at))
            );
        }
        Some(d) => {
            let _ = write!(
                o,
                "{} account(s) since run {} ({}): ",
                d.changes.len(),
                d.from_run,
                when(Some(d.from_finished_at))
            );
            let parts: Vec<String> = d
                .transitions
                .iter()
                .map(|(t, n)| format!("{} {n}", esc(t)))
                .chain(
                    d.registration_transitions
                        .iter()
                        .map(|(t, n)| format!("registration {} {n}", esc(t))),
                )
                .collect();
            o.push_str(&parts.join(", "));
            let _ = write!(
                o,
                " · <a href=\"/reports/reconciliation/diff?from={}&amp;to={}&amp;format=html\">which accounts</a>",
                d.from_run, d.to_run
            );
        }
    }
    if let Some(w) = changes.and_then(Diff::settings_warning) {
        let _ = write!(o, "<br><b id=\"settings-differ\">Note</b>: {}.", esc(&w));
    }
    o.push_str("</section>\n");
    o
}

/// A count table: `head` names the rows, `unit` what is counted.
fn counts_table(
    id: &str,
    (head, unit): (&str, &str),
    counts: &[(&str, u64)],
    total: u64,
    tone: fn(&str) -> &'static str,
) -> String {
    let mut o = format!(
        "<table id=\"{id}\"><thead><tr><th>{head}</th><th class=\"n\">{unit}</th></tr></thead><tbody>\n"
    );
    for (v, n) in counts {
        let _ = writeln!(
            o,
            "<tr data-verdict=\"{}\"><td><span class=\"tag {}\">{}</span></td><td class=\"n\">{n}</td></tr>",
            esc(v),
            tone(v),
            esc(v)
        );
    }
    let _ = writeln!(
        o,
        "</tbody><tfoot><tr><th>total</th><th class=\"n\">{total}</th></tr></tfoot></table>"
    );
    o
}

fn legend() -> String {
    let mut o = String::from(
        "<h2>What the verdicts mean</h2>\n<table id=\"legend\" class=\"wide\"><thead><tr>\
         <th>Verdict</th><th>Meaning</th><th>Next step</th></tr></thead><tbody>\n",
    );
    for (v, meaning, next) in LEGEND.iter().chain(REGISTRATION_LEGEND.iter()) {
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            tag(v),
            esc(meaning),
            esc(next)
        );
    }
    o.push_str(
        "</tbody></table>\n<p class=\"meta\">The registration states (registered … \
        unverified) follow each imported account's meter points up: the platform registers \
        them after the import, and that step can fail.</p>\n",
    );
    o
}

/// One account: its number, verdict, registration (the roll-up, then each meter point with its
/// own state), the detail, the event side (outcome, identifier, time), the platform side
/// (status, account number, creation time, and whether an `account.created` event says it was
/// imported).
fn account_row(o: &mut String, a: &AccountResult) {
    let v = a.verdict.as_str();
    let id = |x: &Option<String>| {
        x.as_deref().map_or_else(String::new, |x| {
            format!("<br><span class=\"id\">{}</span>", esc(x))
        })
    };
    let _ = write!(
        o,
        "<tr data-verdict=\"{v}\"><td class=\"id\"><a href=\"{}\">{}</a></td><td>{}</td><td>{}",
        esc(&timeline_link(&a.external_account_number)),
        esc(&a.external_account_number),
        tag(v),
        a.registration
            .map_or_else(|| "-".to_owned(), |r| tag(r.as_str())),
    );
    for p in a.meter_points.iter().flatten() {
        let _ = write!(
            o,
            "<br><span class=\"mp\"><span class=\"id\">{}</span> {}</span>",
            esc(&p.mpxn),
            p.registration
                .map_or_else(|| esc(&p.status), |r| esc(r.as_str()))
        );
    }
    let _ = write!(
        o,
        "</td><td class=\"detail\">{}</td>\
         <td>{}{}<br><span class=\"meta\">{}</span></td>\
         <td>{}{}<br><span class=\"meta\">{}</span><br><span class=\"meta nw\">{}</span></td></tr>",
        a.detail.as_deref().map_or_else(|| "-".to_owned(), esc),
        a.event_outcome
            .as_deref()
            .map_or_else(|| "-".to_owned(), esc),
        id(&a.event_identifier),
        when(a.event_time),
        esc(&a.platform_status),
        id(&a.platform_account_number),
        when(a.platform_created_at),
        if a.account_created_event {
            "account.created ✓"
        } else {
            "no account.created"
        },
    );
    o.push('\n');
}

/// A run's report page.
pub(crate) fn run(r: &RunReport, changes: Option<&Diff>) -> String {
    let mut o = String::with_capacity(r.results.len() * 700 + 8192);
    let title = match (r.run_id, &r.batch) {
        (Some(id), Some(b)) => format!(
            "Reconciliation run {id}: batch {} of {}",
            b.name, b.supplier
        ),
        (Some(id), None) => format!("Reconciliation run {id}: {}", r.suppliers.join(", ")),
        (None, _) => "Reconciliation run".to_owned(),
    };
    o.push_str(&changes_section(changes));
    let _ = writeln!(
        o,
        "<p class=\"meta\">Suppliers <b>{}</b> · started {} · finished {} · trigger {} · \
         outcome <span class=\"tag {}\" id=\"outcome\">{}</span> (exit {}) · {} accounts · \
         REST calls {} ({} list, {} per-account, {} retries) · <a href=\"/reports/reconciliation/runs\">history</a></p>",
        esc(&r.suppliers.join(", ")),
        when(Some(r.started_at)),
        when(Some(r.finished_at)),
        esc(&r.trigger),
        match r.outcome.exit_code() {
            0 => "ok",
            1 => "bad",
            _ => "unknown",
        },
        esc(r.outcome.as_str()),
        r.exit_code,
        r.accounts,
        r.rest.calls,
        r.rest.list_calls,
        r.rest.account_calls,
        r.rest.retries
    );
    let param = |k: &str, none: &str| match &r.parameters[k] {
        serde_json::Value::Null => none.to_owned(),
        serde_json::Value::Array(a) if a.is_empty() => none.to_owned(),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(a) => a
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join(", "),
        v => v.to_string(),
    };
    let _ = writeln!(
        o,
        "<p class=\"meta\" id=\"manifest\">Accounts: {}</p>\n<p class=\"meta\" id=\"parameters\">\
         Outcome events from {} until {} · grace {} s · registration grace {} s · REST {} · tolerated {}</p>",
        esc(&manifest_line(r)),
        esc(&param("since", "the beginning")),
        esc(&param("until", "now")),
        esc(&param("grace_secs", "-")),
        esc(&param("registration_grace_secs", "-")),
        esc(&param("rest_url", "-")),
        esc(&param("tolerances", "none"))
    );
    if let Some(e) = &r.error {
        let _ = writeln!(o, "<p class=\"tag bad\" id=\"error\">{}</p>", esc(e));
    }
    o.push_str("<h2>Verdicts</h2>\n<div class=\"side\">");
    o.push_str(&counts_table(
        "counts",
        ("Verdict", "Accounts"),
        &r.nonzero_counts(),
        r.accounts,
        tone,
    ));
    let regs = r.nonzero_registrations();
    if !regs.is_empty() {
        let total = regs.iter().map(|(_, n)| n).sum();
        o.push_str(&counts_table(
            "registrations",
            ("Registration", "Accounts"),
            &regs,
            total,
            tone,
        ));
    }
    let orders = r.nonzero_orders();
    if !orders.is_empty() {
        let total = orders.iter().map(|(_, n)| n).sum();
        o.push_str(&counts_table(
            "orders",
            // Events by outcome of the listed orders, and the orders without any.
            ("Order processes", "Count"),
            &orders,
            total,
            order_tone,
        ));
    }
    o.push_str("</div>\n");
    o.push_str(
        "<h2>Accounts</h2>\n<p class=\"meta\">By the attention each needs: import problems first \
         (identifier mismatches, then missing, erroneous or cancelled imports), then matched \
         accounts whose registration went wrong, then what should settle by itself (awaiting an \
         event, pending, in progress, registration in flight), then the matched and settled \
         ones; each account links to its event timeline.</p>\n<table id=\"verdicts\" class=\"wide\">\
         <thead><tr><th>Account</th><th>Verdict</th><th>Registration</th>\
         <th class=\"detail\" id=\"detail-column\">Detail</th><th>Event</th>\
         <th>Platform</th></tr></thead><tbody>\n",
    );
    for a in super::attention::ordered(&r.results) {
        account_row(&mut o, a);
    }
    o.push_str("</tbody></table>\n");
    o.push_str(&legend());
    page(&title, &o)
}

/// An account's event timeline page.
pub(crate) fn timeline(ext: &str, events: &[TimelineEntry], limit: i64) -> String {
    let mut o = format!(
        "<p class=\"meta\">{} event(s), oldest first (at most {limit}): the account's \
         import-process events and the events of the platform accounts they name. \
         <a href=\"/reports/reconciliation?format=html\">latest report</a></p>\n\
         <table id=\"timeline\" class=\"wide\"><thead><tr><th>Occurred</th><th>Event</th>\
         <th>Envelope id, stream</th><th>Platform account</th>\
         <th class=\"detail\">Payload</th></tr></thead><tbody>\n",
        events.len()
    );
    for e in events {
        let dash = |x: &Option<String>| x.as_deref().map_or_else(|| "-".to_owned(), esc);
        let payload = e
            .payload
            .as_ref()
            .map_or_else(String::new, |p| p.to_string());
        // An event name breaks only after its dots.
        let name = e
            .event
            .as_deref()
            .map_or_else(|| "-".to_owned(), |n| esc(n).replace('.', ".<wbr>"));
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td><span class=\"mono\">{name}</span><br>{}</td>\
             <td><span class=\"id\">{}</span><br><span class=\"meta\">{}</span><br>\
             <span class=\"id\">{} #{}</span></td><td class=\"id\">{}</td>\
             <td class=\"detail mono\">{}</td></tr>",
            when(e.occurred_at),
            esc(&e.status),
            dash(&e.event_id),
            dash(&e.id_status),
            esc(&e.stream),
            e.stream_seq,
            dash(&e.account_number),
            esc(&payload)
        );
    }
    o.push_str("</tbody></table>\n");
    page(&format!("Account {ext}: events"), &o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::report::tests::report;

    #[test]
    fn html_escapes_and_has_the_tables_legend_and_links() {
        let h = run(&report(), None);
        for id in [
            "id=\"verdicts\"",
            "id=\"counts\"",
            "id=\"legend\"",
            "id=\"registrations\"",
            "id=\"detail-column\"",
            "id=\"changes\"",
        ] {
            assert!(h.contains(id), "{id}");
        }
        assert!(h.contains("E&lt;1&gt;") && !h.contains("E<1>"));
        assert!(
            h.contains("href=\"/accounts/E%3C1%3E/events?format=html\""),
            "{h}"
        );
        assert!(
            h.contains("Accounts: manifest b.txt: 2 accounts, 0 orders"),
            "{h}"
        );
        assert!(h.contains("first completed run"));
        assert!(!h.contains("<script"));
        assert!(h.contains(">E2</a></td><td><span class=\"tag ok\">matched</span></td><td><span class=\"tag bad\">stalled</span>"), "{h}");
        // The identifier mismatch before the matched account flagged for registration only.
        let (mismatch, stalled) = (
            h.find("data-verdict=\"identifier_mismatch\"><td"),
            h.find(">E2</a>"),
        );
        assert!(mismatch.is_some() && mismatch < stalled, "{h}");
    }

    #[test]
    fn zero_counts_are_hidden_and_a_complete_order_is_not_red() {
        let mut r = report();
        r.order_processes = [("complete", 3), ("error", 1), ("no_event", 0)]
            .into_iter()
            .map(|(k, n)| (k.to_owned(), n))
            .collect();
        r.registration_counts.insert("reversed".into(), 0);
        let h = run(&r, None);
        assert!(h.contains("<span class=\"tag ok\">complete</span>"), "{h}");
        assert!(h.contains("<span class=\"tag bad\">error</span>"), "{h}");
        assert!(h.contains("data-verdict=\"stalled\""), "{h}");
        assert!(
            !h.contains("data-verdict=\"no_event\"") && !h.contains("data-verdict=\"reversed\""),
            "{h}"
        );
        assert!(h.contains("<th>total</th><th class=\"n\">4</th>"), "{h}");
        let t = crate::reconcile::report::table(&r, false);
        assert!(
            t.contains("order-process events: complete 3, error 1\n"),
            "{t}"
        );
    }

    #[test]
    fn timestamps_are_one_unbroken_line_with_the_exact_value_kept() {
        let t = chrono::DateTime::parse_from_rfc3339("2026-11-24T23:33:28.108Z")
            .expect("time")
            .with_timezone(&Utc);
        assert_eq!(
            when(Some(t)),
            "<time class=\"nw\" datetime=\"2026-11-24T23:33:28.108Z\" \
             title=\"2026-11-24T23:33:28.108Z\">2026-11-24 23:33:28Z</time>"
        );
        assert_eq!(when(None), "");
    }

    #[test]
    fn segments_are_encoded() {
        assert_eq!(segment("X 1/é"), "X%201%2F%C3%A9");
        assert_eq!(segment("A-1_b.~"), "A-1_b.~");
    }
}
