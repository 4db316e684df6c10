//! `event-audit mirror` as a real process against logs written into temporary directories with
//! the crate's tile builder and a key, read from a directory, a `file://` URL and over HTTP:
//! the first pull, an incremental pull fetching only the new tiles (the copy byte-identical to
//! the log), an up-to-date pull; partial tiles a log deleted read from the full ones; a witness
//! policy's quorum; a rollback and forks (exit 1, both signed notes printed, the copy
//! byte-identical); a changed byte in a hash tile, a truncated bundle, a bundle with an extra
//! entry and a changed entry (exit 2 naming the tile, nothing stored); a wrong key and an
//! unreachable log (exit 2). `--follow` with its metrics scraped ([`follow`]), `verify-proof
//! --tiles` ([`proof`]). No PostgreSQL or NATS, except the daemon's end-to-end case.

#[path = "mirror/follow.rs"]
mod follow;
#[path = "mirror/log.rs"]
pub(crate) mod log;
#[path = "mirror/proof.rs"]
mod proof;

use std::collections::BTreeSet;
use std::path::Path;

use crate::support::cli::{event_audit, Run};
use event_audit::tlog::tile::{push_entry, tiles_between};
use log::{copy_of, entries, hash_files, key, serve, write_log};

const ORIGIN: &str = "example.com/mirror-test";

/// `event-audit mirror` from `url` with the key file `public` into `dir`, and `more` arguments.
async fn mirror(url: &str, public: &Path, dir: &Path, more: &[&str]) -> Run {
    let (k, d) = (
        public.to_str().expect("utf-8"),
        dir.to_str().expect("utf-8"),
    );
    let mut args = vec!["mirror", "--log-url", url, "--public-key", k, "--dir", d];
    args.extend_from_slice(more);
    event_audit(&args, &[]).await
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8")
}

#[tokio::test]
async fn a_first_pull_then_only_the_new_tiles_then_nothing_over_http() {
    let t = tempfile::tempdir().expect("tempdir");
    let (logdir, mdir) = (t.path().join("log"), t.path().join("mirror"));
    let (k, public) = key(t.path(), ORIGIN, 1);
    let all = entries("a", 700);
    write_log(&logdir, &k, &all[..300]);
    let (url, served) = serve(&logdir).await;

    let out = mirror(&url, &public, &mdir, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains(&format!(
            "{ORIGIN}: mirrored at tree size 300 (300 leaves added)"
        )),
        "{out:?}"
    );
    let copy = copy_of(&mdir, ORIGIN);
    assert_eq!(
        hash_files(&copy),
        hash_files(&logdir),
        "the copy is the log"
    );
    served.take();

    write_log(&logdir, &k, &all);
    let out = mirror(&url, &public, &mdir, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains("at tree size 700 (400 leaves added)"),
        "{out:?}"
    );
    let asked: BTreeSet<String> = served.take().into_iter().collect();
    let mut want: BTreeSet<String> = tiles_between(300, 700).map(|t| t.path()).collect();
    want.insert("checkpoint".into());
    // And how many account index deltas the log publishes (none here).
    want.insert("index/latest".into());
    assert_eq!(
        asked, want,
        "an incremental pull fetches the new tiles only"
    );
    assert_eq!(
        hash_files(&copy),
        hash_files(&logdir),
        "every tile, full and partial, byte-identical"
    );

    let out = mirror(&url, &public, &mdir, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout
            .contains("up to date at tree size 700 (0 leaves added)"),
        "{out:?}"
    );
    assert_eq!(
        served.take(),
        vec!["checkpoint".to_owned(), "index/latest".to_owned()]
    );
}

#[tokio::test]
async fn a_directory_a_file_url_and_partial_tiles_the_log_deleted() {
    let t = tempfile::tempdir().expect("tempdir");
    let (logdir, mdir) = (t.path().join("log"), t.path().join("mirror"));
    let (k, public) = key(t.path(), ORIGIN, 1);
    let all = entries("a", 1024);
    write_log(&logdir, &k, &all[..100]);
    let out = mirror(path(&logdir), &public, &mdir, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains("at tree size 100 (100 leaves added)"),
        "{out:?}"
    );

    // The log grew to 1024 leaves, still signs 700, and deleted its level-0 partial tile and
    // bundle of 700 (the full ones are there): the mirror cuts them from the full ones.
    write_log(&logdir, &k, &all[..700]);
    write_log(&logdir, &k, &all);
    let note = log::sign(&logdir, &k, 700, log::root_of(&all[..700]));
    for p in ["tile/0/002.p/188", "tile/entries/002.p/188"] {
        std::fs::remove_file(logdir.join(p)).expect("delete the partial tile");
    }
    let url = format!("file://{}", path(&logdir));
    let out = mirror(&url, &public, &mdir, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains("at tree size 700 (600 leaves added)"),
        "{out:?}"
    );
    let copy = copy_of(&mdir, ORIGIN);
    let mut b = event_audit::tlog::tile::build::TileBuilder::new();
    for e in &all[..700] {
        b.push(e).expect("push");
    }
    for (id, bytes) in b.partials() {
        let kept = std::fs::read(copy.join(id.path())).expect("the copy has the partial tile");
        assert_eq!(kept, bytes, "{}", id.path());
    }
    assert_eq!(
        std::fs::read_to_string(copy.join("checkpoint")).expect("checkpoint"),
        note
    );
}

#[tokio::test]
async fn a_checkpoint_without_the_policys_quorum_is_refused_and_one_with_it_kept_as_served() {
    let t = tempfile::tempdir().expect("tempdir");
    let (logdir, mdir) = (t.path().join("log"), t.path().join("mirror"));
    let (k, public) = key(t.path(), ORIGIN, 1);
    let w = event_audit::tlog::cosign::WitnessSigner::from_seed("witness.example", &[9; 32])
        .expect("witness key");
    let policy = t.path().join("policy");
    std::fs::write(&policy, crate::support::bundle::policy(&[&w], None)).expect("write policy");
    let note = write_log(&logdir, &k, &entries("a", 10));
    let args = ["--witness-policy", path(&policy)];

    let out = mirror(path(&logdir), &public, &mdir, &args).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("witness policy"), "{out:?}");
    assert!(hash_files(&mdir).is_empty(), "nothing stored");

    let cosigned = crate::support::bundle::cosign(&note, &w, 1_700_000_000);
    std::fs::write(logdir.join("checkpoint"), &cosigned).expect("write");
    let out = mirror(path(&logdir), &public, &mdir, &args).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let kept = std::fs::read_to_string(copy_of(&mdir, ORIGIN).join("checkpoint")).expect("read");
    assert_eq!(
        kept, cosigned,
        "the checkpoint as served, with its cosignature"
    );
}

#[tokio::test]
async fn a_mirror_of_a_mirror_finds_the_copy_under_its_origin_s_folder() {
    let t = tempfile::tempdir().expect("tempdir");
    let (logdir, first, second) = (
        t.path().join("log"),
        t.path().join("first"),
        t.path().join("second"),
    );
    let (k, public) = key(t.path(), ORIGIN, 1);
    let all = entries("a", 700);
    write_log(&logdir, &k, &all[..300]);
    let out = mirror(path(&logdir), &public, &first, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");

    // The first mirror's --dir as the log: its copy of the key's log is found in it.
    let out = mirror(path(&first), &public, &second, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains("at tree size 300 (300 leaves added)"),
        "{out:?}"
    );
    assert_eq!(
        hash_files(&copy_of(&second, ORIGIN)),
        hash_files(&copy_of(&first, ORIGIN))
    );

    // Over HTTP: the first mirror's directory served as it is, `--log-url http://host/log`.
    write_log(&logdir, &k, &all);
    let out = mirror(path(&logdir), &public, &first, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let (url, served) = serve(&first).await;
    let out = mirror(&url, &public, &second, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains("at tree size 700 (400 leaves added)"),
        "{out:?}"
    );
    assert_eq!(
        hash_files(&copy_of(&second, ORIGIN)),
        hash_files(&logdir),
        "the copy of the copy is the log"
    );
    let asked = served.take();
    assert_eq!(
        asked.iter().filter(|p| p.ends_with("checkpoint")).count(),
        2,
        "{asked:?}"
    );

    // Neither a log nor a mirror of this one: both places named.
    let empty = t.path().join("empty");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let out = mirror(path(&empty), &public, &second, &[]).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr
            .contains("nor a mirror's copy of log example.com/mirror-test"),
        "{out:?}"
    );
}

/// A mirror of `ORIGIN` pulled at `size` leaves of salt "a" from a log directory `log`.
async fn mirrored(t: &Path, size: u64) -> (std::path::PathBuf, std::path::PathBuf, String) {
    let (logdir, mdir) = (t.join("log"), t.join("mirror"));
    let (k, public) = key(t, ORIGIN, 1);
    let note = write_log(&logdir, &k, &entries("a", size));
    let out = mirror(path(&logdir), &public, &mdir, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    (public, mdir, note)
}

/// A pull from `logdir` exits 1 with `word`, both notes in full and both sizes; the copy
/// byte-identical.
async fn contradicts(logdir: &Path, public: &Path, mdir: &Path, notes: [&str; 2], word: &str) {
    let before = hash_files(mdir);
    let out = mirror(path(logdir), public, mdir, &[]).await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stdout.contains(word), "{out:?}");
    for note in notes {
        assert!(
            out.stdout.contains(note),
            "the note in full: {note}\n{out:?}"
        );
    }
    assert_eq!(hash_files(mdir), before, "the copy is untouched");
}

#[tokio::test]
async fn a_rollback_is_evidence_with_both_notes_and_the_copy_kept() {
    let t = tempfile::tempdir().expect("tempdir");
    let (public, mdir, ours) = mirrored(t.path(), 700).await;
    let (k, _) = key(t.path(), ORIGIN, 1);
    let smaller = t.path().join("smaller");
    let theirs = write_log(&smaller, &k, &entries("a", 300));
    contradicts(&smaller, &public, &mdir, [&ours, &theirs], "ROLLBACK").await;
    let out = mirror(path(&smaller), &public, &mdir, &[]).await;
    assert!(out.stdout.contains("tree size 700") && out.stdout.contains("tree size 300"));
}

#[tokio::test]
async fn a_fork_at_the_same_size_or_a_larger_one_is_evidence_with_both_notes() {
    let t = tempfile::tempdir().expect("tempdir");
    let (public, mdir, ours) = mirrored(t.path(), 300).await;
    let (k, _) = key(t.path(), ORIGIN, 1);
    let same = t.path().join("same");
    let theirs = write_log(&same, &k, &entries("b", 300));
    contradicts(&same, &public, &mdir, [&ours, &theirs], "FORK").await;

    let mut forked = entries("a", 700);
    forked[5] = log::entry("b", 5);
    let larger = t.path().join("larger");
    let theirs = write_log(&larger, &k, &forked);
    contradicts(&larger, &public, &mdir, [&ours, &theirs], "FORK").await;
}

/// What is changed in a grown log, the tile the refusal names and what it says of it.
type Tampering = (&'static str, &'static str, &'static str, fn(&Path));

/// Each change to what a grown log serves.
fn tamperings() -> Vec<Tampering> {
    fn flip(p: &Path, at: usize) {
        let mut b = std::fs::read(p).expect("read");
        b[at] ^= 0x01;
        std::fs::write(p, b).expect("write");
    }
    vec![
        (
            "a byte of a hash tile",
            "tile/0/001",
            "not the hashes",
            |d| flip(&d.join("tile/0/001"), 7),
        ),
        (
            "a truncated bundle",
            "tile/entries/001",
            "ends inside entry 255",
            |d| {
                let p = d.join("tile/entries/001");
                let b = std::fs::read(&p).expect("read");
                std::fs::write(&p, &b[..b.len() - 1]).expect("write");
            },
        ),
        (
            "an extra entry",
            "tile/entries/001",
            "bytes a bundle",
            |d| {
                let p = d.join("tile/entries/001");
                let mut b = std::fs::read(&p).expect("read");
                push_entry(&mut b, &[7; 32]).expect("push");
                std::fs::write(&p, b).expect("write");
            },
        ),
        (
            "a changed new entry",
            "tile/entries/001",
            "do not hash to",
            |d| {
                // Entry 100 of the bundle (leaf 356): its length (2 bytes), then its bytes.
                flip(&d.join("tile/entries/001"), 100 * 34 + 2)
            },
        ),
        (
            "a changed entry the copy holds",
            "tile/entries/001",
            "its entries",
            |d| {
                // Entry 10 of the bundle (leaf 266).
                flip(&d.join("tile/entries/001"), 10 * 34 + 2)
            },
        ),
    ]
}

#[tokio::test]
async fn tiles_or_bundles_that_are_not_the_signed_tree_are_refused_and_nothing_stored() {
    let t = tempfile::tempdir().expect("tempdir");
    let (public, mdir, _) = mirrored(t.path(), 300).await;
    let (k, _) = key(t.path(), ORIGIN, 1);
    let all = entries("a", 700);
    for (i, (what, tile, says, change)) in tamperings().into_iter().enumerate() {
        for from in [Some(&mdir), None] {
            // From the copy of 300 leaves, and into an empty mirror.
            let dir = match from {
                Some(d) => d.clone(),
                None => t.path().join(format!("empty{i}")),
            };
            let grown = t.path().join(format!("grown{i}{}", from.is_some()));
            write_log(&grown, &k, &all);
            change(&grown);
            let before = hash_files(&dir);
            let out = mirror(path(&grown), &public, &dir, &[]).await;
            assert_eq!(out.code, Some(2), "{what}: {out:?}");
            assert!(
                out.stderr.starts_with("event-audit: ")
                    && out.stderr.contains(&format!("{tile}: "))
                    && out.stderr.contains(says),
                "{what}: the refusal names {tile}: {out:?}"
            );
            assert_eq!(hash_files(&dir), before, "{what}: nothing stored");
        }
    }
    let good = t.path().join("good");
    write_log(&good, &k, &all);
    let out = mirror(path(&good), &public, &mdir, &[]).await;
    assert_eq!(
        out.code,
        Some(0),
        "the copy goes on after the refusals: {out:?}"
    );
}

#[tokio::test]
async fn a_wrong_key_or_an_unreachable_log_cannot_be_mirrored() {
    let t = tempfile::tempdir().expect("tempdir");
    let (logdir, mdir) = (t.path().join("log"), t.path().join("mirror"));
    let (k, _) = key(t.path(), ORIGIN, 1);
    let (_, other) = key(t.path(), ORIGIN, 2);
    write_log(&logdir, &k, &entries("a", 10));
    let out = mirror(path(&logdir), &other, &mdir, &[]).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr.starts_with("event-audit: ") && out.stderr.contains("no signature by key"),
        "{out:?}"
    );
    let garbage = t.path().join("garbage.pub");
    std::fs::write(&garbage, "not a key\n").expect("write");
    let out = mirror(path(&logdir), &garbage, &mdir, &[]).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("garbage.pub"), "{out:?}");

    let (_, public) = key(t.path(), ORIGIN, 1);
    let url = format!("http://{}/log", crate::support::free_addr());
    let out = mirror(&url, &public, &mdir, &["--timeout", "5s"]).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr.starts_with("event-audit: ") && out.stderr.contains("unreachable"),
        "{out:?}"
    );
    assert_eq!(out.stderr.trim().lines().count(), 1, "one line: {out:?}");
    assert!(hash_files(&mdir).is_empty(), "nothing stored");
}
