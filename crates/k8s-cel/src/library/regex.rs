//! Kubernetes' regex library: `find` and `findAll` on strings (RE2 syntax, through the `regex`
//! crate, whose syntax is RE2's).
//!
//! Patterns are compiled once per thread and kept in a small cache, since templates pass the same
//! literal pattern for every object. An invalid pattern is an error (`Illegal regex: …`); a pattern
//! written as a literal is checked when the program compiles (see `check`).

use super::{Outcome, fail, int_arg, string, string_arg, string_list, take};
use cel::common::types::{INT_TYPE, STRING_TYPE};
use cel::common::value::CowVal;
use cel::{DeclarationError, Env, ExecutionError};
use regex::Regex;
use std::cell::RefCell;
use std::collections::HashMap;

/// How many compiled patterns a thread keeps; past it the cache starts over.
const CACHE_CAPACITY: usize = 64;

/// The largest compiled program a pattern may produce, so a hostile pattern fails fast.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

thread_local! {
    static CACHE: RefCell<HashMap<String, Regex>> = RefCell::new(HashMap::new());
}

/// Registers `find` and `findAll`.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload(
        "find",
        "k8s_string_find",
        STRING_TYPE,
        vec![STRING_TYPE],
        find,
    )?;
    env.add_member_overload(
        "findAll",
        "k8s_string_find_all",
        STRING_TYPE,
        vec![STRING_TYPE],
        find_all,
    )?;
    env.add_member_overload(
        "findAll",
        "k8s_string_find_all_n",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all_n,
    )
}

/// Compiles `pattern`, as the regex libraries do: the error is the parser's.
pub(crate) fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    regex::RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
}

/// Runs `f` with the compiled `pattern`, from the thread's cache when it is there.
fn with_regex<T>(
    function: &str,
    pattern: &str,
    f: impl FnOnce(&Regex) -> T,
) -> Result<T, ExecutionError> {
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(regex) = cache.get(pattern) {
            return Ok(f(regex));
        }
        let regex = compile(pattern).map_err(|e| fail(function, format!("Illegal regex: {e}")))?;
        let out = f(&regex);
        if cache.len() >= CACHE_CAPACITY {
            cache.clear();
        }
        cache.insert(pattern.to_owned(), regex);
        Ok(out)
    })
}

fn find<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [text, pattern] = take("find", args)?;
    let text = string_arg("find", text.as_ref())?;
    let pattern = string_arg("find", pattern.as_ref())?;
    let found = with_regex("find", pattern, |re| {
        re.find(text).map(|m| m.as_str().to_owned())
    })?;
    string(found.unwrap_or_default())
}

fn find_all<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [text, pattern] = take("findAll", args)?;
    find_all_limited(text.as_ref(), pattern.as_ref(), -1)
}

fn find_all_n<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [text, pattern, limit] = take("findAll", args)?;
    let limit = int_arg("findAll", limit.as_ref())?;
    find_all_limited(text.as_ref(), pattern.as_ref(), limit)
}

/// At most `limit` matches (all of them when `limit` is negative, none when it is zero), as Go's
/// `FindAllString`.
fn find_all_limited<'b, 'v>(
    text: &dyn cel::common::value::Val,
    pattern: &dyn cel::common::value::Val,
    limit: i64,
) -> Outcome<'b, 'v> {
    let text = string_arg("findAll", text)?;
    let pattern = string_arg("findAll", pattern)?;
    let take_n = usize::try_from(limit).unwrap_or(usize::MAX);
    let found = with_regex("findAll", pattern, |re| {
        re.find_iter(text)
            .take(take_n)
            .map(|m| m.as_str().to_owned())
            .collect::<Vec<_>>()
    })?;
    string_list(found)
}
