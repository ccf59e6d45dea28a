//! Loading manifests from several inputs: a file (every YAML or JSON document), a directory
//! (sorted `*.yaml`, then `*.yml`, then `*.json`, extensions in any case; subdirectories only with
//! `-R`, depth first, symlinked directories not followed, as kubectl walks them) or `-` for stdin,
//! parsed by [`crate::yaml`] (anchors and aliases rejected, `null` documents dropped, other
//! non-mapping documents kept for evaluation to skip, and counted as skipped).
//!
//! An input that yields no manifest is a usage error naming it and what was skipped and why: a
//! pre-submit check that judged nothing must not pass.
//!
//! Every read goes through `bounded-input`: regular files only (a FIFO, `/dev/zero` or a socket,
//! directly or through a symlink, is refused without blocking), at most [`MANIFEST_FILE_CAP`] per
//! file or stdin and [`MANIFESTS_TOTAL_CAP`] over a directory.

use std::path::{Path, PathBuf};

use bounded_input::Budget;

use serde_json::Value;

use crate::yaml::parse_documents;

/// The largest manifest file (or stdin) read.
pub const MANIFEST_FILE_CAP: u64 = 8 * 1024 * 1024;
/// The most read over all the files of a manifest directory.
pub const MANIFESTS_TOTAL_CAP: u64 = 64 * 1024 * 1024;

/// The manifests of a `check`, in order, and the files they came from.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Every non-null document of every file.
    pub manifests: Vec<Value>,
    /// The files, in order; their manifests are consecutive runs of `manifests`.
    pub sources: Vec<Source>,
    /// What was skipped, one entry each (`a.yaml: a string document, not a mapping`).
    pub skipped: Vec<String>,
}

/// One manifest file, or stdin.
#[derive(Debug)]
pub struct Source {
    /// The file's path as given (a directory's entries joined to it), `-` for stdin.
    pub name: String,
    /// How many manifests it holds.
    pub count: usize,
    /// Its text, kept only when an output format points at lines.
    pub text: Option<String>,
}

/// Loads every manifest of every input in order, keeping each file's text when `keep_text`;
/// the error is a one-line message naming the file.
pub fn load(inputs: &[PathBuf], recursive: bool, keep_text: bool) -> Result<Loaded, String> {
    let mut loaded = Loaded::default();
    let mut budget = Budget::new(MANIFESTS_TOTAL_CAP);
    if inputs.iter().filter(|i| *i == Path::new("-")).count() > 1 {
        return Err("stdin (-) is given more than once".to_owned());
    }
    for input in inputs {
        let before = (loaded.mapping_count(), loaded.skipped.len());
        let mut skipped_files = Vec::new();
        if input == Path::new("-") {
            let text = bounded_input::read_capped_to_string(
                std::io::stdin().lock(),
                MANIFEST_FILE_CAP,
                "stdin",
            )
            .map_err(|error| format!("cannot read manifests: {error}"))?;
            budget
                .take(text.len() as u64, "stdin")
                .map_err(|error| format!("cannot read manifests: {error}"))?;
            let documents =
                parse_documents(&text).map_err(|problem| format!("stdin: {problem}"))?;
            loaded.add("-".to_owned(), documents, keep_text.then_some(text));
        } else {
            let files = match std::fs::metadata(input) {
                Ok(metadata) if metadata.is_dir() => {
                    let mut files = Vec::new();
                    directory_files(input, recursive, &mut files, &mut skipped_files)?;
                    files
                }
                // The reference's message for a path that does not exist (a dangling symlink too).
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    return Err(format!("Path not found: {}", input.display()));
                }
                // Anything else is read as a file, which refuses what is not a regular file.
                _ => vec![input.clone()],
            };
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
        }
        if loaded.mapping_count() == before.0 {
            let mut why: Vec<String> = loaded.skipped[before.1..].to_vec();
            why.extend(skipped_files);
            let why = if why.is_empty() {
                "it holds no document".to_owned()
            } else {
                format!("skipped: {}", why.join("; "))
            };
            return Err(format!("no manifest found in {}: {why}", input.display()));
        }
        loaded.skipped.extend(skipped_files);
    }
    Ok(loaded)
}

impl Loaded {
    fn add(&mut self, name: String, documents: Vec<Value>, text: Option<String>) {
        for document in documents.iter().filter(|d| !d.is_object()) {
            self.skipped
                .push(format!("{name}: {}, not a mapping", describe(document)));
        }
        self.sources.push(Source {
            name,
            count: documents.len(),
            text,
        });
        self.manifests.extend(documents);
    }

    /// How many manifests are mappings (the only ones judged).
    fn mapping_count(&self) -> usize {
        self.manifests.iter().filter(|m| m.is_object()).count()
    }

    /// The stderr line that counts and names what was skipped, if anything was.
    pub fn skipped_line(&self) -> Option<String> {
        match self.skipped.len() {
            0 => None,
            n => Some(format!(
                "jobcheck: skipped {n} input{}: {}",
                if n == 1 { "" } else { "s" },
                self.skipped.join("; ")
            )),
        }
    }
}

/// What kind of non-mapping document this is, in words.
fn describe(document: &Value) -> &'static str {
    match document {
        Value::String(_) => "a string document",
        Value::Array(_) => "a list document",
        Value::Number(_) => "a number document",
        Value::Bool(_) => "a boolean document",
        Value::Null | Value::Object(_) => "an empty document",
    }
}

/// One manifest file's text, counted against the inputs' `budget`.
fn read_manifest_file(file: &Path, budget: &mut Budget) -> Result<String, String> {
    let fail = |error: bounded_input::ReadError| format!("cannot read manifest file: {error}");
    let text = bounded_input::read_file_to_string(file, MANIFEST_FILE_CAP).map_err(fail)?;
    budget
        .take(text.len() as u64, &file.display().to_string())
        .map_err(fail)?;
    Ok(text)
}

/// The manifest extensions, in the order a directory's files are read.
const EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// A directory's manifest files into `files`: sorted `*.yaml`, then `*.yml`, then `*.json`
/// (extensions in any case), every entry so named whatever it is (as the reference globs them),
/// so one that is not a regular file is an error when read rather than silently skipped; then,
/// with `recursive`, each subdirectory in sorted order (symlinks are not followed into
/// directories, so a cycle cannot be walked). What is left out goes to `skipped`, with why.
fn directory_files(
    dir: &Path,
    recursive: bool,
    files: &mut Vec<PathBuf>,
    skipped: &mut Vec<String>,
) -> Result<(), String> {
    let fail = |error: std::io::Error| format!("cannot read directory {}: {error}", dir.display());
    let mut by_extension: [Vec<PathBuf>; 3] = Default::default();
    let mut subdirectories = Vec::new();
    let mut others = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(fail)? {
        let entry = entry.map_err(fail)?;
        let path = entry.path();
        if entry.file_type().map_err(fail)?.is_dir() {
            subdirectories.push(path);
            continue;
        }
        let extension = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match EXTENSIONS
            .iter()
            .position(|known| extension.as_deref() == Some(known))
        {
            Some(index) => by_extension[index].push(path),
            None => others.push(path),
        }
    }
    for mut group in by_extension {
        group.sort();
        files.extend(group);
    }
    others.sort();
    for other in others {
        skipped.push(format!(
            "{}: not a *.yaml, *.yml or *.json file",
            other.display()
        ));
    }
    subdirectories.sort();
    for subdirectory in subdirectories {
        if recursive {
            directory_files(&subdirectory, recursive, files, skipped)?;
        } else {
            skipped.push(format!(
                "{}: a directory (give -R to read it)",
                subdirectory.display()
            ));
        }
    }
    Ok(())
}
