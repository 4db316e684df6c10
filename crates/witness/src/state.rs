//! The witness's memory: per log origin, the latest checkpoint it cosigned (size, root, the
//! note it was shown, and the note it serves monitors: the log's signatures it verified and its
//! own cosignature), one file per origin in the state directory, replaced atomically and
//! fsynced before the witness answers, never lowered. A lock on the directory keeps a second
//! witness process away from it (two processes could otherwise roll each other back).

use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::tlog::merkle::Hash;

/// The latest checkpoint cosigned for one origin, with the note as submitted (evidence of what
/// the log signed): the memory every keeper of a log shares, without a right edge.
pub(crate) type Latest = crate::tlog::latest::Remembered<()>;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    origin: String,
    size: u64,
    root: String,
    note: String,
    /// The checkpoint with the log's verified signatures and this witness's cosignature, served
    /// at `GET /<origin hash>/checkpoint` (absent in files written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    served: Option<String>,
}

/// The state directory, locked by this process.
pub(crate) struct StateDir {
    dir: PathBuf,
    _lock: std::fs::File,
}

impl StateDir {
    /// Opens (creating) `dir` and takes its lock; fails when another witness holds it.
    pub(crate) fn open(dir: &Path) -> std::io::Result<StateDir> {
        std::fs::create_dir_all(dir)?;
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(".lock"))?;
        // SAFETY: flock on a descriptor this function owns; no memory is involved.
        let r = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r != 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::WouldBlock,
                format!(
                    "{} is in use by another witness process (one process per state directory)",
                    dir.display()
                ),
            ));
        }
        Ok(StateDir {
            dir: dir.to_owned(),
            _lock: lock,
        })
    }

    fn path(&self, origin: &str) -> PathBuf {
        let h: String = Sha256::digest(origin.as_bytes())[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        self.dir.join(format!("{h}.json"))
    }

    /// The latest cosigned checkpoint of `origin`, if any. A file that cannot be read is an
    /// error (never taken as "no state": that would let a log start over).
    pub(crate) fn load(&self, origin: &str) -> std::io::Result<Option<Latest>> {
        Ok(self.read(origin)?.map(|(l, _)| l))
    }

    /// The cosigned checkpoint served to monitors for `origin`, if one was kept.
    pub(crate) fn served(&self, origin: &str) -> std::io::Result<Option<String>> {
        Ok(self.read(origin)?.and_then(|(_, s)| s))
    }

    fn read(&self, origin: &str) -> std::io::Result<Option<(Latest, Option<String>)>> {
        let path = self.path(origin);
        let Some(text) =
            crate::files::read_if_present(&path, crate::files::STATE_MAX, "state file")?
        else {
            return Ok(None);
        };
        let bad = |why: &str| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: {why}", path.display()),
            )
        };
        let f: File = serde_json::from_str(&text).map_err(|_| bad("not a witness state"))?;
        if f.origin != origin {
            return Err(bad("it is another origin's state"));
        }
        let root = B64
            .decode(&f.root)
            .ok()
            .and_then(|r| Hash::try_from(r).ok())
            .ok_or_else(|| bad("its root is not 32 bytes of base64"))?;
        let latest = Latest {
            size: f.size,
            root,
            note: f.note,
            tree: (),
        };
        Ok(Some((latest, f.served)))
    }

    /// Stores `latest` for `origin`, and the cosigned checkpoint served to monitors, durably,
    /// before the witness answers.
    pub(crate) fn store(&self, origin: &str, latest: &Latest, served: &str) -> std::io::Result<()> {
        let f = File {
            origin: origin.to_owned(),
            size: latest.size,
            root: B64.encode(latest.root),
            note: latest.note.clone(),
            served: Some(served.to_owned()),
        };
        let body = serde_json::to_vec_pretty(&f).unwrap_or_default();
        crate::files::replace_private(&self.path(origin), &body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_one_file_per_origin_and_one_process_per_directory() {
        let dir = tempfile::tempdir().unwrap();
        let s = StateDir::open(dir.path()).unwrap();
        assert!(
            StateDir::open(dir.path()).is_err(),
            "a second process is refused"
        );
        assert_eq!(s.load("a").unwrap(), None);
        let l = Latest {
            size: 3,
            root: [1; 32],
            note: "n".into(),
            tree: (),
        };
        s.store("a", &l, "served").unwrap();
        assert_eq!(s.load("a").unwrap(), Some(l));
        assert_eq!(s.served("a").unwrap().as_deref(), Some("served"));
        assert_eq!(s.load("b").unwrap(), None);
        std::fs::write(s.path("b"), "{").unwrap();
        assert!(s.load("b").is_err(), "an unreadable state is an error");
        drop(s);
        assert!(
            StateDir::open(dir.path()).is_ok(),
            "the lock goes with the process"
        );
    }
}
