//! Which witnessed checkpoints are trusted, and what they say against each other and against
//! the auditor's state: a note opens with the key and meets the policy, or is rejected with the
//! reason; two trusted checkpoints of one size with different roots are a split view; the newest
//! is never smaller than, nor another root at the size of, the one checked last time.

use super::{BeforePolicy, Rejected, Trusted, WitnessReport};
use crate::tlog::note::{self, PublicKey, REVERDICTS_SUFFIX};
use crate::tlog::policy::WitnessPolicy;
use crate::verify::auditor::Checked;
use crate::witnessed::signer::publish::Found;

/// Per log, the notes that open with the key but lack the policy's quorum, with their sizes.
pub(super) type Uncosigned = [Vec<(u64, Rejected)>; 2];

/// The checkpoints found, by log: those that open with the key and meet the policy, of the
/// rows' log and of the re-verdict runs' log (`logs`: their origins); the others rejected, but
/// for those that open with the key and lack only the policy's quorum, held aside by log with
/// their size (see [`before_policy`]).
pub(super) fn sort_out(
    found: Vec<Found>,
    key: &PublicKey,
    policy: Option<&WitnessPolicy>,
    logs: [&str; 2],
    report: &mut WitnessReport,
) -> ([Vec<Trusted>; 2], Uncosigned) {
    let mut trusted = [Vec::new(), Vec::new()];
    let mut uncosigned = [Vec::new(), Vec::new()];
    for f in found {
        let claimed = note::claimed(&f.note).ok();
        let name = match &claimed {
            Some(c) if c.origin.ends_with(REVERDICTS_SUFFIX) => {
                format!("re-verdict checkpoint size {} ({})", c.size, f.label)
            }
            Some(c) => format!("checkpoint size {} ({})", c.size, f.label),
            None => format!("checkpoint ({})", f.label),
        };
        let rejected = |why| Rejected {
            checkpoint: name.clone(),
            why,
        };
        let cp = match note::open(&f.note, key) {
            Ok(cp) => cp,
            Err(e) => {
                report.rejected.push(rejected(e.to_string()));
                continue;
            }
        };
        let Some(i) = logs.iter().position(|l| cp.origin == *l) else {
            let why = format!("another log's origin `{}`", cp.origin);
            report.rejected.push(rejected(why));
            continue;
        };
        match policy.map(|p| p.check(&f.note)) {
            Some(Err(e)) => uncosigned[i].push((cp.size, rejected(format!("witness policy: {e}")))),
            _ => trusted[i].push(Trusted {
                cp,
                note: f.note,
                label: name,
            }),
        }
    }
    (trusted, uncosigned)
}

/// The notes of `log` that open with the key but lack the policy's quorum (`aside`, with their
/// sizes), against the log's trusted checkpoints (`list`, sorted by size): those smaller than
/// the first trusted one were signed before the witnesses cosigned anything of the log, as every
/// checkpoint published before the policy was in force is, and are summarised in one entry
/// (never used, never trusted); the others (at or after a cosigned one, where a policy was
/// already in force, or with none trusted at all) are rejected one by one.
pub(super) fn before_policy(
    report: &mut WitnessReport,
    log: &str,
    list: &[Trusted],
    aside: Vec<(u64, Rejected)>,
) {
    let first = list.first().map(|t| t.cp.size);
    let (early, late): (Vec<_>, Vec<_>) = aside
        .into_iter()
        .partition(|(size, _)| first.is_some_and(|f| *size < f));
    report.rejected.extend(late.into_iter().map(|(_, r)| r));
    let sizes = early.iter().map(|(s, _)| *s);
    if let (Some(lo), Some(hi), Some(first)) = (sizes.clone().min(), sizes.max(), first) {
        report.before_policy.push(BeforePolicy {
            origin: log.to_owned(),
            count: early.len(),
            smallest: lo,
            largest: hi,
            first_cosigned: first,
        });
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlog::note::Checkpoint;

    fn at(size: u64) -> Trusted {
        Trusted {
            cp: Checkpoint {
                origin: "o".into(),
                size,
                root: [0; 32],
            },
            note: String::new(),
            label: format!("checkpoint size {size}"),
        }
    }

    fn aside(sizes: &[u64]) -> Vec<(u64, Rejected)> {
        sizes
            .iter()
            .map(|s| {
                let r = Rejected {
                    checkpoint: format!("checkpoint size {s}"),
                    why: "witness policy: 0 valid cosignature(s)".into(),
                };
                (*s, r)
            })
            .collect()
    }

    #[test]
    fn uncosigned_notes_before_the_first_cosigned_one_are_summarised_once() {
        let mut r = WitnessReport::default();
        before_policy(&mut r, "o", &[at(50), at(80)], aside(&[35, 20, 49, 50, 60]));
        assert_eq!(r.before_policy.len(), 1);
        let b = &r.before_policy[0];
        assert_eq!(
            (b.count, b.smallest, b.largest, b.first_cosigned),
            (3, 20, 49, 50)
        );
        // At or after a cosigned checkpoint, the policy was in force: each one is rejected.
        let late: Vec<&str> = r.rejected.iter().map(|x| x.checkpoint.as_str()).collect();
        assert_eq!(late, ["checkpoint size 50", "checkpoint size 60"]);
        // None cosigned at all: nothing tells them apart from a policy never met.
        let mut r = WitnessReport::default();
        before_policy(&mut r, "o", &[], aside(&[20, 35]));
        assert!(r.before_policy.is_empty());
        assert_eq!(r.rejected.len(), 2);
    }
}
