//! Field selection, presence tests and indexing as cel-go does them for Kubernetes.
//!
//! cel-rust follows the CEL conformance suite, which runs cel-go with `errorOnBadPresenceTest`:
//! there `has(x.f)` on a null or scalar `x` is an error and `x.f` a no-such-overload. Kubernetes
//! does not set that option, so cel-go qualifies a value the way its attribute resolution
//! (`refQualify` in `interpreter/attributes.go`) does: on a map a missing key is
//! `no such key: <k>` and `has()` false; on a list the qualifier must be an index; on anything
//! else (null, strings, numbers, booleans) every qualifier is missing, so `has()` is false and
//! the selection `no such key: <k>`; a qualifier on an optional value is optional (`none` when
//! missing). `budget::instrument` turns every `a.f`, `has(a.f)` and `a[i]` into a call of
//! [`SELECT`], [`HAS`] or [`INDEX`], implemented here; `docs/cel-semantics.md` has the table
//! checked against gator.

use crate::library::{Outcome, take};
use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue, SelectExpr, operators};
use cel::common::types::{
    CelBool, CelDouble, CelInt, CelOptional, CelString, CelUInt, DYN_TYPE, Kind,
};
use cel::common::value::{BuiltinRef, CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

/// `a.f`, called as `@k8s_select(a, 'f')`.
pub(crate) const SELECT: &str = "@k8s_select";
/// `has(a.f)`, called as `@k8s_has(a, 'f')`.
pub(crate) const HAS: &str = "@k8s_has";
/// `a[i]`, called as `@k8s_index(a, i)`.
pub(crate) const INDEX: &str = "@k8s_index";

/// Registers the three access functions.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload(SELECT, "k8s_select", vec![DYN_TYPE, DYN_TYPE], select)?;
    env.add_overload(HAS, "k8s_has", vec![DYN_TYPE, DYN_TYPE], has)?;
    env.add_overload(INDEX, "k8s_index", vec![DYN_TYPE, DYN_TYPE], index)
}

fn select<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [operand, field] = take(SELECT, args)?;
    qualify(operand, field.as_ref())
}

fn index<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [operand, key] = take(INDEX, args)?;
    qualify(operand, key.as_ref())
}

fn has<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [operand, field] = take(HAS, args)?;
    let present = match operand.as_builtin() {
        BuiltinRef::Optional(optional) => match optional.option() {
            None => false,
            Some(inner) => present(inner, field.as_ref())?,
        },
        _ => present(operand.as_ref(), field.as_ref())?,
    };
    Ok(CowVal::Borrowed(if present {
        &CelBool::TRUE
    } else {
        &CelBool::FALSE
    }))
}

/// Whether `key` is present in `value`: a map's key, a list's index; nothing is present in
/// any other value.
fn present(value: &dyn Val, key: &dyn Val) -> Result<bool, ExecutionError> {
    match value.get_type().kind() {
        Kind::Map => match value.as_indexer().map(|indexer| indexer.get(key)) {
            Some(Ok(_)) => Ok(true),
            Some(Err(error)) if is_missing(&error) => Ok(false),
            Some(Err(error)) => Err(error),
            None => Ok(false),
        },
        Kind::List => {
            let i = list_index(key)?;
            Ok(i >= 0 && i < list_size(value))
        }
        _ => Ok(false),
    }
}

/// Whether a map lookup failed for want of the key (a key of another type is missing too).
fn is_missing(error: &ExecutionError) -> bool {
    matches!(
        error,
        ExecutionError::NoSuchKey(_)
            | ExecutionError::UnsupportedKeyType(_)
            | ExecutionError::UnexpectedType { .. }
            | ExecutionError::NoSuchOverload(_)
    )
}

fn list_size(value: &dyn Val) -> i64 {
    value.as_sizer().map_or(0, |s| *s.size().inner())
}

/// `value` qualified by `key` (a field name or an index).
fn qualify<'b, 'v>(value: CowVal<'b, 'v>, key: &dyn Val) -> Outcome<'b, 'v> {
    if let BuiltinRef::Optional(optional) = value.as_builtin() {
        let found = match optional.option() {
            Some(inner) if present(inner, key).unwrap_or(false) => Some(
                inner
                    .as_indexer()
                    .ok_or_else(|| missing_key(key))?
                    .get(list_key(inner, key).as_ref().map_or(key, |i| i))?
                    .into_owned(),
            ),
            _ => None,
        };
        return Ok(CowVal::owned(CelOptional::from(found)));
    }
    match value.get_type().kind() {
        Kind::Map => take_element(value, key).map_err(|error| {
            if is_missing(&error) {
                missing_key(key)
            } else {
                error
            }
        }),
        Kind::List => {
            let i = list_index(key)?;
            if i < 0 || i >= list_size(value.as_ref()) {
                return Err(ExecutionError::function_error(
                    INDEX,
                    format!("index out of bounds: {i}"),
                ));
            }
            take_element(value, &CelInt::from(i))
        }
        _ => Err(missing_key(key)),
    }
}

/// A list's index normalised to an `int` (a `uint` or whole `double` index); `None` for a map.
fn list_key(value: &dyn Val, key: &dyn Val) -> Option<CelInt> {
    (value.get_type().kind() == Kind::List)
        .then(|| list_index(key).ok().map(CelInt::from))
        .flatten()
}

/// cel-go's `IndexOrError`: a list is indexed by an `int`, a `uint` or a whole `double`.
fn list_index(key: &dyn Val) -> Result<i64, ExecutionError> {
    if let Some(i) = key.downcast_ref::<CelInt>() {
        return Ok(*i.inner());
    }
    if let Some(u) = key.downcast_ref::<CelUInt>() {
        return i64::try_from(*u.inner()).map_err(|_| {
            ExecutionError::function_error(INDEX, format!("index out of bounds: {}", u.inner()))
        });
    }
    if let Some(d) = key.downcast_ref::<CelDouble>() {
        let d = *d.inner();
        if d.fract() == 0.0 && d >= i64::MIN as f64 && d < i64::MAX as f64 {
            return Ok(d as i64);
        }
        return Err(ExecutionError::function_error(
            INDEX,
            format!("unsupported index value {} in list", go_value(key)),
        ));
    }
    Err(ExecutionError::function_error(
        INDEX,
        format!("unsupported index type '{}' in list", key.get_type().name()),
    ))
}

/// The element of `value` at `idx` (checked to be there): borrowed from a borrowed container,
/// moved out of an owned built-in one, copied out of any other owned value.
fn take_element<'b, 'v>(value: CowVal<'b, 'v>, idx: &dyn Val) -> Outcome<'b, 'v> {
    let not_indexable = || ExecutionError::no_such_key(&go_value(idx));
    match value {
        CowVal::Borrowed(v) => v.as_indexer().ok_or_else(not_indexable)?.get(idx),
        CowVal::Owned(b) => {
            if matches!(b.as_builtin(), BuiltinRef::Other) {
                let indexer = b.as_indexer().ok_or_else(not_indexable)?;
                return indexer.get(idx).map(|v| CowVal::Owned(v.into_owned()));
            }
            b.into_indexer()
                .ok_or_else(not_indexable)?
                .steal(idx)
                .map(CowVal::Owned)
        }
    }
}

/// cel-go's `no such key: <k>`, the key printed as Go's `%v` prints it.
fn missing_key(key: &dyn Val) -> ExecutionError {
    ExecutionError::no_such_key(&go_value(key))
}

/// A key or index as Go's `%v` prints the cel-go value.
fn go_value(key: &dyn Val) -> String {
    if let Some(s) = key.downcast_ref::<CelString>() {
        return s.inner().to_owned();
    }
    if let Some(i) = key.downcast_ref::<CelInt>() {
        return i.inner().to_string();
    }
    if let Some(u) = key.downcast_ref::<CelUInt>() {
        return u.inner().to_string();
    }
    if let Some(b) = key.downcast_ref::<CelBool>() {
        return b.inner().to_string();
    }
    if let Some(d) = key.downcast_ref::<CelDouble>() {
        return format!("{}", d.inner());
    }
    key.get_type().name().to_owned()
}

/// cel-go's text for a call no overload matched.
pub(crate) const NO_SUCH_OVERLOAD: &str = "no such overload";

/// cel-go's text for a call of `function` on arguments of these types (cel-rust names) that no
/// overload matched, by cel-go's dispatch: an operator whose first operand lacks the operator's
/// trait names the operator (`no such overload: _+_`); a type conversion names the argument
/// types (`no such overload: string(null_type)`); everything else — an operand with the trait
/// but the wrong other operand, a function with one overload — is `no such overload`.
pub(crate) fn overload_text(function: &str, argument_types: &[String]) -> String {
    let first = argument_types.first().map_or("", String::as_str);
    if let Some(with_trait) = trait_types(function) {
        // An operand without the trait is asked as a receiver (`traits.Receiver`) when it is
        // one, which answers a bare `no such overload`.
        return if with_trait.contains(&first) || RECEIVERS.contains(&first) {
            NO_SUCH_OVERLOAD.to_owned()
        } else {
            format!("{NO_SUCH_OVERLOAD}: {function}")
        };
    }
    if CONVERSIONS.contains(&function) {
        return format!(
            "{NO_SUCH_OVERLOAD}: {function}({})",
            argument_types.join(", ")
        );
    }
    NO_SUCH_OVERLOAD.to_owned()
}

const DURATION: &str = "google.protobuf.Duration";
/// The cel-go types that are receivers of member calls (`traits.ReceiverType`).
const RECEIVERS: &[&str] = &["string", DURATION, TIMESTAMP];
const TIMESTAMP: &str = "google.protobuf.Timestamp";

/// The types implementing the trait cel-go's operator `function` requires of its first operand
/// (`traits.AdderType`, …), for the operators that require one.
/// (`_%_` on a string is refused by cel-go's checker, so its runtime text is moot.)
fn trait_types(function: &str) -> Option<&'static [&'static str]> {
    Some(match function {
        "_+_" => &[
            "int", "uint", "double", "string", "bytes", "list", DURATION, TIMESTAMP,
        ],
        "_-_" => &["int", "uint", "double", DURATION, TIMESTAMP],
        "_*_" | "_/_" => &["int", "uint", "double"],
        "_%_" => &["int", "uint"],
        "-_" => &["int", "double", DURATION],
        "size" => &["string", "bytes", "list", "map"],
        "_<_" | "_<=_" | "_>_" | "_>=_" => &[
            "int", "uint", "double", "string", "bytes", "bool", DURATION, TIMESTAMP,
        ],
        _ => return None,
    })
}

/// cel-go's type conversion functions, dispatched over several overloads.
const CONVERSIONS: &[&str] = &[
    "string",
    "int",
    "uint",
    "double",
    "bytes",
    "bool",
    "duration",
    "timestamp",
    "dyn",
    "type",
];

/// The CEL type name of a cel-rust `Value`, for errors that carry values rather than types.
pub(crate) fn value_type_name(value: &cel::Value) -> &'static str {
    match value {
        cel::Value::List(_) => "list",
        cel::Value::Map(_) => "map",
        cel::Value::Int(_) => "int",
        cel::Value::UInt(_) => "uint",
        cel::Value::Float(_) => "double",
        cel::Value::String(_) => "string",
        cel::Value::Bytes(_) => "bytes",
        cel::Value::Bool(_) => "bool",
        cel::Value::Duration(_) => DURATION,
        cel::Value::Timestamp(_) => TIMESTAMP,
        cel::Value::Null => "null_type",
        _ => "dyn",
    }
}

/// The Go type cel-go names (`%T`) for a value of the CEL type `name`.
pub(crate) fn go_type_name(name: &str) -> String {
    let go = match name {
        "null_type" => "types.Null",
        "string" => "types.String",
        "int" => "types.Int",
        "uint" => "types.Uint",
        "double" => "types.Double",
        "bool" => "types.Bool",
        "bytes" => "types.Bytes",
        DURATION => "types.Duration",
        TIMESTAMP => "types.Timestamp",
        "optional_type" => "*types.Optional",
        other => return other.to_owned(),
    };
    go.to_owned()
}

/// `expr` with every [`SELECT`] and [`INDEX`] call turned back into cel-rust's own selection
/// and index: the fast form of an expression. It answers as the exact form wherever neither
/// fails (a present key of a map, an index within a list), and fails wherever their answers
/// could differ (a null, scalar or optional receiver, a missing key), so an evaluation runs the
/// fast form and, only when that ends in an error, the exact one. Presence tests stay
/// [`HAS`] calls: cel-rust's own would be an error where cel-go answers false.
pub(crate) fn native(expr: IdedExpr) -> IdedExpr {
    let IdedExpr { id, expr } = expr;
    let expr = match expr {
        Expr::Call(mut call) => {
            call.target = call.target.map(|t| Box::new(native(*t)));
            call.args = call.args.into_iter().map(native).collect();
            let literal_field = match call.args.as_slice() {
                [
                    _,
                    IdedExpr {
                        expr: Expr::Literal(LiteralValue::String(field)),
                        ..
                    },
                ] => Some(field.inner().to_owned()),
                _ => None,
            };
            match (call.func_name.as_str(), literal_field) {
                (SELECT, Some(field)) if call.target.is_none() => {
                    let operand = call.args.swap_remove(0);
                    Expr::Select(SelectExpr {
                        operand: Box::new(operand),
                        field,
                        test: false,
                    })
                }
                (INDEX, _) if call.target.is_none() => {
                    call.func_name = operators::INDEX.to_owned();
                    Expr::Call(call)
                }
                _ => Expr::Call(call),
            }
        }
        Expr::Comprehension(mut c) => {
            c.iter_range = native(std::mem::take(&mut c.iter_range));
            c.accu_init = native(std::mem::take(&mut c.accu_init));
            c.loop_cond = native(std::mem::take(&mut c.loop_cond));
            c.loop_step = native(std::mem::take(&mut c.loop_step));
            c.result = native(std::mem::take(&mut c.result));
            Expr::Comprehension(c)
        }
        Expr::Select(mut select) => {
            select.operand = Box::new(native(*select.operand));
            Expr::Select(select)
        }
        Expr::List(mut list) => {
            list.elements = list.elements.into_iter().map(native).collect();
            Expr::List(list)
        }
        Expr::Map(mut map) => {
            for entry in &mut map.entries {
                native_entry(&mut entry.expr);
            }
            Expr::Map(map)
        }
        Expr::Struct(mut st) => {
            for entry in &mut st.entries {
                native_entry(&mut entry.expr);
            }
            Expr::Struct(st)
        }
        other => other,
    };
    IdedExpr { id, expr }
}

fn native_entry(entry: &mut EntryExpr) {
    match entry {
        EntryExpr::MapEntry(e) => {
            e.key = native(std::mem::take(&mut e.key));
            e.value = native(std::mem::take(&mut e.value));
        }
        EntryExpr::StructField(f) => f.value = native(std::mem::take(&mut f.value)),
    }
}
