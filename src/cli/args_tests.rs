//! The option groups' tests: every argument's id is a settings path, and each command's
//! `--help` lists only the database and witness options it reads.
use clap::CommandFactory;

/// The long options of a subcommand (`["batch", "list"]`).
fn longs(path: &[&str]) -> Vec<String> {
    let mut cmd = crate::cli::Cli::command();
    for name in path {
        cmd = cmd
            .find_subcommand(name)
            .unwrap_or_else(|| panic!("no subcommand {name}"))
            .clone();
    }
    cmd.get_arguments()
        .filter_map(|a| a.get_long().map(str::to_owned))
        .collect()
}

/// `--help` lists only the database options a command reads: the pool size where the
/// command sizes its pool by it, the statement bound where it opens the log as a writer,
/// the write bound in the daemon alone; `keygen` reads only the URL.
#[test]
fn each_command_shows_only_the_database_options_it_reads() {
    let all = [
        "database-url",
        "db-connect-timeout",
        "db-connections",
        "db-statement-timeout",
        "db-write-timeout",
    ];
    for (path, reads) in [
        (&["run"][..], 5),
        (&["reprocess"][..], 4),
        (&["verify"][..], 3),
        (&["reconcile"][..], 2),
        (&["reconcile", "diff"][..], 2),
        (&["batch", "register"][..], 2),
        (&["batch", "close"][..], 2),
        (&["batch", "list"][..], 2),
        (&["drift"][..], 2),
        (&["prove"][..], 2),
        (&["keygen"][..], 1),
    ] {
        let has = longs(path);
        for (i, opt) in all.iter().enumerate() {
            assert_eq!(
                has.iter().any(|l| l == opt),
                i < reads,
                "{path:?} --{opt}: {has:?}"
            );
        }
    }
    // keygen reads the log's name, not where checkpoints are witnessed.
    let keygen = longs(&["keygen"]);
    assert!(keygen.iter().any(|l| l == "origin"), "{keygen:?}");
    assert!(
        !keygen.iter().any(|l| l.starts_with("checkpoint")),
        "{keygen:?}"
    );
    for path in [
        &["decode"][..],
        &["catalogue", "list"][..],
        &["reconcile", "link"][..],
    ] {
        let has = longs(path);
        assert!(
            !has.iter().any(|l| l.starts_with("db")),
            "{path:?}: {has:?}"
        );
    }
}

/// Every argument whose id is a settings path names an existing setting (or an optional
/// one without default), so flags, file and defaults cannot drift apart.
#[test]
fn every_settings_id_is_a_settings_path() {
    let defaults = toml::Table::try_from(crate::config::Settings::default()).expect("toml");
    let optional = [
        "http.report_token_file",
        "rest.url",
        "rest.token_file",
        "reconcile.window",
        "simulator.start",
        "simulator.expected",
        "simulator.token_file",
        "ingest.instance",
        "nats.user",
        "nats.password_file",
        "nats.token_file",
        "nats.nkey_file",
        "nats.creds_file",
        "nats.tls_ca_file",
        "nats.tls_cert_file",
        "nats.tls_key_file",
        "http.public_url",
        "rest.graphql_url",
        "rest.api_key_file",
        "simulator.manifest",
        "simulator.api_key_file",
        "witness.signing_key_file",
        "witness.checkpoint_dir",
        "witness.tiles_dir",
        "witness.tiles_url",
        "witness.tiles_lock_for",
        "verify.mirror",
        "witness.origin",
        "witness.public_key",
        "witness.state_file",
        "witness.acknowledge_break",
        "publish.seed",
        "simulator.seed",
        "demo.seed",
        "witness.signer_state",
        "witness.witness_policy",
        "witness_server.key_file",
        "witness_server.state_dir",
        "witness_server.log_keys",
        "retention.payloads_for",
        "retention.rows_for",
        "retention.archive_dir",
        "retention.archive_lock_for",
    ];
    let mut seen = 0;
    let cmd = crate::cli::Cli::command();
    for sub in cmd.get_subcommands() {
        for arg in sub.get_arguments() {
            let id = arg.get_id().as_str();
            if !id.contains('.') {
                continue;
            }
            seen += 1;
            let mut node = toml::Value::Table(defaults.clone());
            let mut found = true;
            for part in id.split('.') {
                match node.as_table().and_then(|t| t.get(part)) {
                    Some(v) => node = v.clone(),
                    None => found = false,
                }
            }
            assert!(
                found || optional.contains(&id),
                "{} --{:?}: `{id}` is not a setting",
                sub.get_name(),
                arg.get_long()
            );
        }
    }
    assert!(seen > 40, "{seen}");
}
