//! cel-go's sets extension, which Kubernetes enables: `sets.contains(list, sublist)`,
//! `sets.equivalent(a, b)` and `sets.intersects(a, b)`, with CEL equality between elements.

use super::{Outcome, boolean, elements, take};
use cel::common::types::LIST_TYPE;
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env};

/// Registers the three set functions.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload(
        "sets.contains",
        "k8s_sets_contains",
        vec![LIST_TYPE, LIST_TYPE],
        contains,
    )?;
    env.add_overload(
        "sets.equivalent",
        "k8s_sets_equivalent",
        vec![LIST_TYPE, LIST_TYPE],
        equivalent,
    )?;
    env.add_overload(
        "sets.intersects",
        "k8s_sets_intersects",
        vec![LIST_TYPE, LIST_TYPE],
        intersects,
    )
}

/// Charges a set function by its work, as cel-go's sets extension estimates it: the product of
/// the two lists' sizes (each element of one compared with each of the other).
fn charge(function: &str, a: &[&dyn Val], b: &[&dyn Val]) -> Result<(), cel::ExecutionError> {
    crate::budget::charge(function, (a.len() as u64).saturating_mul(b.len() as u64))
}

/// Whether every element of `sub` equals some element of `of`.
fn all_in(sub: &[&dyn Val], of: &[&dyn Val]) -> bool {
    sub.iter().all(|a| of.iter().any(|b| a.equals(*b)))
}

fn contains<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [a, b] = take("sets.contains", args)?;
    let (a, b) = (
        elements("sets.contains", a.as_ref())?,
        elements("sets.contains", b.as_ref())?,
    );
    charge("sets.contains", &a, &b)?;
    boolean(all_in(&b, &a))
}

fn equivalent<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [a, b] = take("sets.equivalent", args)?;
    let (a, b) = (
        elements("sets.equivalent", a.as_ref())?,
        elements("sets.equivalent", b.as_ref())?,
    );
    charge("sets.equivalent", &a, &b)?;
    boolean(all_in(&a, &b) && all_in(&b, &a))
}

fn intersects<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [a, b] = take("sets.intersects", args)?;
    let (a, b) = (
        elements("sets.intersects", a.as_ref())?,
        elements("sets.intersects", b.as_ref())?,
    );
    charge("sets.intersects", &a, &b)?;
    boolean(a.iter().any(|x| b.iter().any(|y| x.equals(*y))))
}
