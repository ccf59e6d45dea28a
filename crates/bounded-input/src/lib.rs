//! Bounded reads of untrusted input: the one place where the binaries and libraries read files,
//! stdin and decompressed streams whose size and nature an attacker or a careless operator chooses.
//!
//! - [`read_file`] / [`read_file_to_string`] read a **regular file** (symlinks are followed to
//!   their target, which must be a regular file too) of at most `cap` bytes. FIFOs, character
//!   devices such as `/dev/zero`, sockets and directories are refused without blocking: the file is
//!   opened non-blocking and checked on the open handle, so a FIFO never waits for a writer and a
//!   swap between a check and the open cannot slip through.
//! - [`read_capped`] reads any stream (stdin, a gzip decoder, an HTTP body adapter) up to `cap`
//!   bytes and fails past it instead of growing memory without end.
//! - [`open_file`] + [`CappedReader`] do the same for a parser that reads as it goes (a large
//!   JSON snapshot is parsed from the stream and never held as text): the reader fails past its
//!   cap and remembers it, so the caller reports the cap rather than the parser's error.
//! - [`Budget`] caps the total read over many files (a snapshot directory, a Suite's objects).
//! - [`check_yaml_nesting`] rejects YAML nested deeper than a cap with a cheap linear pre-scan,
//!   *before* a YAML parser sees the text: libyaml's parse time grows quadratically with nesting
//!   (`a: [[[[…]]]]`), long before serde's own recursion limit is reached.
//! - [`yaml_from_str`] / [`yaml_documents`] read YAML as PyYAML and kubectl do: a leading
//!   byte-order mark dropped ([`strip_bom`]) and merge keys applied ([`apply_merge_keys`]); every
//!   YAML reader of the workspace goes through them.
//!
//! Every error names the input and, for a cap, the cap (`…: larger than the 8 MiB cap`), and never
//! quotes the input's content.
//!
//! ```
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("policy.json");
//! std::fs::write(&path, "{}").unwrap();
//! assert_eq!(bounded_input::read_file_to_string(&path, 1024).unwrap(), "{}");
//! let error = bounded_input::read_file(&path, 1).unwrap_err();
//! assert!(error.to_string().ends_with("is larger than the 1 B cap"));
//! assert!(bounded_input::check_yaml_nesting("a: [[[[1]]]]", 3).is_err());
//! ```

mod file;
mod stream;
mod yaml;
mod yaml_stream;

pub use file::{open_file, read_file, read_file_to_string};
pub use stream::{Budget, CappedReader, read_capped, read_capped_to_string};
pub use yaml::{NestingError, YAML_MAX_DEPTH, check_yaml_nesting};
pub use yaml_stream::{apply_merge_keys, strip_bom, yaml_documents, yaml_from_str};

use std::path::{Path, PathBuf};

/// Why an input could not be read.
///
/// Its text already says what went wrong (`<input>: <kind>`), so its `source()` is the kind's
/// cause, not the kind: a chain printer (`{:#}`) shows each fact once.
#[derive(Debug)]
pub struct ReadError {
    /// The input: a path, or a name such as `stdin` or `<archive>/member.yaml`.
    pub input: PathBuf,
    /// What went wrong.
    pub kind: ReadErrorKind,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.input.display(), self.kind)
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.kind)
    }
}

impl ReadError {
    /// An error about `input`.
    pub fn new(input: impl AsRef<Path>, kind: ReadErrorKind) -> Self {
        Self {
            input: input.as_ref().to_path_buf(),
            kind,
        }
    }
}

/// What went wrong reading an input.
#[derive(Debug, thiserror::Error)]
pub enum ReadErrorKind {
    /// Nothing exists at the path (or a symlink points nowhere).
    #[error("no such file")]
    NotFound,
    /// The path is not a regular file (after following symlinks).
    #[error("is not a regular file ({0})")]
    NotRegular(&'static str),
    /// The input is larger than the cap.
    #[error("is larger than the {} cap", format_size(*.cap))]
    TooLarge {
        /// The cap, in bytes.
        cap: u64,
    },
    /// Several inputs together exceed a total cap.
    #[error("inputs together are larger than the {} total cap", format_size(*.cap))]
    BudgetExhausted {
        /// The total cap, in bytes.
        cap: u64,
    },
    /// The input is not UTF-8 text.
    #[error("is not UTF-8 text")]
    NotUtf8,
    /// Any other I/O error (permissions, a read error).
    #[error(transparent)]
    Io(std::io::Error),
}

impl ReadErrorKind {
    /// Maps an I/O error, telling a missing file apart.
    pub fn from_io(error: std::io::Error) -> Self {
        match error.kind() {
            std::io::ErrorKind::NotFound => Self::NotFound,
            _ => Self::Io(error),
        }
    }
}

/// A byte count as people write caps: `512 B`, `64 KiB`, `8 MiB`, `1.5 GiB`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_names_each_fact_once() {
        let error = ReadError::new("a.yaml", ReadErrorKind::TooLarge { cap: 1024 });
        assert!(std::error::Error::source(&error).is_none());
        let denied = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied");
        let error = ReadError::new("b.yaml", ReadErrorKind::Io(denied));
        assert_eq!(error.to_string(), "b.yaml: denied");
        assert!(std::error::Error::source(&error).is_none());
    }

    #[test]
    fn sizes_read_like_caps() {
        assert_eq!(format_size(0), "0 B");
        assert_eq!(format_size(1023), "1023 B");
        assert_eq!(format_size(1024), "1 KiB");
        assert_eq!(format_size(8 << 20), "8 MiB");
        assert_eq!(format_size(3 << 29), "1.5 GiB");
        assert_eq!(format_size(u64::MAX), "16777216 TiB");
    }
}
