//! Values across the boundary: JSON bindings into CEL values borrowing the JSON's text, and a
//! CEL value into an owned, `'static` copy (how a variable's result is kept for the rest of an
//! evaluation, and how a Constraint's converted parameters are kept across reviews).
//!
//! JSON numbers become `int` when they are whole and fit an `int64`, `double` otherwise, as
//! Kubernetes' unstructured decoding makes them. Nesting is capped at [`MAX_DEPTH`] so a value
//! built by hand (not by a depth-limited parser) cannot exhaust the stack.

use crate::library::{format::NamedFormat, net::Cidr, net::Ip, quantity::Quantity, urls::Url};
use cel::ExecutionError;
use cel::common::types::{
    CelBool, CelBytes, CelDouble, CelDuration, CelInt, CelList, CelMap, CelMapKey, CelNull,
    CelOptional, CelString, CelTimestamp, CelUInt, Kind,
};
use cel::common::value::{StaticVal, Val};
use serde_json::Value as Json;
use std::collections::HashMap;

/// The deepest nesting a binding or a kept value may have.
pub const MAX_DEPTH: usize = 128;

/// `json` as a CEL value that borrows its strings and keys from `json` (converting a binding
/// allocates its maps and lists, never a copy of its text); `None` when it nests deeper than
/// [`MAX_DEPTH`].
pub(crate) fn from_json(json: &Json) -> Option<Box<dyn Val + '_>> {
    convert(json, 0)
}

/// Whether `json` nests no deeper than [`MAX_DEPTH`], so [`from_json`] converts it. Checking
/// costs a walk without allocating, so a binding can be checked up front and converted only
/// when an expression reads it.
pub(crate) fn within_depth(json: &Json) -> bool {
    depth_within(json, 0)
}

fn depth_within(json: &Json, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    match json {
        Json::Array(items) => items.iter().all(|item| depth_within(item, depth + 1)),
        Json::Object(fields) => fields.values().all(|value| depth_within(value, depth + 1)),
        _ => true,
    }
}

fn convert(json: &Json, depth: usize) -> Option<Box<dyn Val + '_>> {
    if depth > MAX_DEPTH {
        return None;
    }
    Some(match json {
        Json::Null => Box::new(CelNull),
        Json::Bool(b) => Box::new(CelBool::from(*b)),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Box::new(CelInt::from(i)),
            None => Box::new(CelDouble::from(n.as_f64().unwrap_or(f64::NAN))),
        },
        Json::String(s) => Box::new(CelString::from(s.as_str())),
        Json::Array(items) => {
            let items = items
                .iter()
                .map(|item| convert(item, depth + 1))
                .collect::<Option<Vec<_>>>()?;
            Box::new(CelList::from(items))
        }
        Json::Object(fields) => {
            let mut map = HashMap::with_capacity(fields.len());
            for (key, value) in fields {
                map.insert(CelMapKey::from(key.as_str()), convert(value, depth + 1)?);
            }
            Box::new(CelMap::from(map))
        }
    })
}

/// The error for a value that cannot be kept.
fn unkeepable(val: &dyn Val) -> ExecutionError {
    ExecutionError::function_error(
        "variables",
        format!("cannot keep a value of type {}", val.get_type().name()),
    )
}

/// A copy of `val` that borrows nothing.
pub(crate) fn to_static(val: &dyn Val) -> Result<Box<dyn Val + 'static>, ExecutionError> {
    to_static_at(val, 0)
}

/// Copies a value of a `'static` Rust type, if `val` is one.
fn copy_static<T: StaticVal + Clone>(val: &dyn Val) -> Option<Box<dyn Val + 'static>> {
    val.downcast_ref::<T>()
        .map(|v| Box::new(v.clone()) as Box<dyn Val + 'static>)
}

fn to_static_at(val: &dyn Val, depth: usize) -> Result<Box<dyn Val + 'static>, ExecutionError> {
    if depth > MAX_DEPTH {
        return Err(ExecutionError::function_error(
            "variables",
            "value nested too deeply",
        ));
    }
    if val.downcast_ref::<CelOptional>().is_some() {
        return optional_to_static(val, depth);
    }
    match val.get_type().kind() {
        Kind::Boolean => val
            .downcast_ref::<CelBool>()
            .map(|b| Box::new(*b) as Box<dyn Val>),
        Kind::Int => val
            .downcast_ref::<CelInt>()
            .map(|i| Box::new(*i) as Box<dyn Val>),
        Kind::UInt => val
            .downcast_ref::<CelUInt>()
            .map(|u| Box::new(*u) as Box<dyn Val>),
        Kind::Double => val
            .downcast_ref::<CelDouble>()
            .map(|d| Box::new(*d) as Box<dyn Val>),
        Kind::NullType => Some(Box::new(CelNull) as Box<dyn Val>),
        Kind::String => val
            .downcast_ref::<CelString>()
            .map(|s| Box::new(CelString::from(s.inner().to_owned())) as Box<dyn Val>),
        Kind::Bytes => val
            .downcast_ref::<CelBytes>()
            .map(|b| Box::new(CelBytes::from(b.inner().to_vec())) as Box<dyn Val>),
        Kind::Duration => val
            .downcast_ref::<CelDuration>()
            .map(|d| Box::new(*d) as Box<dyn Val>),
        Kind::Timestamp => val
            .downcast_ref::<CelTimestamp>()
            .map(|t| Box::new(t.clone()) as Box<dyn Val>),
        Kind::List => return list_to_static(val, depth),
        Kind::Map => return map_to_static(val, depth),
        _ => copy_static::<Quantity>(val)
            .or_else(|| copy_static::<Url>(val))
            .or_else(|| copy_static::<Ip>(val))
            .or_else(|| copy_static::<Cidr>(val))
            .or_else(|| copy_static::<NamedFormat>(val)),
    }
    .ok_or_else(|| unkeepable(val))
}

fn list_to_static(val: &dyn Val, depth: usize) -> Result<Box<dyn Val + 'static>, ExecutionError> {
    // The built-in list is walked directly (no iterator object, the size known up front).
    if let Some(list) = val.downcast_ref::<CelList>() {
        let items = list.inner();
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            out.push(to_static_at(item.as_ref(), depth + 1)?);
        }
        return Ok(Box::new(CelList::from(out)));
    }
    let iterable = val.as_iterable().ok_or_else(|| unkeepable(val))?;
    let mut items = iterable.iter();
    let mut out = Vec::new();
    while let Some(item) = items.next() {
        out.push(to_static_at(item, depth + 1)?);
    }
    Ok(Box::new(CelList::from(out)))
}

fn map_to_static(val: &dyn Val, depth: usize) -> Result<Box<dyn Val + 'static>, ExecutionError> {
    // The built-in map is walked by its entries: no lookup of each key again.
    if let Some(map) = val.downcast_ref::<CelMap>() {
        let mut out = HashMap::with_capacity(map.len());
        for (key, value) in map.inner() {
            out.insert(
                key.clone().into_static(),
                to_static_at(value.as_ref(), depth + 1)?,
            );
        }
        return Ok(Box::new(CelMap::from(out)));
    }
    let (Some(keys), Some(indexer)) = (val.as_iterable(), val.as_indexer()) else {
        return Err(unkeepable(val));
    };
    let mut keys = keys.iter();
    let mut out = HashMap::new();
    while let Some(key) = keys.next() {
        let value = indexer.get(key)?;
        let key =
            CelMapKey::try_from(to_static_at(key, depth + 1)?).map_err(|_| unkeepable(key))?;
        out.insert(key, to_static_at(value.as_ref(), depth + 1)?);
    }
    Ok(Box::new(CelMap::from(out)))
}

fn optional_to_static(
    val: &dyn Val,
    depth: usize,
) -> Result<Box<dyn Val + 'static>, ExecutionError> {
    let optional = val
        .downcast_ref::<CelOptional>()
        .ok_or_else(|| unkeepable(val))?;
    Ok(Box::new(match optional.inner() {
        Some(inner) => CelOptional::of(to_static_at(inner, depth + 1)?),
        None => CelOptional::none(),
    }))
}
