//! The option groups commands share, each a list of settings paths: a flag's type, help,
//! default and environment names are the setting's own (`config::options`), and what a command
//! line or the environment gives becomes an override of [`crate::config::Settings`], read from
//! the matches by [`ConfigArg`]; what neither gives keeps the file's value or the default, which
//! `--help` shows.

/// A group of options a command flattens: the flags of the settings at these paths (declared
/// once, in `config`), other groups, and a path with `=> |arg| ...` where this command shows the
/// option under another flag or help. What they give is read by [`crate::args::ConfigArg`].
#[macro_export]
macro_rules! options_group {
    ($(#[$m:meta])* $vis:vis struct $name:ident = [$($items:tt)*];) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, Default)]
        $vis struct $name;

        impl clap::FromArgMatches for $name {
            fn from_arg_matches(_: &clap::ArgMatches) -> Result<Self, clap::Error> {
                Ok($name)
            }
            fn update_from_arg_matches(&mut self, _: &clap::ArgMatches) -> Result<(), clap::Error> {
                Ok(())
            }
        }

        impl clap::Args for $name {
            fn augment_args(cmd: clap::Command) -> clap::Command {
                $crate::options_group!(@add cmd; $($items)*)
            }
            fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
                <Self as clap::Args>::augment_args(cmd)
            }
        }
    };
    (@add $cmd:ident;) => { $cmd };
    (@add $cmd:ident; $path:literal => $tweak:expr $(, $($rest:tt)*)?) => {{
        let tweak: fn(clap::Arg) -> clap::Arg = $tweak;
        let $cmd = $cmd.arg(tweak($crate::config::options::arg($path)));
        $crate::options_group!(@add $cmd; $($($rest)*)?)
    }};
    (@add $cmd:ident; $path:literal $(, $($rest:tt)*)?) => {{
        let $cmd = $cmd.arg($crate::config::options::arg($path));
        $crate::options_group!(@add $cmd; $($($rest)*)?)
    }};
    (@add $cmd:ident; $group:ident $(, $($rest:tt)*)?) => {{
        let $cmd = <$group as clap::Args>::augment_args($cmd);
        $crate::options_group!(@add $cmd; $($($rest)*)?)
    }};
}

use std::path::PathBuf;

use crate::config::layer::{self, LoadError};
use crate::config::Settings;

/// `--config`: the TOML file with any settings (nested tables, see docs/operators.md), and what
/// the flags and the environment of the command override in it.
#[derive(Debug, Clone, Default)]
pub struct ConfigArg {
    pub config: Option<PathBuf>,
    /// The settings' overrides the command line and the environment gave.
    overrides: toml::Table,
}

impl ConfigArg {
    /// Settings from the defaults, this file, then the flags and environment.
    pub fn load(&self) -> Result<Settings, LoadError> {
        layer::load(self.config.as_deref(), self.overrides.clone())
    }

    /// The override of the setting at `path` that the command line or the environment gave.
    pub fn given(&self, path: &str) -> Option<&toml::Value> {
        let mut node = None::<&toml::Value>;
        let mut table = &self.overrides;
        for part in path.split('.') {
            let value = table.get(part)?;
            node = Some(value);
            if let toml::Value::Table(t) = value {
                table = t;
            }
        }
        node
    }
}

impl clap::FromArgMatches for ConfigArg {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let overrides = crate::config::options::overrides(m)
            .map_err(|e| clap::Error::raw(clap::error::ErrorKind::ValueValidation, e))?;
        Ok(ConfigArg {
            config: m.get_one::<PathBuf>("config").cloned(),
            overrides,
        })
    }
    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl clap::Args for ConfigArg {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        cmd.arg(
            clap::Arg::new("config")
                .long("config")
                .value_name("CONFIG")
                .env("EVENT_AUDIT_CONFIG")
                .value_parser(clap::value_parser!(PathBuf))
                .action(clap::ArgAction::Set)
                .help("TOML file with settings (`[database]`, `[ingest]`, ...); environment and flags win"),
        )
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

options_group! {
    /// The audit log's database as every command that opens it reads it: where it is, and how long
    /// to wait for it. The commands that read more of `[database]` flatten a larger group below, so
    /// that `--help` lists only what the command reads.
    pub struct DatabaseArgs = [
        DatabaseUrlArg,
        "database.connect_timeout",
        "database.password_file",
        "database.tls_mode",
        "database.tls_ca_file",
        "database.tls_cert_file",
        "database.tls_key_file",
    ];
}

options_group! {
    /// The database's URL alone (`keygen` reads only its name).
    pub struct DatabaseUrlArg = [
        "database.url",
    ];
}

options_group! {
    /// The database with a pool sized by `--db-connections` (`verify`).
    pub struct PooledDatabaseArgs = [
        DatabaseArgs,
        "database.connections",
    ];
}

options_group! {
    /// The database as a writer opens it: its statements bounded on the server (`reprocess`).
    pub struct StatementDatabaseArgs = [
        PooledDatabaseArgs,
        "database.statement_timeout",
    ];
}

options_group! {
    /// The daemon's database: also each batch write bounded on the client (`run`).
    pub struct WriterDatabaseArgs = [
        StatementDatabaseArgs,
        "database.write_timeout",
    ];
}

options_group! {
    pub struct NatsArgs = [
        "nats.url",
        "nats.connect_timeout",
        "nats.user",
        "nats.password_file",
        "nats.token_file",
        "nats.nkey_file",
        "nats.creds_file",
        "nats.tls_ca_file",
        "nats.tls_cert_file",
        "nats.tls_key_file",
    ];
}

options_group! {
    /// The stream a publisher writes to (created when missing).
    pub struct StreamArgs = [
        "stream.name",
        "stream.subjects",
        "stream.replicas",
    ];
}

options_group! {
    /// The stream and the durable consumer the daemon reads.
    pub struct ConsumerArgs = [
        StreamArgs,
        "stream.consumer",
        "stream.bind_only",
        "stream.subject_prefix",
        "stream.ack_wait",
        "stream.start_seq",
    ];
}

options_group! {
    pub struct IngestArgs = [
        "ingest.batch_size",
        "ingest.linger",
        "ingest.writers",
        "ingest.exit_when_idle",
        "ingest.instance",
        "ingest.stall_timeout",
        "ingest.shutdown_timeout",
    ];
}

options_group! {
    pub struct HttpArgs = [
        "http.addr",
        "http.report_token_file",
        "http.header_timeout",
        "http.idle_timeout",
        "http.max_connections",
        "http.max_header_bytes",
        ListenerTlsArgs,
    ];
}

options_group! {
    /// HTTPS on a listener (the daemon's, the witness's).
    pub struct ListenerTlsArgs = [
        "http.tls_cert_file",
        "http.tls_key_file",
    ];
}

options_group! {
    /// The REST service; its token comes from `--rest-token-file` or `EVENT_AUDIT_REST_TOKEN`,
    /// never argv.
    pub struct RestArgs = [
        "rest.url",
        "rest.token_file",
        "rest.auth",
        "rest.timeout",
        "rest.list_timeout",
        "rest.concurrency",
        "rest.rate",
        "rest.retries",
        "rest.graphql_url",
        "rest.api_key_file",
        "rest.token_mutation",
        "rest.tls_ca_file",
        "rest.tls_cert_file",
        "rest.tls_key_file",
    ];
}

options_group! {
    /// Where the daemon's reports are for a browser, and how long a signed link lives.
    pub struct LinkArgs = [
        "http.public_url",
        "http.report_token_file" => |a| a.help(
            "File holding the report token the links are signed with (else the environment \
             variable EVENT_AUDIT_REPORT_TOKEN)",
        ),
        "http.link_ttl",
    ];
}

options_group! {
    /// The daemon's scheduled reconciliation.
    pub struct ScheduleArgs = [
        "reconcile.suppliers",
        "reconcile.interval",
        "reconcile.window",
        "reconcile.grace",
        "reconcile.whole_supplier",
        "reconcile.close_after",
        "reconcile.registration_grace",
        "reconcile.poll",
    ];
}

options_group! {
    /// The daemon's retention: payloads erased, rows archived, past their periods.
    pub struct RetentionArgs = [
        "retention.payloads_for",
        "retention.rows_for",
        "retention.archive_dir",
        "retention.interval",
    ];
}
