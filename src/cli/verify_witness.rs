//! The witness's part of `verify`'s summary on stderr: each checkpoint not trusted, on a
//! rollback or fork both signed notes, what held and what was hashed, and what the auditor's
//! state remembers (a break found now or earlier, an acknowledgement). The checks themselves
//! are [`crate::verify::run`]'s.

use crate::verify::witness::WitnessReport;
use crate::verify::{CouldNotVerify, VerifyReport};

/// The witness's lines of `report`, in the order they are said.
pub(crate) fn print(report: &VerifyReport) {
    if let Some(why @ CouldNotVerify::Witness(_)) = &report.incomplete {
        eprintln!("event-audit: {why}");
        return;
    }
    let Some(w) = &report.witness else {
        return;
    };
    for r in &w.rejected {
        eprintln!("not trusted: {}: {}", r.checkpoint, r.why);
    }
    for b in &w.before_policy {
        eprintln!(
            "not used: {} checkpoint(s) of {}, sizes {} to {}, signed before its first one the witness policy's quorum cosigned (size {}): checkpoints published before the policy was in force carry no cosignatures",
            b.count, b.origin, b.smallest, b.largest, b.first_cosigned
        );
    }
    print_witness(w, report.with_state, report.chain.ok);
    if let Some(why @ CouldNotVerify::State(_)) = &report.incomplete {
        eprintln!("event-audit: {why}");
        return;
    }
    let Some(settled) = &report.auditor_state else {
        return;
    };
    if let Some(a) = &settled.acknowledged {
        eprintln!(
            "acknowledged: break {} (found by run {} at {}), recorded in the state file",
            a.id, a.run, a.found_at
        );
    }
    let broken_now = !report.chain.ok || !w.ok;
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
