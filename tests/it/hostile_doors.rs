//! The doors that hand evidence to auditors, tried the way a log operator who holds the signing
//! key would try them: the real binary (`mirror`, `mirror --follow`, `verify-proof --tiles`,
//! and in [`folders`] `verify --mirror` and `verify --archive`) against a hostile log server
//! ([`server`]: a validly signed checkpoint of 2^36, 2^62 or 2^64 − 1 leaves, bodies that never
//! end or lie about their length, bodies that trickle, silence, redirects to another origin and
//! in a loop, HTML and odd bundles where tiles should be) or a hostile folder, each run under an
//! address-space ceiling of 1 GiB. Each asserts the exit code and the one line that says why,
//! that nothing was stored in the mirror, the peak resident size (`ru_maxrss` of the child), the
//! time taken, and for folders that no file outside the folder was opened (an inotify-watched
//! sentinel). No PostgreSQL or NATS, except the archive's line bound (a database to verify).

#[path = "hostile_doors/folders.rs"]
mod folders;
#[path = "hostile_doors/server.rs"]
mod server;

use std::path::Path;

use crate::mirror::log;
use std::time::Duration;

use crate::support::bounded::{self, Bounded, Limits};
use event_audit::tlog::note::{Checkpoint, PrivateKey};
use log::{copy_of, entries, hash_files, key, write_log};
use server::{bytes, endless, file, hostile, html, lying, not_found, redirect, silent, trickle};

const ORIGIN: &str = "example.com/hostile-doors";

/// The peak resident size a refused door may reach, MiB (the binary alone is about 25).
const REFUSED_MIB: u64 = 64;

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8")
}

/// A checkpoint of `size` leaves and an arbitrary root, validly signed by `k`.
fn signed(k: &PrivateKey, size: u64) -> String {
    k.sign(&Checkpoint {
        origin: k.name.clone(),
        size,
        root: [7; 32],
    })
}

/// `event-audit mirror` of `url` into `dir` with `more`, under the default limits.
async fn mirror(url: &str, public: &Path, dir: &Path, more: &[&str]) -> Bounded {
    mirror_within(url, public, dir, more, Limits::default()).await
}

async fn mirror_within(
    url: &str,
    public: &Path,
    dir: &Path,
    more: &[&str],
    limits: Limits,
) -> Bounded {
    let mut args = vec![
        "mirror",
        "--log-url",
        url,
        "--public-key",
        path(public),
        "--dir",
        path(dir),
    ];
    args.extend_from_slice(more);
    bounded::run(&args, limits).await
}

#[tokio::test]
async fn a_signed_checkpoint_of_any_size_costs_only_what_is_fetched() {
    let t = tempfile::tempdir().expect("tempdir");
    let (k, public) = key(t.path(), ORIGIN, 1);
    let mdir = t.path().join("mirror");
    for size in [1u64 << 36, 1 << 62, u64::MAX] {
        let note = signed(&k, size);
        let (base, asked) = hostile(move |p| match p {
            "/log/checkpoint" => bytes(note.clone()),
            _ => not_found(),
        })
        .await;
        let out = mirror(&format!("{base}/log"), &public, &mdir, &[]).await;
        out.refused("a pull adds at most 16777216", REFUSED_MIB, 10);
        assert_eq!(asked.all(), ["/log/checkpoint"], "nothing else fetched");
        assert!(hash_files(&mdir).is_empty(), "nothing stored");
    }

    // The bound lifted: the tiles are named as they are fetched, the first missing ends it.
    let note = signed(&k, 1 << 62);
    let (base, asked) = hostile(move |p| match p {
        "/log/checkpoint" => bytes(note.clone()),
        _ => not_found(),
    })
    .await;
    let url = format!("{base}/log");
    let lifted = ["--max-leaves-per-pull", "18446744073709551615"];
    let out = mirror(&url, &public, &mdir, &lifted).await;
    out.refused("tile/entries/000: not found", REFUSED_MIB, 10);
    assert!(
        asked.all().len() <= 9,
        "a window of 8 at most: {:?}",
        asked.all()
    );
    assert!(hash_files(&mdir).is_empty(), "nothing stored");

    // Under --follow: a refusal per interval, logged; never an abort, memory flat.
    let limits = Limits {
        stop_after: Some(Duration::from_millis(1500)),
        deadline: Duration::from_secs(20),
        ..Limits::default()
    };
    let out = mirror_within(&url, &public, &mdir, &["--follow", "200ms"], limits).await;
    assert_eq!(out.code, Some(0), "stopped by SIGTERM: {out:?}");
    let refusals = out.stderr.matches("a pull adds at most").count();
    assert!(refusals >= 3, "a refusal per pull: {out:?}");
    out.within(REFUSED_MIB, 20);
    assert!(hash_files(&mdir).is_empty(), "nothing stored");
}

/// A log of `n` leaves written into `dir`, served with `change` answering first.
async fn served_log(
    dir: &Path,
    k: &PrivateKey,
    n: u64,
    change: impl Fn(&str) -> Option<axum::response::Response> + Send + Sync + 'static,
) -> String {
    write_log(dir, k, &entries("a", n));
    let dir = dir.to_owned();
    let (base, _) = hostile(move |p| {
        change(p).unwrap_or_else(|| match p.strip_prefix("/log/") {
            Some(rel) => file(&dir, rel),
            None => not_found(),
        })
    })
    .await;
    format!("{base}/log")
}

#[tokio::test]
async fn endless_and_lying_bodies_are_cut_at_their_bound() {
    let t = tempfile::tempdir().expect("tempdir");
    let (k, public) = key(t.path(), ORIGIN, 1);
    let mdir = t.path().join("mirror");
    type Answer = fn() -> axum::response::Response;
    let cases: Vec<(&str, &str, Answer)> = vec![
        ("/log/checkpoint", "65536 bytes a checkpoint", endless),
        ("/log/tile/entries/001.p/44", "bytes a bundle", endless),
        ("/log/tile/0/000", "8192 bytes a hash tile", endless),
        ("/log/checkpoint", "65536 bytes a checkpoint", || {
            lying(1 << 40)
        }),
    ];
    for (i, (at, says, answer)) in cases.into_iter().enumerate() {
        let at = at.to_owned();
        let dir = t.path().join(format!("log{i}"));
        let url = served_log(&dir, &k, 300, move |p| (p == at).then(answer)).await;
        let out = mirror(&url, &public, &mdir, &[]).await;
        out.refused(says, REFUSED_MIB, 10);
        assert!(hash_files(&mdir).is_empty(), "{says}: nothing stored");
    }
}

#[tokio::test]
async fn a_trickling_or_silent_log_is_a_timeout_named_as_one() {
    let t = tempfile::tempdir().expect("tempdir");
    let (k, public) = key(t.path(), ORIGIN, 1);
    let mdir = t.path().join("mirror");
    let quick = ["--timeout", "1s"];
    let url = served_log(&t.path().join("a"), &k, 300, |p| {
        (p == "/log/checkpoint").then(trickle)
    })
    .await;
    let out = mirror(&url, &public, &mdir, &quick).await;
    out.refused("timed out after 1 s reading the checkpoint", REFUSED_MIB, 4);
    let url = served_log(&t.path().join("b"), &k, 300, |p| {
        (p == "/log/tile/entries/000").then(trickle)
    })
    .await;
    let out = mirror(&url, &public, &mdir, &quick).await;
    out.refused("timed out after 1 s reading the bundle", REFUSED_MIB, 4);
    let quiet = format!("{}/log", silent().await);
    let out = mirror(&quiet, &public, &mdir, &quick).await;
    out.refused("timed out after 1 s reading the checkpoint", REFUSED_MIB, 4);
    assert!(hash_files(&mdir).is_empty(), "nothing stored");
}

#[tokio::test]
async fn redirects_are_followed_within_the_log_s_origin_only() {
    let t = tempfile::tempdir().expect("tempdir");
    let (k, public) = key(t.path(), ORIGIN, 1);
    let mdir = t.path().join("mirror");
    let elsewhere = t.path().join("elsewhere");
    write_log(&elsewhere, &k, &entries("a", 300));
    let (other, other_asked) = hostile(move |p| file(&elsewhere, &p[1..])).await;
    let to = format!("{other}/checkpoint");
    let (base, _) = hostile(move |_| redirect(&to)).await;
    let out = mirror(&format!("{base}/log"), &public, &mdir, &[]).await;
    out.refused("another origin", REFUSED_MIB, 10);
    assert!(
        other_asked.all().is_empty(),
        "the other host was never asked"
    );

    let (base, asked) = hostile(redirect).await;
    let out = mirror(&format!("{base}/log"), &public, &mdir, &[]).await;
    out.refused("more than 5 redirects", REFUSED_MIB, 10);
    assert_eq!(
        asked.count("/log/checkpoint"),
        6,
        "5 redirects followed, then refused"
    );
    assert!(hash_files(&mdir).is_empty(), "nothing stored");

    // Within the origin: followed, and the log mirrored.
    let real = t.path().join("real");
    write_log(&real, &k, &entries("a", 300));
    let (base, _) = hostile(move |p| match p.strip_prefix("/log/") {
        Some(rel) => redirect(&format!("/moved/{rel}")),
        None => file(&real, p.strip_prefix("/moved/").unwrap_or("..")),
    })
    .await;
    let out = mirror(&format!("{base}/log"), &public, &mdir, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        hash_files(&copy_of(&mdir, ORIGIN)),
        hash_files(&t.path().join("real")),
        "the copy is the log"
    );
}

#[tokio::test]
async fn html_or_odd_bytes_where_a_tile_should_be_are_refused_naming_it() {
    let t = tempfile::tempdir().expect("tempdir");
    let (k, public) = key(t.path(), ORIGIN, 1);
    let mdir = t.path().join("mirror");
    let mut odd = Vec::new();
    for _ in 0..44 {
        event_audit::tlog::tile::push_entry(&mut odd, &[5; 31]).expect("entry");
    }
    let odd = axum::body::Bytes::from(odd);
    type Answer = Box<dyn Fn() -> axum::response::Response + Send + Sync>;
    let cases: Vec<(&str, &str, Answer)> = vec![
        (
            "/log/tile/entries/001.p/44",
            "tile/entries/001.p/44",
            Box::new(html),
        ),
        ("/log/tile/0/000", "tile/0/000", Box::new(html)),
        (
            "/log/tile/entries/001.p/44",
            "entry 0 is 31 bytes, not a row hash",
            Box::new(move || bytes(odd.clone())),
        ),
    ];
    for (i, (at, says, answer)) in cases.into_iter().enumerate() {
        let at = at.to_owned();
        let dir = t.path().join(format!("log{i}"));
        let url = served_log(&dir, &k, 300, move |p| (p == at).then(&answer)).await;
        let out = mirror(&url, &public, &mdir, &[]).await;
        out.refused(says, REFUSED_MIB, 10);
        assert!(hash_files(&mdir).is_empty(), "{says}: nothing stored");
    }
}

#[tokio::test]
async fn verify_proof_reads_the_checkpoint_once_within_its_timeout() {
    use crate::support::bundle::{bundle, row};
    let t = tempfile::tempdir().expect("tempdir");
    let (k, public) = key(t.path(), ORIGIN, 1);
    let data: Vec<Vec<u8>> =
        crate::support::records::records("DOORS", 3, 1, crate::support::records::now_us())
            .iter()
            .map(|r| r.canon().encode())
            .collect();
    let b = bundle(ORIGIN, &k, &data, &[(1, &row(&data[1]))]);
    let file = t.path().join("bundle.json");
    std::fs::write(&file, b.to_string()).expect("write the bundle");
    let proof = |tiles: String, more: &'static [&'static str]| {
        let (f, p) = (path(&file).to_owned(), path(&public).to_owned());
        async move {
            let mut args = vec!["verify-proof", &f, "--public-key", &p, "--tiles", &tiles];
            args.extend_from_slice(more);
            bounded::run(&args, Limits::default()).await
        }
    };
    // A signed tree of 2^62 leaves: its root's tiles are asked for, none is there.
    let note = signed(&k, 1 << 62);
    let (base, asked) = hostile(move |p| match p {
        "/log/checkpoint" => bytes(note.clone()),
        _ => not_found(),
    })
    .await;
    let out = proof(format!("{base}/log"), &[]).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr.starts_with("UNUSABLE: ") && out.stderr.contains("not found"),
        "{out:?}"
    );
    assert_eq!(
        asked.count("/log/checkpoint"),
        1,
        "the checkpoint fetched once"
    );
    out.within(REFUSED_MIB, 10);
    // A trickling checkpoint: the timeout given, named.
    let (base, asked) = hostile(|_| trickle()).await;
    let out = proof(format!("{base}/log"), &["--timeout", "1s"]).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr
            .contains("timed out after 1 s reading the checkpoint"),
        "{out:?}"
    );
    assert_eq!(asked.count("/log/checkpoint"), 1, "fetched once");
    out.within(REFUSED_MIB, 4);
}
