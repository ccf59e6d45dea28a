//! Capped reads of regular files, refusing FIFOs, devices, sockets and directories.

use std::fs::{File, OpenOptions};
use std::path::Path;

use crate::{ReadError, ReadErrorKind, stream};

/// Reads the regular file at `path` (symlinks followed) if it holds at most `cap` bytes.
///
/// The file is opened non-blocking, so a FIFO is refused at once instead of waiting for a writer,
/// and its type is checked on the open handle.
pub fn read_file(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    let fail = |kind| ReadError::new(path, kind);
    let file = open_regular(path).map_err(fail)?;
    let hint = file.metadata().map(|m| m.len()).unwrap_or(0);
    stream::read_capped_with_hint(file, cap, hint).map_err(fail)
}

/// Opens the regular file at `path` (symlinks followed) for a reader that caps what it reads
/// itself (e.g. [`crate::CappedReader`]); FIFOs, devices, sockets and directories are refused at
/// once, as [`read_file`] refuses them.
pub fn open_file(path: &Path) -> Result<File, ReadError> {
    open_regular(path).map_err(|kind| ReadError::new(path, kind))
}

/// [`read_file`], as UTF-8 text.
pub fn read_file_to_string(path: &Path, cap: u64) -> Result<String, ReadError> {
    let bytes = read_file(path, cap)?;
    String::from_utf8(bytes).map_err(|_| ReadError::new(path, ReadErrorKind::NotUtf8))
}

fn open_regular(path: &Path) -> Result<File, ReadErrorKind> {
    let file = open_nonblocking(path).map_err(ReadErrorKind::from_io)?;
    let file_type = file.metadata().map_err(ReadErrorKind::Io)?.file_type();
    match describe_irregular(&file_type) {
        Some(what) => Err(ReadErrorKind::NotRegular(what)),
        None => Ok(file),
    }
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().read(true).open(path)
}

/// `None` for a regular file, else what the file is.
fn describe_irregular(file_type: &std::fs::FileType) -> Option<&'static str> {
    if file_type.is_file() {
        return None;
    }
    if file_type.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return Some("a FIFO");
        }
        if file_type.is_char_device() {
            return Some("a character device");
        }
        if file_type.is_block_device() {
            return Some("a block device");
        }
        if file_type.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a file")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_regular_file_within_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.yaml");
        std::fs::write(&path, "kind: Job\n").unwrap();
        assert_eq!(read_file_to_string(&path, 10).unwrap(), "kind: Job\n");
    }

    #[test]
    fn a_file_over_the_cap_names_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        std::fs::write(&path, vec![b'x'; 2048]).unwrap();
        let error = read_file(&path, 1024).unwrap_err();
        assert!(matches!(error.kind, ReadErrorKind::TooLarge { cap: 1024 }));
        assert_eq!(
            error.to_string(),
            format!("{}: is larger than the 1 KiB cap", path.display())
        );
    }

    #[test]
    fn devices_and_directories_are_refused() {
        let error = read_file(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert_eq!(
            error.to_string(),
            "/dev/zero: is not a regular file (a character device)"
        );
        let dir = tempfile::tempdir().unwrap();
        let error = read_file(dir.path(), 10).unwrap_err();
        assert!(matches!(
            error.kind,
            ReadErrorKind::NotRegular("a directory")
        ));
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let error = read_file(&fifo, 10).unwrap_err();
        assert!(matches!(error.kind, ReadErrorKind::NotRegular("a FIFO")));
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        let error = read_file(&link, 10).unwrap_err();
        assert!(matches!(error.kind, ReadErrorKind::NotRegular("a FIFO")));
    }

    #[test]
    fn a_missing_file_says_so() {
        let error = read_file(Path::new("/nonexistent/x.yaml"), 10).unwrap_err();
        assert_eq!(error.to_string(), "/nonexistent/x.yaml: no such file");
    }

    #[test]
    fn invalid_utf8_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bin");
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        let error = read_file_to_string(&path, 10).unwrap_err();
        assert!(matches!(error.kind, ReadErrorKind::NotUtf8));
    }
}
