//! Directories in tests: every file under one, by its '/'-separated path relative to it, with
//! its bytes (the tile tests compare logs file by file).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every file under `dir`, hidden ones included; empty when `dir` is not there.
pub(crate) fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo: Vec<PathBuf> = dir
        .exists()
        .then(|| dir.to_path_buf())
        .into_iter()
        .collect();
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("read a directory") {
            let path = e.expect("a directory entry").path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let rel = path.strip_prefix(dir).expect("under the root");
                let rel = rel.to_str().expect("utf-8 path").replace('\\', "/");
                out.insert(rel, std::fs::read(&path).expect("read a file"));
            }
        }
    }
    out
}
