//! C2SP tlog-proofs (`c2sp.org/tlog-proof@v1`) of real rows (real PostgreSQL and NATS): the
//! daemon's `prove --format tlog-proof` file against a cosigned checkpoint, checked by both
//! verifiers (`verify-proof --entry` and tools/verify_bundle.py) with the same verdicts: proven;
//! rejected naming the step that failed (2: another origin, a checkpoint the key did not sign;
//! 3: a policy whose quorum did not cosign; 4: a proof hash flipped, another entry); unusable
//! (garbage, no `--entry`, a malformed line); `--account` writing one file per row; Go's
//! `tlog.CheckRecord` (tests/go/tlogcheck -proof) accepting the file for its entry only. And
//! tlog-scales (PyPI, another author's code) reading the daemon's tiles: the proof it writes is
//! byte for byte the daemon's and is accepted, and the entry it reads there is the row hash.

use std::path::{Path, PathBuf};

use crate::support::app::run_until_idle;
use crate::support::bundle::{cosign, expect_text, policy, Cases};
use crate::support::cli::{event_audit, Run};
use crate::support::observe::repo;
use crate::support::witness::{signing, write_keys, Witness};
use crate::support::{TestDb, TestStream};
use event_audit::tlog::cosign::WitnessSigner;

/// A log of 30 rows signed at its end, its tiles written, the checkpoint (in the checkpoint
/// directory and the tiles) cosigned by witness-a.example.
struct Log {
    db: TestDb,
    ts: TestStream,
    _witness: Witness,
    tmp: tempfile::TempDir,
    public: PathBuf,
    key: String,
    origin: String,
}

impl Log {
    async fn new(tag: &str) -> Log {
        let db = TestDb::create().await;
        let ts = TestStream::create(tag).await;
        let cps = format!("{}_CP", ts.name);
        let witness = Witness(cps.clone());
        let tmp = tempfile::tempdir().expect("tmp");
        let origin = format!("event-audit/{}", db.name);
        let (private, public, key) = write_keys(tmp.path(), &origin, 7);
        ts.publish_load(30, 41).await;
        let mut s = signing(&db, &ts, &private, &cps, &tmp.path().join("checkpoints"));
        s.witness.tiles_dir = Some(tmp.path().join("tiles"));
        run_until_idle(s).await;
        let a = WitnessSigner::from_seed("witness-a.example", &[3; 32]).expect("witness");
        let mut notes: Vec<PathBuf> = std::fs::read_dir(tmp.path().join("checkpoints"))
            .expect("the checkpoint directory")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "note"))
            .collect();
        notes.push(tmp.path().join("tiles/checkpoint"));
        for n in notes {
            let note = std::fs::read_to_string(&n).expect("a checkpoint");
            std::fs::write(&n, cosign(&note, &a, 1_700_000_000)).expect("cosign");
        }
        std::fs::write(tmp.path().join("witnesses"), policy(&[&a], None)).expect("policy");
        let b = WitnessSigner::from_seed("witness-b.example", &[4; 32]).expect("witness");
        std::fs::write(tmp.path().join("others"), policy(&[&b], None)).expect("policy");
        Log {
            db,
            ts,
            _witness: witness,
            public,
            key: key.public().encode(),
            origin,
            tmp,
        }
    }

    fn path(&self, name: &str) -> String {
        self.tmp.path().join(name).display().to_string()
    }

    /// `prove --format tlog-proof` with `args`.
    /// `prove` of the row at `seq` of the test's stream into `file`, which must succeed.
    async fn prove_row(&self, seq: u64, file: &std::path::Path) -> Run {
        let (seq, file) = (seq.to_string(), file.display().to_string());
        let out = self
            .prove(&["--stream", &self.ts.name, "--seq", &seq, "-o", &file])
            .await;
        assert_eq!(out.code, Some(0), "{out:?}");
        out
    }

    async fn prove(&self, args: &[&str]) -> Run {
        let (p, d, w) = (
            self.public.display().to_string(),
            self.path("checkpoints"),
            self.path("witnesses"),
        );
        let mut all = vec![
            "prove",
            "--database-url",
            &self.db.url,
            "--format",
            "tlog-proof",
        ];
        all.extend([
            "--public-key",
            &p,
            "--checkpoint-dir",
            &d,
            "--witness-policy",
            &w,
        ]);
        all.extend_from_slice(args);
        event_audit(&all, &[]).await
    }

    /// The row hash of row `seq`, as hex: the entry its proof proves.
    async fn entry(&self, seq: i64) -> String {
        let h: Vec<u8> = sqlx::query_scalar(
            "SELECT row_hash FROM audit.events WHERE stream = $1 AND stream_seq = $2",
        )
        .bind(&self.ts.name)
        .bind(seq)
        .fetch_one(&self.db.pool)
        .await
        .expect("the row's hash");
        h.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The leaf index a proof's text names.
fn index_of(proof: &str) -> u64 {
    proof
        .lines()
        .find_map(|l| l.strip_prefix("index "))
        .and_then(|i| i.parse().ok())
        .unwrap_or_else(|| panic!("no index line in {proof}"))
}

#[tokio::test]
async fn prove_writes_tlog_proofs_both_verifiers_accept_and_reject_naming_the_step() {
    let log = Log::new("tlog_proof").await;
    let file = log.tmp.path().join("row.tlog-proof");
    let out = log.prove_row(5, &file).await;
    let entry = log.entry(5).await;
    assert!(out.stderr.contains(&format!("entry {entry}")), "{out:?}");
    let text = std::fs::read_to_string(&file).expect("the proof");
    assert!(text.starts_with("c2sp.org/tlog-proof@v1\nindex "), "{text}");
    assert!(
        text.contains("\n\u{2014} witness-a.example "),
        "the cosignature: {text}"
    );
    let index = index_of(&text);
    // Go's own tlog.CheckRecord accepts it, and refuses it for another row's entry.
    let go = crate::tiles_interop::go::check_proof(&file, &log.public, &entry);
    assert_eq!(go.code, Some(0), "{go:?}");
    assert!(go.stdout.contains(&format!("\"index\":{index}")), "{go:?}");
    let other = log.entry(6).await;
    crate::tiles_interop::go::check_proof(&file, &log.public, &other)
        .assert_refused("tlog.CheckRecord");
    let mut cases = Cases::default();
    let pol = ["--witness-policy", "{dir}/w"];
    let w_file = std::fs::read_to_string(log.path("witnesses")).expect("policy");
    let o_file = std::fs::read_to_string(log.path("others")).expect("policy");
    let files = [("w", w_file.as_str()), ("o", o_file.as_str())];
    let e = ["--entry", entry.as_str()];
    let args =
        |more: &[&str]| -> Vec<String> { e.iter().chain(more).map(|s| s.to_string()).collect() };
    let run = |cases: &mut Cases, text: &str, more: &[&str], code: i32, what: &str| {
        let a = args(more);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        cases.expect_text(text, &log.key, &a, &files, code, what);
    };
    let ok = format!("OK: entry {entry} proven at index {index} against {} at tree size 30, cosigned by witness-a.example", log.origin);
    run(&mut cases, &text, &pol, 0, &ok);
    run(
        &mut cases,
        &text,
        &["--origin", log.origin.as_str()],
        0,
        "OK: entry",
    );
    // Step 2: another origin; a checkpoint whose size the key did not sign.
    run(
        &mut cases,
        &text,
        &["--origin", "event-audit/other"],
        1,
        "step 2 (checkpoint origin): the checkpoint is of log",
    );
    let resized = text.replacen("\n30\n", "\n31\n", 1);
    run(&mut cases, &resized, &[], 1, "step 2 (log signature)");
    // Step 3: the policy's witness did not cosign.
    run(
        &mut cases,
        &text,
        &["--witness-policy", "{dir}/o"],
        1,
        "step 3 (cosignatures)",
    );
    // Step 4: a proof hash flipped; another row's entry.
    let line = text.lines().nth(2).expect("a proof hash").to_owned();
    let flipped = text.replacen(&line, &crate::support::bundle::flip(&line, 0), 1);
    let step4 = format!("step 4 (inclusion proof): the entry at index {index} does not lead to the signed root of tree size 30");
    run(&mut cases, &flipped, &pol, 1, &step4);
    cases.expect_text(&text, &log.key, &["--entry", &other], &[], 1, &step4);
    // Unusable: garbage, no --entry, a malformed index line, an entry that is not a row hash.
    run(
        &mut cases,
        "garbage, not a proof\n",
        &[],
        2,
        "not a tlog-proof",
    );
    cases.expect_text(&text, &log.key, &[], &[], 2, "give --entry HEX");
    run(
        &mut cases,
        &text.replacen("index ", "index 0", 1),
        &[],
        2,
        "index",
    );
    cases.expect_text(&text, &log.key, &["--entry", "abcd"], &[], 2, "--entry");
    cases.run();

    // --account: one file per row, each proven for its own row hash.
    let account: String = sqlx::query_scalar(
        "SELECT account_number FROM audit.events WHERE account_number IS NOT NULL \
         GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1",
    )
    .fetch_one(&log.db.pool)
    .await
    .expect("an account");
    let dir = log.tmp.path().join("proofs");
    let out = log
        .prove(&["--account", &account, "-o", &dir.display().to_string()])
        .await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let written: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the proofs")
        .map(|e| e.expect("entry").path())
        .collect();
    let rows: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit.events WHERE account_number = $1")
            .bind(&account)
            .fetch_one(&log.db.pool)
            .await
            .expect("count");
    assert_eq!(written.len() as i64, rows, "{out:?}");
    for p in written {
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a name")
            .to_owned();
        let seq: i64 = name
            .trim_end_matches(".tlog-proof")
            .rsplit('-')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{name}"));
        let text = std::fs::read_to_string(&p).expect("a proof");
        let entry = log.entry(seq).await;
        expect_text(
            &text,
            &log.key,
            &["--entry", &entry],
            &[],
            0,
            &format!("OK: entry {entry}"),
        );
    }
    let none = log.prove(&["--account", &account]).await;
    assert_eq!(none.code, Some(2), "{none:?}");
    assert!(none.stderr.contains("give -o DIR"), "{none:?}");
}

/// `scripts/tlog-scales.sh` with `args`: `None` when it cannot run here (an older Python).
fn tlog_scales(args: &[&str]) -> Option<Vec<u8>> {
    let out = std::process::Command::new(repo().join("scripts/tlog-scales.sh"))
        .args(args)
        .output()
        .expect("run scripts/tlog-scales.sh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(3) {
        eprintln!("skipped: {}", stderr.trim());
        return None;
    }
    assert!(out.status.success(), "tlog-scales {args:?}: {stderr}");
    Some(out.stdout)
}

fn text_of(dir: &Path) -> String {
    dir.to_str().expect("a UTF-8 path").to_owned()
}

#[tokio::test]
async fn tlog_scales_reads_the_daemons_tiles_and_its_proof_is_accepted() {
    let log = Log::new("tlog_scales").await;
    let file = log.tmp.path().join("row.tlog-proof");
    log.prove_row(17, &file).await;
    let ours = std::fs::read_to_string(&file).expect("the proof");
    let index = index_of(&ours).to_string();
    let tiles = text_of(&log.tmp.path().join("tiles"));
    let Some(theirs) = tlog_scales(&["gen-proof", &tiles, &index]) else {
        return;
    };
    let theirs = String::from_utf8(theirs).expect("a UTF-8 proof");
    assert_eq!(
        theirs, ours,
        "tlog-scales writes the daemon's proof byte for byte"
    );
    let entry = log.entry(17).await;
    let leaf = tlog_scales(&["get-leaf", "--check", &tiles, &index]).expect("ran once already");
    let hex: String = leaf.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        hex, entry,
        "the tiles' entry at the row's index is its row hash"
    );
    let w = std::fs::read_to_string(log.path("witnesses")).expect("policy");
    expect_text(
        &theirs,
        &log.key,
        &["--entry", &entry, "--witness-policy", "{dir}/w"],
        &[("w", &w)],
        0,
        &format!("OK: entry {entry} proven at index {index} against {} at tree size 30, cosigned by witness-a.example", log.origin),
    );
}
