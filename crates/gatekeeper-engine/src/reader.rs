//! Reading objects the way gator does: `gator test`'s source reader (files and directories,
//! `.yaml`/`.yml`/`.json`, recursive, multi-document, numbers as Go `float64`) and
//! `gator verify`'s file reader (split on `"\n---"`, comment and blank lines dropped).

use std::path::{Path, PathBuf};

use serde_json::{Map, Number, Value};

use crate::error::EngineError;

/// The extensions `gator test` reads.
const EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// The largest file the reader reads (a whole cluster's projection is many small files).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// The most the reader reads over all files of one call.
pub const MAX_TOTAL_BYTES: u64 = 4 << 30;

/// Reads one input file as text, within the per-file cap and what is left of `budget`.
fn read_text(path: &Path, budget: &mut bounded_input::Budget) -> Result<String, EngineError> {
    let text = bounded_input::read_file_to_string(path, budget.next_cap(MAX_FILE_BYTES)).map_err(
        |error| match error.kind {
            bounded_input::ReadErrorKind::TooLarge { .. }
                if budget.remaining() < MAX_FILE_BYTES =>
            {
                bounded_input::ReadError::new(
                    path,
                    bounded_input::ReadErrorKind::BudgetExhausted {
                        cap: MAX_TOTAL_BYTES,
                    },
                )
            }
            _ => error,
        },
    )?;
    budget.take(text.len() as u64, &path.display().to_string())?;
    Ok(text)
}

/// Refuses YAML nested deeper than serde_yaml's limit before the parser sees it (libyaml is
/// quadratic in the nesting depth).
fn check_nesting(path: &Path, text: &str) -> Result<(), EngineError> {
    bounded_input::check_yaml_nesting(text, bounded_input::YAML_MAX_DEPTH).map_err(|source| {
        EngineError::Nesting {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// Reads every object from `paths` like `gator test -f`: a file must end in `.yaml`, `.yml` or
/// `.json`; a directory is walked recursively in lexical order and other files are skipped.
/// Each file is a multi-document YAML stream or a stream of JSON objects; empty documents are
/// skipped and every number becomes what Go's `float64` makes of it ([`gator_numbers`]).
/// Standard input is read only through [`read_sources_with_stdin`]. Files are read with
/// [`MAX_FILE_BYTES`] each and [`MAX_TOTAL_BYTES`] together; FIFOs, devices and other
/// non-regular files are refused.
pub fn read_sources(paths: &[PathBuf]) -> Result<Vec<Value>, EngineError> {
    Ok(read_sources_with_origin(paths)?
        .into_iter()
        .map(|(_, object)| object)
        .collect())
}

/// [`read_sources`], with the file each object came from.
pub fn read_sources_with_origin(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Value)>, EngineError> {
    read_sources_with_stdin(paths, None)
}

/// What names standard input, as a path argument and in errors.
pub const STDIN_PATH: &str = "-";

/// [`read_sources_with_origin`] where the path `-` ([`STDIN_PATH`]) is `stdin`, read once to
/// its end within the same caps (a YAML or JSON stream, as `gator test` reads standard input);
/// without `stdin`, `-` is an ordinary path. Objects read from it come from the path `-`; a
/// second `-` adds nothing.
pub fn read_sources_with_stdin(
    paths: &[PathBuf],
    mut stdin: Option<&mut dyn std::io::Read>,
) -> Result<Vec<(PathBuf, Value)>, EngineError> {
    let mut budget = bounded_input::Budget::new(MAX_TOTAL_BYTES);
    let mut objects = Vec::new();
    let add = |file: &Path, text: &str, objects: &mut Vec<(PathBuf, Value)>| {
        objects.extend(
            parse_stream(file, text)?
                .into_iter()
                .map(|object| (file.to_path_buf(), object)),
        );
        Ok::<(), EngineError>(())
    };
    let reads_stdin = stdin.is_some();
    for path in paths {
        if reads_stdin && path.as_os_str() == STDIN_PATH {
            // A second `-` finds standard input already read to its end: nothing more.
            let Some(reader) = stdin.take() else {
                continue;
            };
            let text = bounded_input::read_capped_to_string(
                reader,
                budget.next_cap(MAX_FILE_BYTES),
                "standard input",
            )?;
            budget.take(text.len() as u64, "standard input")?;
            add(path, &text, &mut objects)?;
            continue;
        }
        let meta = std::fs::metadata(path).map_err(|source| EngineError::Io {
            path: path.clone(),
            source,
        })?;
        let mut files = Vec::new();
        if meta.is_dir() {
            walk(path, &mut files)?;
        } else if has_extension(path) {
            files.push(path.clone());
        } else {
            return Err(EngineError::Extension { path: path.clone() });
        }
        for file in files {
            let text = read_text(&file, &mut budget)?;
            add(&file, &text, &mut objects)?;
        }
    }
    Ok(objects)
}

fn has_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| EXTENSIONS.contains(&e))
}

/// Collects readable files below `dir` in `filepath.Walk` order (lexical, depth first).
fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), EngineError> {
    let io = |source| EngineError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries = std::fs::read_dir(dir)
        .map_err(io)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(io)?;
    entries.sort();
    for entry in entries {
        let file_type = std::fs::symlink_metadata(&entry)
            .map_err(|source| EngineError::Io {
                path: entry.clone(),
                source,
            })?
            .file_type();
        if file_type.is_dir() {
            walk(&entry, files)?;
        } else if has_extension(&entry) {
            files.push(entry);
        }
    }
    Ok(())
}

/// Reads one file as `gator test` does (YAML stream, or a JSON object stream when the first
/// non-blank character is `{`).
pub fn read_source_file(path: &Path) -> Result<Vec<Value>, EngineError> {
    let text = read_text(path, &mut bounded_input::Budget::new(MAX_FILE_BYTES))?;
    parse_stream(path, &text)
}

/// Parses a YAML or JSON stream into objects (empty documents skipped, numbers normalised).
pub fn parse_stream(path: &Path, text: &str) -> Result<Vec<Value>, EngineError> {
    // A leading byte-order mark is skipped, as kubectl's decoder does.
    let text = bounded_input::strip_bom(text);
    let mut out = Vec::new();
    if text.trim_start().starts_with('{') {
        for doc in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
            let doc = doc.map_err(|source| EngineError::Json {
                path: path.to_path_buf(),
                source,
            })?;
            push_document(path, gator_numbers(doc), &mut out)?;
        }
        return Ok(out);
    }
    check_nesting(path, text)?;
    // Merge keys applied as the workspace's one YAML rule does (bounded-input).
    for value in bounded_input::yaml_documents::<serde_yaml::Value>(text) {
        let value = value.map_err(|source| EngineError::Yaml {
            path: path.to_path_buf(),
            source,
        })?;
        push_document(path, yaml_to_json(value), &mut out)?;
    }
    Ok(out)
}

/// The JSON type of a value, for errors that must not quote it.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a sequence",
        Value::Object(_) => "a mapping",
    }
}

fn push_document(path: &Path, doc: Value, out: &mut Vec<Value>) -> Result<(), EngineError> {
    match doc {
        Value::Null => Ok(()),
        Value::Object(_) => {
            out.push(doc);
            Ok(())
        }
        other => Err(EngineError::Document {
            path: path.to_path_buf(),
            reason: format!("document is not an object but {}", json_type(&other)),
        }),
    }
}

/// Reads a file the way `gator verify` reads object, inventory, template and constraint files:
/// split on the literal `"\n---"`, delete blank lines and lines whose trimmed text starts with
/// `#`, parse each document as YAML 1.2, skip empty documents.
pub fn read_verify_file(path: &Path) -> Result<Vec<Value>, EngineError> {
    read_verify_file_within(path, &mut bounded_input::Budget::new(MAX_FILE_BYTES))
}

/// [`read_verify_file`] taking its size from `budget` (a Suite's files share one).
pub fn read_verify_file_within(
    path: &Path,
    budget: &mut bounded_input::Budget,
) -> Result<Vec<Value>, EngineError> {
    let text = read_text(path, budget)?;
    check_nesting(path, &text)?;
    let mut out = Vec::new();
    for doc in text.split("\n---") {
        let cleaned: String = doc
            .lines()
            .filter(|line| {
                let t = line.trim();
                !t.is_empty() && !t.starts_with('#')
            })
            .map(|line| format!("{line}\n"))
            .collect();
        if cleaned.is_empty() {
            continue;
        }
        let value: serde_yaml::Value =
            bounded_input::yaml_from_str(&cleaned).map_err(|source| EngineError::Yaml {
                path: path.to_path_buf(),
                source,
            })?;
        push_document(path, yaml_to_json(value), &mut out)?;
    }
    Ok(out)
}

/// Converts a YAML value to JSON as Go's YAML-to-JSON round trip does: mapping keys become
/// strings, tags are dropped, numbers follow [`gator_numbers`].
pub fn yaml_to_json(value: serde_yaml::Value) -> Value {
    match value {
        serde_yaml::Value::Null => Value::Null,
        serde_yaml::Value::Bool(b) => Value::Bool(b),
        serde_yaml::Value::Number(n) => {
            let f = n
                .as_f64()
                .or_else(|| n.as_i64().map(|i| i as f64))
                .unwrap_or(0.0);
            float_number(f)
        }
        serde_yaml::Value::String(s) => Value::String(s),
        serde_yaml::Value::Sequence(items) => {
            Value::Array(items.into_iter().map(yaml_to_json).collect())
        }
        serde_yaml::Value::Mapping(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                out.insert(yaml_key(k), yaml_to_json(v));
            }
            Value::Object(out)
        }
        serde_yaml::Value::Tagged(tagged) => yaml_to_json(tagged.value),
    }
}

fn yaml_key(key: serde_yaml::Value) -> String {
    match key {
        serde_yaml::Value::String(s) => s,
        serde_yaml::Value::Null => "null".to_string(),
        serde_yaml::Value::Bool(b) => b.to_string(),
        serde_yaml::Value::Number(n) => n.to_string(),
        other => serde_json::to_string(&yaml_to_json(other)).unwrap_or_default(),
    }
}

/// Makes every number what Go's `float64` makes of it: integral values within `i64` stay
/// integers (printed without a fraction, as Go prints them), others become `f64`.
pub fn gator_numbers(mut value: Value) -> Value {
    normalize_numbers(&mut value);
    value
}

/// [`gator_numbers`] in place: only number nodes are touched, so a large object is not rebuilt.
pub fn normalize_numbers(value: &mut Value) {
    match value {
        Value::Number(n) => {
            // Integers within ±2^53 survive the float64 round trip unchanged.
            const EXACT: u64 = 1 << 53;
            let exact = n.as_i64().is_some_and(|i| i.unsigned_abs() <= EXACT);
            if !exact {
                *value = float_number(n.as_f64().unwrap_or(0.0));
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize_numbers),
        Value::Object(map) => map.values_mut().for_each(normalize_numbers),
        _ => {}
    }
}

fn float_number(f: f64) -> Value {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.2e18 {
        Value::Number(Number::from(f as i64))
    } else {
        Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_bom_is_skipped_and_merge_keys_are_applied() {
        let objects = parse_stream(
            Path::new("pod.yaml"),
            "\u{feff}# a comment\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  <<: {hostNetwork: true, hostPID: true}\n  hostPID: false\n",
        )
        .expect("read");
        assert_eq!(objects.len(), 1);
        assert_eq!(objects[0]["spec"]["hostNetwork"], serde_json::json!(true));
        assert_eq!(objects[0]["spec"]["hostPID"], serde_json::json!(false));
        assert!(objects[0].get("# a comment").is_none());
    }

    #[test]
    fn numbers_become_float64_values() {
        let v = gator_numbers(
            serde_json::json!({"a": 1, "b": 2.0, "c": 2.5, "d": [12345678901234567890u64]}),
        );
        assert_eq!(v["a"], serde_json::json!(1));
        assert_eq!(v["b"], serde_json::json!(2));
        assert_eq!(v["c"], serde_json::json!(2.5));
        assert_eq!(v["d"][0], serde_json::json!(12345678901234567000.0));
        // 2^53 + 1 has no float64: it becomes its nearest neighbour, as in Go.
        let v = gator_numbers(
            serde_json::json!({"big": 9007199254740993i64, "edge": -9007199254740992i64}),
        );
        assert_eq!(v["big"], serde_json::json!(9007199254740992i64));
        assert_eq!(v["edge"], serde_json::json!(-9007199254740992i64));
    }

    #[test]
    fn yaml_streams_skip_empty_documents_and_json_streams_parse() {
        let docs = parse_stream(Path::new("x.yaml"), "a: 1\n---\n---\nb: 1.50\n").unwrap();
        assert_eq!(
            docs,
            vec![serde_json::json!({"a": 1}), serde_json::json!({"b": 1.5})]
        );
        let docs = parse_stream(Path::new("x.json"), "{\"a\": 1} {\"b\": 2}").unwrap();
        assert_eq!(docs.len(), 2);
    }

    #[test]
    fn non_object_documents_are_errors_that_do_not_quote_them() {
        let err = parse_stream(Path::new("x.yaml"), "- secret-token\n- 2\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "reading file \"x.yaml\": document is not an object but a sequence"
        );
    }

    #[test]
    fn deep_yaml_is_refused_before_parsing() {
        let deep = format!("a: {}1{}\n", "[".repeat(100_000), "]".repeat(100_000));
        let err = parse_stream(Path::new("deep.yaml"), &deep).unwrap_err();
        assert!(matches!(err, EngineError::Nesting { .. }), "{err}");
    }

    #[test]
    fn non_regular_files_and_oversized_files_are_refused() {
        let err = read_sources(&[PathBuf::from("/dev/zero")]).unwrap_err();
        assert!(matches!(err, EngineError::Extension { .. }), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("zero.yaml");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let err = read_sources(&[dir.path().to_path_buf()]).unwrap_err();
        assert!(format!("{:#}", anyhow::Error::new(err)).contains("not a regular file"));
        let err = read_verify_file(&link).unwrap_err();
        assert!(format!("{:#}", anyhow::Error::new(err)).contains("not a regular file"));
    }
}
