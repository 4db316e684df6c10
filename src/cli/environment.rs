//! The environment as the command line reads it, checked before anything runs: a variable
//! whose value an option cannot take is named as the variable (not as the flag it sets, which
//! the command line never held), and an `EVENT_AUDIT_*` variable that no option, secret or
//! tool reads is warned about in one line, with the closest name that is read.

use std::collections::BTreeSet;

use crate::config::options::{self, ENV_PREFIX};
use crate::evolution::compat::distance;

/// Variables under the prefix read outside the options: the secrets, the settings file, and
/// the development and test switches (by prefix).
const READ_ELSEWHERE: &[&str] = &[
    crate::config::secrets::REST_TOKEN_ENV,
    crate::config::secrets::REPORT_TOKEN_ENV,
    crate::config::secrets::API_KEY_ENV,
    "EVENT_AUDIT_CONFIG",
    "EVENT_AUDIT_LOG_JSON",
    // The fuzz tools' and scripts' path to the binary, passed down to it.
    "EVENT_AUDIT_BIN",
];
const READ_BY_PREFIX: &[&str] = &[
    "EVENT_AUDIT_DEV_",
    "EVENT_AUDIT_TEST_",
    "EVENT_AUDIT_WRITE_",
];

/// Every `EVENT_AUDIT_*` name something reads: each option's derived and old name, each
/// argument's own variable, and [`READ_ELSEWHERE`].
fn known(cmd: &clap::Command) -> BTreeSet<String> {
    fn walk(cmd: &clap::Command, into: &mut BTreeSet<String>) {
        for a in cmd.get_arguments() {
            if let Some(e) = a.get_env().and_then(|e| e.to_str()) {
                into.insert(e.to_owned());
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, into);
        }
    }
    let mut out: BTreeSet<String> = READ_ELSEWHERE.iter().map(|s| (*s).to_owned()).collect();
    for o in options::all() {
        out.extend(o.env_name());
        out.extend(o.was.map(str::to_owned));
    }
    walk(cmd, &mut out);
    out
}

/// One line per `EVENT_AUDIT_*` variable of `names` that nothing reads, naming the closest known
/// one.
pub(crate) fn unknown<'a>(
    cmd: &clap::Command,
    names: impl Iterator<Item = &'a str>,
) -> Vec<String> {
    let known = known(cmd);
    names
        .filter(|n| n.starts_with(ENV_PREFIX) && !known.contains(*n))
        .filter(|n| !READ_BY_PREFIX.iter().any(|p| n.starts_with(p)))
        .map(|n| {
            let closest = known
                .iter()
                .filter(|k| k.starts_with(ENV_PREFIX))
                .min_by_key(|k| distance(n, k))
                .map_or(String::new(), |k| format!("; did you mean {k}?"));
            format!("event-audit: warning: the environment variable {n} is not one event-audit reads (ignored){closest}")
        })
        .collect()
}

/// When `e` is a value clap refused for a flag the command line does not hold, the variable
/// that gave it, named as such (`EVENT_AUDIT_INGEST_BATCH_SIZE = `abc`: ...`).
pub(crate) fn bad_value(
    e: &clap::Error,
    argv: &[String],
    var: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if !matches!(
        e.kind(),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation
    ) {
        return None;
    }
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let long = arg.split_whitespace().next()?.strip_prefix("--")?;
    let on_line = argv
        .iter()
        .any(|a| a == &format!("--{long}") || a.starts_with(&format!("--{long}=")));
    if on_line {
        return None;
    }
    let (name, o) = options::all().iter().find_map(|o| {
        if o.long != long {
            return None;
        }
        let name = [o.env_name(), o.was.map(str::to_owned)]
            .into_iter()
            .flatten()
            .find(|n| var(n).is_some())?;
        Some((name, o))
    })?;
    let value = crate::config::urls::hide_credentials(&var(&name).unwrap_or_default());
    let text = e.to_string();
    let why = text
        .lines()
        .next()
        .and_then(|l| l.rsplit_once("': "))
        .map_or("not a value it takes", |(_, w)| w)
        .trim();
    Some(format!(
        "event-audit: the environment variable {name} = `{value}` is not a value of `{}` (--{long}): {why}",
        o.path
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn an_unknown_variable_is_named_with_the_closest_known_one() {
        let cmd = crate::cli::Cli::command();
        let said = unknown(
            &cmd,
            [
                "EVENT_AUDIT_INGEST_BATCHSIZE",
                "EVENT_AUDIT_INGEST_BATCH_SIZE",
                "EVENT_AUDIT_REST_TOKEN",
                "EVENT_AUDIT_TEST_S3",
                "PATH",
            ]
            .into_iter(),
        );
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].contains("EVENT_AUDIT_INGEST_BATCHSIZE")
                && said[0].contains("did you mean EVENT_AUDIT_INGEST_BATCH_SIZE?"),
            "{said:?}"
        );
    }

    #[test]
    fn a_bad_value_from_the_environment_is_named_as_the_variable() {
        let cmd = crate::cli::Cli::command();
        let e = cmd
            .clone()
            .try_get_matches_from(["event-audit", "run", "--batch-size", "abc"])
            .expect_err("refused");
        let env = |n: &str| (n == "EVENT_AUDIT_INGEST_BATCH_SIZE").then(|| "abc".to_owned());
        let argv: Vec<String> = Vec::new();
        let said = bad_value(&e, &argv, &env).expect("named");
        assert!(
            said.contains("EVENT_AUDIT_INGEST_BATCH_SIZE = `abc`")
                && said.contains("`ingest.batch_size`")
                && said.contains("invalid digit"),
            "{said}"
        );
        // Given on the command line, clap's own message stands.
        let argv = vec!["--batch-size".to_owned(), "abc".to_owned()];
        assert!(bad_value(&e, &argv, &env).is_none());
    }
}
