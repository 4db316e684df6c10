//! The fuzz targets' checks, shared by `cargo fuzz` (each `fuzz/fuzz_targets/<name>.rs` calls
//! the function of its name) and by the stable replay of the committed seeds
//! (`tests/it/fuzz_corpus.rs`, which includes this file as a module). Each check takes any bytes,
//! hands them to one parser that reads hostile input, panics when the parser breaks its contract
//! (a panic of the parser itself, a parse that does not encode back to the same bytes where the
//! format has one spelling, an error that does not name the file or echoes a password), and says
//! whether the input was accepted. The fixtures (keys, a witness policy, the catalogue) are made
//! once, from fixed seeds, so that a corpus input means the same thing in every run.

use std::sync::LazyLock;

use event_audit::decode::catalogue::kind::JsonKind;
use event_audit::decode::catalogue::rt::FieldError;
use event_audit::decode::verdict::{decode_with, Status, Verdict};
use event_audit::test_support::evolution::compat;
use event_audit::tlog::cosign::WitnessSigner;
use event_audit::tlog::note::PrivateKey;
use event_audit::tlog::policy::WitnessPolicy;

#[path = "archive.rs"]
mod archive;
#[path = "evidence.rs"]
mod evidence;
#[path = "files.rs"]
mod files;
#[path = "formats.rs"]
mod formats;

pub use archive::archive_line;
pub use evidence::{bundle, copy_rows, decode, leaf_data};
pub use files::{auditor_state, settings, signer_state};
pub use formats::{cosign, index_delta, note, tile_data, tile_path, vrf_proof, witness_request};

/// A target's check: panics when the parser breaks its contract; whether it accepted the input.
pub type Check = fn(&[u8]) -> bool;

/// Every target: its name (its seeds are `fuzz/seeds/<name>/`) and its check.
pub const TARGETS: &[(&str, Check)] = &[
    ("tile_path", tile_path),
    ("tile_data", tile_data),
    ("note", note),
    ("cosign", cosign),
    ("witness_request", witness_request),
    ("decode", decode),
    ("bundle", bundle),
    ("leaf_data", leaf_data),
    ("copy_rows", copy_rows),
    ("settings", settings),
    ("auditor_state", auditor_state),
    ("signer_state", signer_state),
    ("archive_line", archive_line),
    ("index_delta", index_delta),
    ("vrf_proof", vrf_proof),
];

/// The log of the fixtures: its origin is its key's name.
pub const ORIGIN: &str = "event-audit/fuzz";

/// The log's signing key (a fixed seed: the corpora's signed notes verify with it).
pub fn log_key() -> &'static PrivateKey {
    static KEY: LazyLock<PrivateKey> =
        LazyLock::new(|| PrivateKey::from_seed(ORIGIN, &[1; 32]).expect("a valid key name"));
    &KEY
}

/// Two witnesses' cosigning keys (fixed seeds).
pub fn witnesses() -> &'static [WitnessSigner; 2] {
    static KEYS: LazyLock<[WitnessSigner; 2]> = LazyLock::new(|| {
        [1, 2].map(|n| {
            WitnessSigner::from_seed(&format!("witness.example/w{n}"), &[n + 1; 32])
                .expect("a valid key name")
        })
    });
    &KEYS
}

/// The witness policy of the fixtures: both witnesses, a quorum of one.
pub fn policy_text() -> String {
    let [a, b] = witnesses();
    format!(
        "# the fuzz fixtures' witnesses\nwitness {} https://w1.example/\nwitness {} https://w2.example\nquorum 1\n",
        a.public().encode(),
        b.public().encode()
    )
}

fn policy() -> &'static WitnessPolicy {
    static POLICY: LazyLock<WitnessPolicy> =
        LazyLock::new(|| WitnessPolicy::parse(&policy_text()).expect("the fixtures' policy"));
    &POLICY
}

/// What the generated decoders and the run-time interpreter must agree on for one message.
type Judged = (
    Status,
    Vec<FieldError>,
    Vec<String>,
    Vec<JsonKind>,
    u64,
    Option<String>,
);

fn judged(v: &Verdict<'_>) -> Judged {
    (
        v.status,
        v.errors.clone(),
        v.unknown_fields.clone(),
        v.unknown_kinds.clone(),
        v.declared_seen,
        v.account_number.clone(),
    )
}

/// The verdict of the run-time interpreter over the repository's `catalogue/` (loaded once).
fn judged_dynamic(bytes: &[u8]) -> Judged {
    type Judge = Box<dyn Fn(&[u8]) -> Judged + Send + Sync>;
    static JUDGE: LazyLock<Judge> = LazyLock::new(|| {
        let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = [here.join("catalogue"), here.join("../catalogue")]
            .into_iter()
            .find(|d| d.is_dir())
            .expect("the repository's catalogue/");
        let cat = compat::dynamic(&compat::load(&dir).expect("the catalogue loads"));
        Box::new(move |b| judged(&decode_with(b, None, &cat)))
    });
    JUDGE(bytes)
}
