//! Every command's `--help`, held to what it printed when recorded: the same flags, help texts,
//! defaults and environment names (recorded under `help_golden/`, one
//! file per command path, `root_batch_list.txt` for `event-audit batch list --help`). Run with
//! an empty environment, so that no variable's value shows. A deliberate change of the interface
//! is recorded again with `EVENT_AUDIT_WRITE_HELP=1 cargo test --features dev --test it help_golden`.

use crate::support::BIN;

#[test]
fn every_command_s_help_is_unchanged() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/help_golden");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the recorded help")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    assert!(files.len() > 30, "{files:?}");
    let mut differ = Vec::new();
    for f in &files {
        let stem = f.file_stem().and_then(|s| s.to_str()).expect("a name");
        let mut args: Vec<&str> = stem.split('_').skip(1).filter(|a| !a.is_empty()).collect();
        args.push("--help");
        let out = std::process::Command::new(BIN)
            .args(&args)
            .env_clear()
            .output()
            .expect("run --help");
        let mut got = String::from_utf8_lossy(&out.stdout).into_owned();
        got.push_str(&String::from_utf8_lossy(&out.stderr));
        if std::env::var_os("EVENT_AUDIT_WRITE_HELP").is_some() {
            std::fs::write(f, &got).expect("record the help");
            continue;
        }
        let want = std::fs::read_to_string(f).expect("recorded help");
        if got != want {
            differ.push(format!("{args:?}:\n--- recorded\n{want}\n--- now\n{got}"));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
