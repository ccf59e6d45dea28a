//! Loading manifests: a file (every YAML document), a directory (sorted `*.yaml` then sorted
//! `*.yml`, not recursive) or `-` for stdin. YAML anchors and aliases are rejected, `null`
//! documents dropped; other non-mapping documents are kept (evaluation skips them).
//!
//! Every read goes through `bounded-input`: regular files only (a FIFO, `/dev/zero` or a socket,
//! directly or through a symlink, is refused without blocking), at most [`MANIFEST_FILE_CAP`] per
//! file or stdin and [`MANIFESTS_TOTAL_CAP`] over a directory; and every text passes the YAML
//! nesting pre-scan before the parser sees it (libyaml is quadratic on deep nesting).

use std::path::{Path, PathBuf};

use bounded_input::Budget;

use serde::Deserialize;
use serde_json::{Map, Number, Value};
use yaml_rust2::scanner::{Scanner, TokenType};

/// The largest manifest file (or stdin) read.
pub(crate) const MANIFEST_FILE_CAP: u64 = 8 * 1024 * 1024;
/// The most read over all the files of a manifest directory.
pub(crate) const MANIFESTS_TOTAL_CAP: u64 = 64 * 1024 * 1024;

/// Loads every manifest under `path`; the error is a one-line message naming the file.
pub(crate) fn load(path: &Path) -> Result<Vec<Value>, String> {
    if path == Path::new("-") {
        let text = bounded_input::read_capped_to_string(
            std::io::stdin().lock(),
            MANIFEST_FILE_CAP,
            "stdin",
        )
        .map_err(|error| format!("cannot read manifests: {error}"))?;
        return parse_document(&text).map_err(|problem| format!("stdin: {problem}"));
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
    let mut manifests = Vec::new();
    for file in files {
        let text = read_manifest_file(&file, &mut budget)?;
        let documents = parse_document(&text).map_err(|problem| {
            format!(
                "manifest file {} is not valid YAML: {problem}",
                file.display()
            )
        })?;
        manifests.extend(documents);
    }
    Ok(manifests)
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

/// Parses every YAML document of `text` into JSON values, rejecting excessive nesting (before
/// any parser sees the text), anchors and aliases, and dropping `null` documents.
pub(crate) fn parse_document(text: &str) -> Result<Vec<Value>, String> {
    bounded_input::check_yaml_nesting(text, bounded_input::YAML_MAX_DEPTH)
        .map_err(|error| error.to_string())?;
    reject_anchors_and_aliases(text)?;
    let mut documents = Vec::new();
    for document in serde_yaml::Deserializer::from_str(text) {
        let value = serde_yaml::Value::deserialize(document).map_err(|e| e.to_string())?;
        let value = to_json(value)?;
        if !value.is_null() {
            documents.push(value);
        }
    }
    Ok(documents)
}

/// The security policy of the reference's loader: no YAML anchors (`&a`) or aliases (`*a`).
fn reject_anchors_and_aliases(text: &str) -> Result<(), String> {
    let mut scanner = Scanner::new(text.chars());
    for token in scanner.by_ref() {
        let line = token.0.line();
        match token.1 {
            TokenType::Alias(name) => {
                return Err(format!(
                    "YAML aliases are not allowed (security policy: yaml_allow_aliases=false), found alias *{name} on line {line}"
                ));
            }
            TokenType::Anchor(name) => {
                return Err(format!(
                    "YAML anchors are not allowed (security policy: yaml_allow_aliases=false), found anchor &{name} on line {line}"
                ));
            }
            _ => {}
        }
    }
    // Scanner errors are reported by the full parse that follows.
    Ok(())
}

/// Converts a YAML value to JSON: scalar keys become their string form, tags are dropped.
fn to_json(value: serde_yaml::Value) -> Result<Value, String> {
    use serde_yaml::Value as Y;
    Ok(match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                Value::Number(
                    Number::from_f64(f)
                        .ok_or_else(|| format!("unsupported non-finite number {f}"))?,
                )
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => {
            Value::Array(items.into_iter().map(to_json).collect::<Result<_, _>>()?)
        }
        Y::Mapping(mapping) => {
            let mut map = Map::new();
            for (key, item) in mapping {
                let key = match key {
                    Y::String(s) => s,
                    Y::Null => "None".to_owned(),
                    Y::Bool(true) => "True".to_owned(),
                    Y::Bool(false) => "False".to_owned(),
                    Y::Number(n) => n.to_string(),
                    other => return Err(format!("unsupported mapping key {other:?}")),
                };
                map.insert(key, to_json(item)?);
            }
            Value::Object(map)
        }
        Y::Tagged(tagged) => to_json(tagged.value)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_parsed_and_nulls_dropped() {
        let docs = parse_document("kind: Job\n---\n---\n- a\n").unwrap();
        assert_eq!(
            docs,
            vec![serde_json::json!({"kind": "Job"}), serde_json::json!(["a"])]
        );
    }

    #[test]
    fn nesting_past_the_cap_is_refused_before_parsing() {
        let deep = format!("a: {}1{}\n", "[".repeat(200), "]".repeat(200));
        let error = parse_document(&deep).unwrap_err();
        assert_eq!(
            error,
            "recursion limit exceeded: YAML nested deeper than 128 levels at line 1"
        );
    }

    /// YAML pieces that stress a loader — tags, anchors, merges, odd scalars, flow and block
    /// mixes, control characters.
    const PIECES: &[&str] = &[
        "kind: Job\n",
        "metadata:\n",
        "  name: x\n",
        "  ",
        "- ",
        "[",
        "]",
        "{",
        "}",
        ": ",
        ", ",
        "\n",
        "&a ",
        "*a",
        "!!binary ",
        "!!float ",
        "!!int ",
        "!tag ",
        ".nan",
        ".inf",
        "-.inf",
        "? ",
        "---\n",
        "...\n",
        "\"",
        "'",
        "|\n",
        ">-\n",
        "\t",
        "# c\n",
        "<<: *a\n",
        "0x10",
        "0o7",
        "1e400",
        "-0",
        "~",
        "null",
        "yes",
        "1_000",
        "\u{0}",
        "\u{feff}",
        "\u{1b}",
        "%YAML 1.2\n",
        "2001-12-14t21:59:43.10-05:00",
        "é",
        "\\x",
    ];

    /// One piece of a fuzzed text: mostly a [`PIECES`] entry, sometimes arbitrary text.
    fn piece() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            7 => proptest::sample::select(PIECES).prop_map(str::to_string),
            1 => any::<String>(),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 16384,
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Property test (proptest, bounded cases; a failure is shrunk and its seed kept in
        /// `proptest-regressions/`): YAML assembled from [`PIECES`] must load or fail, never
        /// panic.
        #[test]
        fn fuzzed_yaml_never_panics(pieces in proptest::collection::vec(piece(), 0..=60)) {
            let _ = parse_document(&pieces.concat());
        }
    }

    #[test]
    fn anchors_and_aliases_are_rejected() {
        let error = parse_document("a: &x 1\nb: *x\n").unwrap_err();
        assert!(error.contains("anchors are not allowed"), "{error}");
        let error = parse_document("b: *x\n").unwrap_err();
        assert!(error.contains("aliases are not allowed"), "{error}");
        // `&` and `*` inside scalars are fine.
        assert!(parse_document("cmd: a && b * c\nq: '*x'\n").is_ok());
    }
}
