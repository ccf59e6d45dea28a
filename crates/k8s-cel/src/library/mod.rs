//! The Kubernetes CEL libraries, registered on a cel-rust [`Env`] as overloads, and the small
//! argument helpers they share.
//!
//! Each module is one library of `k8s.io/apiserver/pkg/cel/library` (or a cel-go extension that
//! Kubernetes enables), written against the documented behaviour: `lists`, `regex`, `quantity`,
//! `urls`, `net` (IP and CIDR), `format`, `sets`; `guards` replaces the two string functions whose
//! output can grow multiplicatively (`replace`, `join`) with size-checked versions.

pub(crate) mod format;
pub(crate) mod guards;
pub(crate) mod lists;
pub(crate) mod net;
pub(crate) mod quantity;
pub(crate) mod regex;
pub(crate) mod sets;
pub(crate) mod urls;

use cel::common::types::{CelBool, CelInt, CelList, CelString};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

/// The result of an overload.
pub(crate) type Outcome<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

/// Registers every Kubernetes library on `env`.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    guards::register(env)?;
    lists::register(env)?;
    regex::register(env)?;
    quantity::register(env)?;
    urls::register(env)?;
    net::register(env)?;
    format::register(env)?;
    sets::register(env)
}

/// `args` as exactly `N` arguments.
pub(crate) fn take<'b, 'v, const N: usize>(
    function: &str,
    args: Vec<CowVal<'b, 'v>>,
) -> Result<[CowVal<'b, 'v>; N], ExecutionError> {
    args.try_into().map_err(|args: Vec<_>| {
        ExecutionError::function_error(
            function,
            format!("expected {N} arguments, got {}", args.len()),
        )
    })
}

/// The elements of the list `val`, borrowed; a no-such-overload error for `function` when `val`
/// is not iterable.
pub(crate) fn elements<'a, 'v>(
    function: &str,
    val: &'a (dyn Val + 'v),
) -> Result<Vec<&'a (dyn Val + 'v)>, ExecutionError> {
    let iterable = val
        .as_iterable()
        .ok_or_else(|| overload_error(function, val))?;
    let mut items = iterable.iter();
    let mut out = Vec::new();
    while let Some(item) = items.next() {
        out.push(item);
    }
    Ok(out)
}

/// Implements `Val` for an application type compared with `==` (its `PartialEq`), registered
/// under the CEL type `$cel`.
macro_rules! opaque_val {
    ($ty:ty, $cel:ident) => {
        impl cel::common::value::Val for $ty {
            fn get_type(&self) -> &cel::common::types::Type {
                &$cel
            }
            fn cel_type() -> &'static cel::common::types::Type {
                &$cel
            }
            fn equals(&self, other: &dyn cel::common::value::Val) -> bool {
                other
                    .downcast_ref::<$ty>()
                    .is_some_and(|other| other == self)
            }
            fn clone_as_boxed<'v>(&self) -> Box<dyn cel::common::value::Val + 'v> {
                Box::new(self.clone())
            }
            fn as_any(&self) -> Option<&dyn std::any::Any> {
                Some(self)
            }
        }
        impl cel::common::value::StaticVal for $ty {}
    };
}
pub(crate) use opaque_val;

/// The string behind `val`, or a no-such-overload error for `function`.
pub(crate) fn string_arg<'a>(function: &str, val: &'a dyn Val) -> Result<&'a str, ExecutionError> {
    val.downcast_ref::<CelString>()
        .map(CelString::inner)
        .ok_or_else(|| overload_error(function, val))
}

/// The int behind `val`, or a no-such-overload error for `function`.
pub(crate) fn int_arg(function: &str, val: &dyn Val) -> Result<i64, ExecutionError> {
    val.downcast_ref::<CelInt>()
        .map(|i| *i.inner())
        .ok_or_else(|| overload_error(function, val))
}

/// `val` as a value of the application type `T`, or a no-such-overload error for `function`.
pub(crate) fn typed_arg<'a, T: cel::common::value::StaticVal>(
    function: &str,
    val: &'a dyn Val,
) -> Result<&'a T, ExecutionError> {
    val.downcast_ref::<T>()
        .ok_or_else(|| overload_error(function, val))
}

/// The no-such-overload error cel-go gives for a call with a value of the wrong type.
pub(crate) fn overload_error(function: &str, val: &dyn Val) -> ExecutionError {
    ExecutionError::no_such_overload(function, vec![val.get_type().name().to_owned()])
}

/// An error raised by a library function, worded as the Kubernetes library words it.
pub(crate) fn fail(function: &str, message: impl ToString) -> ExecutionError {
    ExecutionError::function_error(function, message)
}

/// An owned string result.
pub(crate) fn string<'b, 'v>(value: String) -> Outcome<'b, 'v> {
    Ok(CowVal::owned(CelString::from(value)))
}

/// A bool result.
pub(crate) fn boolean<'b, 'v>(value: bool) -> Outcome<'b, 'v> {
    Ok(CowVal::owned(CelBool::from(value)))
}

/// An int result.
pub(crate) fn int<'b, 'v>(value: i64) -> Outcome<'b, 'v> {
    Ok(CowVal::owned(CelInt::from(value)))
}

/// A list-of-strings result.
pub(crate) fn string_list<'b, 'v>(items: Vec<String>) -> Outcome<'b, 'v> {
    let items: Vec<Box<dyn Val + 'v>> = items
        .into_iter()
        .map(|s| Box::new(CelString::from(s)) as Box<dyn Val + 'v>)
        .collect();
    Ok(CowVal::owned(CelList::from(items)))
}
