//! Rendering a run: a table for the terminal (counts, then the accounts that are not
//! `matched`, by the attention each needs: [`attention`]), JSON (`counts` and `results`, the machine format), CSV (one row per account), and
//! a self-contained HTML page ([`html`]: what changed since the previous run, a verdict-count
//! summary `id="counts"`, a legend, and the results table `id="verdicts"`; no scripts, no
//! external resources). Run-to-run changes render the same ways ([`changes`]); the verdicts'
//! meaning and next step are in [`LEGEND`].
//!
//! CSV cells that a spreadsheet would run as a formula (`=`, `+`, `@`, tab, CR first) get a
//! leading `'`.

mod attention;
pub(crate) mod changes;
pub(crate) mod html;
mod legend;

use std::fmt::Write;

use super::diff::Diff;
use super::model::{AccountResult, RunReport};
use super::verdict::Verdict;
pub(crate) use legend::{LEGEND, REGISTRATION_LEGEND};

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    Table,
    Json,
    Csv,
    Html,
}

impl Format {
    /// The format a file name's extension implies: `.html`/`.htm`, `.csv`, `.json`.
    pub(crate) fn from_extension(path: &std::path::Path) -> Option<Format> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "html" | "htm" => Some(Format::Html),
            "csv" => Some(Format::Csv),
            "json" => Some(Format::Json),
            _ => None,
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Format> {
        match s {
            "table" => Some(Format::Table),
            "json" => Some(Format::Json),
            "csv" => Some(Format::Csv),
            "html" => Some(Format::Html),
            _ => None,
        }
    }

    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Format::Table => "text/plain; charset=utf-8",
            Format::Json => "application/json",
            Format::Csv => "text/csv; charset=utf-8",
            Format::Html => "text/html; charset=utf-8",
        }
    }
}

/// Renders `r` in `format`; the HTML page shows `changes` since the previous run of its scope
/// at the top.
pub(crate) fn render(
    r: &RunReport,
    format: Format,
    show_matched: bool,
    changes: Option<&Diff>,
) -> String {
    match format {
        Format::Table => table(r, show_matched),
        Format::Json => json(r),
        Format::Csv => csv(r),
        Format::Html => html::run(r, changes),
    }
}

pub(crate) fn json(r: &RunReport) -> String {
    let mut s = serde_json::to_string(r).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}

fn time(t: Option<chrono::DateTime<chrono::Utc>>) -> String {
    t.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

/// `mpxn:STATUS:registration` per meter point, `|`-separated.
fn meter_points(a: &AccountResult) -> String {
    a.meter_points
        .as_ref()
        .map(|m| {
            m.iter()
                .map(|p| match p.registration {
                    Some(r) => format!("{}:{}:{r}", p.mpxn, p.status),
                    None => format!("{}:{}", p.mpxn, p.status),
                })
                .collect::<Vec<_>>()
                .join("|")
        })
        .unwrap_or_default()
}

/// The columns of CSV, in order.
const COLUMNS: [&str; 15] = [
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
    "registration",
    "meter_points",
];

fn cells(a: &AccountResult) -> [String; 15] {
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
        a.registration
            .map(|r| r.as_str().to_owned())
            .unwrap_or_default(),
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

pub(crate) fn csv(r: &RunReport) -> String {
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
pub(crate) fn summary(r: &RunReport) -> String {
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
    let regs: Vec<String> = r
        .registration_counts
        .iter()
        .filter(|(k, &n)| n > 0 && k.as_str() != "registered")
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    if !regs.is_empty() {
        let _ = write!(s, "; registrations not complete: {}", regs.join(", "));
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

pub(crate) fn table(r: &RunReport, show_matched: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Reconciliation run {} | {} | {} | outcome {} (exit {})",
        r.run_id
            .map_or_else(|| "(not stored)".into(), |i| i.to_string()),
        match &r.batch {
            Some(b) => format!("batch {} of {}", b.name, b.supplier),
            None => format!("suppliers {}", r.suppliers.join(", ")),
        },
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
    let listed: Vec<&AccountResult> = attention::ordered(&r.results)
        .into_iter()
        .filter(|a| {
            show_matched
                || a.verdict != Verdict::Matched
                || a.registration.is_some_and(|r| !r.is_settled())
        })
        .collect();
    let matched_listed = listed
        .iter()
        .filter(|a| a.verdict == Verdict::Matched)
        .count() as u64;
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
            "REGISTRATION",
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
                a.registration
                    .map_or_else(|| "-".into(), |r| r.as_str().to_owned()),
                a.detail.clone().unwrap_or_default(),
            ]);
        }
        pad(&mut out, &rows);
    }
    // Matched accounts listed for their registration are not among those left out.
    let unlisted = r
        .counts
        .get("matched")
        .copied()
        .unwrap_or(0)
        .saturating_sub(matched_listed);
    if !show_matched && unlisted > 0 {
        let _ = writeln!(
            out,
            "\n{unlisted} matched account(s) not listed (--show-matched, or --format csv|json|html)"
        );
    }
    let line = |counts: Vec<(&str, u64)>| {
        let o: Vec<String> = counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
        o.join(", ")
    };
    let regs = r.nonzero_registrations();
    if !regs.is_empty() {
        let _ = writeln!(out, "\nregistrations (accounts): {}", line(regs));
    }
    let orders = r.nonzero_orders();
    if !orders.is_empty() {
        let _ = writeln!(out, "\norder-process events: {}", line(orders));
    }
    let _ = writeln!(
        out,
        "REST calls: {} ({} list, {} per-account), {} attempts, {} retries",
        r.rest.calls, r.rest.list_calls, r.rest.account_calls, r.rest.attempts, r.rest.retries
    );
    out
}

/// HTML-escapes text.
pub(crate) fn esc(s: &str) -> String {
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::reconcile::model::{count, count_registrations, Outcome, RestSummary};
    use crate::reconcile::registration::{MeterPoint, Registration};

    /// A run with an identifier mismatch (odd characters everywhere) and a matched account
    /// whose registration stalled.
    pub(crate) fn report() -> RunReport {
        let mismatch = AccountResult {
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
            registration: None,
            meter_points: None,
        };
        let mut stalled = mismatch.clone();
        stalled.external_account_number = "E2".into();
        stalled.verdict = Verdict::Matched;
        stalled.detail = Some("meter point M1 stalled: requested 9 d ago, not completed".into());
        stalled.registration = Some(Registration::Stalled);
        stalled.meter_points = Some(vec![MeterPoint {
            mpxn: "M1".into(),
            status: "PRE_REGISTRATION".into(),
            registration: Some(Registration::Stalled),
            event: Some("lifecycle.join-supplier.requested".into()),
            event_time: None,
            requested_at: None,
            process: None,
        }]);
        let results = vec![mismatch, stalled];
        let now = chrono::Utc::now();
        RunReport {
            run_id: Some(7),
            batch: None,
            scope: "suppliers:S".into(),
            started_at: now,
            finished_at: now,
            trigger: "cli".into(),
            suppliers: vec!["S".into()],
            parameters: serde_json::json!({"manifest": {"file": "b.txt", "accounts": 2, "orders": 0}}),
            settings: None,
            outcome: Outcome::Mismatches,
            exit_code: 1,
            accounts: 2,
            counts: count(&results),
            registration_counts: count_registrations(&results),
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
        assert!(c
            .lines()
            .nth(2)
            .expect("a row")
            .ends_with(",stalled,M1:PRE_REGISTRATION:stalled"));
    }

    #[test]
    fn json_has_counts_and_results() {
        let v: serde_json::Value = serde_json::from_str(&json(&report())).expect("json");
        assert_eq!(v["counts"]["identifier_mismatch"], 1);
        assert_eq!(v["counts"]["matched"], 1);
        assert_eq!(v["registration_counts"]["stalled"], 1);
        assert_eq!(v["results"][0]["verdict"], "identifier_mismatch");
        assert_eq!(v["results"][0]["platform_account_number"], "A-2");
        assert_eq!(v["results"][1]["registration"], "stalled");
    }

    #[test]
    fn table_lists_what_is_not_matched_or_not_registered() {
        let t = table(&report(), false);
        assert!(
            t.contains("identifier_mismatch") && t.contains("E<1>"),
            "{t}"
        );
        assert!(t.contains("E2") && t.contains("stalled"), "{t}");
        assert!(summary(&report()).contains("registrations not complete: 1 stalled"));
        // The one matched account is listed (its registration stalled): none is left out.
        assert!(!t.contains("not listed"), "{t}");
        // A settled matched account beside it is the one not listed.
        let mut r = report();
        let mut settled = r.results[1].clone();
        settled.external_account_number = "E3".into();
        settled.registration = None;
        r.results.push(settled);
        r.counts = count(&r.results);
        let t = table(&r, false);
        assert!(
            !t.contains("E3") && t.contains("\n1 matched account(s) not listed"),
            "{t}"
        );
        assert!(!table(&r, true).contains("not listed"));
    }

    #[test]
    fn the_legends_cover_every_verdict_and_registration() {
        let names: Vec<&str> = LEGEND.iter().map(|(v, ..)| *v).collect();
        assert_eq!(names, Verdict::ALL.map(|v| v.as_str()).to_vec());
        let names: Vec<&str> = REGISTRATION_LEGEND.iter().map(|(v, ..)| *v).collect();
        assert_eq!(
            names,
            crate::reconcile::registration::Registration::ALL
                .map(|r| r.as_str())
                .to_vec()
        );
    }

    #[test]
    fn output_files_imply_their_format() {
        use std::path::Path;
        assert_eq!(
            Format::from_extension(Path::new("r.HTML")),
            Some(Format::Html)
        );
        assert_eq!(
            Format::from_extension(Path::new("r.csv")),
            Some(Format::Csv)
        );
        assert_eq!(
            Format::from_extension(Path::new("r.json")),
            Some(Format::Json)
        );
        assert_eq!(Format::from_extension(Path::new("r.txt")), None);
        assert_eq!(Format::from_extension(Path::new("report")), None);
    }
}
