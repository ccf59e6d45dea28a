//! Loading manifests: a file (every YAML document), a directory (sorted `*.yaml` then sorted
//! `*.yml`, not recursive) or `-` for stdin, parsed by [`crate::yaml`] (anchors and aliases
//! rejected, `null` documents dropped, other non-mapping documents kept for evaluation to skip).
//!
//! Every read goes through `bounded-input`: regular files only (a FIFO, `/dev/zero` or a socket,
//! directly or through a symlink, is refused without blocking), at most [`MANIFEST_FILE_CAP`] per
//! file or stdin and [`MANIFESTS_TOTAL_CAP`] over a directory.

use std::path::{Path, PathBuf};

use bounded_input::Budget;

use serde_json::Value;

use crate::yaml::parse_documents;

/// The largest manifest file (or stdin) read.
pub(crate) const MANIFEST_FILE_CAP: u64 = 8 * 1024 * 1024;
/// The most read over all the files of a manifest directory.
pub(crate) const MANIFESTS_TOTAL_CAP: u64 = 64 * 1024 * 1024;

/// The manifests of a `check`, in order, and the files they came from.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    /// Every non-null document of every file.
    pub(crate) manifests: Vec<Value>,
    /// The files, in order; their manifests are consecutive runs of `manifests`.
    pub(crate) sources: Vec<Source>,
}

/// One manifest file, or stdin.
#[derive(Debug)]
pub(crate) struct Source {
    /// The file's path as given (a directory's entries joined to it), `-` for stdin.
    pub(crate) name: String,
    /// How many manifests it holds.
    pub(crate) count: usize,
    /// Its text, kept only when an output format points at lines.
    pub(crate) text: Option<String>,
}

/// Loads every manifest under `path`, keeping each file's text when `keep_text`; the error is a
/// one-line message naming the file.
pub(crate) fn load(path: &Path, keep_text: bool) -> Result<Loaded, String> {
    let mut loaded = Loaded::default();
    if path == Path::new("-") {
        let text = bounded_input::read_capped_to_string(
            std::io::stdin().lock(),
            MANIFEST_FILE_CAP,
            "stdin",
        )
        .map_err(|error| format!("cannot read manifests: {error}"))?;
        let documents = parse_documents(&text).map_err(|problem| format!("stdin: {problem}"))?;
        loaded.add("-".to_owned(), documents, keep_text.then_some(text));
        return Ok(loaded);
    }
    let files = match std::fs::metadata(path) {
        Ok(metadata) if metadata.is_dir() => directory_files(path)?,
        // The reference's message for a path that does not exist (a dangling symlink too).
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("Path not found: {}", path.display()));
        }
        // Anything else is read as a file, which refuses what is not a regular file.
        _ => vec![path.to_path_buf()],
    };
    let mut budget = Budget::new(MANIFESTS_TOTAL_CAP);
    for file in files {
        let text = read_manifest_file(&file, &mut budget)?;
        let documents = parse_documents(&text).map_err(|problem| {
            format!(
                "manifest file {} is not valid YAML: {problem}",
                file.display()
            )
        })?;
        loaded.add(
            file.display().to_string(),
            documents,
            keep_text.then_some(text),
        );
    }
    Ok(loaded)
}

impl Loaded {
    fn add(&mut self, name: String, documents: Vec<Value>, text: Option<String>) {
        self.sources.push(Source {
            name,
            count: documents.len(),
            text,
        });
        self.manifests.extend(documents);
    }
}

/// One manifest file's text, counted against the directory's `budget`.
fn read_manifest_file(file: &Path, budget: &mut Budget) -> Result<String, String> {
    let fail = |error: bounded_input::ReadError| format!("cannot read manifest file: {error}");
    let text = bounded_input::read_file_to_string(file, MANIFEST_FILE_CAP).map_err(fail)?;
    budget
        .take(text.len() as u64, &file.display().to_string())
        .map_err(fail)?;
    Ok(text)
}

/// Sorted `*.yaml` entries, then sorted `*.yml` entries, of a directory: every entry so named,
/// whatever it is (as the reference globs them), so one that is not a regular file is an error
/// when read rather than silently skipped.
fn directory_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|error| format!("cannot read directory {}: {error}", dir.display()))?;
    let mut yaml = Vec::new();
    let mut yml = Vec::new();
    for entry in entries {
        let entry =
            entry.map_err(|error| format!("cannot read directory {}: {error}", dir.display()))?;
        let path = entry.path();
        match path.extension().and_then(|e| e.to_str()) {
            Some("yaml") => yaml.push(path),
            Some("yml") => yml.push(path),
            _ => {}
        }
    }
    yaml.sort();
    yml.sort();
    yaml.extend(yml);
    Ok(yaml)
}
