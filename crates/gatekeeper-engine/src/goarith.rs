//! Rego's arithmetic operators as OPA evaluates them with strict built-in errors off
//! (Gatekeeper's default): `+ - * / %` are the built-ins `plus`, `minus`, `mul`, `div` and
//! `rem`, so a type error (`"6" - 1`), a division by zero or `%` of a non-integer makes only
//! that expression undefined, and its rule body fails, where regorus aborts the whole
//! evaluation. Templates have their operators rewritten into calls of this extension
//! (`crate::spanedit`), which computes with regorus' numbers and is undefined where OPA's
//! built-in fails.

use std::collections::BTreeSet;

use regorus::Value;

/// The extension the operators are rewritten into: `__gk_arith(op, lhs, rhs)`.
pub(crate) const NAME: &str = "__gk_arith";

/// The operator's text for the call (`"-"`, …).
pub(crate) fn op_text(op: &regorus::unstable::ArithOp) -> &'static str {
    use regorus::unstable::ArithOp;
    match op {
        ArithOp::Add => "+",
        ArithOp::Sub => "-",
        ArithOp::Mul => "*",
        ArithOp::Div => "/",
        ArithOp::Mod => "%",
    }
}

/// The extension: the operator applied as OPA's built-in, `Undefined` where that one fails.
pub(crate) fn extension(params: Vec<Value>) -> anyhow::Result<Value> {
    let [Value::String(op), lhs, rhs] = params.as_slice() else {
        return Ok(Value::Undefined);
    };
    Ok(apply(op, lhs, rhs).unwrap_or(Value::Undefined))
}

fn apply(op: &str, lhs: &Value, rhs: &Value) -> Option<Value> {
    match (op, lhs, rhs) {
        ("-", Value::Set(a), Value::Set(b)) => {
            let remove: BTreeSet<&Value> = b.iter().collect();
            let kept: BTreeSet<Value> = a.iter().filter(|v| !remove.contains(v)).cloned().collect();
            Some(Value::from(kept))
        }
        (_, Value::Number(a), Value::Number(b)) => {
            let zero = |n: &regorus::Value| n == &Value::from(0u64);
            let number = match op {
                "+" => a.add(b).ok()?,
                "-" => a.sub(b).ok()?,
                "*" => a.mul(b).ok()?,
                "/" if zero(rhs) => return None,
                "/" => a.clone().divide(b).ok()?,
                "%" if zero(rhs) || !a.is_integer() || !b.is_integer() => return None,
                "%" => a.clone().modulo(b).ok()?,
                _ => return None,
            };
            Some(Value::Number(number))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(op: &str, lhs: &str, rhs: &str) -> String {
        let value = extension(vec![
            Value::from(op),
            Value::from_json_str(lhs).unwrap(),
            Value::from_json_str(rhs).unwrap(),
        ])
        .unwrap();
        if value == Value::Undefined {
            "undefined".to_string()
        } else {
            value.to_string()
        }
    }

    #[test]
    fn operators_compute_like_opa_and_are_undefined_where_its_builtins_fail() {
        assert_eq!(call("-", "6", "1"), "5");
        assert_eq!(call("+", "1.5", "1"), "2.5");
        assert_eq!(call("*", "3", "4"), "12");
        assert_eq!(call("/", "7", "2"), "3.5");
        assert_eq!(call("%", "7", "4"), "3");
        assert_eq!(call("-", "\"6\"", "1"), "undefined");
        assert_eq!(call("+", "null", "1"), "undefined");
        assert_eq!(call("/", "1", "0"), "undefined");
        assert_eq!(call("%", "1.5", "1"), "undefined");
        assert_eq!(call("%", "1", "0"), "undefined");
    }
}
