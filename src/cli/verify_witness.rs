//! The output of `verify --public-key`: the witness report as JSON on stdout, a summary on
//! stderr (each checkpoint not trusted, and on a rollback or fork both signed notes); exit 0
//! everything holds, 1 a break (naming the first divergent checkpoint), 2 could not verify
//! (witness unreachable, no checkpoints, key, policy or state file unusable).

use std::process::ExitCode;

use crate::tree::TreeStore;
use crate::verify::witness::{finish, Prepared, TreeSink};

/// The exit code, and whether the witness held (`None`: could not verify against it).
pub(crate) async fn report(
    prepared: Prepared,
    sink: TreeSink,
    trees: &TreeStore,
    reverdict_leaves: &[[u8; 32]],
) -> anyhow::Result<(ExitCode, Option<bool>)> {
    let report = match finish(prepared, sink, trees, reverdict_leaves).await {
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
            "witness holds: {} checkpoint(s) trusted, up to size {}{}; {} row(s) hashed from size {}{}",
            report.trusted,
            report.witnessed_size,
            if report.reverdicts_size > 0 {
                format!(" (re-verdict runs: {})", report.reverdicts_size)
            } else {
                String::new()
            },
            report.rows_hashed,
            report.from_size,
            if report.incremental { " (incremental; --full hashes every row)" } else { "" }
        );
        if !report.state_loaded {
            eprintln!("no earlier state: this run's checkpoint is remembered for the next one (keep the state file out of the log operators' reach)");
        }
        Ok((ExitCode::SUCCESS, Some(true)))
    } else {
        eprintln!(
            "witness BROKEN: {}",
            report.first_break.as_deref().unwrap_or("?")
        );
        for (i, n) in report.evidence.iter().enumerate() {
            let which = if report.evidence.len() == 2 && i == 0 {
                "checked last time / first"
            } else {
                "witnessed"
            };
            eprintln!("--- signed note ({which}) ---\n{n}---");
        }
        Ok((ExitCode::from(1), Some(false)))
    }
}
