//! Build script: generates the catalogue's Rust types from `catalogue/*.toml` into `OUT_DIR`.

// A binary: the files it shares with the library by `#[path]` keep the library's visibility.
#![allow(unreachable_pub)]

mod emit;
mod fingerprint;
mod identifiers;
mod model;
#[path = "../src/decode/catalogue/names.rs"]
mod names;

use std::path::PathBuf;

fn main() {
    let dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
            .join("catalogue");
    for f in [
        "shapes.toml",
        "field_sets.toml",
        "events.toml",
        "identifiers.toml",
    ] {
        println!("cargo:rerun-if-changed={}", dir.join(f).display());
    }
    println!("cargo:rerun-if-changed=build");
    // `sqlx::migrate!` embeds migrations at compile time: a new file must rebuild the crate.
    println!("cargo:rerun-if-changed=migrations");
    let git = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=EVENT_AUDIT_GIT_HASH={git}");
    // The release binary's debug sections (line tables for backtraces, and the standard
    // library's) compressed when linked: half the size, and std's backtraces still read them
    // (BENCHMARKS.md, "Build"). On Linux with GNU ld or lld; other targets link as usual.
    if std::env::var("PROFILE").as_deref() == Ok("release")
        && std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
    {
        println!("cargo:rustc-link-arg-bins=-Wl,--compress-debug-sections=zlib");
    }
    let cat = match model::load(&dir) {
        Ok(c) => c,
        Err(e) => panic!("catalogue/ is inconsistent: {e}"),
    };
    println!(
        "cargo:rustc-env=EVENT_AUDIT_CATALOGUE_FINGERPRINT={}",
        fingerprint::fingerprint(&cat)
    );
    let mut names = std::collections::HashSet::new();
    for n in cat.events.iter().map(|e| emit::camel(&e.name)) {
        assert!(
            names.insert(n.clone()),
            "two events map to the Rust name {n}"
        );
    }
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("catalogue.rs");
    let ids = match identifiers::expand(&dir, &cat) {
        Ok(p) => p,
        Err(e) => panic!("catalogue/identifiers.toml is inconsistent: {e}"),
    };
    let mut code = emit::emit(&cat);
    identifiers::emit(&mut code, &ids);
    std::fs::write(&out, code).expect("write generated catalogue");
}
