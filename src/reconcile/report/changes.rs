//! Rendering run-to-run changes ([`Diff`]): a table for the terminal, JSON, and an HTML page
//! (`id="transitions"` with the counts per transition, `id="changes"` with the accounts).

use std::fmt::Write;

use super::super::diff::{Diff, NONE};
use super::super::settings::RunSettings;
use super::html::{page, timeline_link, tone, when};
use super::{esc, pad, time, Format};

/// Renders `d` in `format` (CSV is the JSON's job here: refused by the callers).
pub(crate) fn render(d: &Diff, format: Format) -> String {
    match format {
        Format::Table => table(d),
        Format::Json | Format::Csv => {
            let mut s = serde_json::to_string(d).unwrap_or_else(|_| "{}".into());
            s.push('\n');
            s
        }
        Format::Html => html(d),
    }
}

fn headline(d: &Diff) -> String {
    format!(
        "Changes from run {} ({}) to run {} ({}), {}: {} account(s) changed, {} unchanged",
        d.from_run,
        time(Some(d.from_finished_at)),
        d.to_run,
        time(Some(d.to_finished_at)),
        d.what(),
        d.changes.len(),
        d.unchanged
    )
}

/// Each run's trigger and settings, one line each.
fn settings_lines(d: &Diff) -> [String; 2] {
    let line = |run: i64, trigger: &str, s: &Option<RunSettings>| {
        format!(
            "run {run} ({trigger}): {}",
            s.as_ref().map_or_else(
                || "settings not recorded (stored before runs recorded them)".to_owned(),
                RunSettings::describe
            )
        )
    };
    [
        line(d.from_run, &d.from_trigger, &d.from_settings),
        line(d.to_run, &d.to_trigger, &d.to_settings),
    ]
}

pub(crate) fn table(d: &Diff) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", headline(d));
    for l in settings_lines(d) {
        let _ = writeln!(out, "  {l}");
    }
    if let Some(w) = d.settings_warning() {
        let _ = writeln!(out, "WARNING: {w}");
    }
    out.push('\n');
    if d.is_empty() {
        return out;
    }
    let mut rows = vec![vec!["TRANSITION".to_owned(), "ACCOUNTS".to_owned()]];
    for (t, n) in &d.transitions {
        rows.push(vec![t.clone(), n.to_string()]);
    }
    for (t, n) in &d.registration_transitions {
        rows.push(vec![format!("registration {t}"), n.to_string()]);
    }
    pad(&mut out, &rows);
    out.push('\n');
    let mut rows = vec![["ACCOUNT", "VERDICT", "REGISTRATION", "DETAIL"]
        .map(str::to_owned)
        .to_vec()];
    for c in &d.changes {
        let pair = |a: &Option<String>, b: &Option<String>| {
            if a == b {
                a.clone().unwrap_or_else(|| "-".into())
            } else {
                format!(
                    "{} → {}",
                    a.as_deref().unwrap_or(NONE),
                    b.as_deref().unwrap_or(NONE)
                )
            }
        };
        rows.push(vec![
            c.external_account_number.clone(),
            pair(&c.from, &c.to),
            pair(&c.from_registration, &c.to_registration),
            c.detail.clone().unwrap_or_default(),
        ]);
    }
    pad(&mut out, &rows);
    out
}

/// `batch …` → `Batch …`.
fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map_or_else(String::new, |f| f.to_uppercase().chain(c).collect())
}

fn tagged(v: Option<&str>) -> String {
    let v = v.unwrap_or(NONE);
    format!("<span class=\"tag {}\">{}</span>", tone(v), esc(v))
}

fn pair_html(a: &Option<String>, b: &Option<String>) -> String {
    if a == b {
        a.as_deref()
            .map_or_else(|| "-".to_owned(), |v| tagged(Some(v)))
    } else {
        format!("{} → {}", tagged(a.as_deref()), tagged(b.as_deref()))
    }
}

pub(crate) fn html(d: &Diff) -> String {
    let mut o = format!(
        "<p class=\"meta\">{}: {} account(s) changed, {} unchanged, from \
         <a href=\"/reports/reconciliation?run={}&amp;format=html\">run {}</a> ({}) to \
         <a href=\"/reports/reconciliation?run={}&amp;format=html\">run {}</a> ({})</p>\n",
        esc(&upper_first(&d.what())),
        d.changes.len(),
        d.unchanged,
        d.from_run,
        d.from_run,
        when(Some(d.from_finished_at)),
        d.to_run,
        d.to_run,
        when(Some(d.to_finished_at)),
    );
    let [a, b] = settings_lines(d);
    let _ = writeln!(
        o,
        "<p class=\"meta\" id=\"settings\">Settings of {}<br>and of {}</p>",
        esc(&a),
        esc(&b)
    );
    if let Some(w) = d.settings_warning() {
        let _ = writeln!(
            o,
            "<p class=\"tag wait\" id=\"settings-differ\">{}</p>",
            esc(&upper_first(&w))
        );
    }
    o.push_str("<table id=\"transitions\"><thead><tr><th>Transition</th><th class=\"n\">Accounts</th></tr></thead><tbody>\n");
    for (t, n) in &d.transitions {
        let _ = writeln!(o, "<tr><td>{}</td><td class=\"n\">{n}</td></tr>", esc(t));
    }
    for (t, n) in &d.registration_transitions {
        let _ = writeln!(
            o,
            "<tr><td>registration {}</td><td class=\"n\">{n}</td></tr>",
            esc(t)
        );
    }
    o.push_str("</tbody></table>\n<h2>Accounts that changed</h2>\n<table id=\"changes\" class=\"wide\"><thead><tr>\
        <th>Account</th><th>Verdict</th><th>Registration</th><th class=\"detail\">Detail (now)</th>\
        </tr></thead><tbody>\n");
    for c in &d.changes {
        let _ = writeln!(
            o,
            "<tr><td class=\"mono\"><a href=\"{}\">{}</a></td><td>{}</td><td>{}</td><td class=\"detail\">{}</td></tr>",
            esc(&timeline_link(&c.external_account_number)),
            esc(&c.external_account_number),
            pair_html(&c.from, &c.to),
            pair_html(&c.from_registration, &c.to_registration),
            c.detail
                .as_deref()
                .map_or_else(|| "- (not in the later run)".to_owned(), esc)
        );
    }
    o.push_str("</tbody></table>\n");
    page(
        &format!(
            "Changes from run {} to run {}: {}",
            d.from_run,
            d.to_run,
            d.what()
        ),
        &o,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::diff::diff;
    use crate::reconcile::report::tests::report;
    use crate::reconcile::verdict::Verdict;

    #[test]
    fn every_format_names_the_transitions() {
        let a = report();
        let mut b = report();
        b.run_id = Some(8);
        b.results[0].verdict = Verdict::Matched;
        let d = diff(&a, &b);
        let t = table(&d);
        assert!(t.contains("identifier_mismatch → matched  1"), "{t}");
        assert!(t.contains("E<1>"), "{t}");
        let h = html(&d);
        assert!(
            h.contains("id=\"transitions\"") && h.contains("E&lt;1&gt;"),
            "{h}"
        );
        let v: serde_json::Value = serde_json::from_str(&render(&d, Format::Json)).expect("json");
        assert_eq!(v["transitions"]["identifier_mismatch → matched"], 1);
        assert_eq!(v["changes"][0]["to"], "matched");
    }

    #[test]
    fn the_detail_column_says_what_holds_now_also_for_a_match() {
        let a = report();
        let mut b = report();
        b.run_id = Some(8);
        b.results[0].verdict = Verdict::Matched;
        b.results[0].detail = None;
        let h = html(&diff(&a, &b));
        let row = h
            .lines()
            .find(|l| l.contains("<td class=\"detail\">"))
            .expect("a changed account's row");
        assert!(
            row.contains("<td class=\"detail\">platform ") && row.contains("; event "),
            "{row}"
        );
    }

    #[test]
    fn the_settings_of_both_runs_are_shown_and_a_difference_said() {
        use crate::reconcile::settings::RunSettings;
        use crate::reconcile::Params;
        let mut p = Params::new(vec!["S".into()], chrono::Duration::minutes(15), "daemon");
        p.meter_points = true;
        p.registration_grace = chrono::Duration::seconds(1800);
        let mut a = report();
        a.trigger = "daemon".into();
        a.settings = Some(RunSettings::of(&p));
        let mut b = report();
        b.run_id = Some(8);
        p.registration_grace = chrono::Duration::days(7);
        b.settings = Some(RunSettings::of(&p));
        let d = diff(&a, &b);
        let t = table(&d);
        assert!(
            t.contains("run 7 (daemon): grace 15m · registration grace 30m"),
            "{t}"
        );
        assert!(
            t.contains("run 8 (cli): grace 15m · registration grace 7d"),
            "{t}"
        );
        assert!(
            t.contains(
                "WARNING: runs 7 and 8 used different settings (registration grace 30m → 7d)"
            ),
            "{t}"
        );
        let h = html(&d);
        assert!(
            h.contains("id=\"settings-differ\">Runs 7 and 8 used different settings"),
            "{h}"
        );
        let v: serde_json::Value = serde_json::from_str(&render(&d, Format::Json)).expect("json");
        assert_eq!(v["settings_differ"][0], "registration grace 30m → 7d");
        assert_eq!(v["from_settings"]["registration_grace_secs"], 1800);
        // The same settings: no warning; not recorded: said so, no warning either.
        b.settings = a.settings.clone();
        assert!(!table(&diff(&a, &b)).contains("WARNING"));
        b.settings = None;
        let t = table(&diff(&a, &b));
        assert!(
            t.contains("run 8 (cli): settings not recorded") && !t.contains("WARNING"),
            "{t}"
        );
    }

    #[test]
    fn a_batch_is_named_not_its_scope() {
        use crate::reconcile::model::BatchRef;
        let mut a = report();
        a.scope = "batch:1".into();
        let mut b = a.clone();
        b.run_id = Some(8);
        b.batch = Some(BatchRef {
            id: 1,
            supplier: "ACME".into(),
            name: "week-42".into(),
        });
        b.results[0].verdict = Verdict::Matched;
        let d = diff(&a, &b);
        for text in [table(&d), html(&d)] {
            assert!(text.contains("batch ACME/week-42"), "{text}");
            assert!(!text.contains("batch:1"), "{text}");
        }
        let v: serde_json::Value = serde_json::from_str(&render(&d, Format::Json)).expect("json");
        assert_eq!(
            (v["scope"].as_str(), v["batch"].as_str()),
            (Some("batch:1"), Some("ACME/week-42"))
        );
    }
}
