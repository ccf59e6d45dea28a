//! Kubernetes' list library: `isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf` on lists.
//!
//! Elements are compared with CEL's own ordering (`<`), summed with `+` and matched with `==`, so
//! the library works on every element type the interpreter orders or adds: ints, uints, doubles,
//! strings, bools, bytes, durations and timestamps. `min`/`max` of an empty list is an error
//! (`min called on empty list`), `sum` of an empty list is `0`.

use super::{Outcome, elements, fail, int, overload_error, take};
use cel::common::types::{CelInt, DYN_TYPE, LIST_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};
use std::cmp::Ordering;

/// Registers the list library's member overloads.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload(
        "isSorted",
        "k8s_list_is_sorted",
        LIST_TYPE,
        vec![],
        is_sorted,
    )?;
    env.add_member_overload("sum", "k8s_list_sum", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "k8s_list_min", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "k8s_list_max", LIST_TYPE, vec![], max)?;
    env.add_member_overload(
        "indexOf",
        "k8s_list_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "k8s_list_last_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )
}

/// `a` compared with `b` as `<` would: an element without an order is a no-such-overload error.
fn compare(function: &str, a: &dyn Val, b: &dyn Val) -> Result<Ordering, ExecutionError> {
    a.as_comparer()
        .ok_or_else(|| overload_error(function, a))?
        .compare(b)
}

fn is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [list] = take("isSorted", args)?;
    let items = elements("isSorted", list.as_ref())?;
    for pair in items.windows(2) {
        if compare("isSorted", pair[0], pair[1])? == Ordering::Greater {
            return super::boolean(false);
        }
    }
    // An element without an order fails even in a one-element list, as in Kubernetes.
    if let Some(only) = items.first()
        && only.as_comparer().is_none()
    {
        return Err(overload_error("isSorted", *only));
    }
    super::boolean(true)
}

fn sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [list] = take("sum", args)?;
    let items = elements("sum", list.as_ref())?;
    let Some((first, rest)) = items.split_first() else {
        return int(0);
    };
    let mut total: Box<dyn Val + 'v> = first.clone_as_boxed();
    for item in rest {
        let adder = total
            .as_adder()
            .ok_or_else(|| overload_error("sum", total.as_ref()))?;
        let next = adder.add(*item)?.into_owned();
        total = next;
    }
    if total.as_adder().is_none() {
        return Err(overload_error("sum", total.as_ref()));
    }
    Ok(CowVal::Owned(total))
}

fn min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    extreme("min", Ordering::Greater, args)
}

fn max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    extreme("max", Ordering::Less, args)
}

/// The element that wins every comparison: the current pick is replaced when it compares as
/// `replace_when` to the next element (the first of equal elements is kept, as in Kubernetes).
fn extreme<'b, 'v>(
    function: &str,
    replace_when: Ordering,
    args: Vec<CowVal<'b, 'v>>,
) -> Outcome<'b, 'v> {
    let [list] = take(function, args)?;
    let items = elements(function, list.as_ref())?;
    let Some((first, rest)) = items.split_first() else {
        return Err(fail(function, format!("{function} called on empty list")));
    };
    let mut pick = *first;
    if pick.as_comparer().is_none() {
        return Err(overload_error(function, pick));
    }
    for item in rest {
        if compare(function, pick, *item)? == replace_when {
            pick = *item;
        }
    }
    Ok(CowVal::Owned(pick.clone_as_boxed()))
}

fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [list, needle] = take("indexOf", args)?;
    let items = elements("indexOf", list.as_ref())?;
    let found = items.iter().position(|item| item.equals(needle.as_ref()));
    Ok(CowVal::owned(CelInt::from(found.map_or(-1, |i| i as i64))))
}

fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [list, needle] = take("lastIndexOf", args)?;
    let items = elements("lastIndexOf", list.as_ref())?;
    let found = items.iter().rposition(|item| item.equals(needle.as_ref()));
    Ok(CowVal::owned(CelInt::from(found.map_or(-1, |i| i as i64))))
}
