//! Snapshots: the model read from files instead of a cluster, and a run's model saved as a
//! `.tar.gz` that reads back to the same model.
//!
//! [`read_snapshot`] takes a directory (walked recursively in name order; `.yaml`, `.yml` and
//! `.json` files, others skipped as gator skips them), a single such file, or a `.tar.gz`/`.tgz`
//! written by [`save_snapshot`] (or any tarball of such files). A file holds one object, several
//! YAML documents, a JSON stream, or lists (`kind: List` or `kind: <Kind>List`; items without
//! `apiVersion`/`kind` take them from a typed list). Every object must be a ConstraintTemplate, a
//! Constraint, a Namespace or a workload; anything else is an error naming the file.
//!
//! [`save_snapshot`] writes one `kind: List` JSON file per part (`snapshot/constrainttemplates.json`,
//! `snapshot/constraints.json`, `snapshot/namespaces.json`, `snapshot/workloads.json`), each item
//! the object exactly as the run held it ([`crate::model::RawObject`]), in a deterministic tarball
//! (sorted entries, mode 0644, mtime 0). Extracted, it is a snapshot directory too.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use serde::Deserialize;
use serde_json::Value;

use crate::model::{ClusterState, ModelError, RawObject, classify, normalize};

/// Errors while reading or writing a snapshot. Every text names the file (and document).
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// A file or directory could not be read or written.
    #[error("{action} {}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// A YAML document does not parse.
    #[error("{location}: invalid YAML")]
    Yaml {
        /// File (and tarball member).
        location: String,
        /// The parse error.
        #[source]
        source: serde_yaml::Error,
    },
    /// A JSON document does not parse.
    #[error("{location}: invalid JSON")]
    Json {
        /// File (and tarball member).
        location: String,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// An object is malformed or of an unsupported kind.
    #[error("{location}: document {document}")]
    Object {
        /// File (and tarball member).
        location: String,
        /// 1-based document number in the file.
        document: usize,
        /// What is wrong.
        #[source]
        source: ModelError,
    },
    /// The objects together are inconsistent (a duplicate).
    #[error("snapshot {}", path.display())]
    State {
        /// The snapshot path.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: ModelError,
    },
    /// The path is neither a directory, a `.yaml`/`.yml`/`.json` file nor a `.tar.gz`/`.tgz`.
    #[error("{}: not a snapshot (expected a directory, a .yaml/.yml/.json file or a .tar.gz)", path.display())]
    NotASnapshot {
        /// The path.
        path: PathBuf,
    },
}

/// Reads a snapshot (directory, file or tarball) into the model, unfiltered; apply
/// [`ClusterState::restrict_to`] to keep what a run's configuration selects.
pub fn read_snapshot(path: &Path) -> Result<ClusterState, SnapshotError> {
    let mut state = ClusterState::default();
    let meta = std::fs::metadata(path).map_err(io("reading", path))?;
    let text_name = path.to_string_lossy().to_ascii_lowercase();
    if meta.is_dir() {
        let mut files = Vec::new();
        walk(path, &mut files)?;
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).map_err(io("reading", &file))?;
            add_text(&mut state, &file.display().to_string(), &file, &text)?;
        }
    } else if text_name.ends_with(".tar.gz") || text_name.ends_with(".tgz") {
        read_tarball(&mut state, path)?;
    } else if is_object_file(path) {
        let text = std::fs::read_to_string(path).map_err(io("reading", path))?;
        add_text(&mut state, &path.display().to_string(), path, &text)?;
    } else {
        return Err(SnapshotError::NotASnapshot {
            path: path.to_path_buf(),
        });
    }
    state.finish().map_err(|source| SnapshotError::State {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(state)
}

/// Parses snapshot text (YAML documents, a JSON stream, lists) into the model, unfiltered.
/// `name` decides the format (`.json` = JSON, anything else = YAML) and names errors.
pub fn read_snapshot_text(name: &str, text: &str) -> Result<ClusterState, SnapshotError> {
    let mut state = ClusterState::default();
    add_text(&mut state, name, Path::new(name), text)?;
    state.finish().map_err(|source| SnapshotError::State {
        path: PathBuf::from(name),
        source,
    })?;
    Ok(state)
}

fn is_object_file(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "yaml" | "yml" | "json"))
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), SnapshotError> {
    for entry in std::fs::read_dir(dir).map_err(io("reading", dir))? {
        let entry = entry.map_err(io("reading", dir))?;
        let path = entry.path();
        let file_type = entry.file_type().map_err(io("reading", &path))?;
        if file_type.is_dir() {
            walk(&path, out)?;
        } else if is_object_file(&path) {
            out.push(path);
        }
    }
    Ok(())
}

fn read_tarball(state: &mut ClusterState, path: &Path) -> Result<(), SnapshotError> {
    let file = std::fs::File::open(path).map_err(io("opening", path))?;
    let mut archive = tar::Archive::new(GzDecoder::new(std::io::BufReader::new(file)));
    let entries = archive.entries().map_err(io("reading", path))?;
    for entry in entries {
        let mut entry = entry.map_err(io("reading", path))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let member = entry.path().map_err(io("reading", path))?.into_owned();
        if !is_object_file(&member) {
            continue;
        }
        let mut text = String::new();
        entry
            .read_to_string(&mut text)
            .map_err(io("reading", path))?;
        let location = format!("{}:{}", path.display(), member.display());
        add_text(state, &location, &member, &text)?;
    }
    Ok(())
}

fn add_text(
    state: &mut ClusterState,
    location: &str,
    name: &Path,
    text: &str,
) -> Result<(), SnapshotError> {
    let is_json = name
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let mut documents = Vec::new();
    if is_json {
        for document in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
            documents.push(document.map_err(|source| SnapshotError::Json {
                location: location.to_string(),
                source,
            })?);
        }
    } else {
        for document in serde_yaml::Deserializer::from_str(text) {
            let value = Value::deserialize(document).map_err(|source| SnapshotError::Yaml {
                location: location.to_string(),
                source,
            })?;
            documents.push(value);
        }
    }
    for (index, document) in documents.into_iter().enumerate() {
        let wrap = |source| SnapshotError::Object {
            location: location.to_string(),
            document: index + 1,
            source,
        };
        for object in expand(document) {
            state.push(classify(object).map_err(wrap)?);
        }
    }
    Ok(())
}

/// A document's objects: nothing for an empty document, the items of a list (typed from a
/// `<Kind>List` when they lack `apiVersion`/`kind`), else the document itself.
fn expand(document: Value) -> Vec<Value> {
    match document {
        Value::Null => Vec::new(),
        Value::Object(mut map) => {
            let kind = map
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let is_list = kind.ends_with("List") && map.get("items").is_some_and(Value::is_array);
            if !is_list {
                return vec![normalize(Value::Object(map), "", "")];
            }
            let api_version = map
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let item_kind = kind.strip_suffix("List").unwrap_or("").to_string();
            let (item_version, item_kind) = if item_kind.is_empty() {
                (String::new(), String::new())
            } else {
                (api_version, item_kind)
            };
            match map.remove("items") {
                Some(Value::Array(items)) => items
                    .into_iter()
                    .map(|item| normalize(item, &item_version, &item_kind))
                    .collect(),
                _ => Vec::new(),
            }
        }
        other => vec![other],
    }
}

/// Writes `state` as a deterministic `.tar.gz` (see the module documentation).
pub fn save_snapshot(state: &ClusterState, file: &Path) -> Result<(), SnapshotError> {
    let out = std::fs::File::create(file).map_err(io("creating", file))?;
    let encoder = GzEncoder::new(std::io::BufWriter::new(out), Compression::default());
    let mut builder = tar::Builder::new(encoder);
    let parts: [(&str, Vec<&RawObject>); 4] = [
        (
            "snapshot/constraints.json",
            state.constraints.iter().map(|c| &c.raw).collect(),
        ),
        (
            "snapshot/constrainttemplates.json",
            state.templates.iter().map(|t| &t.raw).collect(),
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
    Ok(())
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

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> SnapshotError {
    let path = path.to_path_buf();
    move |source| SnapshotError::Io {
        action,
        path,
        source,
    }
}
