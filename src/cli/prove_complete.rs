//! `event-audit prove --account A --complete`: the person's rows with the account index's proof
//! that there are no others (`evidence::complete`), checked as `verify-proof` checks it before
//! it is written, to stdout or `-o FILE`.

use std::path::Path;
use std::process::ExitCode;

use crate::config::Settings;
use crate::evidence::bundle::{check as check_bundle, Expect};
use crate::evidence::complete::prove_complete;
use crate::log::tree::TreeStore;
use crate::tlog::note::{Checkpoint, PublicKey};
use crate::tlog::policy::WitnessPolicy;

pub(super) async fn run(
    settings: &Settings,
    store: &TreeStore,
    person: (&str, Option<&str>),
    at: (&Checkpoint, &str),
    (key, policy): (Option<&PublicKey>, Option<WitnessPolicy>),
    (archive, output): (Option<&Path>, Option<&Path>),
) -> anyhow::Result<ExitCode> {
    // The log's key makes the labels of identifiers the index does not hold.
    let vrf = match &settings.witness.signing_key_file {
        Some(p) => Some(crate::tlog::index::vrf_key(
            &crate::witnessed::signer::load_key(p)?,
        )),
        None => None,
    };
    let started = std::time::Instant::now();
    let (bundle, covered) = prove_complete(store, person, at, vrf.as_ref(), archive).await?;
    let took = started.elapsed();
    let body = serde_json::to_string_pretty(&bundle)? + "\n";
    let expect = Expect {
        origin: None,
        policy,
    };
    if let Err(e) = check_bundle(&body, key, &expect) {
        anyhow::bail!("the bundle does not pass its own check, nothing written: {e}");
    }
    super::output::emit(output, &body)?;
    let (cp, _) = at;
    eprintln!(
        "{} row(s) about {} identifier(s), complete through leaf {} (account index update {}), proven against the checkpoint of size {} ({}) in {:.1} ms",
        bundle.entries.len(),
        covered.identifiers,
        covered.through,
        covered.update,
        cp.size,
        cp.origin,
        took.as_secs_f64() * 1e3,
    );
    Ok(ExitCode::SUCCESS)
}
