//! Rendering results like `gator test`: `-o json` (4-space indent, sorted map keys, Go's HTML
//! escaping, no trailing newline, `null` when empty), `-o yaml` (the `result:` wrapper shape)
//! and the human format (`<apiVersion>/<Kind> <ns>/<name>: ["<constraint>"] Message: "<msg>"`).

use serde::Serialize;
use serde_json::{Map, Value};

use crate::engine::Engine;
use crate::gotext::{go_quote, json_html_escape};
use crate::review::{DetailedResult, Driver, ResultKind};

/// Recursively sorts object keys (Go marshals maps with sorted keys).
pub fn sorted_keys(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for k in keys {
                out.insert(k.clone(), sorted_keys(&map[k]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted_keys).collect()),
        other => other.clone(),
    }
}

fn metadata(result: &DetailedResult) -> Option<Value> {
    if result.driver == Driver::Cel {
        // Gatekeeper's CEL driver gives results without metadata.
        return None;
    }
    match result.kind {
        ResultKind::Violation => {
            let details = result
                .result
                .details
                .as_deref()
                .and_then(|d| serde_json::from_str::<Value>(d).ok())
                .unwrap_or_else(|| Value::Object(Map::new()));
            Some(serde_json::json!({ "details": sorted_keys(&details) }))
        }
        ResultKind::EvalError => Some(serde_json::json!({ "details": null })),
        ResultKind::Autoreject => None,
    }
}

fn constraint_object(engine: &Engine, result: &DetailedResult) -> Value {
    engine
        .constraint_object(
            &result.result.constraint.kind,
            &result.result.constraint.name,
        )
        .map(sorted_keys)
        .unwrap_or(Value::Null)
}

fn violating_object(engine: &Engine, result: &DetailedResult) -> Value {
    engine
        .object(result.object_index)
        .map(|object| sorted_keys(&object))
        .unwrap_or(Value::Null)
}

/// `gator test -o json`.
pub fn render_json(engine: &Engine, results: &[DetailedResult]) -> String {
    if results.is_empty() {
        return "null".to_string();
    }
    let items: Vec<Value> = results
        .iter()
        .map(|r| {
            let mut m = Map::new();
            m.insert("target".into(), Value::String(r.result.target.clone()));
            if !r.result.msg.is_empty() {
                m.insert("msg".into(), Value::String(r.result.msg.clone()));
            }
            if let Some(meta) = metadata(r) {
                m.insert("metadata".into(), meta);
            }
            m.insert("constraint".into(), constraint_object(engine, r));
            let action = &r.result.constraint.enforcement_action;
            if !action.is_empty() {
                m.insert("enforcementAction".into(), Value::String(action.clone()));
            }
            if !r.result.constraint.scoped_actions.is_empty() {
                m.insert(
                    "scopedActions".into(),
                    serde_json::json!(r.result.constraint.scoped_actions),
                );
            }
            m.insert("violatingObject".into(), violating_object(engine, r));
            m.insert("trace".into(), Value::Null);
            Value::Object(m)
        })
        .collect();
    let mut buf = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, formatter);
    if items.serialize(&mut ser).is_err() {
        return "null".to_string();
    }
    json_html_escape(&String::from_utf8_lossy(&buf))
}

/// `gator test -o yaml`: `[]` when empty.
pub fn render_yaml(engine: &Engine, results: &[DetailedResult]) -> String {
    if results.is_empty() {
        return "[]\n".to_string();
    }
    let items: Vec<Value> = results
        .iter()
        .map(|r| {
            let mut inner = Map::new();
            inner.insert("target".into(), Value::String(r.result.target.clone()));
            inner.insert("msg".into(), Value::String(r.result.msg.clone()));
            if let Some(meta) = metadata(r) {
                inner.insert("metadata".into(), meta);
            }
            inner.insert(
                "constraint".into(),
                serde_json::json!({ "object": constraint_object(engine, r) }),
            );
            inner.insert(
                "enforcementaction".into(),
                Value::String(r.result.constraint.enforcement_action.clone()),
            );
            inner.insert(
                "scopedenforcementactions".into(),
                serde_json::json!(r.result.constraint.scoped_actions),
            );
            let mut outer = Map::new();
            outer.insert("result".into(), Value::Object(inner));
            outer.insert("violatingObject".into(), violating_object(engine, r));
            outer.insert("trace".into(), Value::Null);
            Value::Object(outer)
        })
        .collect();
    serde_yaml::to_string(&items).unwrap_or_else(|_| "[]\n".to_string())
}

/// gator's human format, one line per result (empty when there are none).
pub fn render_text(results: &[DetailedResult]) -> String {
    let mut out = String::new();
    for r in results {
        let o = &r.result.object;
        let name = match &o.namespace {
            Some(ns) => format!("{ns}/{}", o.name),
            None => o.name.clone(),
        };
        out.push_str(&format!(
            "{}/{} {}: [{}] Message: {}\n",
            o.api_version,
            o.kind,
            name,
            go_quote(&r.result.constraint.name),
            go_quote(&r.result.msg)
        ));
    }
    out
}
