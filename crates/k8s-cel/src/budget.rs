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
use cel::common::types::{CelBytes, CelString, DYN_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};
use std::cell::Cell;

/// The cost one evaluation of a program (its variables, conditions, validations and messages)
/// may spend.
pub const COST_BUDGET: u64 = 10_000_000;

/// The largest string, bytes, list or map a program may build, in bytes or elements.
pub const MAX_VALUE_BYTES: usize = 8 << 20;

/// cel-go's wording for a program that ran out of budget.
pub(crate) const OUT_OF_BUDGET: &str = "operation cancelled: actual cost limit exceeded";

const COST: &str = "@k8s_cost";
const TICK: &str = "@k8s_tick";

thread_local! {
    static REMAINING: Cell<u64> = const { Cell::new(u64::MAX) };
    static EXHAUSTED: Cell<bool> = const { Cell::new(false) };
}

/// The meter of one evaluation on this thread; dropping it lifts the budget.
pub(crate) struct Meter(());

impl Meter {
    /// Starts charging against `budget` on this thread.
    pub(crate) fn start(budget: u64) -> Meter {
        REMAINING.set(budget);
        EXHAUSTED.set(false);
        Meter(())
    }

    /// Whether the budget ran out at some point of the evaluation.
    pub(crate) fn exhausted(&self) -> bool {
        EXHAUSTED.get()
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        REMAINING.set(u64::MAX);
        EXHAUSTED.set(false);
    }
}

/// Charges `cost`; fails (and stays failed) once the budget is spent.
fn charge(function: &str, cost: u64) -> Result<(), ExecutionError> {
    let left = REMAINING.get();
    if EXHAUSTED.get() || left < cost {
        REMAINING.set(0);
        EXHAUSTED.set(true);
        return Err(ExecutionError::function_error(function, OUT_OF_BUDGET));
    }
    REMAINING.set(left - cost);
    Ok(())
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
    Ok(value)
}

fn tick<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let value = args
        .pop()
        .ok_or_else(ExecutionError::missing_argument_or_target)?;
    charge(TICK, 1)?;
    Ok(value)
}

/// Registers the two metering functions.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload(COST, "k8s_cost", vec![DYN_TYPE], cost)?;
    env.add_overload(TICK, "k8s_tick", vec![DYN_TYPE], tick)
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
            let call = CallExpr {
                func_name: call.func_name,
                target: call.target.map(|t| Box::new(instrument(*t))),
                args: call.args.into_iter().map(instrument).collect(),
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
