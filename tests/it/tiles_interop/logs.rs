//! The logs the interop tests check: the project's own (its `TileBuilder` writing its `Tiles`,
//! at once or grown in steps the way the daemon resumes), the reference written from the spec
//! (tests/tiles_reference.py), their entries, their key, and a directory read back as files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use event_audit::test_support::log::tiles::Tiles;
use event_audit::tlog::note::{Checkpoint, PrivateKey};
use event_audit::tlog::tile::build::TileBuilder;

/// The logs' origin, also their key's name.
pub(crate) const ORIGIN: &str = "tiles.example/interop";

/// The seed of the logs' signing key.
const SEED: [u8; 32] = [7; 32];

/// The logs' signing key.
pub(crate) fn key() -> PrivateKey {
    PrivateKey::from_seed(ORIGIN, &SEED).expect("key")
}

/// Writes the logs' verifier key file in `dir`.
pub(crate) fn write_pub(dir: &Path) -> PathBuf {
    let path = dir.join("log.pub");
    std::fs::write(&path, format!("{}\n", key().public().encode())).expect("write the key");
    path
}

/// Entry `i`: 0 to 96 bytes (empty ones included), so that bundles hold entries of every
/// short length, not only the 32-byte row hashes the daemon logs.
pub(crate) fn entry(i: u64) -> Vec<u8> {
    let len = (i * 7919) % 97;
    (0..len)
        .map(|j| (i.wrapping_mul(31).wrapping_add(j * 7) % 251) as u8)
        .collect()
}

/// The first `n` entries.
pub(crate) fn entries(n: u64) -> Vec<Vec<u8>> {
    (0..n).map(entry).collect()
}

/// Appends `entries` to the log in `dir` (of `from` leaves so far, resumed from its files), and
/// publishes: full tiles, partial tiles, then the signed checkpoint. Returns the checkpoint.
pub(crate) async fn extend(dir: &Tiles, from: u64, entries: &[Vec<u8>]) -> String {
    let mut b = if from == 0 {
        TileBuilder::new()
    } else {
        dir.builder_at(from).await.expect("resume the tiles")
    };
    assert_eq!(b.size(), from);
    for e in entries {
        b.push(e).expect("push an entry");
    }
    for (id, bytes) in b.take_full().into_iter().chain(b.partials()) {
        dir.write(&id, &bytes).await.expect("write a tile");
    }
    let note = key().sign(&Checkpoint {
        origin: ORIGIN.into(),
        size: b.size(),
        root: b.root(),
    });
    dir.write_checkpoint(&note)
        .await
        .expect("write the checkpoint");
    note
}

/// The project's log of `entries` in `dir`, written at once.
pub(crate) async fn project(dir: &Path, entries: &[Vec<u8>]) -> Tiles {
    let tiles = Tiles::dir(dir);
    extend(&tiles, 0, entries).await;
    tiles
}

/// The reference log of `entries` in `dir`, written by tests/tiles_reference.py.
pub(crate) fn reference(dir: &Path, entries: &[Vec<u8>]) {
    std::fs::create_dir_all(dir).expect("create the reference's directory");
    let list = dir.with_extension("entries");
    let hex: String = entries
        .iter()
        .map(|e| {
            let mut line: String = e.iter().map(|b| format!("{b:02x}")).collect();
            line.push('\n');
            line
        })
        .collect();
    std::fs::write(&list, hex).expect("write the entries");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tiles_reference.py");
    let seed: String = SEED.iter().map(|b| format!("{b:02x}")).collect();
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg(&list)
        .arg(dir)
        .args([ORIGIN, ORIGIN, &seed])
        .output()
        .expect("run python3 (scripts/test-deps.sh installs it)");
    assert!(
        out.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every file under `dir`, by its path relative to `dir` ('/'-separated), with its bytes (none
/// when `dir` is not there yet).
pub(crate) fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    crate::support::files::files(dir)
}

/// How many hash tiles (every level, full and partial) and entry bundles a tree of `size`
/// leaves has, counted from the spec: level `l` holds `size / 256^l` hashes.
pub(crate) fn tile_counts(size: u64) -> (u64, u64) {
    let (mut tiles, mut count) = (0, size);
    while count > 0 {
        tiles += count.div_ceil(256);
        count /= 256;
    }
    (tiles, size.div_ceil(256))
}

/// Whether a tile path is a partial tile's or bundle's (`.p/<W>`).
pub(crate) fn is_partial(path: &str) -> bool {
    path.contains(".p/")
}
