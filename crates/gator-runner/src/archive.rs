//! Extraction of the `gator` binary from a verified release tarball (tar + flate2).
//!
//! Only the top-level regular file `gator` (or `./gator`) is written; other regular files and
//! directories are ignored. An archive with an absolute path, a `..` component, a symlink or a
//! hardlink anywhere is refused as a whole: a release tarball has exactly one member, so
//! refusing costs nothing and leaves no doubt. The binary is size-capped and written `0755`.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path};

use flate2::read::GzDecoder;
use thiserror::Error;

/// Why the archive was refused.
#[derive(Debug, Error)]
pub enum ArchiveError {
    /// The archive is not a readable gzip-compressed tar (corrupt or truncated).
    #[error("gator archive is not a readable .tar.gz")]
    Read(#[source] std::io::Error),
    /// A member has an absolute path or a `..` component.
    #[error("gator archive member {member:?} has an unsafe path")]
    UnsafePath {
        /// The member's path as stored.
        member: String,
    },
    /// A member is a symlink or hardlink.
    #[error("gator archive member {member:?} is a link")]
    Link {
        /// The member's path as stored.
        member: String,
    },
    /// `gator` is larger than the cap.
    #[error("gator in the archive is larger than {max_bytes} bytes")]
    TooLarge {
        /// The cap.
        max_bytes: u64,
    },
    /// No top-level regular file `gator`.
    #[error("gator archive has no top-level regular file `gator`")]
    Missing,
    /// More than one top-level `gator`.
    #[error("gator archive has more than one `gator` member")]
    Duplicate,
    /// Writing the binary failed.
    #[error("writing {path} failed")]
    Write {
        /// Where.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// Extracts `gator` from `tarball` into `dest` (replaced atomically, mode 0755), reading at most
/// `max_bytes` of it. The whole archive is checked before `dest` is touched.
pub fn extract_gator(tarball: &[u8], dest: &Path, max_bytes: u64) -> Result<(), ArchiveError> {
    let dir = dest.parent().unwrap_or(Path::new("."));
    let write_err = |source| ArchiveError::Write {
        path: dest.display().to_string(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(write_err)?;
    let mut staged = tempfile::NamedTempFile::new_in(dir).map_err(write_err)?;
    let mut found = false;
    let mut archive = tar::Archive::new(GzDecoder::new(tarball));
    for entry in archive.entries().map_err(ArchiveError::Read)? {
        let mut entry = entry.map_err(ArchiveError::Read)?;
        let member = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let path = entry.path().map_err(ArchiveError::Read)?.into_owned();
        if path.is_absolute()
            || path.components().any(|c| {
                matches!(
                    c,
                    Component::ParentDir | Component::RootDir | Component::Prefix(_)
                )
            })
        {
            return Err(ArchiveError::UnsafePath { member });
        }
        let kind = entry.header().entry_type();
        if kind.is_symlink() || kind.is_hard_link() || entry.link_name_bytes().is_some() {
            return Err(ArchiveError::Link { member });
        }
        let normal: Vec<_> = path
            .components()
            .filter(|c| !matches!(c, Component::CurDir))
            .collect();
        let is_gator = normal.len() == 1 && normal[0].as_os_str() == "gator";
        if !is_gator || !kind.is_file() {
            continue;
        }
        if found {
            return Err(ArchiveError::Duplicate);
        }
        found = true;
        if entry.header().size().map_err(ArchiveError::Read)? > max_bytes {
            return Err(ArchiveError::TooLarge { max_bytes });
        }
        let mut limited = (&mut entry).take(max_bytes + 1);
        let copied =
            std::io::copy(&mut limited, staged.as_file_mut()).map_err(ArchiveError::Read)?;
        if copied > max_bytes {
            return Err(ArchiveError::TooLarge { max_bytes });
        }
    }
    if !found {
        return Err(ArchiveError::Missing);
    }
    staged.as_file_mut().flush().map_err(write_err)?;
    staged.as_file().sync_all().map_err(write_err)?;
    std::fs::set_permissions(staged.path(), std::fs::Permissions::from_mode(0o755))
        .map_err(write_err)?;
    staged.persist(dest).map_err(|e| write_err(e.error))?;
    Ok(())
}
