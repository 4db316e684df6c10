//! `event-audit prove --index-consistency N [--index-to M]`: the proof that the account index of
//! update N only grew into that of update M (`evidence::index_consistency`), checked as
//! `verify-proof` checks it before it is written, to stdout or `-o FILE`.

use std::path::Path;
use std::process::ExitCode;

use crate::evidence::bundle::consistency::check;
use crate::evidence::bundle::Expect;
use crate::evidence::index_consistency::prove_consistency;
use crate::log::tree::TreeStore;
use crate::tlog::note::{Checkpoint, PublicKey};
use crate::tlog::policy::WitnessPolicy;

pub(super) async fn run(
    store: &TreeStore,
    from: i64,
    (to, output): (Option<i64>, Option<&Path>),
    (cp, note): (&Checkpoint, &str),
    (key, policy): (Option<&PublicKey>, Option<WitnessPolicy>),
) -> anyhow::Result<ExitCode> {
    let started = std::time::Instant::now();
    let proof = prove_consistency(store, (from, to), (cp, note)).await?;
    let body = serde_json::to_string_pretty(&proof)? + "\n";
    let expect = Expect {
        origin: None,
        policy,
    };
    let grown = check(&body, key, &expect).map_err(|e| {
        anyhow::anyhow!("the proof does not pass its own check, nothing written: {e}")
    })?;
    super::output::emit(output, &body)?;
    eprintln!(
        "the account index of update {} only grew into that of update {}: {} labels gained leaves, proven against the checkpoint of size {} in {:.1} ms ({} bytes)",
        grown.from_update,
        grown.to_update,
        grown.changed,
        cp.size,
        started.elapsed().as_secs_f64() * 1e3,
        body.len()
    );
    Ok(ExitCode::SUCCESS)
}
