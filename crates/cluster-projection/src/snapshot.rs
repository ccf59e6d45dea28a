//! Snapshots: the model read from files instead of a cluster, and a run's model saved as a
//! `.tar.gz` that reads back to the same model.
//!
//! [`read_snapshot`] takes a directory (walked recursively in name order; `.yaml`, `.yml` and
//! `.json` files, others skipped as gator skips them), a single such file, or a `.tar.gz`/`.tgz`
//! written by [`save_snapshot`] (or any tarball of such files). A file holds one object, several
//! YAML documents, a JSON stream, or lists (`kind: List` or `kind: <Kind>List`; items without
//! `apiVersion`/`kind` take them from a typed list). Every object must be a ConstraintTemplate, a
//! Constraint, an ExpansionTemplate, a mutator, a Namespace or a workload; anything else is an error naming
//! the file.
//!
//! Reading is bounded ([`SnapshotLimits`]): every file or tarball member is read through
//! `bounded-input` (regular files only, so a FIFO or a symlink to `/dev/zero` is refused at once),
//! each under a per-file cap and all of them under a total cap; a tarball's decompressed stream
//! (skipped members included) counts against the total too, so a decompression bomb stops at the
//! cap. Walks stop at a depth and an entry count. YAML nesting is checked before the parser sees
//! a document. Errors name the file (control characters in names escaped) and the cap, and never
//! quote the content.
//!
//! [`save_snapshot`] writes one `kind: List` JSON file per part (`snapshot/constrainttemplates.json`,
//! `snapshot/constraints.json`, `snapshot/expansiontemplates.json`, `snapshot/mutators.json`,
//! `snapshot/namespaces.json`, `snapshot/workloads.json`), each item
//! the object exactly as the run held it ([`crate::model::RawObject`]), in a deterministic tarball
//! (sorted entries, mode 0644, mtime 0). Extracted, it is a snapshot directory too. It never
//! writes through a symlink: the tarball is written next to the target and renamed over it.

mod archive;
mod json_stream;
pub(crate) mod paged;
mod save;

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use bounded_input::{Budget, CappedReader, NestingError, ReadError, ReadErrorKind, YAML_MAX_DEPTH};
use serde_json::Value;

use crate::model::{ClusterState, Item, ModelError, classify, normalize};

pub use paged::{SnapshotWorkloads, open_snapshot, open_snapshot_with};
pub use save::{SnapshotWriter, save_snapshot};

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
    /// A file or member could not be read: missing, not a regular file, over a cap.
    #[error(transparent)]
    Read(#[from] bounded_input::ReadError),
    /// A tarball decompresses to more than the total cap.
    #[error("{}: decompressed content is larger than the {} total cap", path.display(), bounded_input::format_size(*.cap))]
    DecompressedTooLarge {
        /// The tarball.
        path: PathBuf,
        /// The total cap, in bytes.
        cap: u64,
    },
    /// A `.tar.gz` that is not gzip-compressed, or whose compressed stream is corrupt.
    #[error("{}: is not a valid gzip file ({what})", path.display())]
    NotGzip {
        /// The file.
        path: PathBuf,
        /// What is wrong, in fixed words.
        what: &'static str,
    },
    /// A gzip stream that does not hold a tar archive.
    #[error("{}: is not a tar archive ({what})", path.display())]
    NotTar {
        /// The file.
        path: PathBuf,
        /// What is wrong, in fixed words.
        what: &'static str,
    },
    /// A directory walk went deeper or wider than the limits.
    #[error("{}: {what}", path.display())]
    TooMany {
        /// The directory.
        path: PathBuf,
        /// Which limit, e.g. `more than 16 directory levels`.
        what: String,
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
    /// A YAML file nests deeper than the parser is allowed to go.
    #[error("{location}: invalid YAML")]
    YamlNesting {
        /// File (and tarball member).
        location: String,
        /// How deep, and where.
        #[source]
        source: NestingError,
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
    /// Reading a snapshot's workloads a page at a time ([`open_snapshot`]) stopped before the
    /// end: the reading thread failed unexpectedly (or, inside it, nobody took the pages any
    /// more).
    #[error("{}: reading the workloads stopped before the end", path.display())]
    Interrupted {
        /// The snapshot.
        path: PathBuf,
    },
    /// `save_snapshot` was pointed at a symlink (or a directory).
    #[error("{}: {what}; refusing to write there", path.display())]
    NotAFileTarget {
        /// The path.
        path: PathBuf,
        /// `is a symlink` or `is a directory`.
        what: &'static str,
    },
}

/// How much a snapshot may hold. The defaults fit a saved snapshot of a large cluster (a
/// 25,000-workload snapshot is about 30 MiB decompressed) with room to spare, and keep memory
/// bounded whatever the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotLimits {
    /// The largest single file or tarball member (default 256 MiB).
    pub per_file: u64,
    /// The largest total: every file read, or a tarball's whole decompressed stream (default
    /// 512 MiB). A compressed tarball larger than this is refused too.
    pub total: u64,
    /// The deepest directory level walked (default 16).
    pub max_depth: usize,
    /// The most directory entries looked at (default 1,000,000).
    pub max_entries: usize,
}

impl Default for SnapshotLimits {
    fn default() -> Self {
        SnapshotLimits {
            per_file: 256 << 20,
            total: 512 << 20,
            max_depth: 16,
            max_entries: 1_000_000,
        }
    }
}

/// Reads a snapshot (directory, file or tarball) into the model, unfiltered, within the default
/// [`SnapshotLimits`]; apply [`ClusterState::restrict_to`] to keep what a run's configuration
/// selects.
pub fn read_snapshot(path: &Path) -> Result<ClusterState, SnapshotError> {
    read_snapshot_with(path, &SnapshotLimits::default())
}

/// [`read_snapshot`] within `limits`.
pub fn read_snapshot_with(
    path: &Path,
    limits: &SnapshotLimits,
) -> Result<ClusterState, SnapshotError> {
    let mut state = ClusterState::default();
    read_into(&mut state, path, limits)?;
    state.finish().map_err(|source| SnapshotError::State {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(state)
}

/// Where the objects read from a snapshot go: the whole model ([`ClusterState`]), or, for a
/// snapshot read a page at a time, the policy side and the workload pages apart
/// ([`paged`]).
pub(crate) trait ObjectSink {
    /// Takes one classified object; an error ends the read.
    fn add(&mut self, item: Item) -> Result<(), SnapshotError>;
}

impl ObjectSink for ClusterState {
    fn add(&mut self, item: Item) -> Result<(), SnapshotError> {
        self.push(item);
        Ok(())
    }
}

/// Reads every object of the snapshot at `path` (directory, file or tarball) into `sink`.
fn read_into(
    sink: &mut dyn ObjectSink,
    path: &Path,
    limits: &SnapshotLimits,
) -> Result<(), SnapshotError> {
    let meta = std::fs::metadata(path).map_err(io("reading", path))?;
    let text_name = path.to_string_lossy().to_ascii_lowercase();
    if meta.is_dir() {
        let mut files = Vec::new();
        let mut walk = Walk {
            limits,
            root: path,
            entries: 0,
        };
        walk.dir(path, 0, &mut files)?;
        files.sort();
        let mut budget = Budget::new(limits.total);
        for file in files {
            add_file(sink, &file, limits, &mut budget)?;
        }
        Ok(())
    } else if text_name.ends_with(".tar.gz") || text_name.ends_with(".tgz") {
        archive::read_tarball(sink, path, limits)
    } else if is_object_file(path) {
        add_file(sink, path, limits, &mut Budget::new(limits.total))
    } else {
        Err(SnapshotError::NotASnapshot {
            path: path.to_path_buf(),
        })
    }
}

/// Adds the objects of one snapshot file and takes its size from `budget`: JSON is parsed as it
/// is read, YAML read whole first (the YAML parser needs the text).
fn add_file(
    sink: &mut dyn ObjectSink,
    file: &Path,
    limits: &SnapshotLimits,
    budget: &mut Budget,
) -> Result<(), SnapshotError> {
    let location = printable(&file.display().to_string());
    if !is_json(file) {
        let text = read_counted(file, limits, budget)?;
        return add_text(sink, &location, file, &text);
    }
    let reader = bounded_input::open_file(file)?;
    let cap = budget.next_cap(limits.per_file);
    let io_failure = |error| SnapshotError::Read(ReadError::new(file, ReadErrorKind::Io(error)));
    match add_json_from_reader(sink, &location, reader, cap, io_failure) {
        Ok(bytes) => Ok(budget.take(bytes, &location)?),
        Err(SnapshotError::Read(error))
            if matches!(error.kind, ReadErrorKind::TooLarge { .. }) && cap < limits.per_file =>
        {
            // What ran out is the total budget, not the file's own cap: say so.
            match budget.take(cap.saturating_add(1), &location) {
                Err(exhausted) => Err(exhausted.into()),
                Ok(()) => Err(SnapshotError::Read(error)),
            }
        }
        Err(other) => Err(other),
    }
}

/// Reads one file under the per-file cap and takes its size from the total budget.
fn read_counted(
    path: &Path,
    limits: &SnapshotLimits,
    budget: &mut Budget,
) -> Result<String, SnapshotError> {
    let text = bounded_input::read_file_to_string(path, limits.per_file)?;
    budget.take(text.len() as u64, &path.display().to_string())?;
    Ok(text)
}

/// Parses snapshot text (YAML documents, a JSON stream, lists) into the model, unfiltered.
/// `name` decides the format (`.json` = JSON, anything else = YAML) and names errors.
pub fn read_snapshot_text(name: &str, text: &str) -> Result<ClusterState, SnapshotError> {
    let mut state = ClusterState::default();
    add_text(&mut state, &printable(name), Path::new(name), text)?;
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

/// A bounded recursive walk of a snapshot directory (symlinks are not followed into).
struct Walk<'a> {
    limits: &'a SnapshotLimits,
    root: &'a Path,
    entries: usize,
}

impl Walk<'_> {
    fn dir(
        &mut self,
        dir: &Path,
        depth: usize,
        out: &mut Vec<PathBuf>,
    ) -> Result<(), SnapshotError> {
        if depth > self.limits.max_depth {
            return Err(self.too_many(format!(
                "more than {} directory levels",
                self.limits.max_depth
            )));
        }
        for entry in std::fs::read_dir(dir).map_err(io("reading", dir))? {
            let entry = entry.map_err(io("reading", dir))?;
            self.entries += 1;
            if self.entries > self.limits.max_entries {
                return Err(self.too_many(format!(
                    "more than {} directory entries",
                    self.limits.max_entries
                )));
            }
            let path = entry.path();
            let file_type = entry.file_type().map_err(io("reading", &path))?;
            if file_type.is_dir() {
                self.dir(&path, depth + 1, out)?;
            } else if is_object_file(&path) {
                out.push(path);
            }
        }
        Ok(())
    }

    fn too_many(&self, what: String) -> SnapshotError {
        SnapshotError::TooMany {
            path: self.root.to_path_buf(),
            what,
        }
    }
}

/// `text` with control characters written as `\u{1b}`, so a file or member name cannot move
/// the cursor, clear a terminal or forge log lines.
pub(crate) fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

fn add_text(
    sink: &mut dyn ObjectSink,
    location: &str,
    name: &Path,
    text: &str,
) -> Result<(), SnapshotError> {
    if is_json(name) {
        return add_json(
            sink,
            location,
            &mut serde_json::Deserializer::from_str(text),
        );
    }
    bounded_input::check_yaml_nesting(text, YAML_MAX_DEPTH).map_err(|source| {
        SnapshotError::YamlNesting {
            location: location.to_string(),
            source,
        }
    })?;
    let mut documents = Vec::new();
    // A leading BOM skipped and merge keys applied, as kubectl reads YAML (bounded-input).
    for value in bounded_input::yaml_documents::<Value>(text) {
        let value = value.map_err(|source| SnapshotError::Yaml {
            location: location.to_string(),
            source,
        })?;
        documents.push(value);
    }
    for (index, document) in documents.into_iter().enumerate() {
        let wrap = |source| SnapshotError::Object {
            location: location.to_string(),
            document: index + 1,
            source,
        };
        for object in expand(document) {
            sink.add(classify(object).map_err(wrap)?)?;
        }
    }
    Ok(())
}

/// Whether `name` is read as JSON (`.json`, any case); everything else is YAML.
fn is_json(name: &Path) -> bool {
    name.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

/// Adds the objects of a JSON stream object by object: a list's items are classified (and
/// dropped as values) as they are parsed.
fn add_json<'de, R: serde_json::de::Read<'de>>(
    sink: &mut dyn ObjectSink,
    location: &str,
    deserializer: &mut serde_json::Deserializer<R>,
) -> Result<(), SnapshotError> {
    let mut classify_one = |document: usize, object: Value| {
        sink.add(classify(object).map_err(|source| SnapshotError::Object {
            location: location.to_string(),
            document,
            source,
        })?)
    };
    json_stream::for_each_object(deserializer, &mut classify_one).map_err(|failure| {
        failure.unwrap_or_else(|source| SnapshotError::Json {
            location: location.to_string(),
            source,
        })
    })
}

/// Adds the objects of the JSON file or member `reader` while reading it, so its text is never
/// held whole (a saved `workloads.json` is most of a snapshot). At most `cap` bytes are read; a
/// failure of `reader` itself (a corrupt tarball) becomes `io_failure`'s error. Returns the bytes
/// read.
fn add_json_from_reader(
    sink: &mut dyn ObjectSink,
    location: &str,
    reader: impl Read,
    cap: u64,
    io_failure: impl FnOnce(std::io::Error) -> SnapshotError,
) -> Result<u64, SnapshotError> {
    let mut capped = CappedReader::new(reader, cap);
    let added = add_json(
        sink,
        location,
        &mut serde_json::Deserializer::from_reader(BufReader::with_capacity(
            JSON_READ_BUFFER,
            &mut capped,
        )),
    );
    match added {
        Ok(()) => Ok(capped.bytes_read()),
        Err(_) if capped.over_cap() => Err(SnapshotError::Read(capped.too_large(location))),
        Err(SnapshotError::Json { source, .. }) if source.is_io() => {
            Err(io_failure(std::io::Error::from(source)))
        }
        Err(other) => Err(other),
    }
}

/// The read buffer of a JSON file parsed as it is read.
const JSON_READ_BUFFER: usize = 64 << 10;

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

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> SnapshotError {
    let path = path.to_path_buf();
    move |source| SnapshotError::Io {
        action,
        path,
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(printable("a\x1b[2Jb\n.yaml"), "a\\u{1b}[2Jb\\u{a}.yaml");
        assert_eq!(printable("ünïcode.yaml"), "ünïcode.yaml");
    }
}
