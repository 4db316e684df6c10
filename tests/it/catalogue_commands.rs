//! The catalogue commands as an auditor runs them: `list` (its fingerprint first, or JSON),
//! `show` (close names suggested, a type without its version lists its versions), `shapes`,
//! and `diff` between two directories or two versions of one type, each change classified.

use std::path::Path;
use std::process::Command;

use event_audit::decode::catalogue::{EVENTS, FINGERPRINT, SHAPES};

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_event-audit"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("run event-audit");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn list_names_the_fingerprint() {
    let (code, text, _) = run(&["catalogue", "list"]);
    assert_eq!(code, Some(0));
    assert!(
        text.starts_with(&format!("# catalogue {FINGERPRINT}\n")),
        "{text}"
    );
    let (code, json, _) = run(&["catalogue", "list", "--format", "json"]);
    assert_eq!(code, Some(0));
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["fingerprint"], FINGERPRINT);
    assert_eq!(v["events"].as_array().map(Vec::len), Some(EVENTS.len()));
    assert_eq!(v["events"][0]["name"], EVENTS[0].name);
    // Every version's fields and every shape's, as the fuzz tools read them.
    for (e, spec) in v["events"]
        .as_array()
        .expect("events")
        .iter()
        .zip(EVENTS.iter())
    {
        let fields = e["fields"].as_array().expect("fields");
        assert_eq!(fields.len(), spec.fields.len(), "{}", spec.name);
        for (f, s) in fields.iter().zip(spec.fields) {
            assert_eq!(f["name"], s.name);
            assert_eq!(f["type"], s.ty.to_string());
            assert_eq!(f["required"], s.required);
        }
    }
    assert_eq!(v["shapes"].as_array().map(Vec::len), Some(SHAPES.len()));
    assert_eq!(
        v["shapes"][0]["fields"].as_array().map(Vec::len),
        Some(SHAPES[0].fields.len())
    );
}

#[test]
fn show_suggests_and_lists_versions() {
    let (code, _, err) = run(&["catalogue", "show", "acount.created-v1"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("did you mean account.created-v1"), "{err}");
    let (code, out, _) = run(&["catalogue", "show", "account.created"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("versions:\n  account.created-v1\n"), "{out}");
    let (code, out, _) = run(&["catalogue", "shapes"]);
    assert_eq!(code, Some(0));
    assert_eq!(out.lines().count(), SHAPES.len());
    assert!(out.starts_with(&format!(
        "{}\tfields {}",
        SHAPES[0].name,
        SHAPES[0].fields.len()
    )));
}

#[test]
fn diff_classifies_changes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("catalogue");
    for f in ["shapes.toml", "field_sets.toml", "events.toml"] {
        std::fs::copy(src.join(f), dir.path().join(f)).expect("copy");
    }
    // The old catalogue lacked is_imported, had account_user_emails optional, and no
    // account.occupied-v1.
    let p = dir.path().join("events.toml");
    let text = std::fs::read_to_string(&p).expect("read");
    let text = text
        .replacen("  { name = \"is_imported\", type = \"boolean\" },\n", "", 1)
        .replacen(
            "{ name = \"account_user_emails\", type = \"[string]\", required = true },\n  { name = \"is_imported\"",
            "{ name = \"account_user_emails\", type = \"[string]\" },\n  { name = \"is_imported\"",
            1,
        )
        .replacen(
            "[[event]]\nname = \"account.occupied-v1\"\nsection = \"Account events\"\nsource = \"account.occupied-v1: account_number*s\"\nfields = [\n  { name = \"account_number\", type = \"string\", required = true },\n]\n",
            "",
            1,
        );
    std::fs::write(&p, text).expect("write");
    let old = dir.path().to_str().expect("utf-8");
    let (code, out, err) = run(&["catalogue", "diff", old, "--format", "json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let changes: Vec<(String, String, bool, bool)> = v["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
            (
                s("event"),
                s("change"),
                c["backward"] == true,
                c["forward"] == true,
            )
        })
        .collect();
    assert_eq!(
        changes,
        vec![
            (
                "account.created-v1".into(),
                "field_added".into(),
                true,
                true
            ),
            (
                "account.occupied-v1".into(),
                "event_added".into(),
                true,
                false
            ),
        ]
    );
    assert_eq!(
        (v["backward"].clone(), v["forward"].clone()),
        (true.into(), false.into())
    );
    let (code, table, _) = run(&["catalogue", "diff", old]);
    assert_eq!(code, Some(0));
    assert!(
        table
            .contains("account.created-v1\tfield added: is_imported (boolean, optional)\tyes\tyes"),
        "{table}"
    );

    let (code, out, err) = run(&[
        "catalogue",
        "diff",
        "--between",
        "account.created-v1",
        "account.updated-v1",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("field added: changes (object, required)\tNO\tyes"),
        "{out}"
    );
    assert!(out.contains("backward compatible: NO"), "{out}");
}
