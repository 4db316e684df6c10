//! Reading files another party shaped (an operator's archive or tile folder, a log's copy, a
//! key, a policy, a state file), bounded: a regular file only (a device, FIFO, socket or
//! directory is refused, and a FIFO is opened without blocking so it cannot stall the reader),
//! at most a stated number of bytes (the file's size checked before any byte is read, and the
//! read itself capped in case it grows), and a file named inside a folder stays inside it: it is
//! opened with `openat2(RESOLVE_BENEATH)`, so neither `..`, an absolute path nor a symlink
//! leads out (symlinks that stay inside are followed). Where `openat2` is not available (a
//! kernel before 5.6, a sandbox that filters it), the path is resolved and checked against the
//! folder's resolved path before it is opened, and opened without following a final symlink.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Component, Path};

/// `io::Error` of a refusal: `InvalidData`, with the reason as its message.
fn refused(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}

/// What a file that is not regular is, for the message.
fn kind_of(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// Checks that `f` is a regular file of at most `limit` bytes; returns its size.
fn regular(f: &File, limit: u64, what: &str) -> io::Result<u64> {
    let meta = f.metadata()?;
    if !meta.file_type().is_file() {
        return Err(refused(format!(
            "{}, not a regular file: refused",
            kind_of(meta.file_type())
        )));
    }
    if meta.len() > limit {
        return Err(too_large(meta.len(), limit, what));
    }
    Ok(meta.len())
}

fn too_large(len: u64, limit: u64, what: &str) -> io::Error {
    refused(format!(
        "{len} bytes or more, larger than the {limit} bytes a {what} may be: refused"
    ))
}

/// Reads all of `f` (checked by [`regular`]), at most `limit` bytes.
fn read_capped(f: File, size: u64, limit: u64, what: &str) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    f.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64, limit, what));
    }
    Ok(bytes)
}

/// Opens a file the user named (symlinks followed: the path is the user's choice), without
/// blocking on a FIFO; a regular file of at most `limit` bytes, or an error saying why not.
pub fn open(path: &Path, limit: u64, what: &str) -> io::Result<(File, u64)> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let size = regular(&f, limit, what)?;
    Ok((f, size))
}

/// The bytes of a file the user named: a regular file of at most `limit` bytes (a `what`).
pub fn read(path: &Path, limit: u64, what: &str) -> io::Result<Vec<u8>> {
    let (f, size) = open(path, limit, what)?;
    read_capped(f, size, limit, what)
}

/// As [`read`], as UTF-8 text.
pub fn read_text(path: &Path, limit: u64, what: &str) -> io::Result<String> {
    String::from_utf8(read(path, limit, what)?)
        .map_err(|_| refused("not UTF-8 text: refused".into()))
}

/// As [`read_text`], `None` when nothing is at `path`.
pub fn read_text_if_present(path: &Path, limit: u64, what: &str) -> io::Result<Option<String>> {
    match read_text(path, limit, what) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Opens `rel` inside `dir` without leaving it (see the module): a regular file of at most
/// `limit` bytes. `rel` must be relative, without `..`.
pub fn open_beneath(dir: &Path, rel: &Path, limit: u64, what: &str) -> io::Result<(File, u64)> {
    let plain =
        !rel.as_os_str().is_empty() && rel.components().all(|c| matches!(c, Component::Normal(_)));
    if !plain {
        return Err(refused(format!(
            "{}: not a path inside the folder (absolute, empty or with `..`): refused",
            rel.display()
        )));
    }
    let f = match openat2_beneath(dir, rel) {
        Ok(f) => f,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) => {
            resolved_beneath(dir, rel)?
        }
        Err(e) if e.raw_os_error() == Some(libc::EXDEV) => return Err(outside(dir)),
        Err(e) => return Err(e),
    };
    let size = regular(&f, limit, what)?;
    Ok((f, size))
}

fn outside(dir: &Path) -> io::Error {
    refused(format!(
        "leads outside {} (through a symlink): refused",
        dir.display()
    ))
}

/// The bytes of `rel` inside `dir` (see [`open_beneath`]), `None` when it is not there.
pub fn read_beneath(dir: &Path, rel: &Path, limit: u64, what: &str) -> io::Result<Option<Vec<u8>>> {
    match open_beneath(dir, rel, limit, what) {
        Ok((f, size)) => read_capped(f, size, limit, what).map(Some),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// `openat2(dir, rel, O_RDONLY | O_NONBLOCK, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`.
fn openat2_beneath(dir: &Path, rel: &Path) -> io::Result<File> {
    let base = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_PATH)
        .open(dir)?;
    let mut name = rel.as_os_str().as_bytes().to_vec();
    if name.contains(&0) {
        return Err(refused(format!(
            "{}: a NUL byte in the path",
            rel.display()
        )));
    }
    name.push(0);
    // SAFETY: `open_how` is three integers, for which all zeroes is a valid value.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
    use std::os::fd::AsRawFd;
    // SAFETY: `name` is NUL-terminated and outlives the call; `how` is a valid `open_how` of
    // the size passed; `base` keeps the directory descriptor open for the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            base.as_raw_fd(),
            name.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = i32::try_from(fd).map_err(|_| refused("a descriptor out of range".into()))?;
    // SAFETY: the kernel returned a new descriptor that nothing else owns.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Without `openat2`: `rel` resolved, checked to be under `dir` resolved, opened without
/// following a final symlink (one swapped in after the check is refused, not followed).
fn resolved_beneath(dir: &Path, rel: &Path) -> io::Result<File> {
    let base = std::fs::canonicalize(dir)?;
    let full = std::fs::canonicalize(dir.join(rel))?;
    if !full.starts_with(&base) {
        return Err(outside(dir));
    }
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW)
        .open(full)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn fifo(p: &Path) {
        let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn a_file_inside_is_read_and_nothing_else() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("d");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/a"), b"inside").unwrap();
        std::fs::write(t.path().join("secret"), b"outside").unwrap();
        symlink("a", dir.join("sub/same")).unwrap();
        symlink("../../secret", dir.join("sub/out")).unwrap();
        symlink("/dev/zero", dir.join("zero")).unwrap();
        symlink(t.path().join("secret"), dir.join("abs")).unwrap();
        fifo(&dir.join("fifo"));
        let read = |rel: &str| read_beneath(&dir, Path::new(rel), 100, "test file");
        assert_eq!(read("sub/a").unwrap().unwrap(), b"inside");
        assert_eq!(read("sub/same").unwrap().unwrap(), b"inside");
        assert!(read("missing").unwrap().is_none());
        for bad in [
            "sub/out",
            "zero",
            "abs",
            "../secret",
            "/etc/passwd",
            "",
            "sub/../a",
        ] {
            let e = read(bad).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{bad}: {e}");
        }
        let e = read("fifo").unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        let e = read_beneath(&dir, Path::new("sub/a"), 3, "test file").unwrap_err();
        assert!(e.to_string().contains("larger than the 3 bytes"), "{e}");
        let e = resolved_beneath(&dir, Path::new("sub/out")).unwrap_err();
        assert!(e.to_string().contains("leads outside"), "{e}");
        assert!(resolved_beneath(&dir, Path::new("sub/same")).is_ok());
    }

    #[test]
    fn a_named_file_must_be_regular_and_small() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        assert_eq!(read_text(&p, 10, "key").unwrap(), "0123456789");
        assert!(read_text(&p, 9, "key").is_err());
        let e = read(Path::new("/dev/zero"), 10, "key").unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
        fifo(&t.path().join("fifo"));
        let e = read(&t.path().join("fifo"), 10, "key").unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        assert!(read_text_if_present(&t.path().join("none"), 10, "state")
            .unwrap()
            .is_none());
    }
}
