//! The environment as the daemon reads it: an option's derived name
//! (`EVENT_AUDIT_<SECTION>_<KEY>`) and its old name both set it; the derived name wins over the
//! old one, a flag over both, and a settings file loses to all three; a bad value from a
//! variable is named as the variable, an unknown `EVENT_AUDIT_*` variable is warned about, a bare
//! duration is said to be seconds, a password in argv is pointed at the derived variable and a
//! password file. Seen through `run`, which validates its settings before it opens anything.

use std::process::Command;

use crate::support::BIN;

/// `event-audit run ARGS` with only `env` set: the settings it refused, as it says it.
fn refused(env: &[(&str, &str)], args: &[&str]) -> String {
    let out = Command::new(BIN)
        .arg("run")
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .expect("run event-audit");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn derived_and_old_names_set_an_option_and_the_derived_name_wins() {
    let said = refused(&[("EVENT_AUDIT_INGEST_BATCH_SIZE", "0")], &[]);
    assert!(said.contains("`ingest.batch_size` = 0"), "{said}");
    let said = refused(&[("EVENT_AUDIT_BATCH_SIZE", "0")], &[]);
    assert!(said.contains("`ingest.batch_size` = 0"), "{said}");
    let said = refused(
        &[
            ("EVENT_AUDIT_INGEST_BATCH_SIZE", "200000"),
            ("EVENT_AUDIT_BATCH_SIZE", "0"),
        ],
        &[],
    );
    assert!(said.contains("`ingest.batch_size` = 200000"), "{said}");
    let said = refused(
        &[("EVENT_AUDIT_INGEST_BATCH_SIZE", "200000")],
        &["--batch-size", "0"],
    );
    assert!(said.contains("`ingest.batch_size` = 0"), "{said}");
    // An old name outside the EVENT_AUDIT_ prefix, beside the derived one, which wins.
    let said = refused(&[("DATABASE_URL", "mysql://h/db")], &[]);
    assert!(said.contains("`database.url` = mysql://h/db"), "{said}");
    let said = refused(
        &[
            ("EVENT_AUDIT_DATABASE_URL", "mysql://h/db"),
            ("DATABASE_URL", "postgres://h/db"),
        ],
        &[],
    );
    assert!(said.contains("`database.url` = mysql://h/db"), "{said}");
    // An option that had no variable before has one now.
    let said = refused(&[("EVENT_AUDIT_DATABASE_CONNECT_TIMEOUT", "0s")], &[]);
    assert!(said.contains("`database.connect_timeout` = 0s"), "{said}");
}

#[test]
fn the_environment_wins_over_the_settings_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("ea.toml");
    std::fs::write(&file, "[ingest]\nbatch_size = 0\n").expect("write");
    let config = file.to_str().expect("utf-8 path");
    let said = refused(&[("EVENT_AUDIT_CONFIG", config)], &[]);
    assert!(said.contains("`ingest.batch_size` = 0"), "{said}");
    let said = refused(
        &[
            ("EVENT_AUDIT_CONFIG", config),
            ("EVENT_AUDIT_INGEST_BATCH_SIZE", "200000"),
        ],
        &[],
    );
    assert!(said.contains("`ingest.batch_size` = 200000"), "{said}");
}

#[test]
fn the_environment_is_named_as_such_and_an_unknown_variable_is_warned_about() {
    // A value the option cannot take, from its variable: named as the variable.
    let said = refused(&[("EVENT_AUDIT_INGEST_BATCH_SIZE", "abc")], &[]);
    assert!(
        said.contains("EVENT_AUDIT_INGEST_BATCH_SIZE = `abc`")
            && said.contains("`ingest.batch_size`")
            && !said.contains("For more information"),
        "{said}"
    );
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    // A misspelt variable: one line naming the closest known one (and the run goes on to its
    // next refusal).
    let said = refused(
        &[
            ("EVENT_AUDIT_INGEST_BATCHSIZE", "10"),
            ("EVENT_AUDIT_INGEST_BATCH_SIZE", "0"),
        ],
        &[],
    );
    assert!(
        said.contains("EVENT_AUDIT_INGEST_BATCHSIZE is not one event-audit reads")
            && said.contains("did you mean EVENT_AUDIT_INGEST_BATCH_SIZE?")
            && said.contains("`ingest.batch_size` = 0"),
        "{said}"
    );
    // A bare number is seconds, and the refusal says so.
    let said = refused(&[], &["--linger", "50"]);
    assert!(said.contains("a bare number is seconds"), "{said}");
    // A password on the command line: the derived variable and a password file instead.
    let said = refused(&[], &["--database-url", "postgres://u:pw@127.0.0.1:1/x"]);
    assert!(
        said.contains("EVENT_AUDIT_DATABASE_URL")
            && said.contains(".pgpass")
            && !said.contains("(DATABASE_URL)"),
        "{said}"
    );
}
