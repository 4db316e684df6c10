//! Files an operator or an attacker with write access may have changed, under hostile bytes, as
//! bounded, seeded property tests beside the fuzz targets (`fuzz/`, whose committed seeds are
//! the valid files here): the settings file (`--config`), the auditor's state (`verify
//! --state-file`) and the signer's memory (`--signer-state`). Arbitrary TOML-like text and
//! mutations of a valid file (a bit flipped, a byte inserted or deleted, a truncation, a line
//! duplicated, bytes spliced in): each file is read or refused with a message naming it, nothing
//! panics, a refused settings file never shows the password of its URLs, and a state file that
//! exists is never taken as "no memory".

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use crate::support::mutate::{config, mutation_with, Mutation};
use event_audit::test_support::config::layer::load;
use event_audit::test_support::log::signed::Memory;
use event_audit::test_support::verify::auditor::AuditorState;
use event_audit::tlog::note::{PrivateKey, PublicKey};

/// The passwords the valid settings file holds (each once, in a database and a NATS URL).
const SECRETS: [&str; 2] = ["db-S3cret-pw", "nats-S3cret-pw"];

/// A committed seed of a fuzz target: a valid file of that format.
fn seed(target: &str, name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target)
        .join(format!("seed-{name}"));
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The key the seeds' states belong to (the fuzz fixtures' log key).
fn key() -> PublicKey {
    PrivateKey::from_seed("event-audit/fuzz", &[1; 32])
        .expect("key")
        .public()
}

/// Mutations splicing in TOML-like text.
fn mutation() -> impl Strategy<Value = Mutation> {
    mutation_with("[\"\\[\\]={}:,. a-z0-9\n]{1,12}".prop_map(String::into_bytes))
}

/// A file of its own for each case (cases run one after another, the file is replaced).
fn file(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).expect("write");
    p
}

/// The settings in `bytes` load, or are refused naming the file and without showing a
/// password that the text holds once.
fn settings_hold(bytes: &[u8]) -> Result<bool, TestCaseError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = file(&dir, "event-audit.toml", bytes);
    let Err(e) = load(Some(&path), toml::Table::new()) else {
        return Ok(true);
    };
    let msg = e.to_string();
    prop_assert!(msg.contains(&path.display().to_string()), "{msg}");
    let text = String::from_utf8_lossy(bytes);
    for s in SECRETS {
        if text.matches(s).count() == 1 {
            prop_assert!(!msg.contains(s), "the password {s} shown: {msg}");
        }
    }
    Ok(false)
}

/// TOML-like text: tables of the settings, keys, and values of every kind, some of them URLs
/// with a password.
fn toml_ish() -> impl Strategy<Value = String> {
    let table = prop::sample::select(vec![
        "[database]",
        "[nats]",
        "[ingest]",
        "[http]",
        "[witness]",
        "[witness_server]",
        "[x]",
        "",
    ]);
    let key = prop::sample::select(vec![
        "url",
        "connections",
        "batch_size",
        "linger",
        "addr",
        "max_connection_age",
        "nope",
    ]);
    let value = prop_oneof![
        Just("\"postgres://audit:db-S3cret-pw@db/audit\"".to_owned()),
        Just("\"nats://u:nats-S3cret-pw@nats:4222\"".to_owned()),
        "[0-9]{1,12}",
        "\"[0-9]{1,4}(ms|s|m|h|d| parsecs)\"",
        "\"[a-z:/@.]{0,20}",
        Just("[1, \"two\"]".to_owned()),
        Just("{ a = 1 }".to_owned()),
        Just("true".to_owned()),
    ];
    prop::collection::vec((table, key, value), 0..8).prop_map(|lines| {
        lines
            .into_iter()
            .map(|(t, k, v)| format!("{t}\n{k} = {v}\n"))
            .collect()
    })
}

proptest! {
    #![proptest_config(config(256))]

    /// TOML-like text, any text, and every change of a valid settings file: loaded or refused
    /// naming the file, never a panic, never a password shown.
    #[test]
    fn settings_files_load_or_are_refused_naming_the_file(
        text in toml_ish(),
        any_text in "\\PC{0,200}",
        m in mutation(),
        which in any::<bool>(),
    ) {
        settings_hold(text.as_bytes())?;
        settings_hold(any_text.as_bytes())?;
        let valid = seed("settings", if which { "secrets" } else { "default" });
        prop_assert!(settings_hold(&valid)?, "the valid settings file is refused");
        settings_hold(&m.apply(&valid).0)?;
    }
}

/// The outcome of loading a state file: `Ok(true)` read, `Ok(false)` refused naming the file;
/// "no memory" (`Ok(None)` from an existing file) fails the case.
fn state_holds<T, E: std::fmt::Display>(
    path: &Path,
    loaded: Result<Option<T>, E>,
) -> Result<bool, TestCaseError> {
    match loaded {
        Ok(Some(_)) => Ok(true),
        Ok(None) => Err(TestCaseError::fail(format!(
            "{} exists but was taken as no memory",
            path.display()
        ))),
        Err(e) => {
            let msg = e.to_string();
            prop_assert!(msg.contains(&path.display().to_string()), "{msg}");
            Ok(false)
        }
    }
}

proptest! {
    // Each read verifies an Ed25519 signature, slow in debug builds: fewer cases.
    #![proptest_config(config(192))]

    /// Every change of a valid auditor's state: read or refused naming the file.
    #[test]
    fn the_auditors_state_is_read_or_refused_never_forgotten(
        m in mutation(),
        v1 in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let valid = seed("auditor_state", if v1 { "v1" } else { "v2" });
        let path = file(&dir, "verify-state.json", &valid);
        prop_assert!(state_holds(&path, AuditorState::load(&path, &key()))?);
        let path = file(&dir, "verify-state.json", &m.apply(&valid).0);
        state_holds(&path, AuditorState::load(&path, &key()))?;
    }

    /// Every change of a valid signer's memory: read or refused naming the file.
    #[test]
    fn the_signers_memory_is_read_or_refused_never_forgotten(m in mutation()) {
        let dir = tempfile::tempdir().expect("tempdir");
        let valid = seed("signer_state", "valid");
        let path = file(&dir, "signer.state", &valid);
        prop_assert!(state_holds(&path, Memory::load(&path, &key()))?);
        let path = file(&dir, "signer.state", &m.apply(&valid).0);
        state_holds(&path, Memory::load(&path, &key()))?;
    }
}

/// An empty file, one that is not UTF-8, and one that is a directory: refused, never absent.
#[test]
fn empty_unreadable_and_odd_state_files_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases: [(&str, &[u8]); 3] = [
        ("empty", b""),
        ("latin1", b"{\"format\": \"\xe9\"}"),
        ("null", b"null"),
    ];
    for (name, bytes) in cases {
        let p = file(&dir, name, bytes);
        let a = AuditorState::load(&p, &key()).expect_err(name).to_string();
        let s = Memory::load(&p, &key()).expect_err(name).to_string();
        assert!(
            a.contains(&p.display().to_string()) && s.contains(&p.display().to_string()),
            "{a}; {s}"
        );
    }
    let sub = dir.path().join("a-directory");
    std::fs::create_dir(&sub).expect("mkdir");
    assert!(AuditorState::load(&sub, &key()).is_err());
    assert!(Memory::load(&sub, &key()).is_err());
}
