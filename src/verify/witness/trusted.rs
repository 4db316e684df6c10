//! Which witnessed checkpoints are trusted, and what they say against each other and against
//! the auditor's state: a note opens with the key and meets the policy, or is rejected with the
//! reason; two trusted checkpoints of one size with different roots are a split view; the newest
//! is never smaller than, nor another root at the size of, the one checked last time.

use super::{Rejected, Trusted, WitnessReport};
use crate::tlog::cosign::WitnessPolicy;
use crate::tlog::note::{self, Checkpoint, NoteError, PublicKey, REVERDICTS_SUFFIX};
use crate::verify::auditor::Checked;
use crate::witnessed::signer::publish::Found;

/// The checkpoints found, by log: those that open with the key and meet the policy, of the
/// rows' log and of the re-verdict runs' log (`logs`: their origins); the others rejected.
pub(super) fn sort_out(
    found: Vec<Found>,
    key: &PublicKey,
    policy: Option<&WitnessPolicy>,
    logs: [&str; 2],
    report: &mut WitnessReport,
) -> [Vec<Trusted>; 2] {
    let mut trusted = [Vec::new(), Vec::new()];
    for f in found {
        let claimed = note::claimed(&f.note).ok();
        let name = match &claimed {
            Some(c) if c.origin.ends_with(REVERDICTS_SUFFIX) => {
                format!("re-verdict checkpoint size {} ({})", c.size, f.label)
            }
            Some(c) => format!("checkpoint size {} ({})", c.size, f.label),
            None => format!("checkpoint ({})", f.label),
        };
        match trust(&f.note, key, policy) {
            Ok(cp) => match logs.iter().position(|l| cp.origin == *l) {
                Some(i) => trusted[i].push(Trusted {
                    cp,
                    note: f.note,
                    label: name,
                }),
                None => report.rejected.push(Rejected {
                    checkpoint: name,
                    why: format!("another log's origin `{}`", cp.origin),
                }),
            },
            Err(why) => report.rejected.push(Rejected {
                checkpoint: name,
                why,
            }),
        }
    }
    trusted
}

/// No checkpoint of the rows' log is trusted, and no state says one was: most likely the
/// wrong public key.
pub(super) fn none_trusted(report: &mut WitnessReport, key: &PublicKey, with_policy: bool) {
    let first = report.rejected.first().cloned();
    let (c, why) = first.map_or((String::new(), String::new()), |r| (r.checkpoint, r.why));
    report.fail(
        Some(c.clone()),
        format!(
            "{c}: {why}; no checkpoint is signed by key {}+{}{} (wrong public key?)",
            key.name,
            note::hex4(&key.id),
            if with_policy {
                " and cosigned by the policy's quorum"
            } else {
                ""
            }
        ),
    );
}

/// Two trusted checkpoints of one size with different roots (`list` sorted by size): a split
/// view, both signed notes kept as evidence.
pub(super) fn split_views(report: &mut WitnessReport, list: &[Trusted]) {
    for pair in list.windows(2) {
        if pair[0].cp.size == pair[1].cp.size && pair[0].cp.root != pair[1].cp.root {
            report.evidence = vec![pair[0].note.clone(), pair[1].note.clone()];
            report.fail(
                Some(pair[1].label.clone()),
                format!(
                    "{}: two signed checkpoints of size {} with different roots (a split view)",
                    pair[1].label, pair[0].cp.size
                ),
            );
        }
    }
}

/// A note's checkpoint, once it opens with the key and meets the policy.
pub(super) fn trust(
    text: &str,
    key: &PublicKey,
    policy: Option<&WitnessPolicy>,
) -> Result<Checkpoint, String> {
    let cp = note::open(text, key).map_err(|e: NoteError| e.to_string())?;
    if let Some(p) = policy {
        p.check(text).map_err(|e| format!("witness policy: {e}"))?;
    }
    Ok(cp)
}

/// The newest trusted checkpoint against the one checked last time: never smaller, never
/// another root at the same size (a larger one is proved consistent once the tree is read).
pub(super) fn against_state(
    report: &mut WitnessReport,
    log: &str,
    list: &[Trusted],
    saved: Option<&Checked>,
) {
    let Some(s) = saved else { return };
    let saved_name = if log.ends_with(REVERDICTS_SUFFIX) {
        format!("re-verdict checkpoint size {} (checked last time)", s.size)
    } else {
        format!("checkpoint size {} (checked last time)", s.size)
    };
    match list.last() {
        None => {
            report.evidence = vec![s.note.clone()];
            report.fail(Some(saved_name.clone()), format!("the witness holds no checkpoint of {log}, but {saved_name} was witnessed: checkpoints were removed (a rollback)"));
        }
        Some(n) if n.cp.size < s.size => {
            report.evidence = vec![s.note.clone(), n.note.clone()];
            report.fail(Some(n.label.clone()), format!("the witness's newest {} is smaller than {saved_name}: a rollback (both signed notes below)", n.label));
        }
        Some(n) if n.cp.size == s.size && n.cp.root != s.root => {
            report.evidence = vec![s.note.clone(), n.note.clone()];
            report.fail(
                Some(n.label.clone()),
                format!(
                    "{} has another root than {saved_name}: a fork (both signed notes below)",
                    n.label
                ),
            );
        }
        _ => {}
    }
}
