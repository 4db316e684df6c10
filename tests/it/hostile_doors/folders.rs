//! Hostile folders: a mirror's copy whose checkpoint, signed by the log's key or not, claims 2^36
//! or 2^62 leaves with no tiles behind it, or whose files are symlinks out of it (to a watched
//! sentinel, to `/dev/zero`), FIFOs or a sparse gigabyte, for `verify --mirror`; and an archive
//! whose manifest names an absolute path, `../`, a folder, a symlink out, a FIFO, or whose
//! manifest is itself a symlink out, and whose file holds 300 MiB without a newline, for
//! `verify --archive`. Every refusal is exit 2 with one line, under the memory bound, and the
//! sentinel outside the folder is never opened.

use std::path::Path;

use super::log::{entries, key, write_log};
use super::{path, signed, ORIGIN, REFUSED_MIB};
use crate::support::bounded::{self, Bounded, Limits, Sentinel};
use crate::support::TestDb;

/// A database address nothing listens on: the doors below refuse before any connection.
const NO_DB: &str = "postgres://postgres@127.0.0.1:1/none";

fn fifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

fn symlink(to: impl AsRef<Path>, at: &Path) {
    let _ = std::fs::remove_file(at);
    std::os::unix::fs::symlink(to, at).expect("symlink");
}

/// `verify --mirror DIR`, with the log's key file when given.
async fn verify_mirror(dir: &Path, public: Option<&Path>) -> Bounded {
    let mut args = vec![
        "verify",
        "--database-url",
        NO_DB,
        "--skip-completeness",
        "--mirror",
        path(dir),
    ];
    if let Some(p) = public {
        args.extend(["--public-key", path(p)]);
    }
    bounded::run(&args, Limits::default()).await
}

#[tokio::test]
async fn verify_mirror_reads_what_is_there_not_what_is_claimed() {
    let t = tempfile::tempdir().expect("tempdir");
    let (k, public) = key(t.path(), ORIGIN, 1);
    for size in [1u64 << 36, 1 << 62] {
        let m = t.path().join(format!("claims-{size}"));
        std::fs::create_dir_all(&m).expect("mkdir");
        std::fs::write(m.join("checkpoint"), signed(&k, size)).expect("write");
        for key in [Some(public.as_path()), None] {
            let out = verify_mirror(&m, key).await;
            out.refused("tile/entries/000 is missing", REFUSED_MIB, 10);
        }
    }
    // Another key's checkpoint, with the log's key given: not believed at all.
    let (other, _) = key(t.path(), ORIGIN, 2);
    let m = t.path().join("other");
    write_log(&m, &other, &entries("a", 300));
    let out = verify_mirror(&m, Some(&public)).await;
    out.refused("no signature by key", REFUSED_MIB, 10);
}

#[tokio::test]
async fn verify_mirror_reads_only_regular_files_inside_the_copy() {
    let t = tempfile::tempdir().expect("tempdir");
    let (k, public) = key(t.path(), ORIGIN, 1);
    let outside = t.path().join("outside");
    let note = write_log(&outside, &k, &entries("a", 256));
    let bundle = std::fs::read(outside.join("tile/entries/000")).expect("bundle");
    let sentinel = Sentinel::new(&t.path().join("sentinel"), &bundle);
    let kept = Sentinel::new(&t.path().join("checkpoint-outside"), note.as_bytes());
    type Change = Box<dyn Fn(&Path)>;
    let sentinel_at = t.path().join("sentinel");
    let kept_at = t.path().join("checkpoint-outside");
    let cases: Vec<(&str, &str, Change)> = vec![
        (
            "a bundle symlinked out",
            "leads outside",
            Box::new(move |m| symlink(&sentinel_at, &m.join("tile/entries/000"))),
        ),
        (
            "a bundle symlinked to /dev/zero",
            "leads outside",
            Box::new(|m| symlink("/dev/zero", &m.join("tile/entries/000"))),
        ),
        (
            "a bundle that is a FIFO",
            "a FIFO",
            Box::new(|m| {
                std::fs::remove_file(m.join("tile/entries/000")).expect("rm");
                fifo(&m.join("tile/entries/000"));
            }),
        ),
        (
            "a sparse gigabyte for a bundle",
            "bytes a tile may be",
            Box::new(|m| {
                let f = std::fs::File::create(m.join("tile/entries/000")).expect("create");
                f.set_len(1 << 30).expect("sparse");
            }),
        ),
        (
            "the checkpoint symlinked out",
            "leads outside",
            Box::new(move |m| symlink(&kept_at, &m.join("checkpoint"))),
        ),
    ];
    for (i, (what, says, change)) in cases.into_iter().enumerate() {
        let m = t.path().join(format!("copy{i}"));
        write_log(&m, &k, &entries("a", 256));
        change(&m);
        let out = verify_mirror(&m, Some(&public)).await;
        assert!(out.stderr.contains(says), "{what}: {out:?}");
        out.refused(says, REFUSED_MIB, 10);
        assert!(!sentinel.touched(), "{what}: the file outside was opened");
        assert!(!kept.touched(), "{what}: the checkpoint outside was opened");
    }
}

/// An archive manifest naming one partition file, `file`.
fn manifest(file: &str) -> String {
    let zero = "0".repeat(64);
    serde_json::json!({
        "format": "event-audit-archive/1",
        "origin": null,
        "created_at": "2026-01-01T00:00:00Z",
        "checkpoint": null,
        "partitions": [{
            "partition": "events_2025_12",
            "published_from": "2025-12-01T00:00:00Z",
            "published_to": "2026-01-01T00:00:00Z",
            "rows": 1,
            "file": file,
            "sha256": zero,
            "row_hashes_sha256": zero,
            "first_leaf": null,
            "last_leaf": null
        }]
    })
    .to_string()
}

async fn verify_archive(db: &str, dir: &Path) -> Bounded {
    let args = [
        "verify",
        "--database-url",
        db,
        "--skip-completeness",
        "--archive",
        path(dir),
    ];
    bounded::run(&args, Limits::default()).await
}

#[tokio::test]
async fn verify_archive_reads_nothing_outside_its_folder() {
    let t = tempfile::tempdir().expect("tempdir");
    let sentinel_at = t.path().join("outside.jsonl");
    let sentinel = Sentinel::new(&sentinel_at, b"{\"leaf_index\": 0}\n");
    let outside_manifest = t.path().join("outside-manifest.json");
    std::fs::write(&outside_manifest, manifest("events_2025_12.jsonl")).expect("write");
    let named = Sentinel::new(
        &outside_manifest,
        manifest("events_2025_12.jsonl").as_bytes(),
    );
    let absolute = path(&sentinel_at).to_owned();
    type Make = Option<Box<dyn Fn(&Path)>>;
    let cases: Vec<(&str, &str, Make)> = vec![
        (absolute.as_str(), "not a file name inside", None),
        ("../outside.jsonl", "not a file name inside", None),
        ("sub/events.jsonl", "not a file name inside", None),
        (
            "link.jsonl",
            "leads outside",
            Some(Box::new(|d| {
                symlink("../outside.jsonl", &d.join("link.jsonl"))
            })),
        ),
        (
            "zero.jsonl",
            "leads outside",
            Some(Box::new(|d| symlink("/dev/zero", &d.join("zero.jsonl")))),
        ),
        (
            "fifo.jsonl",
            "a FIFO",
            Some(Box::new(|d| fifo(&d.join("fifo.jsonl")))),
        ),
    ];
    for (i, (file, says, make)) in cases.into_iter().enumerate() {
        let dir = t.path().join(format!("archive{i}"));
        std::fs::create_dir_all(dir.join("sub")).expect("mkdir");
        std::fs::write(dir.join("manifest.json"), manifest(file)).expect("manifest");
        if let Some(make) = make {
            make(&dir);
        }
        let out = verify_archive(NO_DB, &dir).await;
        out.refused(says, REFUSED_MIB, 10);
        assert!(!sentinel.touched(), "{file}: the file outside was opened");
    }
    // The manifest itself a symlink out.
    let dir = t.path().join("archive-linked");
    std::fs::create_dir_all(&dir).expect("mkdir");
    symlink(&outside_manifest, &dir.join("manifest.json"));
    let out = verify_archive(NO_DB, &dir).await;
    out.refused("leads outside", REFUSED_MIB, 10);
    assert!(!named.touched(), "the manifest outside was opened");
}

#[tokio::test]
async fn an_archive_line_without_an_end_is_refused_at_its_bound() {
    let db = TestDb::create().await;
    let t = tempfile::tempdir().expect("tempdir");
    let dir = t.path().join("archive");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("manifest.json"), manifest("events_2025_12.jsonl")).expect("write");
    // 300 MiB of zero bytes and no newline, sparse: nothing on disk, everything to read.
    let f = std::fs::File::create(dir.join("events_2025_12.jsonl")).expect("create");
    f.set_len(300 << 20).expect("sparse");
    let out = verify_archive(&db.url, &dir).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    let last = out.stderr.trim_end().lines().last().unwrap_or_default();
    assert!(
        last.starts_with("event-audit: could not verify the archive: ")
            && last.contains("line 1: a line longer than 268435456 bytes"),
        "{out:?}"
    );
    // The line is held up to its bound (256 MiB) and not a byte more.
    out.within(320, 60);
}
