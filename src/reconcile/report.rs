//! Rendering a run: a table for the terminal (counts, then the accounts that are not
//! `matched`), JSON (`counts` and `results`, the machine format), CSV (one row per account), and
//! a self-contained HTML page (a verdict-count summary, `id="counts"`, and the results table,
//! `id="verdicts"`; no scripts, no external resources).
//!
//! CSV cells that a spreadsheet would run as a formula (`=`, `+`, `@`, tab, CR first) get a
//! leading `'`.

use std::fmt::Write;

use super::model::{AccountResult, RunReport};
use super::verdict::Verdict;

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
    Html,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "table" => Some(Format::Table),
            "json" => Some(Format::Json),
            "csv" => Some(Format::Csv),
            "html" => Some(Format::Html),
            _ => None,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Table => "text/plain; charset=utf-8",
            Format::Json => "application/json",
            Format::Csv => "text/csv; charset=utf-8",
            Format::Html => "text/html; charset=utf-8",
        }
    }
}

/// Renders `r` in `format`.
pub fn render(r: &RunReport, format: Format, show_matched: bool) -> String {
    match format {
        Format::Table => table(r, show_matched),
        Format::Json => json(r),
        Format::Csv => csv(r),
        Format::Html => html(r),
    }
}

pub fn json(r: &RunReport) -> String {
    let mut s = serde_json::to_string(r).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}

fn time(t: Option<chrono::DateTime<chrono::Utc>>) -> String {
    t.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

fn meter_points(a: &AccountResult) -> String {
    a.meter_points
        .as_ref()
        .map(|m| {
            m.iter()
                .map(|p| format!("{}:{}", p.mpxn, p.status))
                .collect::<Vec<_>>()
                .join("|")
        })
        .unwrap_or_default()
}

/// The columns of CSV, HTML and the table, in order.
const COLUMNS: [&str; 14] = [
    "external_account_number",
    "supplier",
    "verdict",
    "event_outcome",
    "event_type",
    "event_id",
    "event_identifier",
    "event_time",
    "platform_status",
    "platform_account_number",
    "platform_created_at",
    "account_created_event",
    "detail",
    "meter_points",
];

fn cells(a: &AccountResult) -> [String; 14] {
    let o = |v: &Option<String>| v.clone().unwrap_or_default();
    [
        a.external_account_number.clone(),
        a.supplier.clone(),
        a.verdict.as_str().to_owned(),
        o(&a.event_outcome),
        o(&a.event_type),
        o(&a.event_id),
        o(&a.event_identifier),
        time(a.event_time),
        a.platform_status.clone(),
        o(&a.platform_account_number),
        time(a.platform_created_at),
        a.account_created_event.to_string(),
        o(&a.detail),
        meter_points(a),
    ]
}

fn csv_cell(s: &str) -> String {
    let s = if s.starts_with(['=', '+', '@', '\t', '\r']) {
        format!("'{s}")
    } else {
        s.to_owned()
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

pub fn csv(r: &RunReport) -> String {
    let mut out = String::with_capacity(r.results.len() * 160 + 256);
    out.push_str(&COLUMNS.join(","));
    out.push_str("\r\n");
    for a in &r.results {
        let row: Vec<String> = cells(a).iter().map(|c| csv_cell(c)).collect();
        out.push_str(&row.join(","));
        out.push_str("\r\n");
    }
    out
}

/// The one-line summary the CLI prints on stderr.
pub fn summary(r: &RunReport) -> String {
    let counts: Vec<String> = r
        .nonzero_counts()
        .iter()
        .map(|(v, n)| format!("{n} {v}"))
        .collect();
    let secs = (r.finished_at - r.started_at).num_milliseconds() as f64 / 1000.0;
    let mut s = format!(
        "reconciled {} accounts in {secs:.2}s: {}; REST calls: {} ({} list, {} per-account; {} retries)",
        r.accounts,
        if counts.is_empty() {
            "nothing to reconcile".to_owned()
        } else {
            counts.join(", ")
        },
        r.rest.calls,
        r.rest.list_calls,
        r.rest.account_calls,
        r.rest.retries
    );
    match r.run_id {
        Some(id) => {
            let _ = write!(s, "; run {id}");
        }
        None => s.push_str("; run not stored"),
    }
    let _ = write!(s, "; outcome {}", r.outcome.as_str());
    s
}

fn pad(out: &mut String, rows: &[Vec<String>]) {
    let n = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..n)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let mut line = String::new();
        for (i, c) in row.iter().enumerate() {
            if i + 1 == n {
                line.push_str(c);
            } else {
                let _ = write!(line, "{c:<w$}  ", w = widths[i]);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

pub fn table(r: &RunReport, show_matched: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Reconciliation run {} | suppliers {} | {} | outcome {} (exit {})",
        r.run_id
            .map_or_else(|| "(not stored)".into(), |i| i.to_string()),
        r.suppliers.join(", "),
        time(Some(r.finished_at)),
        r.outcome.as_str(),
        r.exit_code
    );
    if let Some(e) = &r.error {
        let _ = writeln!(out, "error: {e}");
    }
    out.push('\n');
    let mut rows = vec![vec!["VERDICT".to_owned(), "ACCOUNTS".to_owned()]];
    for (v, n) in r.nonzero_counts() {
        rows.push(vec![v.to_owned(), n.to_string()]);
    }
    rows.push(vec!["total".into(), r.accounts.to_string()]);
    pad(&mut out, &rows);
    let listed: Vec<&AccountResult> = r
        .results
        .iter()
        .filter(|a| show_matched || a.verdict != Verdict::Matched)
        .collect();
    if !listed.is_empty() {
        out.push('\n');
        let mut rows = vec![[
            "ACCOUNT",
            "VERDICT",
            "EVENT",
            "EVENT IDENTIFIER",
            "PLATFORM",
            "PLATFORM ACCOUNT",
            "CREATED EVENT",
            "DETAIL",
        ]
        .map(str::to_owned)
        .to_vec()];
        for a in listed {
            let o = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
            rows.push(vec![
                a.external_account_number.clone(),
                a.verdict.as_str().to_owned(),
                o(&a.event_outcome),
                o(&a.event_identifier),
                a.platform_status.clone(),
                o(&a.platform_account_number),
                if a.account_created_event { "yes" } else { "no" }.to_owned(),
                a.detail.clone().unwrap_or_default(),
            ]);
        }
        pad(&mut out, &rows);
    }
    let matched = r.counts.get("matched").copied().unwrap_or(0);
    if !show_matched && matched > 0 {
        let _ = writeln!(
            out,
            "\n{matched} matched account(s) not listed (--show-matched, or --format csv|json|html)"
        );
    }
    if !r.order_processes.is_empty() {
        let o: Vec<String> = r
            .order_processes
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let _ = writeln!(out, "\norder-process events: {}", o.join(", "));
    }
    let _ = writeln!(
        out,
        "REST calls: {} ({} list, {} per-account), {} attempts, {} retries",
        r.rest.calls, r.rest.list_calls, r.rest.account_calls, r.rest.attempts, r.rest.retries
    );
    out
}

/// HTML-escapes text.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The colour class of a verdict: ok, wait (expected to settle), unknown, or bad.
fn tone(v: &str) -> &'static str {
    match v {
        "matched" => "ok",
        "awaiting_event" | "pending" | "in_progress" => "wait",
        "unverified" => "unknown",
        _ => "bad",
    }
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2rem;color:#1b1f24}\
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}\
table{border-collapse:collapse;font-size:.85rem}th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top}\
th{background:#f6f8fa}td.n{text-align:right}.meta{color:#57606a}\
.tag{display:inline-block;padding:0 .4rem;border-radius:.6rem;font-weight:600}\
.ok{background:#dafbe1;color:#116329}.wait{background:#fff8c5;color:#7d4e00}\
.unknown{background:#eaeef2;color:#424a53}.bad{background:#ffebe9;color:#a40e26}\
.scroll{overflow-x:auto}#verdicts td{white-space:nowrap}\
#verdicts td.detail{white-space:normal;min-width:16rem}.mono{font-family:ui-monospace,monospace}";

pub fn html(r: &RunReport) -> String {
    let mut o = String::with_capacity(r.results.len() * 600 + 4096);
    let title = match r.run_id {
        Some(id) => format!("Reconciliation run {id}"),
        None => "Reconciliation run".to_owned(),
    };
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>{}</title>\
         <style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        esc(&title),
        esc(&title)
    );
    let _ = writeln!(
        o,
        "<p class=\"meta\">Suppliers <b>{}</b> · started {} · finished {} · trigger {} · \
         outcome <span class=\"tag {}\" id=\"outcome\">{}</span> (exit {}) · {} accounts · \
         REST calls {} ({} list, {} per-account, {} retries)</p>",
        esc(&r.suppliers.join(", ")),
        esc(&time(Some(r.started_at))),
        esc(&time(Some(r.finished_at))),
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
        "<p class=\"meta\" id=\"parameters\">Outcome events from {} until {} · grace {} s · \
         manifest {} · REST {} · tolerated {}</p>",
        esc(&param("since", "the beginning")),
        esc(&param("until", "now")),
        esc(&param("grace_secs", "-")),
        esc(&param("manifest", "none")),
        esc(&param("rest_url", "-")),
        esc(&param("tolerances", "none"))
    );
    if let Some(e) = &r.error {
        let _ = writeln!(o, "<p class=\"tag bad\" id=\"error\">{}</p>", esc(e));
    }
    o.push_str("<h2>Verdicts</h2>\n<table id=\"counts\"><thead><tr><th>Verdict</th><th>Accounts</th></tr></thead><tbody>\n");
    for (v, n) in r.nonzero_counts() {
        let _ = writeln!(
            o,
            "<tr data-verdict=\"{v}\"><td><span class=\"tag {}\">{}</span></td><td class=\"n\">{n}</td></tr>",
            tone(v),
            esc(v)
        );
    }
    let _ = writeln!(
        o,
        "</tbody><tfoot><tr><th>total</th><th class=\"n\">{}</th></tr></tfoot></table>",
        r.accounts
    );
    if !r.order_processes.is_empty() {
        o.push_str("<h2>Order-process events</h2>\n<table id=\"orders\"><thead><tr><th>Outcome</th><th>Events</th></tr></thead><tbody>\n");
        for (k, n) in &r.order_processes {
            let _ = writeln!(o, "<tr><td>{}</td><td class=\"n\">{n}</td></tr>", esc(k));
        }
        o.push_str("</tbody></table>\n");
    }
    o.push_str(
        "<h2>Accounts</h2>\n<p class=\"meta\">Accounts that need attention first, then the \
         matched ones.</p>\n<div class=\"scroll\"><table id=\"verdicts\"><thead><tr>",
    );
    for c in COLUMNS {
        let _ = write!(o, "<th>{}</th>", esc(&c.replace('_', " ")));
    }
    o.push_str("</tr></thead><tbody>\n");
    let mut rows: Vec<&AccountResult> = r.results.iter().collect();
    rows.sort_by_key(|a| (a.verdict == Verdict::Matched, a.verdict));
    for a in rows {
        let v = a.verdict.as_str();
        let _ = write!(o, "<tr data-verdict=\"{v}\">");
        for (i, c) in cells(a).iter().enumerate() {
            let _ = match COLUMNS[i] {
                "verdict" => write!(
                    o,
                    "<td><span class=\"tag {}\">{}</span></td>",
                    tone(v),
                    esc(c)
                ),
                "detail" => write!(o, "<td class=\"detail\">{}</td>", esc(c)),
                "external_account_number"
                | "event_id"
                | "event_identifier"
                | "platform_account_number" => write!(o, "<td class=\"mono\">{}</td>", esc(c)),
                _ => write!(o, "<td>{}</td>", esc(c)),
            };
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody></table></div>\n</body></html>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::model::{count, Outcome, RestSummary};

    fn report() -> RunReport {
        let results = vec![AccountResult {
            external_account_number: "E<1>".into(),
            supplier: "S".into(),
            verdict: Verdict::IdentifierMismatch,
            event_outcome: Some("complete".into()),
            event_type: Some("data_import.import_process.complete".into()),
            event_id: Some("id-1".into()),
            event_identifier: Some("=A-1".into()),
            event_time: None,
            platform_status: "imported".into(),
            platform_account_number: Some("A-2".into()),
            platform_created_at: None,
            account_created_event: true,
            detail: Some("a, \"quoted\" detail".into()),
            meter_points: None,
        }];
        let now = chrono::Utc::now();
        RunReport {
            run_id: Some(7),
            started_at: now,
            finished_at: now,
            trigger: "cli".into(),
            suppliers: vec!["S".into()],
            parameters: serde_json::json!({}),
            outcome: Outcome::Mismatches,
            exit_code: 1,
            accounts: 1,
            counts: count(&results),
            order_processes: Default::default(),
            rest: RestSummary::default(),
            error: None,
            timings_ms: Default::default(),
            results,
        }
    }

    #[test]
    fn csv_quotes_and_defuses_formulas() {
        let c = csv(&report());
        let line = c.lines().nth(1).expect("a row");
        assert!(line.contains(",'=A-1,"), "{line}");
        assert!(line.contains("\"a, \"\"quoted\"\" detail\""), "{line}");
    }

    #[test]
    fn html_escapes_and_has_the_tables() {
        let h = html(&report());
        assert!(h.contains("id=\"verdicts\"") && h.contains("id=\"counts\""));
        assert!(h.contains("E&lt;1&gt;") && !h.contains("E<1>"));
        assert!(!h.contains("<script"));
    }

    #[test]
    fn json_has_counts_and_results() {
        let v: serde_json::Value = serde_json::from_str(&json(&report())).expect("json");
        assert_eq!(v["counts"]["identifier_mismatch"], 1);
        assert_eq!(v["counts"]["matched"], 0);
        assert_eq!(v["results"][0]["verdict"], "identifier_mismatch");
        assert_eq!(v["results"][0]["platform_account_number"], "A-2");
    }

    #[test]
    fn table_lists_what_is_not_matched() {
        let t = table(&report(), false);
        assert!(
            t.contains("identifier_mismatch") && t.contains("E<1>"),
            "{t}"
        );
    }
}
