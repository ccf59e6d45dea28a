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
    let items: Vec<&[u8]> = state
        .workloads
        .iter()
        .map(|w| w.raw.as_str().as_bytes())
        .collect();
    let joined = items.join(&b",\n"[..]);
    let workloads = Member {
        name: "snapshot/workloads.json",
        size: joined.len() as u64,
        body: &mut joined.as_slice(),
    };
    write_tarball(state, workloads, file)
}

/// Writes the tarball of `policy`'s templates, Constraints and Namespaces and the `workloads`
/// member to a temporary file next to `file`, then renames it over `file`.
fn write_tarball(
    policy: &ClusterState,
    workloads: Member<'_>,
    file: &Path,
) -> Result<(), SnapshotError> {
    let dir = parent(file);
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
    let parts: [(&str, Vec<&RawObject>); 5] = [
        (
            "snapshot/constraints.json",
            policy.constraints.iter().map(|c| &c.raw).collect(),
        ),
        (
            "snapshot/constrainttemplates.json",
            policy.templates.iter().map(|t| &t.raw).collect(),
        ),
        (
            "snapshot/expansiontemplates.json",
            policy.expansion_templates.iter().map(|e| &e.raw).collect(),
        ),
        (
            "snapshot/mutators.json",
            policy.mutators.iter().map(|m| &m.raw).collect(),
        ),
        (
            "snapshot/namespaces.json",
            policy.namespaces.iter().map(|n| &n.raw).collect(),
        ),
    ];
    for (name, raws) in &parts {
        let items: Vec<&[u8]> = raws.iter().map(|raw| raw.as_str().as_bytes()).collect();
        let joined = items.join(&b",\n"[..]);
        let member = Member {
            name,
            size: joined.len() as u64,
            body: &mut joined.as_slice(),
        };
        append_list(&mut builder, member, file)?;
    }
    append_list(&mut builder, workloads, file)?;
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

/// Appends `member` as a `kind: List` JSON file, mode 0644, mtime 0.
fn append_list<W: Write>(
    builder: &mut tar::Builder<W>,
    member: Member<'_>,
    file: &Path,
) -> Result<(), SnapshotError> {
    const HEAD: &[u8] = b"{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[\n";
    const TAIL: &[u8] = b"\n]}\n";
    let size = HEAD.len() as u64 + member.size + TAIL.len() as u64;
    let mut header = tar::Header::new_gnu();
    header.set_size(size);
    header.set_mode(0o644);
    header.set_mtime(0);
    header.set_uid(0);
    header.set_gid(0);
    header.set_entry_type(tar::EntryType::Regular);
    let body = HEAD.chain(member.body.take(member.size)).chain(TAIL);
    builder
        .append_data(&mut header, member.name, body)
        .map_err(io("writing", file))
}

/// A snapshot written as a run streams its workloads: each workload is appended to a temporary
/// file as it goes by ([`SnapshotWriter::add`]), and [`SnapshotWriter::finish`] writes the
/// tarball of [`save_snapshot`] with the policy side and those workloads (in the order they were
/// added; reading the snapshot back sorts them). Nothing of a workload is held in memory.
#[derive(Debug)]
pub struct SnapshotWriter {
    file: std::path::PathBuf,
    workloads: std::io::BufWriter<tempfile::NamedTempFile>,
    added: usize,
    bytes: u64,
}

impl SnapshotWriter {
    /// Starts a snapshot to be saved as `file` (checked as [`save_snapshot`] checks it).
    pub fn create(file: &Path) -> Result<SnapshotWriter, SnapshotError> {
        check_target(file)?;
        let temp = tempfile::Builder::new()
            .prefix(".snapshot-workloads-")
            .suffix(".tmp")
            .tempfile_in(parent(file))
            .map_err(io("creating a file in", parent(file)))?;
        Ok(SnapshotWriter {
            file: file.to_path_buf(),
            workloads: std::io::BufWriter::new(temp),
            added: 0,
            bytes: 0,
        })
    }

    /// Appends one workload.
    pub fn add(&mut self, workload: &crate::model::Workload) -> Result<(), SnapshotError> {
        let separator: &[u8] = if self.added == 0 { b"" } else { b",\n" };
        let text = workload.raw.as_str().as_bytes();
        self.workloads
            .write_all(separator)
            .and_then(|()| self.workloads.write_all(text))
            .map_err(io("writing", &self.file))?;
        self.added += 1;
        self.bytes += (separator.len() + text.len()) as u64;
        Ok(())
    }

    /// Writes the tarball: `policy`'s templates, Constraints and Namespaces (its workloads are
    /// ignored) and the workloads added.
    pub fn finish(self, policy: &ClusterState) -> Result<(), SnapshotError> {
        let file = self.file;
        let temp = self
            .workloads
            .into_inner()
            .map_err(|e| io("writing", &file)(e.into_error()))?;
        let mut body = temp.reopen().map_err(io("reading", temp.path()))?;
        let workloads = Member {
            name: "snapshot/workloads.json",
            size: self.bytes,
            body: &mut body,
        };
        write_tarball(policy, workloads, &file)
    }
}

/// One tarball member whose items are read from `body` (`size` bytes: the items joined by
/// `,\n`, without the list around them).
struct Member<'a> {
    name: &'static str,
    size: u64,
    body: &'a mut dyn Read,
}

fn parent(file: &Path) -> &Path {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
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
