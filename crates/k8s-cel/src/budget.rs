//! Bounds on evaluation: a cost budget charged while a program runs, and a cap on value sizes.
//!
//! cel-rust has no cost tracking of its own, so the compiled AST is rewritten once: every
//! function or arithmetic call `f(x)` becomes `@k8s_cost(f(x))`, which charges `1 + size/8` (the
//! size of the result in bytes, elements or entries) and refuses a value past
//! [`MAX_VALUE_BYTES`]; every comprehension step becomes `@k8s_tick(step)`, which charges 1 per
//! iteration. The names start with `@`, which CEL source cannot spell, so templates cannot call
//! them. Comparisons, logic, indexing and selection are not wrapped: they build nothing.
//!
//! The budget lives in a thread-local meter, set for one evaluation by [`Meter::start`]. When it
//! runs out every later charge fails too, so an error that `||` or `&&` would absorb cannot hide
//! it, and [`Meter::exhausted`] tells the evaluation to report it. Kubernetes' own budget is in
//! cel-go cost units, which cel-rust cannot reproduce: ours is larger than any real policy
//! needs and small enough that a hostile one ends within about a second.

use crate::library::Outcome;
use cel::common::ast::{
    CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue, operators,
};
use cel::common::types::{CelBytes, CelString, DYN_TYPE, Kind};
use cel::common::value::{BuiltinRef, CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};
use std::cell::Cell;
use std::time::Instant;

/// The cost one evaluation of a program (its variables, conditions, validations and messages)
/// may spend.
pub const COST_BUDGET: u64 = 10_000_000;

/// The largest string, bytes, list or map a program may build, in bytes or elements.
pub const MAX_VALUE_BYTES: usize = 8 << 20;

/// cel-go's wording for a program that ran out of budget.
pub(crate) const OUT_OF_BUDGET: &str = "operation cancelled: actual cost limit exceeded";

const COST: &str = "@k8s_cost";
const INPUT: &str = "@k8s_input";
const TICK: &str = "@k8s_tick";

/// The most values (list and map elements, counted deeply, and strings) one evaluation may
/// build: a bound on its memory (about 100 bytes a value), whatever the cost budget allows.
pub const MAX_BUILT_VALUES: u64 = 2 << 20;

/// How many charges pass between two looks at the clock.
const CLOCK_EVERY: u32 = 1024;

thread_local! {
    static REMAINING: Cell<u64> = const { Cell::new(u64::MAX) };
    static EXHAUSTED: Cell<bool> = const { Cell::new(false) };
    static BUILT: Cell<u64> = const { Cell::new(0) };
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
    static PAST_DEADLINE: Cell<bool> = const { Cell::new(false) };
    static UNTIL_CLOCK: Cell<u32> = const { Cell::new(CLOCK_EVERY) };
}

/// The error text of an evaluation stopped by its deadline.
pub(crate) const PAST_DEADLINE_TEXT: &str = "operation cancelled: the engine deadline passed";

/// The meter of one evaluation on this thread; dropping it lifts the budget.
pub(crate) struct Meter(());

impl Meter {
    /// Starts charging against `budget` on this thread.
    /// Starts charging against `budget` on this thread, stopping at `deadline` if there is one.
    pub(crate) fn start(budget: u64, deadline: Option<Instant>) -> Meter {
        REMAINING.set(budget);
        EXHAUSTED.set(false);
        BUILT.set(0);
        DEADLINE.set(deadline);
        PAST_DEADLINE.set(false);
        UNTIL_CLOCK.set(CLOCK_EVERY);
        Meter(())
    }

    /// Whether the budget ran out at some point of the evaluation.
    pub(crate) fn exhausted(&self) -> bool {
        EXHAUSTED.get() && !PAST_DEADLINE.get()
    }

    /// Whether the deadline stopped the evaluation.
    pub(crate) fn past_deadline(&self) -> bool {
        PAST_DEADLINE.get()
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        REMAINING.set(u64::MAX);
        EXHAUSTED.set(false);
        BUILT.set(0);
        DEADLINE.set(None);
        PAST_DEADLINE.set(false);
    }
}

/// Charges `cost`; fails (and stays failed) once the budget is spent or the deadline passed.
/// Once failed, every later charge fails too, so no `||`/`&&` can absorb it.
pub(crate) fn charge(function: &str, cost: u64) -> Result<(), ExecutionError> {
    let left = REMAINING.get();
    if EXHAUSTED.get() || left < cost {
        REMAINING.set(0);
        EXHAUSTED.set(true);
        let text = if PAST_DEADLINE.get() {
            PAST_DEADLINE_TEXT
        } else {
            OUT_OF_BUDGET
        };
        return Err(ExecutionError::function_error(function, text));
    }
    REMAINING.set(left - cost);
    let until = UNTIL_CLOCK.get();
    if until > 1 {
        UNTIL_CLOCK.set(until - 1);
        return Ok(());
    }
    UNTIL_CLOCK.set(CLOCK_EVERY);
    if DEADLINE.get().is_some_and(|d| Instant::now() >= d) {
        PAST_DEADLINE.set(true);
        EXHAUSTED.set(true);
        REMAINING.set(0);
        return Err(ExecutionError::function_error(function, PAST_DEADLINE_TEXT));
    }
    Ok(())
}

/// Counts `count` more values built; fails past [`MAX_BUILT_VALUES`].
fn built(function: &str, count: u64) -> Result<(), ExecutionError> {
    let total = BUILT.get().saturating_add(count);
    BUILT.set(total);
    if total > MAX_BUILT_VALUES {
        return Err(ExecutionError::function_error(
            function,
            format!("the evaluation built more than {MAX_BUILT_VALUES} values (the cap)"),
        ));
    }
    Ok(())
}

/// The values in `val`, counted deeply (a list of lists counts every inner element), up to
/// `limit`: what building it took.
fn deep_count(val: &dyn Val, limit: u64) -> u64 {
    if !matches!(val.get_type().kind(), Kind::List | Kind::Map) {
        return 1;
    }
    let mut count = 0u64;
    let mut pending = vec![val];
    while let Some(v) = pending.pop() {
        count += 1;
        if count > limit {
            return count;
        }
        match v.as_builtin() {
            BuiltinRef::List(list) => pending.extend(list.inner().iter().map(AsRef::as_ref)),
            BuiltinRef::Map(map) => {
                // each key is a value too
                count += map.inner().len() as u64;
                pending.extend(map.inner().values().map(AsRef::as_ref));
            }
            _ => {}
        }
    }
    count
}

/// What an argument of `size` costs a call, by Kubernetes' runtime cost: a list or map its
/// elements (membership and equality traverse it), a string or bytes a tenth of its length
/// (`common.StringTraversalCostFactor`).
fn input_cost(val: &dyn Val) -> u64 {
    let size = size_of(val) as u64;
    if val.downcast_ref::<CelString>().is_some() || val.downcast_ref::<CelBytes>().is_some() {
        size.div_ceil(10)
    } else {
        size
    }
}

/// The size of a value for charging: bytes of a string or bytes, elements of a list or map.
fn size_of(val: &dyn Val) -> usize {
    if let Some(s) = val.downcast_ref::<CelString>() {
        return s.inner().len();
    }
    if let Some(b) = val.downcast_ref::<CelBytes>() {
        return b.inner().len();
    }
    val.as_sizer().map_or(0, |s| {
        usize::try_from(*s.size().inner()).unwrap_or(usize::MAX)
    })
}

fn cost<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let value = args
        .pop()
        .ok_or_else(ExecutionError::missing_argument_or_target)?;
    let size = size_of(value.as_ref());
    if size > MAX_VALUE_BYTES {
        return Err(ExecutionError::function_error(
            COST,
            format!("value larger than the {} MiB cap", MAX_VALUE_BYTES >> 20),
        ));
    }
    charge(COST, 1 + size as u64 / 8)?;
    if let CowVal::Owned(owned) = &value {
        built(COST, deep_count(owned.as_ref(), MAX_BUILT_VALUES))?;
    }
    Ok(value)
}

fn tick<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let value = args
        .pop()
        .ok_or_else(ExecutionError::missing_argument_or_target)?;
    charge(TICK, 1)?;
    // A step's value is kept by `map`/`filter` (copied when borrowed): it is built.
    built(TICK, deep_count(value.as_ref(), MAX_BUILT_VALUES))?;
    Ok(value)
}

/// `@k8s_input(x)`: an argument of a call, charged by its size.
fn input<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let value = args
        .pop()
        .ok_or_else(ExecutionError::missing_argument_or_target)?;
    charge(INPUT, input_cost(value.as_ref()))?;
    Ok(value)
}

/// Registers the metering functions.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload(COST, "k8s_cost", vec![DYN_TYPE], cost)?;
    env.add_overload(INPUT, "k8s_input", vec![DYN_TYPE], input)?;
    env.add_overload(TICK, "k8s_tick", vec![DYN_TYPE], tick)
}

/// Calls whose arguments are not charged: operators other than membership and equality (logic
/// must keep its operands' errors as they are; arithmetic and ordering results are charged by
/// their size), selection and indexing (which read one element), the metering itself.
fn inputs_free(function: &str) -> bool {
    // Operators (`_+_`, `@in`, `!_`, …) are spelled with a non-letter; of them, membership and
    // equality traverse their operands. `size` reads a length.
    let operator = !function.starts_with(|c: char| c.is_ascii_alphabetic());
    (operator
        && !matches!(
            function,
            operators::IN | operators::EQUALS | operators::NOT_EQUALS
        ))
        || function == "size"
}

/// Calls that build nothing, left unwrapped.
fn builds_nothing(function: &str) -> bool {
    matches!(
        function,
        operators::LOGICAL_AND
            | operators::LOGICAL_OR
            | operators::LOGICAL_NOT
            | operators::CONDITIONAL
            | operators::EQUALS
            | operators::NOT_EQUALS
            | operators::LESS
            | operators::LESS_EQUALS
            | operators::GREATER
            | operators::GREATER_EQUALS
            | operators::IN
            | operators::INDEX
            | crate::access::INDEX
            | operators::OPT_INDEX
            | operators::OPT_SELECT
            | operators::NOT_STRICTLY_FALSE
    )
}

fn wrap(function: &str, expr: IdedExpr) -> IdedExpr {
    IdedExpr {
        id: expr.id,
        expr: Expr::Call(CallExpr {
            func_name: function.to_owned(),
            target: None,
            args: vec![expr],
        }),
    }
}

/// `expr` with every building call wrapped in `@k8s_cost` and every comprehension step in
/// `@k8s_tick`.
pub(crate) fn instrument(expr: IdedExpr) -> IdedExpr {
    let id = expr.id;
    match expr.expr {
        Expr::Call(mut call) => {
            if call.func_name == operators::INDEX && call.target.is_none() && call.args.len() == 2 {
                call.func_name = crate::access::INDEX.to_owned();
            }
            let wrap_it = !builds_nothing(&call.func_name);
            let function = call.func_name.clone();
            let charged = !inputs_free(&function);
            let input = |e: IdedExpr| {
                let e = instrument(e);
                if charged && !matches!(e.expr, Expr::Literal(_)) {
                    wrap(INPUT, e)
                } else {
                    e
                }
            };
            let call = CallExpr {
                func_name: call.func_name,
                // A namespace (`optional.of`, `sets.contains`) names the function: left bare.
                target: call.target.map(|t| match &t.expr {
                    Expr::Ident(name) if crate::env::NAMESPACES.contains(&name.as_str()) => t,
                    _ => Box::new(input(*t)),
                }),
                args: call.args.into_iter().map(input).collect(),
            };
            let inner = IdedExpr {
                id,
                expr: Expr::Call(call),
            };
            if wrap_it && !function.starts_with('@') {
                wrap(COST, inner)
            } else {
                inner
            }
        }
        Expr::Comprehension(c) => {
            let c = *c;
            let cond_is_literal = matches!(c.loop_cond.expr, Expr::Literal(_));
            let loop_cond = instrument(c.loop_cond);
            // A computed condition runs once per iteration: the tick goes there. A literal one
            // must stay literal (cel-rust recognises `map`/`filter` steps by it).
            let loop_cond = if cond_is_literal {
                loop_cond
            } else {
                wrap(TICK, loop_cond)
            };
            let loop_step = instrument_step(c.loop_step, &c.accu_var, !cond_is_literal);
            let comprehension = ComprehensionExpr {
                iter_range: instrument(c.iter_range),
                iter_var: c.iter_var,
                iter_var2: c.iter_var2,
                accu_var: c.accu_var,
                accu_init: instrument(c.accu_init),
                loop_cond,
                loop_step,
                result: instrument(c.result),
            };
            IdedExpr {
                id,
                expr: Expr::Comprehension(Box::new(comprehension)),
            }
        }
        // cel-go's qualification (`access`): `a.f` and `has(a.f)` become calls.
        Expr::Select(select) => {
            let function = if select.test {
                crate::access::HAS
            } else {
                crate::access::SELECT
            };
            IdedExpr {
                id,
                expr: Expr::Call(CallExpr {
                    func_name: function.to_owned(),
                    target: None,
                    args: vec![
                        instrument(*select.operand),
                        IdedExpr {
                            id,
                            expr: Expr::Literal(LiteralValue::String(CelString::from(
                                select.field,
                            ))),
                        },
                    ],
                }),
            }
        }
        Expr::List(mut list) => {
            list.elements = list.elements.into_iter().map(instrument).collect();
            IdedExpr {
                id,
                expr: Expr::List(list),
            }
        }
        Expr::Map(mut map) => {
            for entry in &mut map.entries {
                instrument_entry(&mut entry.expr);
            }
            IdedExpr {
                id,
                expr: Expr::Map(map),
            }
        }
        Expr::Struct(mut s) => {
            for entry in &mut s.entries {
                instrument_entry(&mut entry.expr);
            }
            IdedExpr {
                id,
                expr: Expr::Struct(s),
            }
        }
        other => IdedExpr { id, expr: other },
    }
}

/// Whether `expr` is the accumulator variable `accu`.
fn is_accu(expr: &IdedExpr, accu: &str) -> bool {
    matches!(&expr.expr, Expr::Ident(name) if name == accu)
}

/// A comprehension step, instrumented without changing its shape: cel-rust recognises
/// `accu && p` / `accu || p` (to absorb errors as CEL requires), and `accu + [x]` and
/// `g ? accu + [x] : accu` (to append in place). The tick goes on `p`, `x` or `g` unless the
/// condition already ticks.
fn instrument_step(step: IdedExpr, accu: &str, ticked: bool) -> IdedExpr {
    let tick = |e: IdedExpr| {
        if ticked {
            instrument(e)
        } else {
            wrap(TICK, instrument(e))
        }
    };
    let IdedExpr { id, expr } = step;
    let Expr::Call(mut call) = expr else {
        let step = IdedExpr { id, expr };
        return if ticked {
            instrument(step)
        } else {
            wrap(TICK, instrument(step))
        };
    };
    let name = call.func_name.as_str();
    let folds = matches!(name, operators::LOGICAL_AND | operators::LOGICAL_OR)
        && call.target.is_none()
        && call.args.len() == 2
        && is_accu(&call.args[0], accu);
    let guarded =
        name == operators::CONDITIONAL && call.args.len() == 3 && is_accu(&call.args[2], accu);
    if folds {
        let predicate = call.args.pop().unwrap_or_default();
        call.args.push(tick(predicate));
    } else if guarded {
        let guard = std::mem::take(&mut call.args[0]);
        call.args[0] = tick(guard);
        let step = std::mem::take(&mut call.args[1]);
        call.args[1] = instrument_append(step, accu, true);
    } else if appends(&call, accu) {
        return instrument_append(
            IdedExpr {
                id,
                expr: Expr::Call(call),
            },
            accu,
            ticked,
        );
    } else {
        let step = IdedExpr {
            id,
            expr: Expr::Call(call),
        };
        return if ticked {
            instrument(step)
        } else {
            wrap(TICK, instrument(step))
        };
    }
    IdedExpr {
        id,
        expr: Expr::Call(call),
    }
}

/// Whether `call` is `accu + [...]`.
fn appends(call: &CallExpr, accu: &str) -> bool {
    call.func_name == operators::ADD
        && call.target.is_none()
        && matches!(call.args.as_slice(), [lhs, rhs] if is_accu(lhs, accu) && matches!(rhs.expr, Expr::List(_)))
}

/// `accu + [x]` with `x` instrumented (and ticked unless `ticked`), the `+` left bare; any other
/// expression instrumented as usual.
fn instrument_append(expr: IdedExpr, accu: &str, ticked: bool) -> IdedExpr {
    let IdedExpr { id, expr } = expr;
    match expr {
        Expr::Call(mut call) if appends(&call, accu) => {
            if let Some(IdedExpr {
                id: list_id,
                expr: Expr::List(mut list),
            }) = call.args.pop()
            {
                list.elements = list
                    .elements
                    .into_iter()
                    .map(|e| {
                        if ticked {
                            instrument(e)
                        } else {
                            wrap(TICK, instrument(e))
                        }
                    })
                    .collect();
                call.args.push(IdedExpr {
                    id: list_id,
                    expr: Expr::List(list),
                });
            }
            IdedExpr {
                id,
                expr: Expr::Call(call),
            }
        }
        other => instrument(IdedExpr { id, expr: other }),
    }
}

fn instrument_entry(entry: &mut EntryExpr) {
    match entry {
        EntryExpr::MapEntry(e) => {
            e.key = instrument(std::mem::take(&mut e.key));
            e.value = instrument(std::mem::take(&mut e.value));
        }
        EntryExpr::StructField(f) => {
            f.value = instrument(std::mem::take(&mut f.value));
        }
    }
}
