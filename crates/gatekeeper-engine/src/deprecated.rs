//! The built-ins OPA deprecated but still provides to Rego v0 modules: `re_match`, `any`, `all`,
//! `set_diff`, `cast_array`, `cast_set`, `cast_string`, `cast_boolean`, `cast_null`,
//! `cast_object` and `net.cidr_overlap`.
//!
//! Gatekeeper compiles a template without `version: v1` as Rego v0, where templates written
//! years ago still call them; regorus has none of them. They are registered as extensions on v0
//! template engines only: a v1 template that calls one is refused at ingestion with OPA's
//! `rego_type_error: deprecated built-in function calls in expression: <name>` (see
//! `analysis`).
//!
//! Semantics are OPA's: `any`/`all` test whether a collection contains / only contains the
//! value `true` (`all` of an empty collection is true); the casts return their argument when it
//! already has the type (`cast_array` also turns a set into a sorted array, `cast_set` an array
//! into a set); `set_diff` is `a - b`; `re_match` is `regex.match`; `net.cidr_overlap` is
//! `net.cidr_contains`. A wrong argument type is an operand type error in OPA, which
//! Gatekeeper's non-strict evaluation turns into an undefined expression: here, undefined.

use std::collections::BTreeSet;
use std::net::IpAddr;

use regorus::Value;

/// One deprecated built-in: its name, arity and implementation.
pub(crate) struct Deprecated {
    /// The name templates call.
    pub(crate) name: &'static str,
    /// The number of arguments.
    pub(crate) arity: u8,
    /// The implementation.
    pub(crate) call: fn(&[Value]) -> Value,
}

/// Every deprecated built-in a v0 module may call.
pub(crate) const DEPRECATED: [Deprecated; 11] = [
    Deprecated {
        name: "re_match",
        arity: 2,
        call: re_match,
    },
    Deprecated {
        name: "any",
        arity: 1,
        call: any,
    },
    Deprecated {
        name: "all",
        arity: 1,
        call: all,
    },
    Deprecated {
        name: "set_diff",
        arity: 2,
        call: set_diff,
    },
    Deprecated {
        name: "cast_array",
        arity: 1,
        call: cast_array,
    },
    Deprecated {
        name: "cast_set",
        arity: 1,
        call: cast_set,
    },
    Deprecated {
        name: "cast_string",
        arity: 1,
        call: cast_string,
    },
    Deprecated {
        name: "cast_boolean",
        arity: 1,
        call: cast_boolean,
    },
    Deprecated {
        name: "cast_null",
        arity: 1,
        call: cast_null,
    },
    Deprecated {
        name: "cast_object",
        arity: 1,
        call: cast_object,
    },
    Deprecated {
        name: "net.cidr_overlap",
        arity: 2,
        call: cidr_overlap,
    },
];

/// Whether `name` is one of the deprecated built-ins.
pub(crate) fn is_deprecated(name: &str) -> bool {
    DEPRECATED.iter().any(|d| d.name == name)
}

/// Registers every deprecated built-in on a v0 engine.
pub(crate) fn register(engine: &mut regorus::Engine) -> anyhow::Result<()> {
    for builtin in &DEPRECATED {
        let call = builtin.call;
        engine.add_extension(
            builtin.name.to_string(),
            builtin.arity,
            Box::new(move |params: Vec<Value>| Ok(call(&params))),
        )?;
    }
    Ok(())
}

fn first(params: &[Value]) -> &Value {
    params.first().unwrap_or(&Value::Undefined)
}

fn second(params: &[Value]) -> &Value {
    params.get(1).unwrap_or(&Value::Undefined)
}

fn re_match(params: &[Value]) -> Value {
    crate::regexmatch::call(first(params), second(params))
}

/// The elements of an array or a set; `None` for anything else.
fn elements(value: &Value) -> Option<Vec<&Value>> {
    match value {
        Value::Array(items) => Some(items.iter().collect()),
        Value::Set(items) => Some(items.iter().collect()),
        _ => None,
    }
}

fn any(params: &[Value]) -> Value {
    let truth = Value::from(true);
    elements(first(params)).map_or(Value::Undefined, |items| {
        Value::from(items.iter().any(|v| **v == truth))
    })
}

fn all(params: &[Value]) -> Value {
    let truth = Value::from(true);
    elements(first(params)).map_or(Value::Undefined, |items| {
        Value::from(items.iter().all(|v| **v == truth))
    })
}

fn set_diff(params: &[Value]) -> Value {
    match (first(params), second(params)) {
        (Value::Set(a), Value::Set(b)) => a.difference(b).into_value(),
        _ => Value::Undefined,
    }
}

fn cast_array(params: &[Value]) -> Value {
    match first(params) {
        array @ Value::Array(_) => array.clone(),
        Value::Set(items) => Value::from(items.iter().cloned().collect::<Vec<_>>()),
        _ => Value::Undefined,
    }
}

fn cast_set(params: &[Value]) -> Value {
    match first(params) {
        set @ Value::Set(_) => set.clone(),
        Value::Array(items) => Value::from(items.iter().cloned().collect::<BTreeSet<_>>()),
        _ => Value::Undefined,
    }
}

/// The argument when `keep` accepts it, else undefined.
fn cast_if(params: &[Value], keep: fn(&Value) -> bool) -> Value {
    let value = first(params);
    if keep(value) {
        value.clone()
    } else {
        Value::Undefined
    }
}

fn cast_string(params: &[Value]) -> Value {
    cast_if(params, |v| matches!(v, Value::String(_)))
}

fn cast_boolean(params: &[Value]) -> Value {
    cast_if(params, |v| matches!(v, Value::Bool(_)))
}

fn cast_null(params: &[Value]) -> Value {
    cast_if(params, |v| matches!(v, Value::Null))
}

fn cast_object(params: &[Value]) -> Value {
    cast_if(params, |v| matches!(v, Value::Object(_)))
}

/// A network in CIDR notation, or a single address (a full-length prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Network {
    address: IpAddr,
    prefix: u8,
}

impl Network {
    fn parse(text: &str, address_allowed: bool) -> Option<Network> {
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address.parse::<IpAddr>().ok()?, Some(prefix)),
            None if address_allowed => (text.parse::<IpAddr>().ok()?, None),
            None => return None,
        };
        let max = if address.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) if p.bytes().all(|b| b.is_ascii_digit()) && !p.is_empty() => {
                p.parse::<u8>().ok().filter(|p| *p <= max)?
            }
            Some(_) => return None,
        };
        Some(Network { address, prefix })
    }

    /// The address bits under this network's prefix, as a 128-bit number.
    fn masked(&self, prefix: u8) -> u128 {
        let (bits, width) = match self.address {
            IpAddr::V4(v4) => (u128::from(u32::from(v4)), 32),
            IpAddr::V6(v6) => (u128::from(v6), 128),
        };
        let shift = u32::from(width - prefix);
        if shift >= 128 { 0 } else { bits >> shift }
    }

    fn contains(&self, other: &Network) -> bool {
        self.address.is_ipv4() == other.address.is_ipv4()
            && other.prefix >= self.prefix
            && self.masked(self.prefix) == other.masked(self.prefix)
    }
}

fn cidr_overlap(params: &[Value]) -> Value {
    let (Value::String(cidr), Value::String(other)) = (first(params), second(params)) else {
        return Value::Undefined;
    };
    match (Network::parse(cidr, false), Network::parse(other, true)) {
        (Some(network), Some(other)) => Value::from(network.contains(&other)),
        _ => Value::Undefined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(json: &str) -> Value {
        Value::from_json_str(json).unwrap()
    }

    fn set(json: &str) -> Value {
        cast_set(&[v(json)])
    }

    #[test]
    fn any_and_all_look_for_true() {
        assert_eq!(any(&[v("[false, true]")]), Value::from(true));
        assert_eq!(any(&[v("[1, \"true\"]")]), Value::from(false));
        assert_eq!(any(&[v("[]")]), Value::from(false));
        assert_eq!(any(&[set("[false, true]")]), Value::from(true));
        assert_eq!(all(&[v("[true, true]")]), Value::from(true));
        assert_eq!(all(&[v("[true, 1]")]), Value::from(false));
        assert_eq!(all(&[v("[]")]), Value::from(true));
        assert_eq!(all(&[v("\"x\"")]), Value::Undefined);
    }

    #[test]
    fn casts_keep_their_type_or_are_undefined() {
        assert_eq!(cast_array(&[set("[3, 1, 2]")]), v("[1, 2, 3]"));
        assert_eq!(cast_array(&[v("[3, 1]")]), v("[3, 1]"));
        assert_eq!(cast_set(&[v("[1, 1, 2]")]), set("[2, 1]"));
        assert_eq!(cast_string(&[v("\"a\"")]), v("\"a\""));
        assert_eq!(cast_string(&[v("1")]), Value::Undefined);
        assert_eq!(cast_boolean(&[v("false")]), v("false"));
        assert_eq!(cast_null(&[v("null")]), Value::Null);
        assert_eq!(cast_null(&[v("0")]), Value::Undefined);
        assert_eq!(cast_object(&[v("{\"a\": 1}")]), v("{\"a\": 1}"));
        assert_eq!(cast_object(&[v("[]")]), Value::Undefined);
    }

    #[test]
    fn set_diff_subtracts_sets_only() {
        assert_eq!(set_diff(&[set("[1, 2, 3]"), set("[2]")]), set("[1, 3]"));
        assert_eq!(set_diff(&[v("[1]"), set("[1]")]), Value::Undefined);
    }

    #[test]
    fn cidr_overlap_is_cidr_contains() {
        let call = |a: &str, b: &str| cidr_overlap(&[Value::from(a), Value::from(b)]);
        assert_eq!(call("10.0.0.0/8", "10.1.2.3"), Value::from(true));
        assert_eq!(call("10.0.0.0/8", "11.0.0.1"), Value::from(false));
        assert_eq!(call("10.0.0.0/8", "10.1.0.0/16"), Value::from(true));
        assert_eq!(call("10.1.0.0/16", "10.0.0.0/8"), Value::from(false));
        assert_eq!(call("fd00::/8", "fd12::1"), Value::from(true));
        assert_eq!(call("fd00::/8", "10.0.0.1"), Value::from(false));
        assert_eq!(call("0.0.0.0/0", "192.168.1.1"), Value::from(true));
        assert_eq!(call("10.0.0.1", "10.0.0.1"), Value::Undefined);
        assert_eq!(call("10.0.0.0/33", "10.0.0.1"), Value::Undefined);
    }
}
