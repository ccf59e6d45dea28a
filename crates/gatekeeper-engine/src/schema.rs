//! Structural OpenAPI v3 schema handling for constraint parameters, as the Kubernetes
//! apiextensions validator applies it to a constraint CRD: validation (types, enums, patterns,
//! bounds, required, combinators), unknown-field detection (structural pruning) and defaulting.
//!
//! Hand-written on purpose: JSON Schema crates do not know Kubernetes' structural rules
//! (`nullable`, `x-kubernetes-preserve-unknown-fields`, `x-kubernetes-int-or-string`, pruning,
//! `default`), and those rules decide which constraints gator rejects.

use serde_json::Value;

/// Validates `value` against `schema`, appending Kubernetes-style messages to `errors`.
pub(crate) fn validate(schema: &Value, value: &Value, path: &str, errors: &mut Vec<String>) {
    let Some(s) = schema.as_object() else {
        return;
    };
    if value.is_null() {
        let nullable = s.get("nullable").and_then(Value::as_bool).unwrap_or(false);
        if !nullable && s.contains_key("type") {
            errors.push(format!(
                "{path}: Invalid value: \"null\": {path} in body must be of type {}: \"null\"",
                s["type"].as_str().unwrap_or("object")
            ));
        }
        return;
    }
    let int_or_string = s
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if int_or_string {
        if !(value.is_string() || is_integer(value)) {
            errors.push(format!(
                "{path}: Invalid value: \"{}\": {path} in body must be of type integer or string: \"{}\"",
                type_name(value),
                type_name(value)
            ));
            return;
        }
    } else if let Some(t) = s.get("type").and_then(Value::as_str) {
        let ok = match t {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "integer" => is_integer(value),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            _ => true,
        };
        if !ok {
            errors.push(format!(
                "{path}: Invalid value: \"{}\": {path} in body must be of type {t}: \"{}\"",
                type_name(value),
                type_name(value)
            ));
            return;
        }
    }
    if let Some(options) = s.get("enum").and_then(Value::as_array)
        && !options.iter().any(|o| same_value(o, value))
    {
        let list: Vec<String> = options.iter().map(render).collect();
        errors.push(format!(
            "{path}: Unsupported value: {}: supported values: {}",
            render(value),
            list.join(", ")
        ));
    }
    match value {
        Value::String(text) => check_string(s, text, path, errors),
        Value::Number(n) => check_number(s, n.as_f64().unwrap_or(0.0), path, errors),
        Value::Array(items) => {
            let count = items.len() as u64;
            if let Some(min) = s.get("minItems").and_then(Value::as_u64)
                && count < min
            {
                errors.push(format!("{path}: Invalid value: {count}: {path} in body should have at least {min} items"));
            }
            if let Some(max) = s.get("maxItems").and_then(Value::as_u64)
                && count > max
            {
                errors.push(format!(
                    "{path}: Too many: {count}: must have at most {max} items"
                ));
            }
            if s.get("uniqueItems").and_then(Value::as_bool) == Some(true) {
                for (i, a) in items.iter().enumerate() {
                    if items[..i].iter().any(|b| same_value(a, b)) {
                        errors.push(format!("{path}[{i}]: Duplicate value: {}", render(a)));
                    }
                }
            }
            if let Some(item_schema) = s.get("items") {
                for (i, item) in items.iter().enumerate() {
                    validate(item_schema, item, &format!("{path}[{i}]"), errors);
                }
            }
        }
        Value::Object(map) => {
            if let Some(required) = s.get("required").and_then(Value::as_array) {
                for key in required.iter().filter_map(Value::as_str) {
                    if !map.contains_key(key) {
                        errors.push(format!("{path}.{key}: Required value"));
                    }
                }
            }
            let count = map.len() as u64;
            if let Some(min) = s.get("minProperties").and_then(Value::as_u64)
                && count < min
            {
                errors.push(format!("{path}: Invalid value: {count}: {path} in body should have at least {min} properties"));
            }
            if let Some(max) = s.get("maxProperties").and_then(Value::as_u64)
                && count > max
            {
                errors.push(format!(
                    "{path}: Too many: {count}: must have at most {max} properties"
                ));
            }
            let properties = s.get("properties").and_then(Value::as_object);
            for (key, child) in map {
                let child_path = format!("{path}.{key}");
                if let Some(prop) = properties.and_then(|p| p.get(key)) {
                    validate(prop, child, &child_path, errors);
                } else if let Some(additional) = s.get("additionalProperties")
                    && additional.is_object()
                {
                    validate(additional, child, &child_path, errors);
                }
            }
        }
        _ => {}
    }
    for sub in s
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        validate(sub, value, path, errors);
    }
    if let Some(any) = s.get("anyOf").and_then(Value::as_array) {
        let passing = any.iter().filter(|sub| passes(sub, value, path)).count();
        if passing == 0 {
            errors.push(format!(
                "{path}: Invalid value: {}: {path} in body must match at least one schema (anyOf)",
                render(value)
            ));
        }
    }
    if let Some(one) = s.get("oneOf").and_then(Value::as_array) {
        let passing = one.iter().filter(|sub| passes(sub, value, path)).count();
        if passing != 1 {
            errors.push(format!(
                "{path}: Invalid value: {}: {path} in body must match exactly one schema (oneOf)",
                render(value)
            ));
        }
    }
    if let Some(not) = s.get("not")
        && passes(not, value, path)
    {
        errors.push(format!(
            "{path}: Invalid value: {}: {path} in body must not match the schema (not)",
            render(value)
        ));
    }
}

fn passes(schema: &Value, value: &Value, path: &str) -> bool {
    let mut errors = Vec::new();
    validate(schema, value, path, &mut errors);
    errors.is_empty()
}

fn check_string(
    s: &serde_json::Map<String, Value>,
    text: &str,
    path: &str,
    errors: &mut Vec<String>,
) {
    let len = text.chars().count() as u64;
    if let Some(min) = s.get("minLength").and_then(Value::as_u64)
        && len < min
    {
        errors.push(format!(
            "{path}: Invalid value: {text:?}: {path} in body should be at least {min} chars long"
        ));
    }
    if let Some(max) = s.get("maxLength").and_then(Value::as_u64)
        && len > max
    {
        errors.push(format!(
            "{path}: Too long: may not be more than {max} bytes"
        ));
    }
    if let Some(pattern) = s.get("pattern").and_then(Value::as_str) {
        match regex::Regex::new(pattern) {
            Ok(re) if !re.is_match(text) => errors.push(format!(
                "{path}: Invalid value: {text:?}: {path} in body should match '{pattern}'"
            )),
            Ok(_) => {}
            Err(_) => errors.push(format!("{path}: invalid pattern {pattern:?} in schema")),
        }
    }
}

fn check_number(s: &serde_json::Map<String, Value>, n: f64, path: &str, errors: &mut Vec<String>) {
    if let Some(min) = s.get("minimum").and_then(Value::as_f64) {
        let exclusive = s
            .get("exclusiveMinimum")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if n < min || (exclusive && n == min) {
            let rel = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            errors.push(format!(
                "{path}: Invalid value: {}: {path} in body should be {rel} {}",
                fmt_num(n),
                fmt_num(min)
            ));
        }
    }
    if let Some(max) = s.get("maximum").and_then(Value::as_f64) {
        let exclusive = s
            .get("exclusiveMaximum")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if n > max || (exclusive && n == max) {
            let rel = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            errors.push(format!(
                "{path}: Invalid value: {}: {path} in body should be {rel} {}",
                fmt_num(n),
                fmt_num(max)
            ));
        }
    }
    if let Some(m) = s.get("multipleOf").and_then(Value::as_f64)
        && m != 0.0
        && (n / m).fract() != 0.0
    {
        errors.push(format!(
            "{path}: Invalid value: {}: {path} in body should be a multiple of {}",
            fmt_num(n),
            fmt_num(m)
        ));
    }
}

fn fmt_num(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

fn is_integer(value: &Value) -> bool {
    value.as_f64().is_some_and(|f| f.fract() == 0.0) && value.is_number()
}

fn same_value(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_number() && b.is_number() => x == y,
        _ => a == b,
    }
}

fn render(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) if is_integer(value) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Paths of fields that structural pruning would drop (objects whose schema neither lists them
/// nor preserves unknown fields).
pub(crate) fn unknown_fields(schema: &Value, value: &Value, path: &str, out: &mut Vec<String>) {
    let Some(s) = schema.as_object() else {
        return;
    };
    if s.get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true)
    {
        // Known children are still pruned below their own schemas.
        if let (Some(props), Some(map)) = (
            s.get("properties").and_then(Value::as_object),
            value.as_object(),
        ) {
            for (key, child) in map {
                if let Some(prop) = props.get(key) {
                    unknown_fields(prop, child, &format!("{path}.{key}"), out);
                }
            }
        }
        return;
    }
    match value {
        Value::Object(map) => {
            let props = s.get("properties").and_then(Value::as_object);
            let additional = s.get("additionalProperties");
            for (key, child) in map {
                let child_path = format!("{path}.{key}");
                if let Some(prop) = props.and_then(|p| p.get(key)) {
                    unknown_fields(prop, child, &child_path, out);
                } else if let Some(add) = additional.filter(|a| a.is_object()) {
                    unknown_fields(add, child, &child_path, out);
                } else if additional.and_then(Value::as_bool) == Some(true) {
                    // anything goes
                } else {
                    out.push(child_path);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.get("items") {
                for (i, item) in items.iter().enumerate() {
                    unknown_fields(item_schema, item, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

/// Fills missing properties that carry a `default`, recursively (structural defaulting).
pub(crate) fn apply_defaults(schema: &Value, value: &mut Value) {
    let Some(s) = schema.as_object() else {
        return;
    };
    match value {
        Value::Object(map) => {
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                for (key, prop) in props {
                    if !map.contains_key(key)
                        && let Some(default) = prop.get("default")
                    {
                        map.insert(key.clone(), default.clone());
                    }
                }
                for (key, child) in map.iter_mut() {
                    if let Some(prop) = props.get(key) {
                        apply_defaults(prop, child);
                    }
                }
            }
            if let Some(add) = s.get("additionalProperties").filter(|a| a.is_object()) {
                let props = s.get("properties").and_then(Value::as_object);
                for (key, child) in map.iter_mut() {
                    if props.is_none_or(|p| !p.contains_key(key)) {
                        apply_defaults(add, child);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.get("items") {
                for item in items {
                    apply_defaults(item_schema, item);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "labels": {"type": "array", "items": {"type": "object", "properties": {
                "key": {"type": "string"}, "allowedRegex": {"type": "string"}}}},
            "max": {"type": "integer", "minimum": 1, "default": 3},
            "mode": {"type": "string", "enum": ["a", "b"]}
        }})
    }

    #[test]
    fn type_mismatches_are_reported_with_their_path() {
        let mut errors = Vec::new();
        validate(
            &schema(),
            &json!({"labels": "x", "max": 2.5, "mode": "c"}),
            "spec.parameters",
            &mut errors,
        );
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(
            errors[0].contains("spec.parameters.labels in body must be of type array"),
            "{errors:?}"
        );
    }

    #[test]
    fn valid_values_pass_and_defaults_fill_in() {
        let mut value = json!({"labels": [{"key": "owner"}]});
        let mut errors = Vec::new();
        validate(&schema(), &value, "spec.parameters", &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        apply_defaults(&schema(), &mut value);
        assert_eq!(value["max"], json!(3));
    }

    #[test]
    fn unknown_fields_are_found_unless_preserved() {
        let mut out = Vec::new();
        unknown_fields(
            &schema(),
            &json!({"labels": [{"key": "a", "extra": 1}], "other": 1}),
            "spec.parameters",
            &mut out,
        );
        assert_eq!(
            out,
            vec!["spec.parameters.labels[0].extra", "spec.parameters.other"]
        );
        let mut out = Vec::new();
        let preserved = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        unknown_fields(
            &preserved,
            &json!({"other": 1}),
            "spec.parameters",
            &mut out,
        );
        assert!(out.is_empty());
    }
}
