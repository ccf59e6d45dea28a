//! The engine's error type: every way reading inputs, ingesting templates and constraints, or
//! building the inventory can fail. Messages follow gator's wording where gator has one.
//! Also the one-line form of regorus' errors, which results and messages carry.

use std::path::PathBuf;

use crate::expansion::ExpansionError;

/// An error from reading inputs or ingesting templates, constraints and data.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A named file does not end in `.yaml`, `.yml` or `.json`.
    #[error("path {path:?} must be of extensions: [.yaml .yml .json]")]
    Extension {
        /// The offending path.
        path: PathBuf,
    },
    /// A file could not be read: not a regular file, over a cap, not UTF-8.
    #[error("reading file")]
    Read(#[from] bounded_input::ReadError),
    /// YAML nested deeper than the parser is allowed to see.
    #[error("reading file {path:?}: reading yaml source")]
    Nesting {
        /// The file.
        path: PathBuf,
        /// Where and how deep.
        #[source]
        source: bounded_input::NestingError,
    },
    /// An input object is of a kind whose effect the embedded engine does not apply.
    #[error("unsupported: {feature} ({kind} {name:?})")]
    UnsupportedObject {
        /// The object's kind.
        kind: String,
        /// Its `metadata.name`.
        name: String,
        /// What is not supported.
        feature: String,
    },
    /// A file or directory could not be read.
    #[error("reading file {path:?}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A YAML document could not be decoded.
    #[error("reading file {path:?}: reading yaml source")]
    Yaml {
        /// The file.
        path: PathBuf,
        /// The YAML error.
        #[source]
        source: serde_yaml::Error,
    },
    /// A JSON document could not be decoded.
    #[error("reading file {path:?}: reading json source")]
    Json {
        /// The file.
        path: PathBuf,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// A document is not what the reader expected (for example not a mapping).
    #[error("reading file {path:?}: {reason}")]
    Document {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// No objects at all were read.
    #[error("no input data identified")]
    NoInput,
    /// A ConstraintTemplate could not be ingested or compiled.
    #[error("adding template {name:?}: {reason}")]
    Template {
        /// `metadata.name` of the template.
        name: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A template or an input uses a feature the embedded engine does not evaluate.
    #[error("adding template {name:?}: unsupported: {feature}")]
    Unsupported {
        /// `metadata.name` of the template (or of the object) that uses it.
        name: String,
        /// What is not supported, and where.
        feature: String,
    },
    /// The review did not finish within the caller's time budget.
    #[error("the embedded engine did not finish within its time budget of {budget:?}")]
    TimedOut {
        /// The budget (`timeouts.engine` in the daily report).
        budget: std::time::Duration,
    },
    /// A constraint failed validation against its CRD schema (gator's `ErrSchema`).
    #[error("adding constraint {name:?}: schema validation failed: {reason}")]
    Schema {
        /// `metadata.name` of the constraint.
        name: String,
        /// The first validation failures.
        reason: String,
    },
    /// A constraint was rejected for a reason other than its schema.
    #[error("adding constraint {name:?}: {reason}")]
    Constraint {
        /// `metadata.name` of the constraint.
        name: String,
        /// Why it was rejected.
        reason: String,
    },
    /// An object could not be added to `data.inventory`.
    #[error("adding data of GVK {gvk:?}: {reason}")]
    Data {
        /// The object's group/version/kind text.
        gvk: String,
        /// Why it was rejected.
        reason: String,
    },
    /// The input's ExpansionTemplates cannot be used: one has the wrong shape, is invalid or
    /// closes a cycle of expansions.
    #[error("error creating expander")]
    Expander(#[source] ExpansionError),
    /// An input object could not be expanded (for example its template source field is
    /// missing): gator stops the whole review on it.
    #[error("expanding resource {name}")]
    Expansion {
        /// `metadata.name` of the object.
        name: String,
        /// Why.
        #[source]
        source: ExpansionError,
    },
    /// An AdmissionReview object could not be turned into a review.
    #[error("invalid AdmissionReview: {reason}")]
    AdmissionReview {
        /// What is wrong with it.
        reason: String,
    },
}

impl EngineError {
    /// Whether this is a constraint schema-validation failure (what `invalid: true` tests expect).
    pub fn is_schema(&self) -> bool {
        matches!(self, EngineError::Schema { .. })
    }
}

/// Turns a regorus error (multi-line, with a source excerpt) into `<file>:<line>: <message>`.
pub(crate) fn one_line_error(error: &impl std::fmt::Display) -> String {
    let text = format!("{error:#}");
    let location = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("--> "))
        .map(|loc| {
            let mut parts = loc.rsplitn(3, ':');
            let _col = parts.next();
            let line = parts.next().unwrap_or("");
            let file = parts.next().unwrap_or(loc);
            format!("{file}:{line}")
        });
    let message = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .map(str::to_string)
        .unwrap_or_else(|| {
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        });
    match location {
        Some(loc) => format!("{loc}: {message}"),
        None => message,
    }
}
