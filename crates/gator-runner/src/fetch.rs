//! Fetching the pinned gator: cache by hash in the work dir, download when needed, verify the
//! sha256 before the archive is touched, extract `gator` (0755).
//!
//! Layout under the work dir:
//! - `cache/gator-<sha256>.tar.gz`: the verified tarball. A cached file whose hash matches the pin
//!   is reused without any request; one that does not (corrupted, tampered) is replaced.
//! - `bin/gator`: extracted again from the verified tarball at every fetch, so a modified binary
//!   never survives a run.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::archive::{ArchiveError, extract_gator};
use crate::download::{DownloadError, DownloadOptions, download};
use crate::pin::{GatorPin, PinError};

/// Limits for [`fetch_gator`].
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// Download limits and trust.
    pub download: DownloadOptions,
    /// Largest accepted `gator` binary (default 512 MiB).
    pub max_binary_bytes: u64,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            download: DownloadOptions::default(),
            max_binary_bytes: 512 * 1024 * 1024,
        }
    }
}

/// Why the pinned gator could not be made ready.
#[derive(Debug, Error)]
pub enum FetchError {
    /// The pin is invalid.
    #[error("invalid gator pin")]
    Pin(#[from] PinError),
    /// The download failed.
    #[error("gator download failed")]
    Download(#[from] DownloadError),
    /// The downloaded bytes do not have the pinned sha256.
    #[error("gator sha256 mismatch: expected {expected}, got {actual}")]
    Sha256Mismatch {
        /// The pinned digest.
        expected: String,
        /// The digest of what was downloaded.
        actual: String,
    },
    /// The archive was refused.
    #[error("gator archive refused")]
    Archive(#[from] ArchiveError),
    /// A file in the work dir could not be read or written.
    #[error("gator cache I/O on {path} failed")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// Where the verified tarball of `pin` is cached under `work_dir`.
pub fn cache_path(work_dir: &Path, pin: &GatorPin) -> PathBuf {
    work_dir
        .join("cache")
        .join(format!("gator-{}.tar.gz", pin.sha256()))
}

/// Where the extracted binary goes under `work_dir`.
pub fn binary_path(work_dir: &Path) -> PathBuf {
    work_dir.join("bin").join("gator")
}

/// The lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Makes the pinned gator ready in `work_dir` and returns the binary's path.
pub async fn fetch_gator(
    pin: &GatorPin,
    work_dir: &Path,
    options: &FetchOptions,
) -> Result<PathBuf, FetchError> {
    pin.validate()?;
    let cached = cache_path(work_dir, pin);
    let tarball = match read_if_matches(&cached, pin.sha256())? {
        Some(bytes) => {
            tracing::debug!(host = %pin.host(), "reusing cached gator tarball");
            bytes
        }
        None => {
            tracing::info!(host = %pin.host(), version = pin.version(), "downloading gator");
            let bytes = download(pin.url(), &options.download).await?;
            let actual = sha256_hex(&bytes);
            if actual != pin.sha256() {
                return Err(FetchError::Sha256Mismatch {
                    expected: pin.sha256().to_string(),
                    actual,
                });
            }
            write_atomically(&cached, &bytes)?;
            bytes
        }
    };
    let binary = binary_path(work_dir);
    let max = options.max_binary_bytes;
    let dest = binary.clone();
    tokio::task::spawn_blocking(move || extract_gator(&tarball, &dest, max))
        .await
        .map_err(|join| FetchError::Io {
            path: binary.display().to_string(),
            source: std::io::Error::other(join.to_string()),
        })??;
    Ok(binary)
}

/// The cached bytes when the file exists and has `sha256`; `None` when it is absent or differs.
fn read_if_matches(path: &Path, sha256: &str) -> Result<Option<Vec<u8>>, FetchError> {
    match std::fs::read(path) {
        Ok(bytes) if sha256_hex(&bytes) == sha256 => Ok(Some(bytes)),
        Ok(_) => {
            tracing::warn!(path = %path.display(), "cached gator tarball has the wrong sha256; replacing it");
            Ok(None)
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(FetchError::Io {
            path: path.display().to_string(),
            source,
        }),
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), FetchError> {
    let io = |source| FetchError::Io {
        path: path.display().to_string(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut staged = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
    std::io::Write::write_all(&mut staged, bytes).map_err(io)?;
    staged.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}
