//! Where a command's report goes and what it points at: the output format (`--format`, else
//! the `-o` file's extension, other extensions refused), writing it (files with mode 0600),
//! the batch a name names, and signed links to the daemon's report pages.

use std::io::{IsTerminal, Write};

use anyhow::Context;

use crate::config::{secrets, Settings};
use crate::reconcile::batch::Batch;
use crate::reconcile::manifest::write_private;
use crate::reconcile::report::Format;
use crate::reconcile::store::ReconcileStore;
use crate::server::links;

/// `--format`, else the output file's extension (other extensions refused), else a table on a
/// terminal and JSON otherwise.
pub(crate) fn format_of(
    format: Option<Format>,
    output: Option<&std::path::Path>,
) -> anyhow::Result<Format> {
    if let Some(f) = format {
        return Ok(f);
    }
    match output {
        Some(path) => Format::from_extension(path).ok_or_else(|| {
            anyhow::anyhow!(
                "cannot tell the format of {} from its extension: name it .html, .csv or .json, \
                 or pass --format",
                path.display()
            )
        }),
        None if std::io::stdout().is_terminal() => Ok(Format::Table),
        None => Ok(Format::Json),
    }
}

/// Writes `body` to `output` (mode 0600) or stdout.
pub(crate) fn emit(output: Option<&std::path::Path>, body: &str) -> anyhow::Result<()> {
    match output {
        Some(path) => write_private(path, body.as_bytes())
            .with_context(|| format!("writing {}", path.display())),
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(body.as_bytes())?;
            Ok(out.flush()?)
        }
    }
}

/// The one batch `name` names (of the single `--supplier`, when given).
pub(crate) async fn find_batch(
    store: &ReconcileStore,
    supplier: Option<&str>,
    name: &str,
) -> anyhow::Result<Batch> {
    let mut found = store.find_batches(supplier, name).await?;
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => anyhow::bail!(
            "no batch named `{name}`{}; register it with `event-audit batch register`",
            supplier.map_or_else(String::new, |s| format!(" of supplier {s}"))
        ),
        _ => anyhow::bail!(
            "several suppliers have a batch named `{name}` ({}); add --supplier",
            found
                .iter()
                .map(|b| b.supplier.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// An HTML page the CLI writes (to a file, or to stdout for one): its links to the daemon's
/// pages are root-relative (`href="/…"`), dead once the page is opened from disk, so they are
/// made absolute under `base` (`http.public_url`), or, with no base known, left out (their text
/// kept) with a note under the title saying how to have them.
pub(crate) fn links_for_file(html: &str, base: Option<&str>) -> String {
    const OPEN: &str = "<a href=\"/";
    if let Some(base) = base {
        let to = format!("<a href=\"{}/", base.trim_end_matches('/'));
        return html.replace(OPEN, &to);
    }
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    let mut removed = 0;
    while let Some(at) = rest.find(OPEN) {
        let (text_at, end) = match rest[at..].find('>').zip(rest[at..].find("</a>")) {
            Some((gt, close)) if gt < close => (at + gt + 1, at + close),
            _ => break,
        };
        out.push_str(&rest[..at]);
        out.push_str(&rest[text_at..end]);
        rest = &rest[end + "</a>".len()..];
        removed += 1;
    }
    out.push_str(rest);
    if removed > 0 {
        if let Some(h1) = out.find("</h1>\n") {
            let note = "<p class=\"note\">Saved without the daemon's address: the links to its pages \
                        (accounts' timelines, history, changes) are left out; write it with \
                        <code>--public-url URL</code> (or EVENT_AUDIT_HTTP_PUBLIC_URL) to keep them.</p>\n";
            out.insert_str(h1 + "</h1>\n".len(), note);
        }
    }
    out
}

/// `path_and_query` under `http.public_url`, signed with the report token for `http.link_ttl`
/// (unsigned, with a note, when no report token is configured: the reports are open).
pub(crate) fn signed_link(settings: &Settings, path_and_query: &str) -> anyhow::Result<String> {
    let base = settings.http.public_url.as_deref().ok_or_else(|| {
        anyhow::anyhow!("no --public-url (EVENT_AUDIT_HTTP_PUBLIC_URL): the daemon's address as a browser reaches it")
    })?;
    let token = secrets::load_secret(
        settings.http.report_token_file.as_ref(),
        secrets::REPORT_TOKEN_ENV,
        "report token",
    )?;
    Ok(match token {
        Some(t) => links::link(
            base,
            &t,
            path_and_query,
            settings.http.link_ttl.chrono(),
            chrono::Utc::now(),
        ),
        None => {
            eprintln!("note: no report token configured, so the reports are open and the link is not signed (it does not expire)");
            format!("{}{path_and_query}", base.trim_end_matches('/'))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_pages_link_to_the_daemon_or_carry_no_dead_links() {
        let page = "<h1>R</h1>\n<p><a href=\"/accounts/E1/events?format=html\">E1</a> · \
                    <a href=\"https://example.org/x\">elsewhere</a> · \
                    <a href=\"/reports/reconciliation/runs\">history</a></p>";
        let with = links_for_file(page, Some("https://audit.internal:9187/"));
        assert!(
            with.contains(
                "<a href=\"https://audit.internal:9187/accounts/E1/events?format=html\">E1</a>"
            ),
            "{with}"
        );
        assert!(
            !with.contains("href=\"/") && !with.contains("note"),
            "{with}"
        );
        let without = links_for_file(page, None);
        assert!(!without.contains("href=\"/"), "{without}");
        assert!(
            without
                .contains("<p>E1 · <a href=\"https://example.org/x\">elsewhere</a> · history</p>"),
            "{without}"
        );
        assert!(
            without.contains("</h1>\n<p class=\"note\">Saved without the daemon's address"),
            "{without}"
        );
        // Nothing to change: no note.
        assert_eq!(
            links_for_file("<h1>R</h1>\n<p>x</p>", None),
            "<h1>R</h1>\n<p>x</p>"
        );
    }

    #[test]
    fn output_files_need_a_known_extension_or_a_format() {
        use std::path::Path;
        assert_eq!(
            format_of(None, Some(Path::new("r.html"))).ok(),
            Some(Format::Html)
        );
        assert_eq!(
            format_of(None, Some(Path::new("r.CSV"))).ok(),
            Some(Format::Csv)
        );
        let err = format_of(None, Some(Path::new("report.txt"))).expect_err("refused");
        assert!(err.to_string().contains("report.txt") && err.to_string().contains("--format"));
        assert_eq!(
            format_of(Some(Format::Table), Some(Path::new("report.txt"))).ok(),
            Some(Format::Table)
        );
    }
}
