//! The witness checked by a conformance suite no one here wrote: the witness-conformance folder
//! of crates.io's siglog 0.1.0 (pytest, 19 JSON cases and 9 test functions) runs against
//! `event-audit witness serve` through tests/conformance/siglog-witness-adapter.sh;
//! scripts/witness-conformance.sh installs the suite and its Python packages when missing.

use crate::support::observe::repo;

#[test]
fn the_siglog_witness_conformance_suite_passes() {
    let out = std::process::Command::new(repo().join("scripts/witness-conformance.sh"))
        .arg(env!("CARGO_BIN_EXE_event-audit"))
        .output()
        .expect("run scripts/witness-conformance.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("28 passed") && !stdout.contains("failed"),
        "{stdout}"
    );
}
