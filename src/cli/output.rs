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

/// `path_and_query` under `http.public_url`, signed with the report token for `http.link_ttl`
/// (unsigned, with a note, when no report token is configured: the reports are open).
pub(crate) fn signed_link(settings: &Settings, path_and_query: &str) -> anyhow::Result<String> {
    let base = settings.http.public_url.as_deref().ok_or_else(|| {
        anyhow::anyhow!("no --public-url (EVENT_AUDIT_PUBLIC_URL): the daemon's address as a browser reaches it")
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
            eprintln!("note: no report token configured, so the reports are open and the link is not signed");
            format!("{}{path_and_query}", base.trim_end_matches('/'))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
