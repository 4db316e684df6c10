//! The output of `verify --public-key`: the witness report as JSON on stdout, a summary on
//! stderr; exit 0 everything holds, 1 a break (naming the first divergent checkpoint), 2 could
//! not verify (witness unreachable, no checkpoints, key unreadable).

use std::path::Path;
use std::process::ExitCode;

use crate::config::Settings;
use crate::db::Db;
use crate::tree::TreeStore;
use crate::verify::witness::against_witness;

/// The exit code, and whether the witness held (`None`: could not verify against it).
pub async fn run(
    settings: &Settings,
    db: Db,
    key: &Path,
) -> anyhow::Result<(ExitCode, Option<bool>)> {
    let report = match against_witness(settings, &TreeStore::new(db), key).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("could not verify against the witness: {e}");
            return Ok((ExitCode::from(2), None));
        }
    };
    println!("{}", serde_json::json!({ "witness": report }));
    for r in &report.rejected {
        eprintln!("not trusted: {}: {}", r.checkpoint, r.why);
    }
    if report.ok {
        eprintln!(
            "witness holds: {} checkpoint(s) trusted, up to size {}; {} row(s) hashed from size {}{}",
            report.trusted,
            report.witnessed_size,
            report.rows_hashed,
            report.from_size,
            if report.incremental { " (incremental; --full hashes every row)" } else { "" }
        );
        Ok((ExitCode::SUCCESS, Some(true)))
    } else {
        eprintln!(
            "witness BROKEN: {}",
            report.first_break.as_deref().unwrap_or("?")
        );
        Ok((ExitCode::from(1), Some(false)))
    }
}
