//! Writing a snapshot: the model as a deterministic `.tar.gz`, never through a symlink.

use std::io::{Read, Write};
use std::path::Path;

use flate2::Compression;
use flate2::write::GzEncoder;

use super::{SnapshotError, io};
use crate::model::{ClusterState, RawObject};

/// Writes `state` as a deterministic `.tar.gz` (see the module documentation).
///
/// `file` must not be a symlink or a directory. The tarball is written to a temporary file in
/// the same directory and renamed over `file`, so a symlink planted there is replaced, never
/// followed, and a failed write leaves no half-written snapshot.
pub fn save_snapshot(state: &ClusterState, file: &Path) -> Result<(), SnapshotError> {
    check_target(file)?;
    let dir = match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let temp = tempfile::Builder::new()
        .prefix(".snapshot-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(io("creating a file in", dir))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let readable = std::fs::Permissions::from_mode(0o644);
        temp.as_file()
            .set_permissions(readable)
            .map_err(io("creating", temp.path()))?;
    }
    let out = temp.reopen().map_err(io("creating", temp.path()))?;
    let encoder = GzEncoder::new(std::io::BufWriter::new(out), Compression::default());
    let mut builder = tar::Builder::new(encoder);
    let parts: [(&str, Vec<&RawObject>); 6] = [
        (
            "snapshot/constraints.json",
            state.constraints.iter().map(|c| &c.raw).collect(),
        ),
        (
            "snapshot/constrainttemplates.json",
            state.templates.iter().map(|t| &t.raw).collect(),
        ),
        (
            "snapshot/expansiontemplates.json",
            state.expansion_templates.iter().map(|e| &e.raw).collect(),
        ),
        (
            "snapshot/mutators.json",
            state.mutators.iter().map(|m| &m.raw).collect(),
        ),
        (
            "snapshot/namespaces.json",
            state.namespaces.iter().map(|n| &n.raw).collect(),
        ),
        (
            "snapshot/workloads.json",
            state.workloads.iter().map(|w| &w.raw).collect(),
        ),
    ];
    for (member, raws) in &parts {
        let mut pieces: Vec<&[u8]> = Vec::with_capacity(raws.len() * 2 + 2);
        pieces.push(b"{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[\n");
        for (i, raw) in raws.iter().enumerate() {
            if i > 0 {
                pieces.push(b",\n");
            }
            pieces.push(raw.as_str().as_bytes());
        }
        pieces.push(b"\n]}\n");
        let size: usize = pieces.iter().map(|p| p.len()).sum();
        let mut header = tar::Header::new_gnu();
        header.set_size(size as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        header.set_entry_type(tar::EntryType::Regular);
        builder
            .append_data(&mut header, member, Pieces::new(pieces))
            .map_err(io("writing", file))?;
    }
    let encoder = builder.into_inner().map_err(io("writing", file))?;
    let mut writer = encoder.finish().map_err(io("writing", file))?;
    writer.flush().map_err(io("writing", file))?;
    drop(writer);
    check_target(file)?;
    temp.persist(file).map_err(|e| SnapshotError::Io {
        action: "writing",
        path: file.to_path_buf(),
        source: e.error,
    })?;
    Ok(())
}

/// Fails when `file` is a symlink or a directory (a missing file is fine).
pub(crate) fn check_target(file: &Path) -> Result<(), SnapshotError> {
    let what = match std::fs::symlink_metadata(file) {
        Ok(meta) if meta.file_type().is_symlink() => "is a symlink",
        Ok(meta) if meta.is_dir() => "is a directory",
        _ => return Ok(()),
    };
    Err(SnapshotError::NotAFileTarget {
        path: file.to_path_buf(),
        what,
    })
}

/// A reader over borrowed byte slices, so a large part is never copied into one buffer.
struct Pieces<'a> {
    pieces: Vec<&'a [u8]>,
    index: usize,
    offset: usize,
}

impl<'a> Pieces<'a> {
    fn new(pieces: Vec<&'a [u8]>) -> Pieces<'a> {
        Pieces {
            pieces,
            index: 0,
            offset: 0,
        }
    }
}

impl Read for Pieces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while let Some(piece) = self.pieces.get(self.index) {
            let rest = &piece[self.offset..];
            if rest.is_empty() {
                self.index += 1;
                self.offset = 0;
                continue;
            }
            let n = rest.len().min(buf.len());
            buf[..n].copy_from_slice(&rest[..n]);
            self.offset += n;
            return Ok(n);
        }
        Ok(0)
    }
}
