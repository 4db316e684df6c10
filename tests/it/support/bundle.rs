//! Evidence bundles in tests: both verifiers (`event-audit verify-proof` and the independent
//! `tools/verify_bundle.py`) run on the same bundle text with the same options, their exit codes
//! and messages compared; bundles built over an in-memory tree from leaf data; witness
//! cosignatures added to a note; byte flips in base64 fields.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::BIN;
use event_audit::evidence::bundle::{fields, leaf};
use event_audit::test_support::row::canon::Canon;
use event_audit::tlog::cosign::WitnessSigner;
use event_audit::tlog::merkle::{leaf_hash, MemTree};
use event_audit::tlog::note::{Checkpoint, Note, PrivateKey};

/// Both verifiers on the bundle text `text` with the log key line `key` and `args`:
/// `[(exit code, stderr and stdout)]`, binary first. `files` are written beside the bundle
/// (name, content) and `{dir}` in `args` names their directory.
pub(crate) fn both_text(
    text: &str,
    key: &str,
    args: &[&str],
    files: &[(&str, &str)],
) -> [(Option<i32>, String); 2] {
    let dir = tempfile::tempdir().expect("tempdir");
    let (b, k) = (dir.path().join("bundle.json"), dir.path().join("log.pub"));
    std::fs::write(&b, text).expect("write bundle");
    std::fs::write(&k, format!("{key}\n")).expect("write key");
    for (name, content) in files {
        std::fs::write(dir.path().join(name), content).expect("write a file");
    }
    let d = dir.path().to_str().expect("utf-8");
    let args: Vec<String> = args.iter().map(|a| a.replace("{dir}", d)).collect();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tools/verify_bundle.py");
    let run = |cmd: &mut std::process::Command| {
        let out = cmd
            .arg(&b)
            .arg("--public-key")
            .arg(&k)
            .args(&args)
            .output()
            .expect("run a verifier");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        (out.status.code(), text)
    };
    // Both at once: the script's start (importing `cryptography`) is most of the time.
    std::thread::scope(|s| {
        let rust = s.spawn(|| run(std::process::Command::new(BIN).arg("verify-proof")));
        let python = run(std::process::Command::new("python3").arg(script));
        [rust.join().expect("verify-proof"), python]
    })
}

/// Both verifiers end with exit `code`, each naming `what` (and saying REJECTED on 1,
/// UNUSABLE on 2).
pub(crate) fn expect_text(
    text: &str,
    key: &str,
    args: &[&str],
    files: &[(&str, &str)],
    code: i32,
    what: &str,
) {
    let word = ["OK", "REJECTED", "UNUSABLE"][code as usize];
    for (i, (got, out)) in both_text(text, key, args, files).into_iter().enumerate() {
        let who = ["verify-proof", "verify_bundle.py"][i];
        assert_eq!(
            got,
            Some(code),
            "{who} (expected exit {code}, {what}): {out}"
        );
        assert!(
            out.contains(word) && out.contains(what),
            "{who} does not say {word} naming {what}: {out}"
        );
    }
}

/// [`expect_text`] on a bundle value.
pub(crate) fn expect(
    bundle: &Value,
    key: &str,
    args: &[&str],
    files: &[(&str, &str)],
    code: i32,
    what: &str,
) {
    expect_text(&bundle.to_string(), key, args, files, code, what);
}

/// Expectations on both verifiers, collected and then run a few at a time ([`in_parallel`]).
#[derive(Default)]
pub(crate) struct Cases(Vec<Case>);

type Case = (
    String,
    String,
    Vec<String>,
    Vec<(String, String)>,
    i32,
    String,
);

impl Cases {
    /// As [`expect`], run by [`Cases::run`].
    pub(crate) fn expect(
        &mut self,
        b: &Value,
        key: &str,
        args: &[&str],
        files: &[(&str, &str)],
        code: i32,
        what: &str,
    ) {
        self.expect_text(&b.to_string(), key, args, files, code, what);
    }

    /// As [`expect_text`], run by [`Cases::run`].
    pub(crate) fn expect_text(
        &mut self,
        text: &str,
        key: &str,
        args: &[&str],
        files: &[(&str, &str)],
        code: i32,
        what: &str,
    ) {
        let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let files = files
            .iter()
            .map(|(n, c)| (n.to_string(), c.to_string()))
            .collect();
        self.0
            .push((text.into(), key.into(), own(args), files, code, what.into()));
    }

    pub(crate) fn run(self) {
        in_parallel(&self.0, |(text, key, args, files, code, what)| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let files: Vec<(&str, &str)> = files
                .iter()
                .map(|(n, c)| (n.as_str(), c.as_str()))
                .collect();
            expect_text(text, key, &args, &files, *code, what);
        });
    }
}

/// Runs `f` on every item, four at a time (each runs both verifiers as subprocesses).
pub(crate) fn in_parallel<T: Sync>(items: &[T], f: impl Fn(&T) + Sync) {
    for chunk in items.chunks(4) {
        std::thread::scope(|s| {
            for item in chunk {
                s.spawn(|| f(item));
            }
        });
    }
}

/// Base64 `field` with byte `at` flipped.
pub(crate) fn flip(field: &str, at: usize) -> String {
    let mut b = B64.decode(field).expect("base64");
    b[at] ^= 0x01;
    B64.encode(b)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A tree over `leaves` (leaf data) signed by `key` as log `origin`: a bundle proving the
/// entries `shown` (leaf index, and the row its entry shows: columns read back from it, its
/// raw message, its stream and sequence).
pub(crate) fn bundle(
    origin: &str,
    key: &PrivateKey,
    leaves: &[Vec<u8>],
    shown: &[(u64, &Canon<'_>)],
) -> Value {
    let tree = MemTree {
        leaves: leaves
            .iter()
            .map(|d| leaf_hash(&<[u8; 32]>::from(Sha256::digest(d))))
            .collect(),
    };
    let size = leaves.len() as u64;
    let cp = Checkpoint {
        origin: origin.into(),
        size,
        root: tree.root(size),
    };
    let entries: Vec<Value> = shown
        .iter()
        .map(|&(i, c)| {
            let data = &leaves[i as usize];
            let proof: Vec<String> = tree
                .inclusion(i, size)
                .iter()
                .map(|h| B64.encode(h))
                .collect();
            json!({
                "stream": c.stream, "stream_seq": c.stream_seq, "leaf_index": i,
                "raw": B64.encode(c.raw),
                "columns": serde_json::to_value(fields::columns(c).expect("showable")).expect("columns"),
                "leaf_data": B64.encode(data), "row_hash": hex(&Sha256::digest(data)),
                "inclusion_proof": proof,
                "opening": c.opening().map(|o| B64.encode(o)),
            })
        })
        .collect();
    json!({"format": event_audit::evidence::bundle::FORMAT, "checkpoint": key.sign(&cp), "entries": entries})
}

/// The row a leaf's data encodes (it must be a valid encoding).
pub(crate) fn row(data: &[u8]) -> Canon<'_> {
    leaf::parse(data).expect("a valid leaf")
}

/// `note` with `w`'s cosignature at `time`.
pub(crate) fn cosign(note: &str, w: &WitnessSigner, time: u64) -> String {
    let text = Note::parse(note).expect("note").text.to_owned();
    format!("{note}{}", w.cosign(&text, time))
}

/// A C2SP tlog-policy file's text: each witness named by its key name, with its vkey and a URL, one group
/// of them with the quorum (`all` when none is given), and the quorum naming that group.
pub(crate) fn policy(witnesses: &[&WitnessSigner], quorum: Option<usize>) -> String {
    let mut t = String::from("# the auditor's witnesses\n");
    let mut names = Vec::new();
    for w in witnesses {
        t += &format!(
            "witness {} {} https://{}.example/\n",
            w.name,
            w.public().encode(),
            w.name
        );
        names.push(w.name.clone());
    }
    let k = quorum.map_or("all".to_owned(), |q| q.to_string());
    t += &format!("group auditors {k} {}\nquorum auditors\n", names.join(" "));
    t
}

/// Cases for a bundle that must show exactly the columns it shows in entry 0 (both verifiers,
/// exit 2 naming the key): each column deleted in turn, the whole `columns` object deleted, and
/// an extra key added. Returns how many columns it deleted.
pub(crate) fn incomplete_columns(cases: &mut Cases, b: &Value, key: &str) -> usize {
    let columns = b["entries"][0]["columns"]
        .as_object()
        .expect("columns")
        .clone();
    for k in columns.keys() {
        let mut x = b.clone();
        x["entries"][0]["columns"]
            .as_object_mut()
            .expect("columns")
            .remove(k);
        let what = format!("entries[0].columns.{k}: missing");
        cases.expect(&x, key, &[], &[], 2, &what);
    }
    let mut x = b.clone();
    x["entries"][0]
        .as_object_mut()
        .expect("entry")
        .remove("columns");
    cases.expect(&x, key, &[], &[], 2, "entries[0].columns: missing");
    let mut x = b.clone();
    x["entries"][0]["columns"]["verified_by"] = "the auditor".into();
    let what = "entries[0].columns.verified_by: not a column";
    cases.expect(&x, key, &[], &[], 2, what);
    columns.len()
}
