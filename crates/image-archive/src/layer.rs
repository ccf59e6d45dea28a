//! The one layer: a tar of the entries, sorted by path, parents first, with fixed times and
//! owners so it hashes the same on every build.

use std::collections::BTreeMap;

use crate::ImageError;

/// The modification time of every entry (2025-12-01T00:00:00Z): a fixed instant, so the layer
/// does not change with the build's clock.
pub(crate) const MTIME: u64 = 1_764_547_200;

/// What an entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file with these contents.
    File(Vec<u8>),
    /// A directory.
    Dir,
    /// A symbolic link to this target.
    Symlink(String),
}

/// One file, directory or symlink of the image's filesystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The absolute path inside the image (`/usr/local/bin/app`).
    pub path: String,
    /// Permission bits (`0o755`).
    pub mode: u32,
    /// Owner uid and gid.
    pub owner: (u64, u64),
    /// What it is.
    pub kind: EntryKind,
}

impl Entry {
    /// A root-owned file.
    pub fn file(path: &str, mode: u32, contents: Vec<u8>) -> Entry {
        Entry {
            path: path.into(),
            mode,
            owner: (0, 0),
            kind: EntryKind::File(contents),
        }
    }

    /// A root-owned directory.
    pub fn dir(path: &str, mode: u32) -> Entry {
        Entry {
            path: path.into(),
            mode,
            owner: (0, 0),
            kind: EntryKind::Dir,
        }
    }

    /// A symlink.
    pub fn symlink(path: &str, target: &str) -> Entry {
        Entry {
            path: path.into(),
            mode: 0o777,
            owner: (0, 0),
            kind: EntryKind::Symlink(target.into()),
        }
    }

    /// The same entry owned by `uid:gid`.
    pub fn owned_by(mut self, uid: u64, gid: u64) -> Entry {
        self.owner = (uid, gid);
        self
    }
}

/// The layer tar of `entries`: every parent directory added (root-owned, 0755) unless given,
/// entries in path order.
pub(crate) fn layer_tar(entries: &[Entry]) -> Result<Vec<u8>, ImageError> {
    let mut by_path: BTreeMap<String, &Entry> = BTreeMap::new();
    for entry in entries {
        let path = relative(&entry.path)?;
        if by_path.insert(path.clone(), entry).is_some() {
            return Err(ImageError::Duplicate {
                path: entry.path.clone(),
            });
        }
    }
    let implied = implied_dirs(by_path.keys());
    let mut all: BTreeMap<String, Entry> = implied
        .into_iter()
        .map(|dir| {
            let entry = Entry::dir(&format!("/{dir}"), 0o755);
            (dir, entry)
        })
        .collect();
    for (path, entry) in by_path {
        all.insert(path, entry.clone());
    }
    let mut builder = tar::Builder::new(Vec::new());
    for (path, entry) in &all {
        append(&mut builder, path, entry)?;
    }
    builder.into_inner().map_err(|e| ImageError::Tar {
        path: String::new(),
        message: e.to_string(),
    })
}

fn append(
    builder: &mut tar::Builder<Vec<u8>>,
    path: &str,
    entry: &Entry,
) -> Result<(), ImageError> {
    let tar_error = |e: std::io::Error| ImageError::Tar {
        path: entry.path.clone(),
        message: e.to_string(),
    };
    let mut header = tar::Header::new_ustar();
    header.set_mode(entry.mode);
    header.set_uid(entry.owner.0);
    header.set_gid(entry.owner.1);
    header.set_mtime(MTIME);
    header.set_username("").map_err(tar_error)?;
    header.set_groupname("").map_err(tar_error)?;
    match &entry.kind {
        EntryKind::File(contents) => {
            header.set_entry_type(tar::EntryType::Regular);
            header.set_size(contents.len() as u64);
            builder
                .append_data(&mut header, path, contents.as_slice())
                .map_err(tar_error)
        }
        EntryKind::Dir => {
            header.set_entry_type(tar::EntryType::Directory);
            header.set_size(0);
            builder
                .append_data(&mut header, format!("{path}/"), std::io::empty())
                .map_err(tar_error)
        }
        EntryKind::Symlink(target) => {
            header.set_entry_type(tar::EntryType::Symlink);
            header.set_size(0);
            builder
                .append_link(&mut header, path, target)
                .map_err(tar_error)
        }
    }
}

/// `/a/b/c` → `a/b/c`; refuses empty, `.` and `..` components.
fn relative(path: &str) -> Result<String, ImageError> {
    let bad = |why| ImageError::BadPath {
        path: path.into(),
        why,
    };
    if !path.starts_with('/') {
        return Err(bad("must be absolute"));
    }
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == "..")
    {
        return Err(bad("has an empty, `.` or `..` component"));
    }
    Ok(parts.join("/"))
}

fn implied_dirs<'a>(paths: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut dirs = std::collections::BTreeSet::new();
    for path in paths {
        let mut prefix = String::new();
        let parts: Vec<&str> = path.split('/').collect();
        for part in &parts[..parts.len() - 1] {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            dirs.insert(prefix.clone());
        }
    }
    dirs.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(tar_bytes: &[u8]) -> Vec<(String, u32, u64)> {
        let mut archive = tar::Archive::new(tar_bytes);
        archive
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let header = e.header();
                (
                    e.path().unwrap().to_string_lossy().into_owned(),
                    header.mode().unwrap(),
                    header.uid().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn parents_come_first_and_entries_are_sorted_whatever_the_input_order() {
        let a = [
            Entry::file("/usr/local/bin/app", 0o755, b"x".to_vec()),
            Entry::dir("/work", 0o755).owned_by(65532, 65532),
            Entry::file("/etc/passwd", 0o644, b"root".to_vec()),
        ];
        let mut b = a.clone();
        b.reverse();
        let tar_a = layer_tar(&a).unwrap();
        assert_eq!(tar_a, layer_tar(&b).unwrap());
        assert_eq!(
            members(&tar_a),
            vec![
                ("etc/".into(), 0o755, 0),
                ("etc/passwd".into(), 0o644, 0),
                ("usr/".into(), 0o755, 0),
                ("usr/local/".into(), 0o755, 0),
                ("usr/local/bin/".into(), 0o755, 0),
                ("usr/local/bin/app".into(), 0o755, 0),
                ("work/".into(), 0o755, 65532),
            ]
        );
    }

    #[test]
    fn bad_and_duplicate_paths_are_refused_by_name() {
        let error = layer_tar(&[Entry::dir("/a/../b", 0o755)]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "image entry \"/a/../b\": has an empty, `.` or `..` component"
        );
        let error = layer_tar(&[Entry::dir("rel", 0o755)]).unwrap_err();
        assert!(error.to_string().contains("must be absolute"), "{error}");
        let twice = [Entry::dir("/a", 0o755), Entry::file("/a/", 0o644, vec![])];
        assert_eq!(
            layer_tar(&twice).unwrap_err(),
            ImageError::Duplicate { path: "/a/".into() }
        );
    }
}
