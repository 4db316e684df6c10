//! `prove --format tlog-proof`: a C2SP tlog-proof (`c2sp.org/tlog-proof@v1`) per row against
//! the checkpoint `prove` chose. One row (`--stream`, `--seq`): to `-o FILE` or stdout. Several
//! (`--account`): `-o DIR`, one `<stream>-<seq>.tlog-proof` each. Each proof is read back and
//! verified as `verify-proof --entry` verifies it before it is written; stderr names each row's
//! entry (its row hash), which the verifier needs.

use std::path::Path;

use anyhow::Context;

use crate::evidence::prove::Query;
use crate::evidence::tlog_proof::{tlog_proofs, RowProof};
use crate::log::tree::TreeStore;
use crate::row::hex;
use crate::tlog::note::{Checkpoint, PublicKey};
use crate::tlog::policy::WitnessPolicy;
use crate::tlog::proof::{entry_leaf, Accept, TlogProof, EXTENSION};

/// The file a row's proof gets in a directory: `<stream>-<seq>.tlog-proof` (a character a file
/// name should not hold written `_`).
fn file_name(p: &RowProof) -> String {
    let stream: String = p
        .stream
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{stream}-{}.{EXTENSION}", p.stream_seq)
}

/// Reads the proof's text back and verifies it (steps 2 to 4; without a key, the checkpoint's
/// claimed origin and signature are taken as given, and step 4 is still checked).
fn self_check(
    p: &RowProof,
    text: &str,
    cp: &Checkpoint,
    key: Option<&PublicKey>,
    policy: Option<&WitnessPolicy>,
) -> anyhow::Result<()> {
    let read = TlogProof::parse(text)?;
    let leaf = entry_leaf(&p.entry);
    match key {
        Some(key) => read
            .verify(
                &leaf,
                &Accept {
                    key,
                    origin: &cp.origin,
                    policy,
                },
            )
            .map(|_| ())?,
        None => read.included(&leaf, cp)?,
    }
    Ok(())
}

/// Writes the proofs of the rows `query` names; returns how many.
pub(crate) async fn write(
    store: &TreeStore,
    query: Query<'_>,
    (cp, note): (&Checkpoint, &str),
    (key, policy): (Option<&PublicKey>, Option<&WitnessPolicy>),
    output: Option<&Path>,
) -> anyhow::Result<usize> {
    let several = matches!(query, Query::Account { .. });
    let proofs = tlog_proofs(store, query, cp, note).await?;
    let dir = match (several, output) {
        (true, Some(d)) => {
            std::fs::create_dir_all(d)
                .with_context(|| format!("creating the directory {}", d.display()))?;
            Some(d)
        }
        (true, None) => {
            anyhow::bail!("--account with --format tlog-proof writes a file per row: give -o DIR")
        }
        (false, _) => None,
    };
    for p in &proofs {
        let text = p.proof.encode();
        if let Err(e) = self_check(p, &text, cp, key, policy) {
            anyhow::bail!(
                "the tlog-proof of stream={} stream_seq={} does not pass its own check, nothing written: {e}",
                p.stream,
                p.stream_seq
            );
        }
    }
    for p in &proofs {
        let text = p.proof.encode();
        let to = dir.map(|d| d.join(file_name(p)));
        super::output::emit(to.as_deref().or(output), &text)?;
        eprintln!(
            "stream={} stream_seq={} leaf {}: entry {} (its row hash: `verify-proof FILE --entry {}`){}",
            p.stream,
            p.stream_seq,
            p.proof.index,
            hex(&p.entry),
            hex(&p.entry),
            to.map(|t| format!(" in {}", t.display())).unwrap_or_default()
        );
    }
    Ok(proofs.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rows_file_name_keeps_only_safe_characters() {
        let p = RowProof {
            stream: "event-audit.erasures/x y".into(),
            stream_seq: 7,
            entry: [0; 32],
            proof: TlogProof {
                extra: None,
                index: 0,
                hashes: vec![],
                checkpoint: String::new(),
            },
        };
        assert_eq!(file_name(&p), "event-audit.erasures_x_y-7.tlog-proof");
    }
}
