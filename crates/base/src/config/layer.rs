//! Layering, done once per process: defaults → TOML file (`--config`) → environment → flags.
//! Flags and environment variables arrive together as one tree of overrides (clap reads both;
//! a flag wins over its variable); the file is read once. Also shows the defaults in `--help`.

use std::path::Path;

use super::{ConfigError, Settings};

/// Why settings could not be built.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("reading the config file {path}: {source}; check the path given to --config or EVENT_AUDIT_CONFIG")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("config file {path}: {message}")]
    Parse { path: String, message: String },
    #[error("option {0}")]
    Override(String),
    #[error("invalid settings{}: {source}", in_file(.file))]
    Invalid {
        /// The config file the settings came from, if any (flags and environment override it).
        file: Option<String>,
        #[source]
        source: ConfigError,
    },
}

fn in_file(file: &Option<String>) -> String {
    file.as_ref()
        .map(|p| format!(" (config file {p}, then environment and flags)"))
        .unwrap_or_default()
}

/// The largest settings file read (every setting, commented, is a few kilobytes).
pub const MAX_SETTINGS_FILE: u64 = 1 << 20;

pub use crate::files::read_small;

/// Settings from the defaults, then the file (if any), then `overrides` (a tree with the shape
/// of [`Settings`] holding only what flags and environment gave), validated.
pub fn load(file: Option<&Path>, overrides: toml::Table) -> Result<Settings, LoadError> {
    let base = match file {
        None => Settings::default(),
        Some(path) => {
            let text = read_small(path, MAX_SETTINGS_FILE).map_err(|source| LoadError::Read {
                path: path.display().to_string(),
                source,
            })?;
            toml::from_str(&text).map_err(|e| LoadError::Parse {
                path: path.display().to_string(),
                message: parse_message(&text, &e),
            })?
        }
    };
    let settings = apply(base, overrides)?;
    settings.validate().map_err(|source| LoadError::Invalid {
        file: file.map(|p| p.display().to_string()),
        source,
    })?;
    Ok(settings)
}

/// Where the file is wrong and what TOML or the settings' types say of it, without the text:
/// no line of the file (it may hold a database or NATS URL with its password), and no string
/// value a type error would quote.
fn parse_message(text: &str, e: &toml::de::Error) -> String {
    let mut message = e.message().trim().replace('\n', "; ");
    for kind in ["invalid type: string \"", "invalid value: string \""] {
        if let Some(at) = message.find(kind) {
            let quoted = &message[at + kind.len() - 1..];
            let end = quoted.rfind("\", expected").map_or(quoted.len(), |i| i + 1);
            message.replace_range(
                at + kind.len() - 1..at + kind.len() - 1 + end,
                "(not shown)",
            );
        }
    }
    match e.span() {
        Some(span) => {
            let before = &text.as_bytes()[..span.start.min(text.len())];
            let line = before.iter().filter(|b| **b == b'\n').count() + 1;
            let start = before
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |i| i + 1);
            let column = before.len() - start + 1;
            super::urls::hide_credentials(&format!("line {line}, column {column}: {message}"))
        }
        None => super::urls::hide_credentials(&message),
    }
}

/// `base` with `overrides` merged in (tables merge, other values replace).
pub fn apply(base: Settings, overrides: toml::Table) -> Result<Settings, LoadError> {
    if overrides.is_empty() {
        return Ok(base);
    }
    let mut tree = toml::Table::try_from(&base).map_err(|e| LoadError::Override(e.to_string()))?;
    merge(&mut tree, overrides);
    toml::Value::Table(tree)
        .try_into()
        .map_err(|e: toml::de::Error| LoadError::Override(e.message().to_owned()))
}

fn merge(into: &mut toml::Table, from: toml::Table) {
    for (k, v) in from {
        match (into.get_mut(&k), v) {
            (Some(toml::Value::Table(a)), toml::Value::Table(b)) => merge(a, b),
            (_, v) => {
                into.insert(k, v);
            }
        }
    }
}

/// The default of the setting at a dotted path (`ingest.batch_size`), as `--help` shows it.
pub fn default_of(path: &str) -> Option<String> {
    let tree = toml::Table::try_from(Settings::default()).ok()?;
    let mut node = toml::Value::Table(tree);
    for part in path.split('.') {
        node = node.as_table()?.get(part)?.clone();
    }
    Some(match node {
        toml::Value::String(s) => s,
        toml::Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join(","),
        toml::Value::Table(_) => return None,
        other => other.to_string(),
    })
}

/// Appends `[default: X]` to the help of every argument whose id is a settings path, so that
/// `--help` shows the defaults of [`super::defaults`] without restating them.
pub fn show_defaults(cmd: clap::Command) -> clap::Command {
    let cmd = cmd.mut_args(|arg| {
        let id = arg.get_id().as_str().to_owned();
        if !id.contains('.') || !arg.get_default_values().is_empty() {
            return arg;
        }
        // `<BATCH_SIZE>`, not `<ingest.batch_size>`.
        let dotted = arg
            .get_value_names()
            .is_none_or(|names| names.iter().any(|n| n.as_str().contains('.')));
        let arg = match id.rsplit('.').next() {
            Some(last) if dotted && arg.get_action().takes_values() => {
                arg.value_name(last.to_ascii_uppercase())
            }
            _ => arg,
        };
        match default_of(&id) {
            Some(d) if !d.is_empty() && d != "false" => {
                let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
                arg.help(format!("{help} [default: {d}]"))
            }
            _ => arg,
        }
    });
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    names
        .into_iter()
        .fold(cmd, |cmd, name| cmd.mut_subcommand(name, show_defaults))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Dur;

    #[test]
    fn file_then_overrides() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("ea.toml");
        std::fs::write(
            &path,
            "[stream]\nname = \"FROMFILE\"\nconsumer = \"file-consumer\"\n[ingest]\nbatch_size = 10\nlinger = \"20ms\"\n",
        )
        .expect("write");
        let over: toml::Table = toml::from_str("[stream]\nname = \"FROMFLAG\"\n").expect("toml");
        let s = load(Some(&path), over).expect("load");
        assert_eq!(s.stream.name, "FROMFLAG");
        assert_eq!(s.stream.consumer, "file-consumer");
        assert_eq!(s.ingest.batch_size, 10);
        assert_eq!(s.ingest.linger, Dur::millis(20));
        assert_eq!(s.stream.subjects, vec!["events.>".to_string()]);
    }

    #[test]
    fn unknown_keys_and_bad_values_are_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("ea.toml");
        std::fs::write(&path, "[stream]\nstrem = \"typo\"\n").expect("write");
        let err = load(Some(&path), toml::Table::new())
            .expect_err("typo")
            .to_string();
        assert!(err.contains("strem") && err.contains("ea.toml"), "{err}");
        std::fs::write(&path, "[ingest]\nbatch_size = 0\n").expect("write");
        let err = load(Some(&path), toml::Table::new())
            .expect_err("zero")
            .to_string();
        assert!(err.contains("ingest.batch_size"), "{err}");
        std::fs::write(&path, "[ingest]\nlinger = \"5 parsecs\"\n").expect("write");
        let err = load(Some(&path), toml::Table::new())
            .expect_err("bad duration")
            .to_string();
        assert!(err.contains("parsecs"), "{err}");
    }

    #[test]
    fn errors_name_the_file_and_place_but_never_quote_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("ea.toml");
        let load_err = |text: &str| {
            std::fs::write(&path, text).expect("write");
            let e = load(Some(&path), toml::Table::new()).expect_err("refused");
            e.to_string()
        };
        // An unterminated string: before, the error showed the line with the password.
        let err = load_err("[database]\nurl = \"postgres://audit:hunter2@db/audit\n");
        assert!(
            err.contains("ea.toml") && err.contains("line 2, column"),
            "{err}"
        );
        assert!(!err.contains("hunter2"), "{err}");
        // A string where another type belongs: the type is named, the string is not.
        let err = load_err("[database]\nconnections = \"postgres://audit:hunter2@db/a\"\n");
        assert!(
            err.contains("invalid type: string (not shown), expected"),
            "{err}"
        );
        assert!(!err.contains("hunter2"), "{err}");
        // A value refused by validation names the file it came from.
        let err = load_err("[ingest]\nbatch_size = 0\n");
        assert!(
            err.contains("ea.toml") && err.contains("ingest.batch_size"),
            "{err}"
        );
    }

    #[test]
    fn defaults_by_path() {
        assert_eq!(default_of("ingest.batch_size").as_deref(), Some("2000"));
        assert_eq!(default_of("reconcile.grace").as_deref(), Some("15m"));
        assert_eq!(default_of("stream.subjects").as_deref(), Some("events.>"));
        assert_eq!(default_of("nope.nothing"), None);
    }
}
