//! Parsing manifest YAML into JSON values, once, with the reference loader's refusals.
//!
//! Every text first passes `bounded-input`'s nesting pre-scan (libyaml is quadratic on deep
//! nesting) and the anchor/alias refusal (`anchors`); then serde_yaml parses it and the values
//! are built straight as JSON (`convert`). A large stream is cut at document starts (`split`)
//! and the pieces are parsed on all cores; if any piece fails, the whole stream is parsed again
//! in one go, so errors read exactly as they would without the cut. `null` documents are
//! dropped; other non-mapping documents are kept (evaluation skips them).

mod anchors;
mod convert;
pub mod positions;
mod split;

use serde_json::Value;

/// Below this size a stream is parsed on the calling thread: starting threads would cost more
/// than they save.
const PARALLEL_FROM_BYTES: usize = 256 * 1024;

/// Parses every YAML document of `text` into JSON values, rejecting excessive nesting (before
/// any parser sees the text), anchors and aliases, and dropping `null` documents.
pub fn parse_documents(text: &str) -> Result<Vec<Value>, String> {
    // A leading byte-order mark is not content (PyYAML and kubectl skip it).
    let text = bounded_input::strip_bom(text);
    let workers = if text.len() < PARALLEL_FROM_BYTES {
        1
    } else {
        std::thread::available_parallelism().map_or(1, usize::from)
    };
    parse_with_workers(text, workers)
}

/// [`parse_documents`] on up to `workers` threads.
fn parse_with_workers(text: &str, workers: usize) -> Result<Vec<Value>, String> {
    bounded_input::check_yaml_nesting(text, bounded_input::YAML_MAX_DEPTH)
        .map_err(|error| error.to_string())?;
    anchors::reject_anchors_and_aliases(text)?;
    let pieces = split::document_pieces(text, workers);
    if pieces.len() > 1
        && let Some(documents) = parse_pieces(&pieces)
    {
        return Ok(documents);
    }
    parse_stream(text)
}

/// Parses the pieces on one thread each; `None` when any piece fails.
fn parse_pieces(pieces: &[&str]) -> Option<Vec<Value>> {
    let parsed: Vec<Result<Vec<Value>, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = pieces[1..]
            .iter()
            .map(|piece| scope.spawn(move || parse_stream(piece)))
            .collect();
        let mut parsed = vec![parse_stream(pieces[0])];
        // A worker that panicked counts as a failed piece: the whole stream is parsed again
        // on this thread, where the panic would surface as it always has.
        parsed.extend(
            handles
                .into_iter()
                .map(|handle| handle.join().unwrap_or_else(|_| Err(String::new()))),
        );
        parsed
    });
    let mut documents = Vec::new();
    for piece in parsed {
        documents.extend(piece.ok()?);
    }
    Some(documents)
}

/// Every non-null document of a YAML stream, in order; the first error ends the stream.
///
/// A stream that holds `<<` has its merge keys applied as PyYAML does (the workspace's one rule,
/// `bounded_input::apply_merge_keys`), through `serde_yaml::Value`; any other is converted
/// straight from the parser.
fn parse_stream(text: &str) -> Result<Vec<Value>, String> {
    let merge = text.contains("<<");
    let mut documents = Vec::new();
    for document in serde_yaml::Deserializer::from_str(text) {
        let value = if merge {
            let mut value = <serde_yaml::Value as serde::Deserialize>::deserialize(document)
                .map_err(|error| error.to_string())?;
            bounded_input::apply_merge_keys(&mut value).map_err(|error| error.to_string())?;
            convert::document_to_json(value)?
        } else {
            convert::document_to_json(document)?
        };
        if !value.is_null() {
            documents.push(value);
        }
    }
    Ok(documents)
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::{Map, Number, json};

    use super::*;

    #[test]
    fn documents_are_parsed_and_nulls_dropped() {
        let docs = parse_documents("kind: Job\n---\n---\n- a\n").unwrap();
        assert_eq!(docs, vec![json!({"kind": "Job"}), json!(["a"])]);
    }

    #[test]
    fn keys_become_their_python_str_and_tags_are_dropped() {
        let docs =
            parse_documents("~: a\ntrue: b\nfalse: c\n0x10: d\n1.5: e\nx: !u [1]\n").unwrap();
        assert_eq!(
            docs,
            vec![json!({"None": "a", "True": "b", "False": "c", "16": "d", "1.5": "e", "x": [1]})]
        );
    }

    #[test]
    fn conversion_refusals_come_after_syntax_errors_of_the_same_document() {
        assert_eq!(
            parse_documents("a: .inf\nb: [1]: 2\n").unwrap_err(),
            parse_stream_as_before("a: .inf\nb: [1]: 2\n").unwrap_err()
        );
        assert_eq!(
            parse_documents("a: .nan\n").unwrap_err(),
            "unsupported non-finite number NaN"
        );
        assert!(
            parse_documents("? [1]\n: x\n")
                .unwrap_err()
                .starts_with("unsupported mapping key Sequence")
        );
    }

    #[test]
    fn duplicate_keys_are_refused_as_serde_yaml_refuses_them() {
        for text in [
            "a: 1\na: 2\n",
            "1: a\n0x1: b\n",
            "~: a\nnull: b\n",
            "1: a\n'1': b\n",
        ] {
            assert_eq!(
                parse_documents(text),
                parse_stream_as_before(text),
                "{text}"
            );
        }
        assert!(
            parse_documents("a: 1\na: 2\n")
                .unwrap_err()
                .starts_with("duplicate entry with key \"a\"")
        );
    }

    #[test]
    fn nesting_past_the_cap_is_refused_before_parsing() {
        let deep = format!("a: {}1{}\n", "[".repeat(200), "]".repeat(200));
        let error = parse_documents(&deep).unwrap_err();
        assert_eq!(
            error,
            "recursion limit exceeded: YAML nested deeper than 128 levels at line 1"
        );
    }

    #[test]
    fn a_large_stream_parsed_in_pieces_is_the_stream_parsed_whole() {
        let mut text = String::new();
        for index in 0..4000 {
            text.push_str(&format!(
                "---\nkind: Job\nmetadata: {{name: job-{index}}}\nspec:\n  x: |\n    ---\n    a\n"
            ));
        }
        assert!(text.len() > PARALLEL_FROM_BYTES);
        let whole = parse_stream(&text).unwrap();
        assert_eq!(whole.len(), 4000);
        assert_eq!(parse_documents(&text).unwrap(), whole);
        // An error in a late piece reads as in the whole stream.
        text.push_str("---\nbad: [\n");
        assert_eq!(parse_documents(&text), parse_stream_as_before(&text));
    }

    /// YAML pieces that stress a loader — tags, anchors, merges, odd scalars, flow and block
    /// mixes, document markers, directives, control characters.
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
        "!!str ",
        "!tag ",
        "! ",
        ".nan",
        ".inf",
        "-.inf",
        "? ",
        "---\n",
        "--- ",
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
        "true",
        "1: a\n",
        "'1': b\n",
        "a: 1\n",
        "yes",
        "1_000",
        "99999999999999999999",
        "-99999999999999999999",
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
            cases: 8192,
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Property test (proptest, bounded cases; a failure is shrunk and its seed kept in
        /// `proptest-regressions/`): YAML assembled from [`PIECES`] parses to what serde_yaml's
        /// own values converted to JSON give (the conversion jobcheck used before parsing
        /// straight to JSON), on one thread or cut in pieces, errors included, and never
        /// panics.
        #[test]
        fn fuzzed_yaml_parses_as_serde_yaml_values_did(
            pieces in proptest::collection::vec(piece(), 0..=60),
        ) {
            let text = pieces.concat();
            let expected = parse_stream_as_before(&text);
            if let Ok(documents) = &expected {
                // The CI formats' second pass over the same text locates or gives up.
                let _ = positions::locate(&text, documents.len());
            }
            for workers in 1..=3 {
                proptest::prop_assert_eq!(
                    parse_with_workers(&text, workers),
                    expected.clone(),
                    "{} worker(s): {:?}",
                    workers,
                    text
                );
            }
        }
    }

    /// The loader as it was before values were built straight as JSON: the tokenizer pass on
    /// every text, then serde_yaml's own values converted to JSON.
    fn parse_stream_as_before(text: &str) -> Result<Vec<Value>, String> {
        bounded_input::check_yaml_nesting(text, bounded_input::YAML_MAX_DEPTH)
            .map_err(|error| error.to_string())?;
        anchors::scan_for_anchors(text)?;
        let mut documents = Vec::new();
        for document in serde_yaml::Deserializer::from_str(text) {
            let value = serde_yaml::Value::deserialize(document).map_err(|e| e.to_string())?;
            let value = yaml_value_to_json(value)?;
            if !value.is_null() {
                documents.push(value);
            }
        }
        Ok(documents)
    }

    fn yaml_value_to_json(value: serde_yaml::Value) -> Result<Value, String> {
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
            Y::Sequence(items) => Value::Array(
                items
                    .into_iter()
                    .map(yaml_value_to_json)
                    .collect::<Result<_, _>>()?,
            ),
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
                    map.insert(key, yaml_value_to_json(item)?);
                }
                Value::Object(map)
            }
            Y::Tagged(tagged) => yaml_value_to_json(tagged.value)?,
        })
    }
}
