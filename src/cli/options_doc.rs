//! docs/options.md, the reference of every option, rendered from the settings' declarations
//! and the command tree, and held current by a test (`EVENT_AUDIT_WRITE_OPTIONS=1 cargo test
//! --features dev --lib options_reference` writes it again). Built with the `dev` feature, as the
//! suite builds the crate, so that the development tools' commands and options are listed too.

use std::collections::BTreeMap;
use std::fmt::Write;

use clap::CommandFactory;

use crate::config::layer::default_of;
use crate::config::options;

/// For each settings path, the commands that show it (`batch list`) and their flag when it is
/// not the option's own.
fn shown_by() -> BTreeMap<String, Vec<String>> {
    fn walk(cmd: &clap::Command, path: &str, into: &mut BTreeMap<String, Vec<String>>) {
        for arg in cmd.get_arguments() {
            let Some(o) = options::find(arg.get_id().as_str()) else {
                continue;
            };
            let long = arg.get_long().unwrap_or_default();
            let name = if long == o.long {
                format!("`{path}`")
            } else {
                format!("`{path}` (`--{long}`)")
            };
            into.entry(o.path.to_owned()).or_default().push(name);
        }
        for sub in cmd.get_subcommands() {
            walk(sub, format!("{path} {}", sub.get_name()).trim_start(), into);
        }
    }
    let mut into = BTreeMap::new();
    walk(&crate::cli::Cli::command(), "", &mut into);
    into
}

/// Every leaf of the settings' tree with its default, in the order the file writes them.
fn leaves(prefix: &str, table: &toml::Table, out: &mut Vec<String>) {
    for (k, v) in table {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(t) => leaves(&path, t, out),
            _ => out.push(path),
        }
    }
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The whole reference.
pub(crate) fn render() -> String {
    let shown = shown_by();
    let mut out = String::from(
        "# Options\n\n\
         Every setting, as the settings file names it, with its flag, its environment variable \
         and its default. Generated from the declarations in `src/config/` (each option is \
         written once there: its type, default, help and flag); \
         `EVENT_AUDIT_WRITE_OPTIONS=1 cargo test --features dev --lib options_reference` writes it again, and \
         that test fails while it is stale. How the layers combine, and which variables hold \
         secrets, is in [operators.md](operators.md#configuration).\n\n\
         An option's environment variable is `EVENT_AUDIT_` and its settings path in capitals, \
         dots as underscores. The name it had before names were derived is still read when the \
         derived one is unset (\"also\"). A flag wins over both; both win over the settings \
         file.\n",
    );
    let defaults = toml::Table::try_from(crate::config::Settings::default()).unwrap_or_default();
    let mut paths = Vec::new();
    leaves("", &defaults, &mut paths);
    for o in options::all() {
        if !paths.iter().any(|p| p == o.path) {
            paths.push(o.path.to_owned());
        }
    }
    // Fields without a flag whose default is none (a file to read, a lock period) are in no
    // default's tree: the declarations list them.
    let fields = crate::config::Settings::fields();
    for (path, _) in &fields {
        let table = paths.iter().any(|p| p.starts_with(&format!("{path}.")));
        if !table && !paths.iter().any(|p| p == path) {
            paths.push((*path).to_owned());
        }
    }
    let mut sections: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in paths {
        let section = p.rsplit_once('.').map_or("", |(s, _)| s).to_owned();
        sections.entry(section).or_default().push(p);
    }
    for (section, paths) in &mut sections {
        paths.sort();
        let _ = write!(
            out,
            "\n## `[{section}]`\n\n| key | flag | environment | default | commands | help |\n|---|---|---|---|---|---|\n"
        );
        for p in paths {
            let default = default_of(p)
                .filter(|d| !d.is_empty())
                .map_or_else(|| "none".to_owned(), |d| format!("`{d}`"));
            let key = p.rsplit('.').next().unwrap_or(p);
            match options::find(p) {
                Some(o) => {
                    let env = match (o.env_name(), o.was) {
                        (Some(e), Some(was)) => format!("`{e}` (also `{was}`)"),
                        (Some(e), None) => format!("`{e}`"),
                        (None, _) => "none (one run's act)".to_owned(),
                    };
                    let commands = shown.get(p).map_or_else(String::new, |c| c.join(", "));
                    let _ = writeln!(
                        out,
                        "| `{key}` | `--{}` | {env} | {} | {} | {} |",
                        o.long,
                        cell(&default),
                        commands,
                        cell(&o.help_text())
                    );
                }
                None => {
                    let help = fields
                        .iter()
                        .find(|(f, _)| f == p)
                        .map(|(_, doc)| {
                            let (short, long) = options::help_of(doc);
                            long.unwrap_or(short).replace('\n', " ")
                        })
                        .unwrap_or_default();
                    let _ = writeln!(
                        out,
                        "| `{key}` | settings file only | | {} | | {} |",
                        cell(&default),
                        cell(&help)
                    );
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn options_reference_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/options.md");
        let want = super::render();
        if std::env::var_os("EVENT_AUDIT_WRITE_OPTIONS").is_some() {
            std::fs::write(&path, &want).expect("write docs/options.md");
            return;
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "docs/options.md is stale: EVENT_AUDIT_WRITE_OPTIONS=1 cargo test --features dev --lib options_reference"
        );
    }
}
