//! Reading a snapshot tarball under caps: the compressed file, each member and the whole
//! decompressed stream, with fixed, content-free texts for a file that is no gzip or no tar.

use std::cell::Cell;
use std::io::Read;
use std::path::Path;
use std::rc::Rc;

use flate2::read::GzDecoder;

use super::{
    ObjectSink, SnapshotError, SnapshotLimits, add_json_from_reader, add_text, is_json,
    is_object_file, printable,
};

/// Reads every object file of the `.tar.gz` at `path` into `sink`: JSON members parsed as they
/// are decompressed, YAML members read whole first.
pub(super) fn read_tarball(
    sink: &mut dyn ObjectSink,
    path: &Path,
    limits: &SnapshotLimits,
) -> Result<(), SnapshotError> {
    let compressed = bounded_input::read_file(path, limits.total)?;
    let stream = Metered::new(GzDecoder::new(&compressed[..]), limits.total);
    let watch = stream.watch();
    let mut archive = tar::Archive::new(stream);
    let entries = archive
        .entries()
        .map_err(|e| watch.failure(path, limits, &e))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| watch.failure(path, limits, &e))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let member = entry
            .path()
            .map_err(|e| watch.failure(path, limits, &e))?
            .into_owned();
        if !is_object_file(&member) {
            continue;
        }
        let location = printable(&format!("{}:{}", path.display(), member.display()));
        if is_json(&member) {
            let io_failure = |error| watch.failure(path, limits, &error);
            add_json_from_reader(sink, &location, &mut entry, limits.per_file, io_failure)?;
            continue;
        }
        let bytes = bounded_input::read_capped(&mut entry, limits.per_file, &location).map_err(
            |e| match e.kind {
                bounded_input::ReadErrorKind::Io(io) => watch.failure(path, limits, &io),
                _ => SnapshotError::Read(e),
            },
        )?;
        let text = String::from_utf8(bytes).map_err(|_| {
            SnapshotError::Read(bounded_input::ReadError::new(
                &location,
                bounded_input::ReadErrorKind::NotUtf8,
            ))
        })?;
        add_text(sink, &location, &member, &text)?;
    }
    Ok(())
}

/// What the decompressed stream saw, shared with whoever reads the tar above it.
#[derive(Default)]
struct Seen {
    /// More than the total cap was asked for.
    over_cap: Cell<bool>,
    /// The gzip decoder itself failed (a bad header, a corrupt stream).
    gzip_failed: Cell<bool>,
}

/// A reader that counts what passes through it and fails past `cap`, remembering why it failed,
/// so an error surfacing from the tar parser above can be told apart from the decompressor's.
struct Metered<R> {
    inner: R,
    left: u64,
    seen: Rc<Seen>,
}

impl<R: Read> Metered<R> {
    fn new(inner: R, cap: u64) -> Self {
        Metered {
            inner,
            left: cap,
            seen: Rc::default(),
        }
    }

    fn watch(&self) -> Watch {
        Watch(Rc::clone(&self.seen))
    }
}

impl<R: Read> Read for Metered<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            // one more byte than the cap: is there any?
            let mut probe = [0u8; 1];
            if self
                .inner
                .read(&mut probe)
                .map_err(|e| self.gzip_error(e))?
                == 0
            {
                return Ok(0);
            }
            self.seen.over_cap.set(true);
            return Err(std::io::Error::other("decompressed stream over the cap"));
        }
        let room = usize::try_from(self.left)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = self
            .inner
            .read(&mut buf[..room])
            .map_err(|e| self.gzip_error(e))?;
        self.left -= n as u64;
        Ok(n)
    }
}

impl<R> Metered<R> {
    fn gzip_error(&self, error: std::io::Error) -> std::io::Error {
        self.seen.gzip_failed.set(true);
        error
    }
}

/// The reader's side of [`Seen`].
struct Watch(Rc<Seen>);

impl Watch {
    /// The error for a failure while reading the tarball, in fixed words: the cap, a gzip
    /// problem or a tar problem. The underlying text is not used: tar's quotes header bytes.
    fn failure(
        &self,
        path: &Path,
        limits: &SnapshotLimits,
        error: &std::io::Error,
    ) -> SnapshotError {
        let path = path.to_path_buf();
        if self.0.over_cap.get() {
            return SnapshotError::DecompressedTooLarge {
                path,
                cap: limits.total,
            };
        }
        if self.0.gzip_failed.get() {
            let what = match error.kind() {
                std::io::ErrorKind::UnexpectedEof => "the compressed stream ends early",
                std::io::ErrorKind::InvalidInput => "no gzip header",
                _ => "the compressed stream is corrupt",
            };
            return SnapshotError::NotGzip { path, what };
        }
        let what = match error.kind() {
            std::io::ErrorKind::UnexpectedEof => "the archive ends inside a member",
            _ => "a member header is malformed",
        };
        SnapshotError::NotTar { path, what }
    }
}
