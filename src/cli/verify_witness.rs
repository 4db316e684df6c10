//! The output of `verify --public-key`: the witness report and the auditor's state added to the
//! one JSON document `verify` prints, a summary on stderr (each checkpoint not trusted, on a
//! rollback or fork both signed notes, and a break remembered from an earlier run); exit 0
//! everything holds, 1 a break (naming the first divergent checkpoint) or a remembered break not
//! yet acknowledged, 2 could not verify (witness unreachable, no checkpoints, key, policy or
//! state file unusable).

use std::process::ExitCode;

use crate::log::tree::TreeStore;
use crate::verify::witness::{finish, Prepared, TreeSink, WitnessReport};
use crate::verify::VerifyReport;

/// What the witness check needs from the rest of the run.
pub(crate) struct Parts<'a> {
    pub(crate) trees: &'a TreeStore,
    /// The closed re-verdict runs' end hashes, in chain order.
    pub(crate) reverdict_leaves: &'a [[u8; 32]],
    /// The chain's own outcome (its first break is remembered too).
    pub(crate) chain: &'a VerifyReport,
}

/// The exit code, and whether the witness held (`None`: could not verify against it). Adds
/// `witness` and `auditor_state` to `doc`.
pub(crate) async fn report(
    prepared: Prepared,
    sink: TreeSink,
    parts: Parts<'_>,
    doc: &mut serde_json::Value,
) -> anyhow::Result<(ExitCode, Option<bool>)> {
    let (report, memory) = match finish(prepared, sink, parts.trees, parts.reverdict_leaves).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("event-audit: could not verify against the witnessed checkpoints: {e}");
            return Ok((ExitCode::from(2), None));
        }
    };
    doc["witness"] = serde_json::to_value(&report)?;
    for r in &report.rejected {
        eprintln!("not trusted: {}: {}", r.checkpoint, r.why);
    }
    for b in &report.before_policy {
        eprintln!(
            "not used: {} checkpoint(s) of {}, sizes {} to {}, signed before its first one the witness policy's quorum cosigned (size {}): checkpoints published before the policy was in force carry no cosignatures",
            b.count, b.origin, b.smallest, b.largest, b.first_cosigned
        );
    }
    print_witness(&report, memory.path.is_some(), parts.chain.ok);
    let settled = match memory.settle(finding(parts.chain, &report)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("event-audit: {e}");
            return Ok((ExitCode::from(2), Some(report.ok)));
        }
    };
    doc["auditor_state"] = serde_json::to_value(&settled)?;
    if let Some(a) = &settled.acknowledged {
        eprintln!(
            "acknowledged: break {} (found by run {} at {}), recorded in the state file",
            a.id, a.run, a.found_at
        );
    }
    let broken_now = !parts.chain.ok || !report.ok;
    match (&settled.open_break, &settled.path) {
        (Some(b), Some(path)) if settled.recorded_now => eprintln!(
            "remembered in {path}: {}; every later run exits 1 naming it until `--acknowledge-break {}`",
            b.line(),
            b.id
        ),
        (Some(b), _) => eprintln!(
            "BROKEN (remembered, not acknowledged): {}; this run {}; once it is dealt with, acknowledge it with `--acknowledge-break {}`",
            b.line(),
            if broken_now { "found breaks as well" } else { "found the log intact" },
            b.id
        ),
        (None, None) if broken_now => {
            eprintln!("--no-state: this break is not remembered for later runs")
        }
        _ => {}
    }
    let code = if report.ok && settled.open_break.is_none() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    Ok((code, Some(report.ok)))
}

/// This run's first break, to be remembered: the chain's first, else the witness's.
fn finding(chain: &VerifyReport, w: &WitnessReport) -> Option<crate::verify::breaks::Finding> {
    use crate::verify::breaks::Finding;
    if !chain.ok {
        let b = chain.breaks.first();
        return Some(Finding {
            why: b.map_or_else(
                || chain.first_break.clone().unwrap_or_default(),
                |b| b.why.clone(),
            ),
            stream: b.and_then(|b| b.stream.clone()),
            stream_seq: b.and_then(|b| b.stream_seq),
            link: b.and_then(|b| b.link),
            checkpoint: None,
            breaks_total: chain.breaks_total + i64::from(!w.ok),
        });
    }
    (!w.ok).then(|| Finding {
        why: w.first_break.clone().unwrap_or_default(),
        checkpoint: w.first_divergent.clone(),
        breaks_total: 1,
        ..Default::default()
    })
}

/// The witness's summary on stderr: what held and what was hashed (and whether a state file
/// keeps this run's checkpoint), or the first divergent checkpoint with the signed notes that
/// show it.
fn print_witness(report: &WitnessReport, with_state: bool, chain_ok: bool) {
    if report.ok {
        let hashed = match report.not_rehashed_before {
            Some(n) => format!(
                "{} row(s) hashed from size {n}; --incremental: the rows before size {n} were not rehashed (run without it to rehash every row)",
                report.rows_hashed
            ),
            None => format!(
                "every row rehashed and the tree rebuilt from all {} row hashes",
                report.rows_hashed
            ),
        };
        eprintln!(
            "witness holds: {} checkpoint(s) trusted, up to size {}{}; {hashed}",
            report.trusted,
            report.witnessed_size,
            if report.reverdicts_size > 0 {
                format!(" (re-verdict runs: {})", report.reverdicts_size)
            } else {
                String::new()
            },
        );
        if !with_state {
            eprintln!("--no-state: no state read or written; the next run does not know this one's checkpoint");
        } else if !report.state_loaded && chain_ok {
            eprintln!("no earlier state: this run's checkpoint is remembered for the next one (keep the state file out of the log operators' reach)");
        }
        return;
    }
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
}
