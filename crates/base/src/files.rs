//! Files that hold evidence or secrets, written safely: a new file only (`O_EXCL`, never through
//! an existing name or symlink), or replaced atomically (a temporary file in the same directory,
//! fsynced, renamed over the old one, the directory fsynced), with mode 0600; and a key file
//! refused when group or others may read it (as ssh refuses such keys). Every file read is
//! bounded ([`bounded`]): a regular file, at most a stated size, and inside its folder when it
//! is read from one.

pub mod bounded;

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Creates `path` with `body`, mode `mode`; fails if anything exists at that name (a file, a
/// directory or a symlink, dangling or not).
pub fn create_new(path: &Path, body: &[u8], mode: u32) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)?;
    f.write_all(body)?;
    f.sync_all()?;
    sync_dir(path)
}

fn sync_dir(path: &Path) -> std::io::Result<()> {
    let dir = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => d.to_owned(),
        None => PathBuf::from("."),
    };
    std::fs::File::open(dir)?.sync_all()
}

/// Replaces `path` with `body` atomically and durably, mode 0600: once this returns, a crash
/// leaves either the old content or the new, and the new survives a power loss.
pub fn replace_private(path: &Path, body: &[u8]) -> std::io::Result<()> {
    replace(path, body, 0o600)
}

/// Replaces `path` with `body` atomically and durably, with `mode` (a temporary file in the
/// same directory, fsynced, renamed over the old one, the directory fsynced).
pub fn replace(path: &Path, body: &[u8], mode: u32) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(body)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        sync_dir(path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The largest key file read (public or private, the log's or a witness's: one line of a few
/// hundred bytes).
pub const KEY_MAX: u64 = 64 << 10;

/// The largest witness policy read (a line of about 150 bytes a witness; a note carries at
/// most 64 signatures, so a longer policy could never be met).
pub const POLICY_MAX: u64 = 64 << 10;

/// The largest memory file read: the auditor's state (its breaks grow by at most one a run),
/// the signer's memory and a witness's state (one checkpoint per origin each).
pub const STATE_MAX: u64 = 16 << 20;

/// Reads a file that may not exist yet (a keeper's memory before its first save): `Ok(None)`
/// when it is missing, any other failure an error (never taken as "no memory"); a regular file
/// of at most `limit` bytes (a `what`).
pub fn read_if_present(path: &Path, limit: u64, what: &str) -> std::io::Result<Option<String>> {
    bounded::read_text_if_present(path, limit, what)
}

/// Reads a private key file, refusing one that group or others may read or write (and one
/// that is not a regular file of at most [`KEY_MAX`] bytes).
pub fn read_private(path: &Path) -> std::io::Result<String> {
    let (f, _) = bounded::open(path, KEY_MAX, "key file")?;
    let mode = f.metadata()?.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "mode {:04o} lets others read the private key; `chmod 600 {}`",
                mode & 0o7777,
                path.display()
            ),
        ));
    }
    bounded::read_text(path, KEY_MAX, "key file")
}

/// A small text file of the operator's (settings, a secret): a regular file (a FIFO is opened
/// without blocking, and refused with a device or a directory), at most `limit` bytes.
pub fn read_small(path: &Path, limit: u64) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let refused = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidData, why);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(refused(
            "not a regular file (a device, FIFO, socket or directory)".into(),
        ));
    }
    let mut bytes = Vec::new();
    f.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(refused(format!("larger than {limit} bytes")));
    }
    String::from_utf8(bytes).map_err(|_| refused("not UTF-8 text".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_new_never_follows_an_existing_name() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        let link = dir.path().join("key");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(create_new(&link, b"secret", 0o600).is_err());
        assert!(!target.exists(), "nothing written through the symlink");
        let fresh = dir.path().join("fresh");
        create_new(&fresh, b"x", 0o600).unwrap();
        assert!(create_new(&fresh, b"y", 0o600).is_err());
        assert_eq!(std::fs::read(&fresh).unwrap(), b"x");
        let mode = std::fs::metadata(&fresh).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn replaced_files_are_private_and_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/state.json");
        replace_private(&p, b"one").unwrap();
        replace_private(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let left: Vec<_> = std::fs::read_dir(p.parent().unwrap()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left behind");
    }

    #[test]
    fn keys_readable_by_others_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k");
        std::fs::write(&p, "key").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = read_private(&p).unwrap_err();
        assert!(e.to_string().contains("chmod 600"), "{e}");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_private(&p).unwrap(), "key");
    }
}
