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
        Value::Number(n) => match n.as_i64() {
            Some(i) if i.unsigned_abs() <= EXACT_IN_FLOAT64 => regorus::Value::from(i),
            _ => float64_number(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => regorus::Value::from(s.as_str()),
        Value::Array(items) => regorus::Value::from(items.iter().map(to_rego).collect::<Vec<_>>()),
        Value::Object(map) => rego_object(map.iter().map(|(k, v)| (k, to_rego(v)))),
    }
}

/// The integers a float64 holds exactly (2^53).
const EXACT_IN_FLOAT64: u64 = 1 << 53;

/// A number as Gatekeeper's OPA receives it: the object went through Go's JSON decoding into
/// a float64, whose shortest decimal text OPA then reads as an exact number. An integral value
/// past 2^53 is therefore the exact integer of that text (`9223372036854775808` arrives as
/// `9223372036854776000`), kept as a big integer so arithmetic on it stays exact as in OPA
/// instead of rounding again in f64.
fn float64_number(f: f64) -> regorus::Value {
    // Up to 2^127 an integral float64 is an i128; past it Go's text has more digits than
    // anything a workload holds, and the float64 stays.
    if f.is_finite() && f.fract() == 0.0 && f.abs() > EXACT_IN_FLOAT64 as f64 && f.abs() < 1.7e38 {
        // Rust's `Display` of an f64 is its shortest round-trip digits, written out in full.
        if let Ok(exact) = format!("{f}").parse::<i128>() {
            return regorus::Value::from(exact);
        }
    }
    regorus::Value::from(f)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// gator v3.21.1: `input.n + input.n - 186` of `n: 9223372036854775808` is
    /// `18446744073709551814` (the float64's decimal, doubled exactly).
    #[test]
    fn integers_past_float64_precision_arrive_as_gatekeeper_reads_them() {
        let n = to_rego(&serde_json::json!(9223372036854775808u64));
        let regorus::Value::Number(n) = n else {
            panic!("a number");
        };
        let twice = n
            .add(&n)
            .and_then(|t| t.sub(&regorus::Value::from(186u64).as_number().unwrap().clone()));
        assert_eq!(twice.unwrap().as_i128(), Some(18446744073709551814));
        assert_eq!(to_rego(&serde_json::json!(12)).to_string(), "12");
        assert_eq!(
            to_rego(&serde_json::json!(-9007199254740993i64)).to_string(),
            "-9007199254740992"
        );
    }
}
