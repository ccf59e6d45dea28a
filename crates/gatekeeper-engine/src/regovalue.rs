//! Converting JSON values to regorus values: the input objects, `input.review`, parameters and
//! `data.inventory` all cross this boundary once per review, so it is done directly rather than
//! through serde.

use std::collections::BTreeMap;

use serde_json::Value;

/// Converts JSON to a regorus value directly (regorus' own conversion goes through serde and
/// an owned copy, which dominated the per-object cost).
pub(crate) fn to_rego(value: &Value) -> regorus::Value {
    match value {
        Value::Null => regorus::Value::Null,
        Value::Bool(b) => regorus::Value::from(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                regorus::Value::from(i)
            } else if let Some(u) = n.as_u64() {
                regorus::Value::from(u)
            } else {
                regorus::Value::from(n.as_f64().unwrap_or(0.0))
            }
        }
        Value::String(s) => regorus::Value::from(s.as_str()),
        Value::Array(items) => regorus::Value::from(items.iter().map(to_rego).collect::<Vec<_>>()),
        Value::Object(map) => rego_object(map.iter().map(|(k, v)| (k, to_rego(v)))),
    }
}

/// A regorus object with string keys, in regorus' compact read-only layout (a sorted slice:
/// less memory than a B-tree, and what regorus' own JSON parser produces).
pub(crate) fn rego_object<K: AsRef<str>>(
    entries: impl IntoIterator<Item = (K, regorus::Value)>,
) -> regorus::Value {
    let map: BTreeMap<regorus::Value, regorus::Value> = entries
        .into_iter()
        .map(|(k, v)| (regorus::Value::from(k.as_ref()), v))
        .collect();
    regorus::value::Object::from(map).into_value()
}
