//! Limits that turn a runaway template into an evaluation error of that template instead of an
//! aborted process.
//!
//! - Collections built by one built-in call are capped at [`MAX_COLLECTION`] elements:
//!   `numbers.range(1, 1e12)` would ask for terabytes at once (the allocation aborts before any
//!   time check runs). `numbers.range` and `numbers.range_step` are replaced by capped
//!   extensions with OPA's semantics.
//! - `sprintf` output is capped at [`MAX_TEXT`] bytes (see `gosprintf`).
//! - Recursion is refused at ingestion, as OPA's compiler refuses it (`analysis`), and the
//!   depth of calls a template can reach is capped at [`MAX_CALL_DEPTH`].
//! - Rego sources nested deeper than [`MAX_BRACKET_DEPTH`] brackets are refused before regorus
//!   parses them (its parser backtracks exponentially on nested brackets).
//! - Time: the caller's budget ([`crate::EngineOptions::time_budget`]) stops a whole review
//!   cooperatively through regorus' execution timer.

use std::num::NonZeroU32;
use std::time::Duration;

use regorus::Value;
use regorus::utils::limits::ExecutionTimerConfig;

/// How long preparing a template (one evaluation on an empty input) may take; a template
/// still running then is accepted, its evaluations are bounded by the review's budget.
pub(crate) const PREPARE_BUDGET: Duration = Duration::from_secs(2);

/// Work units between two clock reads of regorus' execution timer.
const TIMER_INTERVAL: u32 = 64;

/// regorus' execution timer for `limit`.
pub(crate) fn timer(limit: Duration) -> ExecutionTimerConfig {
    ExecutionTimerConfig {
        limit,
        check_interval: NonZeroU32::new(TIMER_INTERVAL).unwrap_or(NonZeroU32::MIN),
    }
}

/// Evaluates `rule` once on the engine's current input so regorus compiles the modules (its
/// compile errors only surface at the first evaluation), within [`PREPARE_BUDGET`]. Returns
/// the error of a template that does not compile; a template that runs out of time or passes
/// a limit on this input compiled fine.
pub(crate) fn prepare(engine: &mut regorus::Engine, rule: &str) -> Option<anyhow::Error> {
    engine.set_execution_timer_config(timer(PREPARE_BUDGET));
    let outcome = engine.eval_rule(rule.to_string());
    engine.clear_execution_timer_config();
    let _ = engine.take_prints();
    let error = outcome.err()?;
    let is_limit = error.downcast_ref::<regorus::LimitError>().is_some()
        || format!("{error:#}").contains(LIMIT_TEXT);
    (!is_limit).then_some(error)
}

/// The words every [`LimitExceeded`] message carries.
const LIMIT_TEXT: &str = "exceeds the embedded engine's limit";

/// The most elements one built-in call may produce.
pub const MAX_COLLECTION: u64 = 1_000_000;

/// The longest text one built-in call may produce (1 MiB).
pub const MAX_TEXT: usize = 1 << 20;

/// The deepest nesting of `[` and `{` a Rego source may have (regorus parses deeper nesting in
/// exponential time).
pub const MAX_BRACKET_DEPTH: usize = 12;

/// The deepest chain of rule and function references a template may have.
pub const MAX_CALL_DEPTH: usize = 64;

/// A limit passed: an evaluation error naming the built-in and the limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{builtin}: {what} exceeds the embedded engine's limit of {limit}")]
pub(crate) struct LimitExceeded {
    pub(crate) builtin: &'static str,
    pub(crate) what: String,
    pub(crate) limit: String,
}

/// Registers the capped collection built-ins.
pub(crate) fn register(engine: &mut regorus::Engine) -> anyhow::Result<()> {
    engine.add_extension(
        "numbers.range".to_string(),
        2,
        Box::new(|params: Vec<Value>| range("numbers.range", &params, Some(1))),
    )?;
    engine.add_extension(
        "numbers.range_step".to_string(),
        3,
        Box::new(|params: Vec<Value>| range("numbers.range_step", &params, None)),
    )
}

/// An integral number argument; `None` when it is not one (undefined, as a non-strict error).
fn integer(value: Option<&Value>) -> Option<i128> {
    match value {
        Some(Value::Number(n)) if n.is_integer() => n.as_i128(),
        _ => None,
    }
}

/// `numbers.range(a, b)` (step 1) or `numbers.range_step(a, b, step)`: the integers from `a`
/// to `b` inclusive, counting down when `b < a`; `range_step` needs a positive step.
fn range(builtin: &'static str, params: &[Value], step: Option<i128>) -> anyhow::Result<Value> {
    let (Some(from), Some(to)) = (integer(params.first()), integer(params.get(1))) else {
        return Ok(Value::Undefined);
    };
    let Some(step) = step.or_else(|| integer(params.get(2))).filter(|s| *s > 0) else {
        return Ok(Value::Undefined);
    };
    let count = (to - from).unsigned_abs() / step.unsigned_abs() + 1;
    if count > u128::from(MAX_COLLECTION) {
        return Err(LimitExceeded {
            builtin,
            what: format!("a result of {count} elements"),
            limit: format!("{MAX_COLLECTION} elements"),
        }
        .into());
    }
    let direction = if to < from { -step } else { step };
    let values = (0..count as i128)
        .map(|i| Value::from(from + i * direction))
        .collect::<Vec<_>>();
    Ok(Value::from(values))
}

/// Refuses a source nested too deeply for regorus' parser.
pub(crate) fn check_source_nesting(module: &str, source: &str) -> Result<(), String> {
    let (depth, line) = crate::regosource::bracket_depth(source);
    if depth > MAX_BRACKET_DEPTH {
        return Err(format!(
            "brackets nested {depth} deep ({module}:{line}) exceed the embedded engine's limit of \
             {MAX_BRACKET_DEPTH}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(builtin: &'static str, json: &str, step: Option<i128>) -> anyhow::Result<Value> {
        let params = match Value::from_json_str(json).unwrap() {
            Value::Array(items) => items.iter().cloned().collect::<Vec<_>>(),
            _ => unreachable!("test arrays only"),
        };
        range(builtin, &params, step)
    }

    fn v(json: &str) -> Value {
        Value::from_json_str(json).unwrap()
    }

    #[test]
    fn ranges_follow_opa() {
        assert_eq!(
            call("numbers.range", "[1, 3]", Some(1)).unwrap(),
            v("[1, 2, 3]")
        );
        assert_eq!(
            call("numbers.range", "[3, 1]", Some(1)).unwrap(),
            v("[3, 2, 1]")
        );
        assert_eq!(call("numbers.range", "[2, 2]", Some(1)).unwrap(), v("[2]"));
        assert_eq!(
            call("numbers.range", "[1, 2.5]", Some(1)).unwrap(),
            Value::Undefined
        );
        assert_eq!(
            call("numbers.range_step", "[0, 10, 4]", None).unwrap(),
            v("[0, 4, 8]")
        );
        assert_eq!(
            call("numbers.range_step", "[10, 0, 4]", None).unwrap(),
            v("[10, 6, 2]")
        );
        assert_eq!(
            call("numbers.range_step", "[0, 10, 0]", None).unwrap(),
            Value::Undefined
        );
    }

    #[test]
    fn huge_ranges_are_errors_not_allocations() {
        let error = call("numbers.range", "[1, 1e12]", Some(1)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "numbers.range: a result of 1000000000000 elements exceeds the embedded engine's \
             limit of 1000000 elements"
        );
        assert!(call("numbers.range_step", "[0, 1e18, 1]", None).is_err());
        assert!(call("numbers.range", "[0, 999999]", Some(1)).is_ok());
    }
}
