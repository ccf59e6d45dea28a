//! The `K8sNativeValidation` source as Gatekeeper reads it (`schema.GetSource`): `validations`
//! (`expression`, `message`, `messageExpression`; `reason` as in a ValidatingAdmissionPolicy),
//! `variables` (`name`, `expression`), `matchCondition` (singular, as Gatekeeper spells the key;
//! `name`, `expression`), `failurePolicy` (`Fail`, the default, or `Ignore`) and `generateVAP`.
//!
//! Like Gatekeeper's converter, unknown keys are ignored (they are listed in
//! [`Source::ignored_keys`] so a caller can warn) and a key of the wrong type is an error.
//! Gatekeeper reserves the variable names `params` and `anyObject` and the prefix
//! `gatekeeper_internal_` for variables and match conditions.

use crate::error::CompileError;
use serde_json::{Map, Value};

/// The prefix Gatekeeper reserves.
pub(crate) const RESERVED_PREFIX: &str = "gatekeeper_internal_";

/// One entry of `validations`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validation {
    /// The CEL expression that must be true.
    pub expression: String,
    /// The static message of a failure.
    pub message: String,
    /// A CEL expression computing the message.
    pub message_expression: String,
    /// The reason of a failure (`Invalid` when absent).
    pub reason: Option<String>,
}

/// A named expression (`variables` and `matchCondition` entries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// The name.
    pub name: String,
    /// The CEL expression.
    pub expression: String,
}

/// What happens when an expression fails to evaluate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailurePolicy {
    /// The error is reported (the default).
    #[default]
    Fail,
    /// The error is dropped: no result.
    Ignore,
}

/// The parsed source.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Source {
    /// `validations`, in order.
    pub validations: Vec<Validation>,
    /// `variables`, in order.
    pub variables: Vec<Named>,
    /// `matchCondition`, in order.
    pub match_conditions: Vec<Named>,
    /// `failurePolicy`.
    pub failure_policy: FailurePolicy,
    /// Keys Gatekeeper ignores (e.g. `matchConditions`, plural), as `path.to.key`.
    pub ignored_keys: Vec<String>,
}

impl Source {
    /// Reads a source object as Gatekeeper does.
    pub fn parse(source: &Value) -> Result<Source, CompileError> {
        let object = source
            .as_object()
            .ok_or_else(|| bad("the source must be an object"))?;
        let mut parsed = Source::default();
        for (key, value) in object {
            match key.as_str() {
                "validations" => {
                    parsed.validations = list(value, key, &mut parsed.ignored_keys, validation)?
                }
                "variables" => {
                    parsed.variables = list(value, key, &mut parsed.ignored_keys, named)?
                }
                "matchCondition" => {
                    parsed.match_conditions = list(value, key, &mut parsed.ignored_keys, named)?
                }
                "failurePolicy" => parsed.failure_policy = failure_policy(value)?,
                "generateVAP" => {
                    if !value.is_boolean() && !value.is_null() {
                        return Err(bad("generateVAP must be a boolean"));
                    }
                }
                other => parsed.ignored_keys.push(other.to_owned()),
            }
        }
        parsed.ignored_keys.sort();
        parsed.check_reserved()?;
        Ok(parsed)
    }

    /// Gatekeeper's `validateMatchConditions` and `validateVariables`.
    fn check_reserved(&self) -> Result<(), CompileError> {
        for condition in &self.match_conditions {
            if condition.name.starts_with(RESERVED_PREFIX) {
                return Err(CompileError::Reserved(format!(
                    "invalid match condition: {} is not a valid match condition; cannot have {RESERVED_PREFIX:?} as a prefix",
                    condition.name
                )));
            }
        }
        for variable in &self.variables {
            if variable.name.starts_with(RESERVED_PREFIX) {
                return Err(CompileError::Reserved(format!(
                    "invalid variable: {} is not a valid variable; cannot have {RESERVED_PREFIX:?} as a prefix",
                    variable.name
                )));
            }
            for reserved in ["params", "anyObject"] {
                if variable.name == reserved {
                    return Err(CompileError::Reserved(format!(
                        "invalid variable: {reserved} an invalid variable name, {reserved:?} is a reserved keyword"
                    )));
                }
            }
        }
        Ok(())
    }
}

fn bad(message: impl Into<String>) -> CompileError {
    CompileError::Source(message.into())
}

/// Reads one object of a list: the object, its place (`validations[0]`) and the ignored keys.
type ItemReader<T> = fn(&Map<String, Value>, &str, &mut Vec<String>) -> Result<T, CompileError>;

/// A list of objects, each read by `item`; `null` is an empty list.
fn list<T>(
    value: &Value,
    key: &str,
    ignored: &mut Vec<String>,
    item: ItemReader<T>,
) -> Result<Vec<T>, CompileError> {
    if value.is_null() {
        return Ok(Vec::new());
    }
    let items = value
        .as_array()
        .ok_or_else(|| bad(format!("{key} must be a list")))?;
    items
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let place = format!("{key}[{i}]");
            let object = entry
                .as_object()
                .ok_or_else(|| bad(format!("{place} must be an object")))?;
            item(object, &place, ignored)
        })
        .collect()
}

/// A string field; absent or `null` is empty.
fn text(object: &Map<String, Value>, place: &str, key: &str) -> Result<String, CompileError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(bad(format!("{place}.{key} must be a string"))),
    }
}

/// Records the keys of `object` outside `known`.
fn note_ignored(
    object: &Map<String, Value>,
    place: &str,
    known: &[&str],
    ignored: &mut Vec<String>,
) {
    for key in object.keys().filter(|k| !known.contains(&k.as_str())) {
        ignored.push(format!("{place}.{key}"));
    }
}

fn validation(
    object: &Map<String, Value>,
    place: &str,
    ignored: &mut Vec<String>,
) -> Result<Validation, CompileError> {
    note_ignored(
        object,
        place,
        &["expression", "message", "messageExpression", "reason"],
        ignored,
    );
    let reason = text(object, place, "reason")?;
    Ok(Validation {
        expression: text(object, place, "expression")?,
        message: text(object, place, "message")?,
        message_expression: text(object, place, "messageExpression")?,
        reason: (!reason.is_empty()).then_some(reason),
    })
}

fn named(
    object: &Map<String, Value>,
    place: &str,
    ignored: &mut Vec<String>,
) -> Result<Named, CompileError> {
    note_ignored(object, place, &["name", "expression"], ignored);
    Ok(Named {
        name: text(object, place, "name")?,
        expression: text(object, place, "expression")?,
    })
}

fn failure_policy(value: &Value) -> Result<FailurePolicy, CompileError> {
    match value {
        Value::Null => Ok(FailurePolicy::Fail),
        Value::String(s) if s == "Fail" => Ok(FailurePolicy::Fail),
        Value::String(s) if s == "Ignore" => Ok(FailurePolicy::Ignore),
        Value::String(s) => Err(CompileError::Source(format!(
            "unrecognized failure policy: {s}"
        ))),
        _ => Err(bad("failurePolicy must be a string")),
    }
}
