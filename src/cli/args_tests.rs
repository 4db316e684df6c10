//! The option groups' tests: every argument's id is a settings path, and each command's
//! `--help` lists only the database and witness options it reads.
use clap::CommandFactory;

/// Calls `f` with every argument of `cmd` and of its subcommands, and the command it is in.
fn every_argument(cmd: &clap::Command, f: &mut dyn FnMut(&clap::Command, &clap::Arg)) {
    for arg in cmd.get_arguments() {
        f(cmd, arg);
    }
    for sub in cmd.get_subcommands() {
        every_argument(sub, f);
    }
}

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

/// Every argument whose id is a settings path is an option declared in `config` (its path made
/// from the field it sets), so flags, file and defaults cannot drift apart.
#[test]
fn every_settings_id_is_a_declared_option() {
    let mut seen = 0;
    every_argument(&crate::cli::Cli::command(), &mut |cmd, arg| {
        let id = arg.get_id().as_str();
        if id.contains('.') {
            seen += 1;
            assert!(
                crate::config::options::find(id).is_some(),
                "{} --{:?}: `{id}` is not a declared option",
                cmd.get_name(),
                arg.get_long()
            );
        }
    });
    assert!(seen > 100, "{seen}");
    // Each declared option's path is a key of the settings file (its section named right): the
    // default tree holds it, or (an option without default) a file setting it alone loads.
    let defaults = toml::Value::Table(
        toml::Table::try_from(crate::config::Settings::default()).expect("toml"),
    );
    for o in crate::config::options::all() {
        let parts: Vec<&str> = o.path.split('.').collect();
        let held = parts
            .iter()
            .try_fold(&defaults, |node, part| node.as_table()?.get(*part))
            .is_some();
        if held {
            continue;
        }
        let (key, sections) = parts.split_last().expect("a key");
        let text = format!("[{}]\n{key} = \"1\"\n", sections.join("."));
        let err = toml::from_str::<crate::config::Settings>(&text)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(!err.contains("unknown field"), "{}: {err}", o.path);
    }
}

/// Every environment name an option had before names were derived from settings paths is still
/// read, as that option's: the whole list, as it stood.
const OLD_NAMES: &[(&str, &str)] = &[
    ("DATABASE_URL", "database.url"),
    ("EVENT_AUDIT_ACK_WAIT", "stream.ack_wait"),
    ("EVENT_AUDIT_API_KEY_FILE", "rest.api_key_file"),
    ("EVENT_AUDIT_BATCH_CLOSE_AFTER", "reconcile.close_after"),
    ("EVENT_AUDIT_BATCH_SIZE", "ingest.batch_size"),
    ("EVENT_AUDIT_BIND_ONLY", "stream.bind_only"),
    ("EVENT_AUDIT_CHECKPOINT_DIR", "witness.checkpoint_dir"),
    (
        "EVENT_AUDIT_CHECKPOINT_INTERVAL",
        "witness.checkpoint_interval",
    ),
    (
        "EVENT_AUDIT_CHECKPOINT_REPLICAS",
        "witness.checkpoint_replicas",
    ),
    ("EVENT_AUDIT_CHECKPOINT_STREAM", "witness.checkpoint_stream"),
    ("EVENT_AUDIT_CONSUMER", "stream.consumer"),
    ("EVENT_AUDIT_DB_CONNECTIONS", "database.connections"),
    (
        "EVENT_AUDIT_DB_STATEMENT_TIMEOUT",
        "database.statement_timeout",
    ),
    ("EVENT_AUDIT_DB_WRITE_TIMEOUT", "database.write_timeout"),
    ("EVENT_AUDIT_GRAPHQL_URL", "rest.graphql_url"),
    ("EVENT_AUDIT_INSTANCE", "ingest.instance"),
    ("EVENT_AUDIT_LINGER", "ingest.linger"),
    ("EVENT_AUDIT_ORIGIN", "witness.origin"),
    ("EVENT_AUDIT_PUBLIC_KEY", "witness.public_key"),
    ("EVENT_AUDIT_PUBLIC_URL", "http.public_url"),
    (
        "EVENT_AUDIT_REGISTRATION_GRACE",
        "reconcile.registration_grace",
    ),
    ("EVENT_AUDIT_REPORT_TOKEN_FILE", "http.report_token_file"),
    ("EVENT_AUDIT_RESTORE_FROM", "witness.restore_from"),
    ("EVENT_AUDIT_SHUTDOWN_TIMEOUT", "ingest.shutdown_timeout"),
    ("EVENT_AUDIT_SIGNER_STATE", "witness.signer_state"),
    ("EVENT_AUDIT_SIGNING_KEY_FILE", "witness.signing_key_file"),
    ("EVENT_AUDIT_SKIP_COMPLETENESS", "verify.skip_completeness"),
    ("EVENT_AUDIT_STALL_TIMEOUT", "ingest.stall_timeout"),
    ("EVENT_AUDIT_START_SEQ", "stream.start_seq"),
    ("EVENT_AUDIT_STREAM", "stream.name"),
    ("EVENT_AUDIT_SUBJECTS", "stream.subjects"),
    ("EVENT_AUDIT_SUBJECT_PREFIX", "stream.subject_prefix"),
    ("EVENT_AUDIT_TILES_DIR", "witness.tiles_dir"),
    ("EVENT_AUDIT_TILES_URL", "witness.tiles_url"),
    ("EVENT_AUDIT_WITNESS_KEY_FILE", "witness_server.key_file"),
    ("EVENT_AUDIT_WITNESS_LISTEN", "witness_server.listen"),
    (
        "EVENT_AUDIT_WITNESS_MAX_CONNECTION_AGE",
        "witness_server.max_connection_age",
    ),
    ("EVENT_AUDIT_WITNESS_POLICY", "witness.witness_policy"),
    ("EVENT_AUDIT_WRITERS", "ingest.writers"),
    ("NATS_CA", "nats.tls_ca_file"),
    ("NATS_CERT", "nats.tls_cert_file"),
    ("NATS_CREDS", "nats.creds_file"),
    ("NATS_KEY", "nats.tls_key_file"),
    ("NATS_NKEY", "nats.nkey_file"),
    ("NATS_PASSWORD_FILE", "nats.password_file"),
    ("NATS_TOKEN_FILE", "nats.token_file"),
    ("NATS_URL", "nats.url"),
    ("NATS_USER", "nats.user"),
];

#[test]
fn every_old_environment_name_is_still_read() {
    for (old, path) in OLD_NAMES {
        let o = crate::config::options::find(path).unwrap_or_else(|| panic!("no option {path}"));
        assert_eq!(o.was, Some(*old), "{path}");
    }
    let aliased = crate::config::options::all()
        .iter()
        .filter(|o| o.was.is_some())
        .count();
    assert_eq!(aliased, OLD_NAMES.len(), "an old name not in the list");
    // With only the old name set, the flag reads it; with the derived one set too, the derived.
    let env_of = |set: &[&str]| {
        let cmd =
            crate::config::options::env_aliases(crate::cli::Cli::command(), &|n| set.contains(&n));
        let run = cmd.find_subcommand("run").expect("run").clone();
        let arg = run
            .get_arguments()
            .find(|a| a.get_id() == "ingest.batch_size")
            .expect("--batch-size")
            .clone();
        arg.get_env().map(|e| e.to_string_lossy().into_owned())
    };
    assert_eq!(
        env_of(&[]).as_deref(),
        Some("EVENT_AUDIT_INGEST_BATCH_SIZE")
    );
    assert_eq!(
        env_of(&["EVENT_AUDIT_BATCH_SIZE"]).as_deref(),
        Some("EVENT_AUDIT_BATCH_SIZE")
    );
    assert_eq!(
        env_of(&["EVENT_AUDIT_BATCH_SIZE", "EVENT_AUDIT_INGEST_BATCH_SIZE"]).as_deref(),
        Some("EVENT_AUDIT_INGEST_BATCH_SIZE")
    );
}

/// Every option's environment name is derived from its settings path, in every command that
/// shows it (none for one run's acts); the other arguments with a variable are these few.
#[test]
fn every_environment_name_is_derived() {
    let mut seen = 0;
    every_argument(&crate::cli::Cli::command(), &mut |cmd, arg| {
        let env = arg.get_env().map(|e| e.to_string_lossy().into_owned());
        let id = arg.get_id().as_str();
        match crate::config::options::find(id) {
            Some(o) => {
                seen += 1;
                assert_eq!(env, o.env_name(), "{} --{id}", cmd.get_name());
            }
            None => assert!(
                env.is_none()
                    || ["EVENT_AUDIT_CONFIG", "EVENT_AUDIT_LOG_JSON", "NATS_URL"]
                        .contains(&env.as_deref().unwrap_or_default()),
                "{} --{id}: {env:?} is named by hand",
                cmd.get_name()
            ),
        }
    });
    assert!(seen > 100, "{seen}");
}
