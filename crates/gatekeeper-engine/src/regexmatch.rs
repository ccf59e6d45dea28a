//! `regex.match` (and the deprecated `re_match`) with Go's pattern syntax and a compiled-pattern
//! cache per thread.
//!
//! OPA compiles `regex.match` patterns with Go's `regexp`, so patterns are translated from Go's
//! syntax ([`crate::goregex`]): `{"foo"}` is a literal there, `\d` is ASCII-only. regorus' own
//! `regex.match` keeps compiled patterns in one process-wide LRU behind a lock and hands out a
//! clone per call; a cloned `Regex` starts with an empty match cache, so every call rebuilds it.
//! Templates call `regex.match` for every label of every object, which made this a visible
//! share of a report run. This extension replaces the built-in under its own name; it is
//! undefined on a bad argument or a pattern Go rejects (a non-strict built-in error), and a
//! pattern over regorus' size limit is an evaluation error, as regorus makes it.

use std::cell::RefCell;
use std::collections::HashMap;

use regex::Regex;
use regorus::Value;

/// The built-in this extension replaces.
pub(crate) const NAME: &str = "regex.match";

/// regorus' ceiling on a compiled pattern (100 KiB); a larger one is an evaluation error.
const SIZE_LIMIT: usize = 100 * 1024;

/// Patterns kept per thread before the cache starts over (templates use a handful).
const CACHE_CAPACITY: usize = 256;

/// A compiled pattern, or `None` for an invalid one.
type Compiled = Option<Regex>;

thread_local! {
    static CACHE: RefCell<HashMap<String, Compiled>> = RefCell::new(HashMap::new());
}

fn compile(pattern: &str) -> anyhow::Result<Compiled> {
    match crate::goregex::compile_with_limit(pattern, Some(SIZE_LIMIT)) {
        Ok(re) => Ok(Some(re)),
        Err(e) if e.to_string().contains("expression too large") => Err(anyhow::Error::new(
            regorus::LimitError::RegexSizeLimitExceeded { limit: SIZE_LIMIT },
        )),
        Err(_) => Ok(None),
    }
}

/// Whether `value` matches `pattern`; `None` when the pattern is invalid.
fn is_match(pattern: &str, value: &str) -> anyhow::Result<Option<bool>> {
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if !cache.contains_key(pattern) {
            if cache.len() >= CACHE_CAPACITY {
                cache.clear();
            }
            cache.insert(pattern.to_string(), compile(pattern)?);
        }
        Ok(cache[pattern].as_ref().map(|re| re.is_match(value)))
    })
}

/// The extension: `(pattern, value)` → boolean, undefined unless both are strings and the
/// pattern compiles.
pub(crate) fn extension(params: Vec<Value>) -> anyhow::Result<Value> {
    let (Some(Value::String(pattern)), Some(Value::String(value))) =
        (params.first(), params.get(1))
    else {
        return Ok(Value::Undefined);
    };
    Ok(match is_match(pattern, value)? {
        Some(matched) => Value::from(matched),
        None => Value::Undefined,
    })
}

/// [`extension`] for `re_match`, where a too-large pattern is undefined too (the deprecated
/// built-ins never raise).
pub(crate) fn call(pattern: &Value, value: &Value) -> Value {
    extension(vec![pattern.clone(), value.clone()]).unwrap_or(Value::Undefined)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(pattern: Value, value: Value) -> anyhow::Result<Value> {
        extension(vec![pattern, value])
    }

    #[test]
    fn patterns_are_gos() {
        let m = |p: &str, v: &str| super::call(&Value::from(p), &Value::from(v));
        assert_eq!(m("{\"foo\"}", "x {\"foo\"}"), Value::from(true));
        assert_eq!(m("^\\d$", "٣"), Value::from(false));
        assert_eq!(m("a**", "a"), Value::Undefined);
    }

    #[test]
    fn matches_like_regorus() {
        let m = |p: &str, v: &str| call(Value::from(p), Value::from(v)).unwrap();
        assert_eq!(m("^[a-z]+\\.team$", "payments.team"), Value::from(true));
        assert_eq!(m("^[a-z]+\\.team$", "Team-X"), Value::from(false));
        // Unanchored, as RE2's MatchString.
        assert_eq!(m("team", "a-team-b"), Value::from(true));
        // Asked twice: the cached pattern answers the same.
        assert_eq!(m("team", "nope"), Value::from(false));
    }

    #[test]
    fn bad_arguments_and_invalid_patterns_are_undefined() {
        assert_eq!(
            call(Value::from(1), Value::from("x")).unwrap(),
            Value::Undefined
        );
        assert_eq!(
            call(Value::from("x"), Value::Null).unwrap(),
            Value::Undefined
        );
        assert_eq!(
            call(Value::from("(unclosed"), Value::from("x")).unwrap(),
            Value::Undefined
        );
    }

    #[test]
    fn patterns_over_the_size_limit_are_errors() {
        let huge = format!("^({})$", vec!["[a-z]{50}"; 400].join("|"));
        let error = call(Value::from(huge.as_str()), Value::from("x")).unwrap_err();
        assert!(
            error.downcast_ref::<regorus::LimitError>().is_some(),
            "{error}"
        );
    }

    #[test]
    fn the_cache_starts_over_when_full() {
        for i in 0..CACHE_CAPACITY + 3 {
            let p = format!("^p{i}$");
            let v = format!("p{i}");
            assert_eq!(
                call(Value::from(p.as_str()), Value::from(v.as_str())).unwrap(),
                Value::from(true)
            );
        }
        CACHE.with(|c| assert!(c.borrow().len() <= CACHE_CAPACITY));
    }
}
