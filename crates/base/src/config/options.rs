//! Every option declared once: a settings field written inside `section!` carries its type,
//! its default, its help (the field's doc comment) and, with `#[flag(...)]`, its command-line
//! flag. The environment name is derived from the settings path (`ingest.batch_size` →
//! `EVENT_AUDIT_INGEST_BATCH_SIZE`); the name an option had before is kept as an alias
//! (`was = "EVENT_AUDIT_BATCH_SIZE"`). Commands pick options by path ([`arg`]); what a command
//! line or the environment gave comes back as a tree of overrides ([`overrides`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::OnceLock;

use clap::{Arg, ArgAction, ArgMatches};

use super::{AuthScheme, Dur, SimNaming};

/// The prefix of every derived environment name.
pub const ENV_PREFIX: &str = "EVENT_AUDIT_";

/// One option: a settings field with a command-line flag.
pub struct Opt {
    /// The settings path (`ingest.batch_size`): the TOML key, and the flag's clap id.
    pub path: &'static str,
    /// The field's doc comment, a line per entry: the flag's help.
    pub doc: &'static [&'static str],
    /// The long flag (`batch-size`).
    pub long: &'static str,
    /// The environment name the option had before names were derived, still read.
    pub was: Option<&'static str>,
    /// Whether the option has an environment name at all (not for one run's acts, such as
    /// acknowledging a break).
    pub env: bool,
    /// What else the flag needs (a short name, a conflict, values hidden in `--help`).
    pub tweak: fn(Arg) -> Arg,
    /// The value parser and action the field's type takes.
    pub typed: fn(Arg) -> Arg,
    /// The value a command line or the environment gave, as TOML.
    pub take: fn(&ArgMatches, &str) -> Result<Option<toml::Value>, String>,
}

impl Opt {
    /// `EVENT_AUDIT_` and the path in capitals, dots as underscores.
    pub fn env_name(&self) -> Option<String> {
        self.env.then(|| derived_env(self.path))
    }

    /// The help: the doc comment's first paragraph, and the whole when it has more (as
    /// clap's derive makes it from a doc comment).
    fn help(&self) -> (String, Option<String>) {
        help_of(self.doc)
    }

    /// The whole help, as one text (docs/options.md).
    #[cfg(feature = "dev")]
    pub fn help_text(&self) -> String {
        let (short, long) = self.help();
        long.unwrap_or(short)
    }

    /// The flag as a command shows it.
    pub fn arg(&self) -> Arg {
        let (help, long_help) = self.help();
        let mut arg = (self.typed)(Arg::new(self.path).long(self.long).help(help));
        if let Some(long) = long_help {
            arg = arg.long_help(long);
        }
        if let Some(env) = self.env_name() {
            arg = arg.env(env);
        }
        (self.tweak)(arg)
    }
}

/// `EVENT_AUDIT_` and `path` in capitals, dots as underscores.
pub fn derived_env(path: &str) -> String {
    format!(
        "{ENV_PREFIX}{}",
        path.replace('.', "_").to_ascii_uppercase()
    )
}

/// Help and long help from doc lines, as clap's derive: lines joined within a paragraph, the
/// first paragraph the help without its closing period, every paragraph the long help.
pub fn help_of(doc: &[&str]) -> (String, Option<String>) {
    let mut paragraphs: Vec<String> = vec![String::new()];
    for line in doc {
        let line = line.trim();
        if line.is_empty() {
            if paragraphs.last().is_some_and(|p| !p.is_empty()) {
                paragraphs.push(String::new());
            }
            continue;
        }
        let p = paragraphs.last_mut().expect("one paragraph at least");
        if !p.is_empty() {
            p.push(' ');
        }
        p.push_str(line);
    }
    paragraphs.retain(|p| !p.is_empty());
    let mut short = paragraphs.first().cloned().unwrap_or_default();
    if short.ends_with('.') && !short.ends_with("..") {
        short.pop();
    }
    let long = (paragraphs.len() > 1).then(|| paragraphs.join("\n\n"));
    (short, long)
}

/// Every option of every section.
pub fn all() -> &'static [Opt] {
    static ALL: OnceLock<Vec<Opt>> = OnceLock::new();
    ALL.get_or_init(super::Settings::options)
}

/// The option at a settings path.
pub fn find(path: &str) -> Option<&'static Opt> {
    all().iter().find(|o| o.path == path)
}

/// The flag of the option at `path`, for a command to add.
///
/// # Panics
/// When no option has that path: a command names an option that does not exist, which the
/// command tree's tests catch before any user does.
pub fn arg(path: &str) -> Arg {
    match find(path) {
        Some(o) => o.arg(),
        None => panic!("no option at the settings path {path}"),
    }
}

/// What a command line and the environment gave, as a tree with the shape of the settings:
/// every option the command has, read from its matches.
pub fn overrides(m: &ArgMatches) -> Result<toml::Table, String> {
    let mut tree = toml::Table::new();
    for o in all() {
        if !matches!(m.try_contains_id(o.path), Ok(true)) {
            continue;
        }
        let Some(value) = (o.take)(m, o.path).map_err(|e| format!("{}: {e}", o.path))? else {
            continue;
        };
        let mut node = &mut tree;
        let mut parts = o.path.split('.').peekable();
        while let Some(part) = parts.next() {
            if parts.peek().is_none() {
                node.insert(part.to_owned(), value);
                break;
            }
            let entry = node
                .entry(part.to_owned())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            node = match entry {
                toml::Value::Table(t) => t,
                _ => return Err(format!("{}: {part} is not a table", o.path)),
            };
        }
    }
    Ok(tree)
}

/// The environment names an option is read from when its derived name is unset: clap reads
/// one name per flag, so before parsing, a flag whose derived name is unset and whose old name
/// is set reads the old one. `set` answers whether a variable is set.
pub fn env_aliases(cmd: clap::Command, set: &dyn Fn(&str) -> bool) -> clap::Command {
    let cmd = cmd.mut_args(|arg| {
        let Some(o) = find(arg.get_id().as_str()) else {
            return arg;
        };
        match (o.env_name(), o.was) {
            (Some(derived), Some(was)) if !set(&derived) && set(was) => arg.env(was),
            _ => arg,
        }
    });
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    names.into_iter().fold(cmd, |cmd, name| {
        cmd.mut_subcommand(name, |sub| env_aliases(sub, set))
    })
}

/// How a field's type is parsed from a flag and given back as TOML.
pub trait OptValue {
    fn typed(arg: Arg) -> Arg;
    fn take(m: &ArgMatches, id: &str) -> Result<Option<toml::Value>, String>;
}

fn to_toml<T: serde::Serialize>(v: &T) -> Result<Option<toml::Value>, String> {
    toml::Value::try_from(v)
        .map(Some)
        .map_err(|e| e.to_string())
}

macro_rules! scalar {
    ($($t:ty),*) => {$(
        impl OptValue for $t {
            fn typed(arg: Arg) -> Arg {
                arg.value_parser(clap::value_parser!($t)).action(ArgAction::Set)
            }
            fn take(m: &ArgMatches, id: &str) -> Result<Option<toml::Value>, String> {
                match m.try_get_one::<$t>(id).map_err(|e| e.to_string())? {
                    Some(v) => to_toml(v),
                    None => Ok(None),
                }
            }
        }
        impl OptValue for Option<$t> {
            fn typed(arg: Arg) -> Arg {
                <$t as OptValue>::typed(arg)
            }
            fn take(m: &ArgMatches, id: &str) -> Result<Option<toml::Value>, String> {
                <$t as OptValue>::take(m, id)
            }
        }
    )*};
}

scalar!(String, PathBuf, u32, u64, usize, f64, Dur, SocketAddr, AuthScheme, SimNaming);

impl OptValue for bool {
    fn typed(arg: Arg) -> Arg {
        arg.action(ArgAction::SetTrue)
    }
    fn take(m: &ArgMatches, id: &str) -> Result<Option<toml::Value>, String> {
        let on = m.try_get_one::<bool>(id).map_err(|e| e.to_string())?;
        Ok(on.copied().filter(|b| *b).map(toml::Value::Boolean))
    }
}

/// Lists: repeated flags, or (for strings) comma-separated values; a path may hold a comma.
macro_rules! list {
    ($($t:ty => $delimiter:expr),*) => {$(
        impl OptValue for Vec<$t> {
            fn typed(arg: Arg) -> Arg {
                let arg = arg.value_parser(clap::value_parser!($t)).action(ArgAction::Append);
                match $delimiter {
                    Some(d) => arg.value_delimiter(d),
                    None => arg,
                }
            }
            fn take(m: &ArgMatches, id: &str) -> Result<Option<toml::Value>, String> {
                match m.try_get_many::<$t>(id).map_err(|e| e.to_string())? {
                    Some(values) => to_toml(&values.collect::<Vec<_>>()),
                    None => Ok(None),
                }
            }
        }
        impl OptValue for Option<Vec<$t>> {
            fn typed(arg: Arg) -> Arg {
                <Vec<$t> as OptValue>::typed(arg)
            }
            fn take(m: &ArgMatches, id: &str) -> Result<Option<toml::Value>, String> {
                <Vec<$t> as OptValue>::take(m, id)
            }
        }
    )*};
}

list!(String => Some(','), PathBuf => None::<char>);

/// A settings section declared once: the struct, its `Default` from each field's `= default`,
/// and `options()`, the flags of the fields marked `#[flag("long", ...)]` (after the long
/// name: `was = "OLD_ENV"`, `env = false`, then `;` and builder calls for the flag).
macro_rules! section {
    (
        $(#[$smeta:meta])*
        $svis:vis struct $name:ident in $section:literal {
            $(
                $(#[doc = $doc:literal])*
                $(#[flag($long:literal $(, was = $was:literal)? $(, env = $env:literal)?
                    $(; $($tweak:ident ( $($targ:tt)* )),+ )?)])?
                $fvis:vis $field:ident : $fty:ty = $default:expr
            ),* $(,)?
        }
    ) => {
        $(#[$smeta])*
        $svis struct $name {
            $(
                $(#[doc = $doc])*
                $fvis $field: $fty,
            )*
        }

        impl Default for $name {
            fn default() -> Self {
                $name { $($field: $default,)* }
            }
        }

        impl $name {
            /// The flags of this section's options.
            #[allow(unused_mut, unused_variables)]
            pub fn options() -> Vec<$crate::config::options::Opt> {
                let mut opts = Vec::new();
                $(
                    let doc: &'static [&'static str] = &[$($doc),*];
                    $(
                    opts.push($crate::config::options::Opt {
                        path: concat!($section, ".", stringify!($field)),
                        doc,
                        long: $long,
                        was: None $(.or(Some($was)))?,
                        env: true $(&& $env)?,
                        tweak: |arg: clap::Arg| arg $($(.$tweak($($targ)*))+)?,
                        typed: <$fty as $crate::config::options::OptValue>::typed,
                        take: <$fty as $crate::config::options::OptValue>::take,
                    });
                )?)*
                opts
            }

            /// Every field of this section, with or without a flag: its settings path and
            /// its doc comment (docs/options.md lists the settings-file-only ones with it).
            #[cfg(feature = "dev")]
            pub fn fields() -> Vec<(&'static str, &'static [&'static str])> {
                vec![$((concat!($section, ".", stringify!($field)), &[$($doc),*] as &'static [&'static str])),*]
            }
        }
    };
}
pub(crate) use section;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_as_clap_derives_it() {
        assert_eq!(
            help_of(&[" Connections in the pool."]),
            ("Connections in the pool".to_owned(), None)
        );
        assert_eq!(
            help_of(&[" One,", " two.", "", " Three."]),
            (
                "One, two".to_owned(),
                Some("One, two.\n\nThree.".to_owned())
            )
        );
        assert_eq!(help_of(&[" Wait..."]).0, "Wait...");
    }

    #[test]
    fn names_are_derived_from_paths() {
        assert_eq!(
            derived_env("ingest.batch_size"),
            "EVENT_AUDIT_INGEST_BATCH_SIZE"
        );
        assert_eq!(
            derived_env("simulator.rates.drop_completion"),
            "EVENT_AUDIT_SIMULATOR_RATES_DROP_COMPLETION"
        );
    }

    /// Every option's environment name is its own: no derived name or alias is another
    /// option's, and none is the name of a secret read from the environment itself.
    #[test]
    fn every_environment_name_is_one_option_s() {
        let secrets = [
            "EVENT_AUDIT_REPORT_TOKEN",
            "EVENT_AUDIT_REST_TOKEN",
            "EVENT_AUDIT_API_KEY",
            "NATS_PASSWORD",
            "NATS_TOKEN",
            "EVENT_AUDIT_CONFIG",
        ];
        let mut seen = std::collections::HashMap::new();
        for o in all() {
            for name in o.env_name().into_iter().chain(o.was.map(str::to_owned)) {
                assert!(!secrets.contains(&name.as_str()), "{}: {name}", o.path);
                if let Some(other) = seen.insert(name.clone(), o.path) {
                    panic!("{name} is both {other}'s and {}'s", o.path);
                }
            }
        }
        let paths: std::collections::HashSet<_> = all().iter().map(|o| o.path).collect();
        assert_eq!(paths.len(), all().len(), "a path declared twice");
    }
}
