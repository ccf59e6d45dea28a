//! Size-checked `replace` and `join(separator)`: the two string functions of the strings
//! extension whose output can be a product of their inputs' sizes (`s.replace('a', s)`,
//! `list.join(s)`), so one call could allocate without bound before any budget is charged.
//!
//! They are registered before cel-rust's strings extension, with `dyn` parameters, so a call
//! resolves to them first; the behaviour is cel-go's (`replace` with a count replaces the first
//! `n`, all when `n` is negative; an empty pattern matches between every character).

use super::{Outcome, fail, int_arg, overload_error, string, string_arg, take};
use crate::budget::MAX_VALUE_BYTES;
use cel::common::types::{DYN_TYPE, LIST_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

/// Registers the guarded overloads; call before `cel::extensions::strings`.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload(
        "replace",
        "k8s_guarded_replace",
        STRING_TYPE,
        vec![DYN_TYPE, DYN_TYPE],
        replace,
    )?;
    env.add_member_overload(
        "replace",
        "k8s_guarded_replace_n",
        STRING_TYPE,
        vec![DYN_TYPE, DYN_TYPE, DYN_TYPE],
        replace_n,
    )?;
    env.add_member_overload("join", "k8s_guarded_join", LIST_TYPE, vec![DYN_TYPE], join)
}

/// Fails when a result of `size` bytes would pass the value cap.
fn check_size(function: &str, size: u128) -> Result<(), ExecutionError> {
    if size > MAX_VALUE_BYTES as u128 {
        return Err(fail(
            function,
            format!(
                "result would be larger than the {} MiB value cap",
                MAX_VALUE_BYTES >> 20
            ),
        ));
    }
    Ok(())
}

fn replace<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [text, from, to] = take("replace", args)?;
    replace_limited(text.as_ref(), from.as_ref(), to.as_ref(), -1)
}

fn replace_n<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [text, from, to, n] = take("replace", args)?;
    let n = int_arg("replace", n.as_ref())?;
    replace_limited(text.as_ref(), from.as_ref(), to.as_ref(), n)
}

fn replace_limited<'b, 'v>(
    text: &dyn Val,
    from: &dyn Val,
    to: &dyn Val,
    n: i64,
) -> Outcome<'b, 'v> {
    let text = string_arg("replace", text)?;
    let from = string_arg("replace", from)?;
    let to = string_arg("replace", to)?;
    let occurrences = if from.is_empty() {
        text.chars().count() as u128 + 1
    } else {
        text.matches(from).count() as u128
    };
    let replaced = if n < 0 {
        occurrences
    } else {
        occurrences.min(n as u128)
    };
    check_size("replace", text.len() as u128 + replaced * to.len() as u128)?;
    string(if n < 0 {
        text.replace(from, to)
    } else {
        text.replacen(from, to, n as usize)
    })
}

fn join<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [list, separator] = take("join", args)?;
    let separator = string_arg("join", separator.as_ref())?;
    let iterable = list
        .as_iterable()
        .ok_or_else(|| overload_error("join", list.as_ref()))?;
    let mut items = iterable.iter();
    let mut parts = Vec::new();
    let mut size = 0u128;
    while let Some(item) = items.next() {
        let part = string_arg("join", item)?;
        size += part.len() as u128 + separator.len() as u128;
        check_size("join", size)?;
        parts.push(part);
    }
    string(parts.join(separator))
}
