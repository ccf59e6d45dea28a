//! `-o text|json|yaml` of the commands that print a document (`routes`, `explain`): text for a
//! person, JSON or YAML for a program — one document on stdout and nothing else.

use serde_json::Value;

/// The output format of `routes` and `explain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// Lines for a person (the default).
    Text,
    /// One JSON document.
    Json,
    /// One YAML document.
    Yaml,
}

/// `document` as one JSON or YAML document (`None` for text, which each command renders itself).
pub(crate) fn document(document: &Value, format: Format) -> Option<String> {
    match format {
        Format::Text => None,
        Format::Json => {
            let mut text = serde_json::to_string_pretty(document).unwrap_or_default();
            text.push('\n');
            Some(text)
        }
        Format::Yaml => Some(serde_yaml::to_string(document).unwrap_or_default()),
    }
}
