//! Python (CPython 3.14) semantics on `serde_json::Value`: truthiness, `str()`/`repr()`, `int()`,
//! `float()`, equality, ordering and the exception texts the reference would raise.
//!
//! The reference implementation is Python and its observable behaviour (messages, which inputs
//! are rejected, which raise) depends on these semantics.

use std::cmp::Ordering;
use std::fmt;

use serde_json::{Map, Value};

/// The Python exception types the reference can raise on malformed input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PythonErrorKind {
    /// `TypeError`: a value of the wrong type (not iterable, unhashable, not orderable…).
    TypeError,
    /// `ValueError`: a string that is not a number (`int("4000m")`).
    ValueError,
    /// `AttributeError`: an object was expected and something else was given.
    AttributeError,
    /// `OverflowError`: a float too large to become an integer.
    OverflowError,
}

impl PythonErrorKind {
    /// The Python class name, e.g. `TypeError`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TypeError => "TypeError",
            Self::ValueError => "ValueError",
            Self::AttributeError => "AttributeError",
            Self::OverflowError => "OverflowError",
        }
    }
}

impl fmt::Display for PythonErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A Python exception the reference would raise: its type and its `str()` text.
///
/// Displays as `<Type>: <text>`, the form the reference uses for reasons
/// (`f"{type(e).__name__}: {e}"`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct PythonError {
    /// The exception type.
    pub kind: PythonErrorKind,
    /// The exception text (`str(e)`), modelled on CPython's wording.
    pub message: String,
}

impl PythonError {
    pub(crate) fn new(kind: PythonErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    pub(crate) fn type_error(message: impl Into<String>) -> Self {
        Self::new(PythonErrorKind::TypeError, message)
    }

    pub(crate) fn value_error(message: impl Into<String>) -> Self {
        Self::new(PythonErrorKind::ValueError, message)
    }

    /// `'<type>' object has no attribute '<attr>'`.
    pub(crate) fn no_attribute(value: &Value, attr: &str) -> Self {
        Self::new(
            PythonErrorKind::AttributeError,
            format!("'{}' object has no attribute '{attr}'", type_name(value)),
        )
    }

    /// `'<type>' object is not iterable`.
    pub(crate) fn not_iterable(value: &Value) -> Self {
        Self::type_error(format!("'{}' object is not iterable", type_name(value)))
    }

    /// `unhashable type: '<type>'`.
    pub(crate) fn unhashable(value: &Value) -> Self {
        Self::type_error(format!("unhashable type: '{}'", type_name(value)))
    }
}

/// Shorthand for results that can carry a Python exception.
pub(crate) type PyResult<T> = Result<T, PythonError>;

/// The Python type name of a JSON value (`NoneType`, `bool`, `int`, `float`, `str`, `list`, `dict`).
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// Python truthiness: `None`, `False`, `0`, `0.0`, `""`, `[]` and `{}` are false.
pub fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i != 0
            } else if let Some(u) = n.as_u64() {
                u != 0
            } else {
                n.as_f64().is_some_and(|f| f != 0.0)
            }
        }
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Key lookup for the checks' hot path.
///
/// `serde_json` maps keep insertion order (an `IndexMap` behind `preserve_order`), so `get`
/// hashes the key with SipHash on every call. The maps a manifest is made of are small
/// (a container has a handful of keys), where comparing the keys in place is several times
/// cheaper than hashing; large maps still use the index.
pub(crate) trait Fields {
    /// The value under `key`, like `get`.
    fn field(&self, key: &str) -> Option<&Value>;
}

/// Up to this many entries a map is scanned rather than hashed.
const SCAN_LIMIT: usize = 8;

impl Fields for Map<String, Value> {
    fn field(&self, key: &str) -> Option<&Value> {
        if self.len() <= SCAN_LIMIT {
            self.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
        } else {
            self.get(key)
        }
    }
}

impl Fields for Value {
    /// `Value::get` for a string key: `None` unless the value is an object.
    fn field(&self, key: &str) -> Option<&Value> {
        self.as_object().and_then(|map| map.field(key))
    }
}

/// `value.get(key)` on something that must be a dict (`AttributeError` otherwise).
pub(crate) fn get<'a>(value: &'a Value, key: &str) -> PyResult<Option<&'a Value>> {
    match value {
        Value::Object(map) => Ok(map.field(key)),
        other => Err(PythonError::no_attribute(other, "get")),
    }
}

/// `key in value` for a string `key`: dict key, list element, substring; `TypeError` otherwise.
pub(crate) fn contains_str(value: &Value, key: &str) -> PyResult<bool> {
    match value {
        Value::Object(map) => Ok(map.field(key).is_some()),
        Value::Array(items) => Ok(items.iter().any(|item| item.as_str() == Some(key))),
        Value::String(s) => Ok(s.contains(key)),
        other => Err(PythonError::type_error(format!(
            "argument of type '{}' is not iterable",
            type_name(other)
        ))),
    }
}

/// Iterates a value the way Python's `for x in value` does: list items, dict keys, string
/// characters; `TypeError` for anything else. Keys and characters become owned strings.
pub(crate) fn iterate(value: &Value) -> PyResult<PyIter<'_>> {
    match value {
        Value::Array(items) => Ok(PyIter::List(items.iter())),
        Value::Object(map) => Ok(PyIter::Keys(map.keys())),
        Value::String(s) => Ok(PyIter::Chars(s.chars())),
        other => Err(PythonError::not_iterable(other)),
    }
}

/// An iterator over a Python iterable built from a JSON value.
pub(crate) enum PyIter<'a> {
    List(std::slice::Iter<'a, Value>),
    Keys(serde_json::map::Keys<'a>),
    Chars(std::str::Chars<'a>),
}

/// One item of a [`PyIter`]: borrowed list items, owned keys and characters.
pub(crate) enum PyItem<'a> {
    Borrowed(&'a Value),
    Owned(Value),
}

impl PyItem<'_> {
    pub(crate) fn value(&self) -> &Value {
        match self {
            PyItem::Borrowed(v) => v,
            PyItem::Owned(v) => v,
        }
    }

    pub(crate) fn into_owned(self) -> Value {
        match self {
            PyItem::Borrowed(v) => v.clone(),
            PyItem::Owned(v) => v,
        }
    }
}

impl<'a> Iterator for PyIter<'a> {
    type Item = PyItem<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            PyIter::List(it) => it.next().map(PyItem::Borrowed),
            PyIter::Keys(it) => it.next().map(|k| PyItem::Owned(Value::String(k.clone()))),
            PyIter::Chars(it) => it
                .next()
                .map(|c| PyItem::Owned(Value::String(c.to_string()))),
        }
    }
}

/// Whether Python could hash the value (lists and dicts cannot be hashed).
pub(crate) fn hashable(value: &Value) -> bool {
    !matches!(value, Value::Array(_) | Value::Object(_))
}

/// A numeric view of a JSON scalar for Python comparisons (`bool` is an `int`).
#[derive(Clone, Copy)]
enum Num {
    Int(i128),
    Float(f64),
}

fn as_num(value: &Value) -> Option<Num> {
    match value {
        Value::Bool(b) => Some(Num::Int(i128::from(*b))),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Some(Num::Int(i128::from(i)))
            } else if let Some(u) = n.as_u64() {
                Some(Num::Int(i128::from(u)))
            } else {
                n.as_f64().map(Num::Float)
            }
        }
        _ => None,
    }
}

fn num_cmp(a: Num, b: Num) -> Option<Ordering> {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => Some(x.cmp(&y)),
        (Num::Float(x), Num::Float(y)) => x.partial_cmp(&y),
        (Num::Int(x), Num::Float(y)) => int_float_cmp(x, y),
        (Num::Float(x), Num::Int(y)) => int_float_cmp(y, x).map(Ordering::reverse),
    }
}

/// Exact comparison of an integer with a float (Python compares them exactly).
fn int_float_cmp(i: i128, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    if f.is_infinite() {
        return Some(if f > 0.0 {
            Ordering::Less
        } else {
            Ordering::Greater
        });
    }
    let truncated = f.trunc();
    // Every finite f64 beyond i128's range is compared by sign.
    if truncated >= 1.7e38 {
        return Some(Ordering::Less);
    }
    if truncated <= -1.7e38 {
        return Some(Ordering::Greater);
    }
    let whole = truncated as i128;
    match i.cmp(&whole) {
        Ordering::Equal => {
            let frac = f - truncated;
            Some(if frac > 0.0 {
                Ordering::Less
            } else if frac < 0.0 {
                Ordering::Greater
            } else {
                Ordering::Equal
            })
        }
        other => Some(other),
    }
}

/// Python `a == b` for JSON values (numbers across int/float/bool, lists and dicts deeply).
pub(crate) fn py_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| py_eq(v, w)))
        }
        _ => match (as_num(a), as_num(b)) {
            (Some(x), Some(y)) => num_cmp(x, y) == Some(Ordering::Equal),
            _ => false,
        },
    }
}

/// Python `a < b` (and the ordering it implies), or the `TypeError` Python raises.
pub(crate) fn py_cmp(a: &Value, b: &Value) -> PyResult<Ordering> {
    match (a, b) {
        (Value::String(x), Value::String(y)) => Ok(x.as_str().cmp(y.as_str())),
        (Value::Array(x), Value::Array(y)) => {
            for (p, q) in x.iter().zip(y) {
                if !py_eq(p, q) {
                    return py_cmp(p, q);
                }
            }
            Ok(x.len().cmp(&y.len()))
        }
        _ => match (as_num(a), as_num(b)) {
            (Some(x), Some(y)) => Ok(num_cmp(x, y).unwrap_or(Ordering::Equal)),
            _ => Err(PythonError::type_error(format!(
                "'<' not supported between instances of '{}' and '{}'",
                type_name(b),
                type_name(a)
            ))),
        },
    }
}

/// Python `sorted(values)`: a stable sort that fails like Python when two items cannot be ordered.
///
/// The sort itself always runs on [`total_cmp`], a total order that agrees with Python's `<`
/// wherever Python can compare (so the result is Python's whenever Python succeeds: a stable sort
/// under one total order has one answer). Each compared pair is also checked with [`py_cmp`], and
/// the first pair Python could not compare is the `TypeError`. Which pairs a sort compares depends
/// on the algorithm, but every sort compares a set of pairs that links all items, so a list mixing
/// types Python cannot order (`1` and `"a"`), or holding `None` or a dict beside anything, raises
/// here exactly when it raises in Python; only nested lists that differ in an incomparable
/// position deep inside can raise in one and not the other.
pub(crate) fn py_sort(values: &mut [Value]) -> PyResult<()> {
    if values.len() < 2 {
        return Ok(());
    }
    let mut failure: Option<PythonError> = None;
    values.sort_by(|a, b| {
        if failure.is_none()
            && let Err(error) = py_cmp(a, b)
        {
            failure = Some(error);
        }
        total_cmp(a, b)
    });
    match failure {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// A total order on JSON values that agrees with [`py_cmp`] wherever that succeeds and is
/// `Equal` exactly when [`py_eq`] holds: numbers (bools included) by value, then strings by code
/// point, then lists lexicographically, then `null`, then dicts (by their sorted items).
pub(crate) fn total_cmp(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::String(x), Value::String(y)) => x.as_str().cmp(y.as_str()),
        (Value::Array(x), Value::Array(y)) => {
            for (p, q) in x.iter().zip(y) {
                if !py_eq(p, q) {
                    return total_cmp(p, q);
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            let mut left: Vec<(&String, &Value)> = x.iter().collect();
            let mut right: Vec<(&String, &Value)> = y.iter().collect();
            left.sort_by(|p, q| p.0.cmp(q.0));
            right.sort_by(|p, q| p.0.cmp(q.0));
            for ((kp, vp), (kq, vq)) in left.iter().zip(&right) {
                let order = kp.cmp(kq).then_with(|| total_cmp(vp, vq));
                if order != Ordering::Equal {
                    return order;
                }
            }
            left.len().cmp(&right.len())
        }
        _ => match (as_num(a), as_num(b)) {
            (Some(x), Some(y)) => num_cmp(x, y).unwrap_or(Ordering::Equal),
            _ => type_rank(a).cmp(&type_rank(b)),
        },
    }
}

/// The place of each JSON type in [`total_cmp`].
fn type_rank(value: &Value) -> u8 {
    match value {
        Value::Bool(_) | Value::Number(_) => 0,
        Value::String(_) => 1,
        Value::Array(_) => 2,
        Value::Null => 3,
        Value::Object(_) => 4,
    }
}

/// Python `str(value)`.
pub fn py_str(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => py_repr(other),
    }
}

/// Appends Python `str(value)` to `out`.
pub(crate) fn push_py_str(out: &mut String, value: &Value) {
    match value {
        Value::String(s) => out.push_str(s),
        other => push_py_repr(out, other),
    }
}

/// Python `repr(value)` (`'text'`, `True`, `None`, `1.5`, `['a', 1]`, `{'k': True}`).
pub fn py_repr(value: &Value) -> String {
    let mut out = String::new();
    push_py_repr(&mut out, value);
    out
}

/// Appends Python `repr(value)` to `out`.
pub(crate) fn push_py_repr(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push_str(&i.to_string());
            } else if let Some(u) = n.as_u64() {
                out.push_str(&u.to_string());
            } else {
                out.push_str(&float_repr(n.as_f64().unwrap_or(f64::NAN)));
            }
        }
        Value::String(s) => push_str_repr(out, s),
        Value::Array(items) => push_list_repr(out, items.iter()),
        Value::Object(map) => push_dict_repr(out, map),
    }
}

/// Appends the Python repr of a list of values: `['a', 'b']`.
pub(crate) fn push_list_repr<'a>(out: &mut String, items: impl Iterator<Item = &'a Value>) {
    out.push('[');
    for (index, item) in items.enumerate() {
        if index > 0 {
            out.push_str(", ");
        }
        push_py_repr(out, item);
    }
    out.push(']');
}

fn push_dict_repr(out: &mut String, map: &Map<String, Value>) {
    out.push('{');
    for (index, (key, item)) in map.iter().enumerate() {
        if index > 0 {
            out.push_str(", ");
        }
        push_str_repr(out, key);
        out.push_str(": ");
        push_py_repr(out, item);
    }
    out.push('}');
}

/// Appends Python `repr(s)` for a string: single quotes unless the text holds a `'` and no `"`.
pub(crate) fn push_str_repr(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || (0x7f..0xa0).contains(&(c as u32)) => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

/// Python `repr(float)`: the shortest round-tripping digits, fixed notation for exponents in
/// `-4..16`, scientific (`1e+16`, `1.5e-05`) otherwise, and always a `.0` on integral values.
pub fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned();
    }
    // Rust's `{:e}` gives the shortest round-tripping digits, e.g. "-1.5e-5".
    let sci = format!("{x:e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if (-4..16).contains(&exponent) {
        if exponent < 0 {
            out.push_str("0.");
            for _ in 0..(-exponent - 1) {
                out.push('0');
            }
            out.push_str(&digits);
        } else {
            let point = usize::try_from(exponent).unwrap_or(0) + 1;
            if digits.len() <= point {
                out.push_str(&digits);
                for _ in digits.len()..point {
                    out.push('0');
                }
                out.push_str(".0");
            } else {
                out.push_str(&digits[..point]);
                out.push('.');
                out.push_str(&digits[point..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exponent < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exponent.unsigned_abs()));
    }
    out
}

/// Python `str.isspace()` for one character.
pub(crate) fn is_py_space(c: char) -> bool {
    matches!(
        c,
        '\u{9}'..='\u{d}'
            | '\u{1c}'..='\u{20}'
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// Python `str.strip()` (no arguments).
pub(crate) fn py_strip(s: &str) -> &str {
    s.trim_matches(is_py_space)
}

/// First code points of the Unicode `Nd` (decimal digit) runs; each run is `0..=9`.
const DECIMAL_RUNS: &[u32] = &[
    0x30, 0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66,
    0xDE6, 0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90,
    0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10,
    0x104A0, 0x10D30, 0x10D40, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0,
    0x11650, 0x116C0, 0x116D0, 0x116DA, 0x11730, 0x118E0, 0x11950, 0x11BF0, 0x11C50, 0x11D50,
    0x11DA0, 0x11F50, 0x16130, 0x16A60, 0x16AC0, 0x16B50, 0x16D70, 0x1CCF0, 0x1D7CE, 0x1D7D8,
    0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E140, 0x1E2F0, 0x1E4F0, 0x1E5F1, 0x1E950, 0x1FBF0,
];

/// The value of a Unicode decimal digit (what Python's `int()` accepts), if `c` is one.
pub(crate) fn decimal_digit(c: char) -> Option<u32> {
    let cp = c as u32;
    if c.is_ascii_digit() {
        return Some(cp - 0x30);
    }
    if cp < 0x660 {
        return None;
    }
    let index = DECIMAL_RUNS.partition_point(|&start| start <= cp);
    let start = DECIMAL_RUNS[index.checked_sub(1)?];
    (cp - start < 10).then_some(cp - start)
}

/// Python `int(s)` for a string, base 10; `ValueError` with CPython's text on failure.
///
/// Accepts surrounding whitespace, a sign, Unicode decimal digits and single `_` between digits.
/// Values beyond `i128` saturate (Python integers are unbounded; such inputs are not realistic).
pub(crate) fn py_int_from_str(s: &str) -> Result<i128, PythonError> {
    parse_int(s).ok_or_else(|| {
        let mut message = String::from("invalid literal for int() with base 10: ");
        push_str_repr(&mut message, s);
        PythonError::value_error(message)
    })
}

fn parse_int(s: &str) -> Option<i128> {
    let body = py_strip(s);
    let (negative, digits) = match body.as_bytes().first() {
        Some(b'-') => (true, &body[1..]),
        Some(b'+') => (false, &body[1..]),
        _ => (false, body),
    };
    let mut value: i128 = 0;
    let mut seen_digit = false;
    let mut previous_underscore = false;
    for c in digits.chars() {
        if c == '_' {
            if !seen_digit || previous_underscore {
                return None;
            }
            previous_underscore = true;
            continue;
        }
        let digit = decimal_digit(c)?;
        seen_digit = true;
        previous_underscore = false;
        value = value.saturating_mul(10).saturating_add(i128::from(digit));
    }
    if !seen_digit || previous_underscore {
        return None;
    }
    Some(if negative { -value } else { value })
}

/// Python `int(value)` for any JSON value: ints as is, floats truncated, bools 0/1, strings parsed.
pub(crate) fn py_int(value: &Value) -> Result<i128, PythonError> {
    match value {
        Value::Bool(b) => Ok(i128::from(*b)),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(i128::from(i))
            } else if let Some(u) = n.as_u64() {
                Ok(i128::from(u))
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if f.is_nan() {
                    Err(PythonError::value_error(
                        "cannot convert float NaN to integer",
                    ))
                } else if f.is_infinite() {
                    Err(PythonError::new(
                        PythonErrorKind::OverflowError,
                        "cannot convert float infinity to integer",
                    ))
                } else {
                    // `as` saturates beyond the i128 range.
                    Ok(f.trunc() as i128)
                }
            }
        }
        Value::String(s) => py_int_from_str(s),
        other => Err(PythonError::type_error(format!(
            "int() argument must be a string, a bytes-like object or a real number, not '{}'",
            type_name(other)
        ))),
    }
}

/// Python `float(value)`, or `None` where Python raises `TypeError`/`ValueError`.
pub(crate) fn py_float(value: &Value) -> Option<f64> {
    match value {
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::Number(n) => n.as_f64(),
        Value::String(s) => parse_float(s),
        _ => None,
    }
}

fn parse_float(s: &str) -> Option<f64> {
    let body = py_strip(s);
    if body.is_empty() {
        return None;
    }
    let mut ascii = String::with_capacity(body.len());
    let mut previous: Option<char> = None;
    let chars: Vec<char> = body.chars().collect();
    for (index, &c) in chars.iter().enumerate() {
        if c == '_' {
            // Only between two digits.
            let before = previous.is_some_and(|p| decimal_digit(p).is_some());
            let after = chars
                .get(index + 1)
                .is_some_and(|&n| decimal_digit(n).is_some());
            if !before || !after {
                return None;
            }
        } else if let Some(digit) = decimal_digit(c) {
            ascii.push(char::from_digit(digit, 10)?);
        } else if c.is_ascii() {
            ascii.push(c);
        } else {
            return None;
        }
        previous = Some(c);
    }
    let lower = ascii.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    if lower.len() - unsigned.len() > 1 {
        return None;
    }
    match unsigned {
        "inf" | "infinity" | "nan" => {}
        _ => {
            // Rust accepts the same decimal/exponent grammar but not these words in other case
            // mixes (handled above) and nothing Python rejects.
            if !unsigned
                .chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | '+' | '-'))
            {
                return None;
            }
        }
    }
    lower.parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn float_repr_matches_python() {
        assert_eq!(float_repr(1.5), "1.5");
        assert_eq!(float_repr(1.0), "1.0");
        assert_eq!(float_repr(0.9), "0.9");
        assert_eq!(float_repr(1e16), "1e+16");
        assert_eq!(float_repr(123456789012345.6), "123456789012345.6");
        assert_eq!(float_repr(0.0001), "0.0001");
        assert_eq!(float_repr(0.00001), "1e-05");
        assert_eq!(float_repr(-2.5e-7), "-2.5e-07");
        assert_eq!(float_repr(1.5e300), "1.5e+300");
        assert_eq!(float_repr(100.0), "100.0");
    }

    #[test]
    fn int_parsing_matches_python() {
        assert_eq!(py_int_from_str(" 4 "), Ok(4));
        assert_eq!(py_int_from_str("-1"), Ok(-1));
        assert_eq!(py_int_from_str("1_000"), Ok(1000));
        assert_eq!(py_int_from_str("\u{0661}\u{0662}"), Ok(12));
        assert_eq!(py_int_from_str("007"), Ok(7));
        for bad in ["1.5", "", "1__0", "_1", "1_", "4000m", "+-1", "0x10", "1e3"] {
            assert!(py_int_from_str(bad).is_err(), "{bad}");
        }
        assert_eq!(
            py_int_from_str("1.5").unwrap_err().to_string(),
            "ValueError: invalid literal for int() with base 10: '1.5'"
        );
        assert_eq!(py_int(&json!(4.7)), Ok(4));
        assert_eq!(py_int(&json!(true)), Ok(1));
        assert!(py_int(&json!(null)).is_err());
    }

    #[test]
    fn float_parsing_matches_python() {
        assert_eq!(py_float(&json!(" 2 ")), Some(2.0));
        assert_eq!(py_float(&json!("1_0.5")), Some(10.5));
        assert!(py_float(&json!("nan")).is_some_and(f64::is_nan));
        assert_eq!(py_float(&json!("-Infinity")), Some(f64::NEG_INFINITY));
        assert_eq!(py_float(&json!("1e3")), Some(1000.0));
        assert_eq!(py_float(&json!("1k")), None);
        assert_eq!(py_float(&json!("2Gi")), None);
        assert_eq!(py_float(&json!([1])), None);
        assert_eq!(py_float(&json!(true)), Some(1.0));
    }

    #[test]
    fn repr_and_str() {
        assert_eq!(py_str(&json!(null)), "None");
        assert_eq!(py_str(&json!(true)), "True");
        assert_eq!(
            py_repr(&json!(["Job", 1, 1.5, null])),
            "['Job', 1, 1.5, None]"
        );
        assert_eq!(py_repr(&json!({"cpu": "4"})), "{'cpu': '4'}");
        assert_eq!(py_repr(&json!("it's")), "\"it's\"");
    }

    #[test]
    fn equality_and_ordering() {
        assert!(py_eq(&json!(1), &json!(true)));
        assert!(py_eq(&json!(0), &json!(0.0)));
        assert!(!py_eq(&json!("0"), &json!(0)));
        let mut mixed = vec![json!("a"), json!(1)];
        assert!(py_sort(&mut mixed).is_err());
        let mut nums = vec![json!(2), json!(true), json!(1.5)];
        py_sort(&mut nums).unwrap();
        assert_eq!(nums, vec![json!(true), json!(1.5), json!(2)]);
        let mut lists = vec![json!(["b"]), json!([1, 2]), json!(["a", 1]), json!([1])];
        assert!(py_sort(&mut lists).is_err(), "[1] < ['a'] raises in Python");
        let mut nested = vec![json!([2, "x"]), json!([1, "y"]), json!([1, "x"])];
        py_sort(&mut nested).unwrap();
        assert_eq!(
            nested,
            vec![json!([1, "x"]), json!([1, "y"]), json!([2, "x"])]
        );
        for unorderable in [json!(null), json!({})] {
            let mut pair = vec![unorderable.clone(), unorderable];
            assert!(py_sort(&mut pair).is_err(), "{pair:?}");
        }
    }

    #[test]
    fn the_sort_order_is_total_and_agrees_with_equality() {
        let values = [
            json!(null),
            json!(false),
            json!(true),
            json!(0),
            json!(1),
            json!(1.0),
            json!(-2.5),
            json!(u64::MAX),
            json!(""),
            json!("a"),
            json!("b"),
            json!([]),
            json!([1]),
            json!([1.0, "a"]),
            json!(["a"]),
            json!({}),
            json!({"a": 1}),
            json!({"a": 1.0}),
            json!({"b": 1, "a": 2}),
            json!({"a": 2, "b": 1}),
        ];
        for a in &values {
            for b in &values {
                assert_eq!(total_cmp(a, b), total_cmp(b, a).reverse(), "{a} {b}");
                assert_eq!(total_cmp(a, b) == Ordering::Equal, py_eq(a, b), "{a} {b}");
                if let Ok(order) = py_cmp(a, b) {
                    assert_eq!(total_cmp(a, b), order, "{a} {b}");
                }
                for c in &values {
                    if total_cmp(a, b) != Ordering::Greater && total_cmp(b, c) != Ordering::Greater
                    {
                        assert_ne!(total_cmp(a, c), Ordering::Greater, "{a} {b} {c}");
                    }
                }
            }
        }
    }
}
