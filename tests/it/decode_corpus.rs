//! Golden corpus: runs the `event-audit decode` binary on hand-written JSON Lines
//! (`tests/corpus/decode.jsonl`) and compares every verdict with `tests/corpus/expected.jsonl`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name)
}

fn bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_event-audit"));
    cmd.env_remove("RUST_LOG");
    cmd
}

fn run_files(files: &[PathBuf]) -> Output {
    bin()
        .arg("decode")
        .args(files)
        .output()
        .expect("run event-audit decode")
}

fn run_stdin(file: &Path) -> Output {
    let input = std::fs::read(file).expect("read corpus");
    let mut child = bin()
        .arg("decode")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn event-audit decode");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("wait");
    writer.join().expect("writer thread").expect("write stdin");
    out
}

fn json_lines(bytes: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(bytes).expect("utf-8 output");
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad output line {l}: {e}")))
        .collect()
}

/// `(path, code)` pairs, sorted, from an output line's `errors` or an expected line's `errors`.
fn error_pairs(v: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = v
        .as_array()
        .expect("errors array")
        .iter()
        .map(|e| match e {
            Value::Array(pair) => (
                pair[0].as_str().expect("path").to_owned(),
                pair[1].as_str().expect("code").to_owned(),
            ),
            obj => (
                obj["path"].as_str().expect("path").to_owned(),
                obj["code"].as_str().expect("code").to_owned(),
            ),
        })
        .collect();
    out.sort();
    out
}

fn strings(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_array()
        .expect("array")
        .iter()
        .map(|s| s.as_str().expect("string").to_owned())
        .collect();
    out.sort();
    out
}

/// The summary line `decode` prints on stderr for these statuses.
fn summary(statuses: &[&str]) -> String {
    let count = |s: &str| statuses.iter().filter(|&&x| x == s).count();
    let parts: Vec<String> = [
        "decoded",
        "invalid",
        "unknown_version",
        "unknown_type",
        "malformed",
    ]
    .iter()
    .map(|s| format!("{s} {}", count(s)))
    .collect();
    format!("{} lines: {}", statuses.len(), parts.join(", "))
}

#[test]
fn corpus_matches_expected() {
    let expected = json_lines(&std::fs::read(corpus("expected.jsonl")).expect("expected"));
    let input_lines = std::fs::read_to_string(corpus("decode.jsonl")).expect("corpus");
    assert_eq!(
        input_lines.lines().count(),
        expected.len(),
        "one expectation per line"
    );
    assert!(expected.len() >= 40);
    for (i, want) in expected.iter().enumerate() {
        assert_eq!(want["line"], i + 1, "expected.jsonl is numbered in order");
    }
    // A blank line is not input: no verdict, counted as skipped in the summary.
    let skipped = expected.iter().filter(|w| w["skipped"] == true).count();
    assert!(skipped > 0, "the corpus has a blank line");
    let expected: Vec<Value> = expected
        .into_iter()
        .filter(|w| w["skipped"] != true)
        .collect();

    let out = run_files(&[corpus("decode.jsonl")]);
    let got = json_lines(&out.stdout);
    assert_eq!(got.len(), expected.len());
    let mut failures = Vec::new();
    for (want, got) in expected.iter().zip(&got) {
        let n = &want["line"];
        let note = want["note"].as_str().unwrap_or("");
        let checks = [
            ("line", got["line"] == want["line"]),
            (
                "event",
                want.get("event").is_none_or(|e| got["event"] == *e),
            ),
            ("status", got["status"] == want["status"]),
            ("envelope", got["envelope"] == want["envelope"]),
            (
                "errors",
                error_pairs(&got["errors"]) == error_pairs(&want["errors"]),
            ),
            (
                "unknown_fields",
                strings(&got["unknown_fields"]) == strings(&want["unknown_fields"]),
            ),
            ("no file field", got.get("file").is_none()),
        ];
        for (what, ok) in checks {
            if !ok {
                failures.push(format!("line {n} ({note}): {what}: want {want}, got {got}"));
            }
        }
        // Every error explains itself; a known event name is split into type and version.
        for e in got["errors"].as_array().expect("errors") {
            assert!(!e["message"].as_str().unwrap_or("").is_empty(), "line {n}");
        }
        if let (Some(event), Some(t), Some(v)) = (
            got["event"].as_str(),
            got["type"].as_str(),
            got["version"].as_str(),
        ) {
            assert_eq!(format!("{t}-{v}"), event, "line {n}");
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    assert_eq!(out.status.code(), Some(1), "not every line decoded");
    let statuses: Vec<&str> = expected
        .iter()
        .map(|e| e["status"].as_str().expect("status"))
        .collect();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let want = format!("{}; {skipped} blank line(s) skipped", summary(&statuses));
    assert!(stderr.contains(&want), "stderr {stderr:?} lacks {want:?}");
    for status in [
        "decoded",
        "invalid",
        "unknown_version",
        "unknown_type",
        "malformed",
    ] {
        assert!(statuses.contains(&status), "corpus covers {status}");
    }
}

#[test]
fn all_valid_file_exits_zero() {
    let out = run_files(&[corpus("valid.jsonl")]);
    let got = json_lines(&out.stdout);
    assert!(got.len() >= 5);
    assert!(got.iter().all(|v| v["status"] == "decoded"), "{got:?}");
    assert!(got
        .iter()
        .all(|v| v["errors"].as_array().is_some_and(Vec::is_empty)));
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&summary(&vec!["decoded"; got.len()])),
        "{stderr}"
    );
}

#[test]
fn stdin_gives_the_same_verdicts_as_a_file() {
    for (name, code) in [("valid.jsonl", 0), ("decode.jsonl", 1)] {
        let from_file = run_files(&[corpus(name)]);
        let from_stdin = run_stdin(&corpus(name));
        assert_eq!(from_stdin.status.code(), Some(code), "{name}");
        assert_eq!(
            String::from_utf8_lossy(&from_stdin.stdout),
            String::from_utf8_lossy(&from_file.stdout),
            "{name}"
        );
        assert_eq!(from_stdin.stderr, from_file.stderr, "{name}");
    }
}

#[test]
fn several_files_are_labelled_and_counted_together() {
    let files = [corpus("valid.jsonl"), corpus("decode.jsonl")];
    let out = run_files(&files);
    let got = json_lines(&out.stdout);
    // (file, line number) of every line that is not blank, in order.
    let mut want = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("corpus");
        for (i, l) in text.lines().enumerate() {
            if !l.trim().is_empty() {
                want.push((f.display().to_string(), i + 1));
            }
        }
    }
    let valid = std::fs::read_to_string(&files[0])
        .expect("valid")
        .lines()
        .count();
    let all = want.len() - valid;
    assert_eq!(got.len(), want.len());
    for (v, (file, line)) in got.iter().zip(&want) {
        assert_eq!(v["file"], *file);
        assert_eq!(v["line"], *line);
    }
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{} lines: decoded ", valid + all)),
        "{stderr}"
    );
}

#[test]
fn missing_file_is_an_error_not_a_verdict() {
    let out = run_files(&[corpus("no-such-file.jsonl")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open"));
}

/// `decode` on `input`, its stdout read as lines.
fn run_text(input: &str) -> (Vec<Value>, Output) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("in.jsonl");
    std::fs::write(&path, input).expect("write");
    let out = run_files(&[path]);
    (json_lines(&out.stdout), out)
}

#[test]
fn a_name_the_catalogue_does_not_know_gets_close_names_in_its_message_not_its_status() {
    let (got, out) = run_text(concat!(
        r#"{"event":"acount.created-v1","id":"1","payload":{}}"#,
        "\n",
        r#"{"event":"account.created-v9","id":"2","payload":{}}"#,
        "\n",
        r#"{"event":"tech.kraken.workflow.created.v1-v1","id":"3","payload":{}}"#,
        "\n",
    ));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(got[0]["status"], "unknown_type");
    let m = got[0]["message"].as_str().expect("a message");
    assert!(m.contains("did you mean account.created-v1"), "{m}");
    assert_eq!(got[0]["errors"], serde_json::json!([]));
    assert_eq!(got[1]["status"], "unknown_version");
    let m = got[1]["message"].as_str().expect("a message");
    assert!(m.contains("its versions: v1"), "{m}");
    // Nothing close: no message (the platform emits hundreds of types the catalogue omits).
    assert_eq!(got[2]["status"], "unknown_type");
    assert!(got[2].get("message").is_none(), "{}", got[2]);
}

/// `decode` of `lines` with a reader that takes one line and closes the pipe: the exit code
/// and the summary cover the lines read until then.
fn closed_after_one_line(lines: &[&str]) -> (Option<i32>, String) {
    use std::io::BufRead;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("in.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").expect("write");
    let mut child = bin()
        .arg("decode")
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("one line");
    // The reader is gone (`| head -1`).
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn output_closed_early_exits_as_the_lines_read_until_then_say() {
    let good = std::fs::read_to_string(corpus("valid.jsonl")).expect("valid");
    let good = good.lines().next().expect("a line").to_owned();
    let bad = r#"{"event":"account.created-v1","payload":{}}"#;
    // 10 MB of output: far more than a pipe holds, so decoding stops when the reader goes.
    let mut lines = vec![good.as_str(); 50_000];
    lines.push(bad);
    let (code, stderr) = closed_after_one_line(&lines);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("output closed early"), "{stderr}");
    lines.insert(0, bad);
    let (code, stderr) = closed_after_one_line(&lines);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("output closed early"), "{stderr}");
}
