//! [`CelProgram`]: a compiled `K8sNativeValidation` source, and its evaluation against the
//! bindings Gatekeeper's CEL driver provides, with the decision rules of Kubernetes'
//! ValidatingAdmissionPolicy validator.

use crate::budget::{COST_BUDGET, Meter, OUT_OF_BUDGET};
use crate::check::{self, Problem, Scope, StaticType};
use crate::error::{CompileError, EvalError};
use crate::source::{FailurePolicy, Source};
use crate::value::{self, MAX_DEPTH};
use cel::common::traits::Indexer;
use cel::common::types::{CelBool, CelString, MAP_TYPE, Type};
use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use cel::{Context, Env, ExecutionError, IdedExpr, Value};
use serde_json::Value as Json;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// The longest message a `messageExpression` may produce (Kubernetes'
/// `MaxEvaluatedMessageExpressionSizeBytes`); a longer one falls back to `message`.
pub const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// The longest expression source accepted, and the deepest bracket nesting: bounds on the
/// parser, which recurses per nesting level.
pub const MAX_EXPRESSION_BYTES: usize = 64 * 1024;
/// See [`MAX_EXPRESSION_BYTES`].
pub const MAX_EXPRESSION_NESTING: usize = 64;

/// The reason of a violation whose validation names none.
pub const DEFAULT_REASON: &str = "Invalid";

/// Bindings every expression sees.
const ROOTS: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "namespaceObject",
    "variables",
];
/// Bindings a variable's expression sees: the roots and the Constraint as `params`.
const VARIABLE_ROOTS: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "namespaceObject",
    "variables",
    "params",
];
/// The variables Gatekeeper declares before the template's own.
const BUILT_IN_VARIABLES: [&str; 2] = ["anyObject", "params"];

/// The inputs of one evaluation, as JSON; `None` is CEL `null`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bindings<'a> {
    /// `object`: the object under review (Gatekeeper clears it on DELETE).
    pub object: Option<&'a Json>,
    /// `oldObject`: the previous object (null in `gator test`/`verify`).
    pub old_object: Option<&'a Json>,
    /// `request`: the admission request without `object`/`oldObject`.
    pub request: Option<&'a Json>,
    /// `params`: the whole Constraint (visible to variables only; templates use
    /// `variables.params`, its `spec.parameters`).
    pub params: Option<&'a Json>,
    /// `namespaceObject`: the object's Namespace (null in `gator`).
    pub namespace_object: Option<&'a Json>,
}

/// JSON `null`, what an absent binding is.
static NULL: Json = Json::Null;

/// The bindings of one review (all but `params`), to evaluate several programs against the
/// same object. Each binding is checked against [`MAX_DEPTH`] up front and converted into a CEL
/// value the first time an expression reads it, borrowing its text from the JSON: a binding no
/// expression reads (often `request`, `oldObject`, `namespaceObject`) is never converted, and
/// one read by several programs is converted once.
#[derive(Debug)]
pub struct PreparedBindings<'a> {
    object: Binding<'a>,
    old_object: Binding<'a>,
    request: Binding<'a>,
    namespace_object: Binding<'a>,
    /// Gatekeeper's `variables.anyObject` is `oldObject` (DELETE with a null object).
    any_object_is_old: bool,
}

/// One binding: its JSON, and its CEL value once converted.
#[derive(Debug)]
struct Binding<'a> {
    json: &'a Json,
    value: OnceLock<Option<Box<dyn Val + 'a>>>,
}

impl<'a> Binding<'a> {
    /// `json` (`None` is null) as a binding named `name`; fails when it nests too deeply.
    fn checked(json: Option<&'a Json>, name: &'static str) -> Result<Binding<'a>, EvalError> {
        let json = json.unwrap_or(&NULL);
        if !value::within_depth(json) {
            return Err(EvalError::TooDeep {
                binding: name,
                max: MAX_DEPTH,
            });
        }
        Ok(Binding {
            json,
            value: OnceLock::new(),
        })
    }

    /// The CEL value, converted on first use. The depth was checked, so it is always there.
    fn value(&self) -> Option<&(dyn Val + 'a)> {
        self.value
            .get_or_init(|| value::from_json(self.json))
            .as_deref()
    }
}

impl<'a> PreparedBindings<'a> {
    /// Checks `bindings` (all but `params`, which [`PreparedParams`] holds); fails when one
    /// nests deeper than [`MAX_DEPTH`].
    pub fn new(bindings: &Bindings<'a>) -> Result<PreparedBindings<'a>, EvalError> {
        let operation = bindings
            .request
            .and_then(|r| r.get("operation"))
            .and_then(Json::as_str);
        let object_is_null = bindings.object.is_none_or(Json::is_null);
        Ok(PreparedBindings {
            object: Binding::checked(bindings.object, "object")?,
            old_object: Binding::checked(bindings.old_object, "oldObject")?,
            request: Binding::checked(bindings.request, "request")?,
            namespace_object: Binding::checked(bindings.namespace_object, "namespaceObject")?,
            any_object_is_old: operation == Some("DELETE") && object_is_null,
        })
    }
}

/// A Constraint as CEL sees it (`params`, and its `spec.parameters` as `variables.params`),
/// converted once and kept: one Constraint evaluated against many objects is converted once.
#[derive(Debug)]
pub struct PreparedParams {
    params: Box<dyn Val>,
    /// Gatekeeper's `variables.params`: `params.spec.parameters`, or null.
    parameters: Box<dyn Val>,
}

impl PreparedParams {
    /// Converts `constraint` (`None` is null); fails when it nests deeper than [`MAX_DEPTH`].
    pub fn new(constraint: Option<&Json>) -> Result<PreparedParams, EvalError> {
        let keep = |json: Option<&Json>| {
            value::from_json(json.unwrap_or(&NULL))
                .and_then(|borrowed| value::to_static(borrowed.as_ref()).ok())
                .ok_or(EvalError::TooDeep {
                    binding: "params",
                    max: MAX_DEPTH,
                })
        };
        let parameters = constraint
            .and_then(|p| p.get("spec"))
            .and_then(|spec| spec.get("parameters"));
        Ok(PreparedParams {
            params: keep(constraint)?,
            parameters: keep(parameters)?,
        })
    }
}

/// A failed validation: what Gatekeeper reports as a violation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CelViolation {
    /// The message: the `messageExpression` result, else `message`, else
    /// `failed expression: <expression>`.
    pub message: String,
    /// The validation's `reason`, `Invalid` when it names none. (Gatekeeper's results carry only
    /// the message.)
    pub reason: String,
}

/// The outcome of one validation that did not pass, or of an evaluation that failed as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The validation evaluated to false.
    Violation(CelViolation),
    /// The validation (or a match condition, or the budget) failed; Gatekeeper shows the text as
    /// the result's message, but it is not a verdict on the object.
    Error(EvalError),
}

/// One compiled expression, or the compile error Gatekeeper reports when it is used.
#[derive(Debug)]
struct Compiled {
    source: String,
    expr: Result<IdedExpr, String>,
    /// The fast form of `expr` (`access::native`), run first.
    fast: Option<IdedExpr>,
}

#[derive(Debug)]
struct CompiledValidation {
    expression: Compiled,
    message: String,
    message_expression: Option<Compiled>,
    reason: String,
}

/// A compiled `K8sNativeValidation` source.
pub struct CelProgram {
    env: Arc<Env>,
    variable_names: Vec<String>,
    variables: Vec<Compiled>,
    /// For each variable, the earlier variables its expression may read.
    variable_reads: Vec<Vec<usize>>,
    match_conditions: Vec<Compiled>,
    validations: Vec<CompiledValidation>,
    failure_policy: FailurePolicy,
    ignored_keys: Vec<String>,
    cost_budget: u64,
}

impl std::fmt::Debug for CelProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CelProgram")
            .field("variables", &self.variable_names)
            .field("match_conditions", &self.match_conditions.len())
            .field("validations", &self.validations.len())
            .field("failure_policy", &self.failure_policy)
            .finish_non_exhaustive()
    }
}

/// Compiles one expression; an unsupported feature is the caller's error, a compile problem is
/// kept for evaluation time.
fn compile_one(
    env: &Env,
    source: &str,
    scope: &Scope<'_>,
    want_bool: bool,
    place: &str,
) -> Result<(Compiled, StaticType), CompileError> {
    let checked = bounded(source).and_then(|()| check::compile(env, source, scope, want_bool));
    match checked {
        Ok(c) => Ok((
            Compiled {
                source: source.to_owned(),
                fast: Some(crate::access::native(c.expr.clone())),
                expr: Ok(c.expr),
            },
            c.static_type,
        )),
        Err(Problem::Unsupported(feature)) => Err(CompileError::Unsupported {
            place: place.to_owned(),
            feature,
        }),
        Err(Problem::Compilation(detail)) => Ok((
            Compiled {
                source: source.to_owned(),
                expr: Err(detail),
                fast: None,
            },
            StaticType::Unknown,
        )),
    }
}

/// The size and nesting bounds on an expression's text.
fn bounded(source: &str) -> Result<(), Problem> {
    if source.len() > MAX_EXPRESSION_BYTES {
        return Err(Problem::Compilation(format!(
            "compilation failed: expression is longer than {MAX_EXPRESSION_BYTES} bytes"
        )));
    }
    let mut depth = 0usize;
    for c in source.chars() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_EXPRESSION_NESTING {
            return Err(Problem::Compilation(format!(
                "compilation failed: expression nests deeper than {MAX_EXPRESSION_NESTING} levels"
            )));
        }
    }
    Ok(())
}

impl CelProgram {
    /// Compiles the `K8sNativeValidation` `source` object of a ConstraintTemplate.
    ///
    /// Fails when Gatekeeper would refuse the source, or when an expression uses a Kubernetes
    /// CEL feature this crate does not provide. An expression that is not valid CEL does not
    /// fail here: Gatekeeper accepts the template and reports the compile error on every review,
    /// and so does [`CelProgram::evaluate`].
    pub fn compile(source: &Json) -> Result<CelProgram, CompileError> {
        let source = Source::parse(source)?;
        let env = crate::env::shared().ok_or_else(|| {
            CompileError::Source("the CEL environment could not be built".to_owned())
        })?;
        let mut declared: Vec<(String, StaticType)> = BUILT_IN_VARIABLES
            .iter()
            .map(|n| ((*n).to_owned(), StaticType::Dyn))
            .collect();
        let mut variables = Vec::new();
        for (i, variable) in source.variables.iter().enumerate() {
            let scope = Scope {
                roots: VARIABLE_ROOTS,
                variables: &declared,
            };
            let place = format!("variables[{i}] ({})", variable.name);
            let (compiled, static_type) =
                compile_one(&env, &variable.expression, &scope, false, &place)?;
            variables.push(compiled);
            declared.push((variable.name.clone(), static_type));
        }
        let scope = Scope {
            roots: ROOTS,
            variables: &declared,
        };
        let match_conditions = source
            .match_conditions
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let place = format!("matchCondition[{i}] ({})", c.name);
                compile_one(&env, &c.expression, &scope, true, &place).map(|(c, _)| c)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut validations = Vec::new();
        for (i, v) in source.validations.iter().enumerate() {
            let place = format!("validations[{i}].expression");
            let (expression, _) = compile_one(&env, &v.expression, &scope, true, &place)?;
            let message_expression = if v.message_expression.is_empty() {
                None
            } else {
                let place = format!("validations[{i}].messageExpression");
                Some(compile_one(&env, &v.message_expression, &scope, false, &place)?.0)
            };
            validations.push(CompiledValidation {
                expression,
                message: v.message.clone(),
                message_expression,
                reason: v
                    .reason
                    .clone()
                    .unwrap_or_else(|| DEFAULT_REASON.to_owned()),
            });
        }
        Ok(CelProgram {
            env,
            variable_reads: variables
                .iter()
                .enumerate()
                .map(|(i, compiled)| reads(compiled, &source.variables[..i]))
                .collect(),
            variable_names: source.variables.iter().map(|v| v.name.clone()).collect(),
            variables,
            match_conditions,
            validations,
            failure_policy: source.failure_policy,
            ignored_keys: source.ignored_keys,
            cost_budget: COST_BUDGET,
        })
    }

    /// The same program with another cost budget per evaluation ([`COST_BUDGET`] by default).
    pub fn with_cost_budget(mut self, budget: u64) -> CelProgram {
        self.cost_budget = budget;
        self
    }

    /// Source keys Gatekeeper ignores (e.g. `matchConditions`, plural), for a warning.
    pub fn ignored_keys(&self) -> &[String] {
        &self.ignored_keys
    }

    /// The compile errors Gatekeeper would report when the expressions are evaluated, as
    /// `(expression, error)`.
    pub fn compile_errors(&self) -> Vec<(&str, &str)> {
        let validations = self
            .validations
            .iter()
            .flat_map(|v| std::iter::once(&v.expression).chain(&v.message_expression));
        self.variables
            .iter()
            .chain(&self.match_conditions)
            .chain(validations)
            .filter_map(|c| {
                c.expr
                    .as_ref()
                    .err()
                    .map(|e| (c.source.as_str(), e.as_str()))
            })
            .collect()
    }

    /// What [`CelProgram::evaluate`] gives when the bindings cannot be converted: `error`, or
    /// nothing under `failurePolicy: Ignore`.
    pub fn conversion_failed(&self, error: EvalError) -> Vec<Decision> {
        self.keep_error(error)
    }

    /// Evaluates the program against `bindings`: see [`CelProgram::evaluate_prepared`].
    pub fn evaluate(&self, bindings: &Bindings<'_>) -> Vec<Decision> {
        let prepared = PreparedBindings::new(bindings)
            .and_then(|prepared| Ok((prepared, PreparedParams::new(bindings.params)?)));
        match prepared {
            Ok((prepared, params)) => self.evaluate_prepared(&prepared, &params),
            Err(error) => self.keep_error(error),
        }
    }

    /// Evaluates the program: one [`Decision`] per validation that did not pass, in order; none
    /// when a match condition is false; a single error when a match condition fails or the
    /// budget runs out. With `failurePolicy: Ignore`, errors are dropped, as Gatekeeper drops
    /// them.
    pub fn evaluate_prepared(
        &self,
        bindings: &PreparedBindings<'_>,
        params: &PreparedParams,
    ) -> Vec<Decision> {
        self.evaluate_until(bindings, params, None)
            .unwrap_or_default()
    }

    /// [`CelProgram::evaluate_prepared`] stopped at `deadline`: `None` when the deadline passed
    /// before the evaluation ended (the clock is read while it runs, so one evaluation cannot
    /// outlast the deadline by more than a few thousand steps).
    pub fn evaluate_until(
        &self,
        bindings: &PreparedBindings<'_>,
        params: &PreparedParams,
        deadline: Option<Instant>,
    ) -> Option<Vec<Decision>> {
        let meter = Meter::start(self.cost_budget, deadline);
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.decide(bindings, params)
        }));
        if meter.past_deadline() {
            return None;
        }
        let decisions = match run {
            Ok(_) if meter.exhausted() => vec![Decision::Error(EvalError::OutOfBudget)],
            Ok(decisions) => decisions,
            Err(_) => vec![Decision::Error(EvalError::Internal)],
        };
        drop(meter);
        Some(match self.failure_policy {
            FailurePolicy::Fail => decisions,
            FailurePolicy::Ignore => decisions
                .into_iter()
                .filter(|d| matches!(d, Decision::Violation(_)))
                .collect(),
        })
    }

    fn keep_error(&self, error: EvalError) -> Vec<Decision> {
        match self.failure_policy {
            FailurePolicy::Fail => vec![Decision::Error(error)],
            FailurePolicy::Ignore => Vec::new(),
        }
    }

    fn decide(&self, bindings: &PreparedBindings<'_>, params: &PreparedParams) -> Vec<Decision> {
        let resolver = Resolver::new(self, bindings, params);
        let mut errors = Vec::new();
        for condition in &self.match_conditions {
            match resolver.run(condition, |v| {
                v.downcast_ref::<CelBool>().is_some_and(|b| !*b.inner())
            }) {
                Ok(true) => return Vec::new(),
                Ok(false) => {}
                Err(e) => errors.push(e),
            }
        }
        if !errors.is_empty() {
            return vec![Decision::Error(aggregate(errors))];
        }
        self.validations
            .iter()
            .filter_map(|validation| resolver.validate(validation))
            .collect()
    }
}

/// The variables among `earlier` that `compiled` may read: those it names as
/// `variables.<name>` (or `['<name>']`, `has(…)`, `.?<name>`); all of them when it uses
/// `variables` any other way. Found without recursion.
fn reads(compiled: &Compiled, earlier: &[crate::source::Named]) -> Vec<usize> {
    use cel::common::ast::Expr;
    let Ok(expr) = &compiled.expr else {
        return Vec::new();
    };
    let mut named = Vec::new();
    let mut pending = vec![expr];
    while let Some(node) = pending.pop() {
        match variable_read(node) {
            Some(Some(name)) => named.push(name),
            Some(None) => return (0..earlier.len()).collect(),
            None if matches!(&node.expr, Expr::Ident(n) if n == "variables") => {
                return (0..earlier.len()).collect();
            }
            None => pending.extend(check::children(node)),
        }
    }
    earlier
        .iter()
        .enumerate()
        .filter(|(_, v)| named.contains(&v.name))
        .map(|(i, _)| i)
        .collect()
}

/// For a call on `variables` (a selection, index or presence test): `Some(name)` when it names
/// a literal variable, `Some(None)` when the name is computed; `None` for any other node.
fn variable_read(node: &IdedExpr) -> Option<Option<String>> {
    use cel::common::ast::{Expr, LiteralValue};
    let Expr::Call(call) = &node.expr else {
        return None;
    };
    let [target, field] = call.args.as_slice() else {
        return None;
    };
    if !matches!(&target.expr, Expr::Ident(n) if n == "variables") {
        return None;
    }
    Some(match &field.expr {
        Expr::Literal(LiteralValue::String(s)) => Some(s.inner().to_owned()),
        _ => None,
    })
}

/// Kubernetes' aggregate of several errors: the one error, or `[e1, e2]`.
fn aggregate(mut errors: Vec<EvalError>) -> EvalError {
    if errors.len() == 1 {
        return errors.remove(0);
    }
    let texts: Vec<String> = errors.iter().map(ToString::to_string).collect();
    EvalError::Aggregate(format!("[{}]", texts.join(", ")))
}

/// cel-go's text for a runtime error.
pub(crate) fn error_text(error: &ExecutionError) -> String {
    match error {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::IndexOutOfBounds(Value::Int(i)) => format!("index out of bounds: {i}"),
        ExecutionError::IndexOutOfBounds(index) => format!("index out of bounds: {index:?}"),
        ExecutionError::DivisionByZero(_) => "division by zero".to_owned(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_owned(),
        ExecutionError::Overflow(..) => "integer overflow".to_owned(),
        ExecutionError::FunctionError { function, message }
            if matches!(function.as_str(), "int" | "uint" | "double")
                && message.starts_with("string parse error") =>
        {
            format!("type conversion error from 'string' to '{function}'")
        }
        ExecutionError::FunctionError { message, .. } => message.clone(),
        ExecutionError::UndeclaredReference(name) => format!("no such attribute: {name}"),
        ExecutionError::NoSuchOverload(overload) => {
            crate::access::overload_text(overload.function(), overload.argument_types())
        }
        ExecutionError::UnsupportedBinaryOperator(operator, lhs, _) => {
            let function = match *operator {
                "add" => "_+_",
                "sub" => "_-_",
                "mul" => "_*_",
                "div" => "_/_",
                "rem" => "_%_",
                other => other,
            };
            crate::access::overload_text(function, &[crate::access::value_type_name(lhs).into()])
        }
        ExecutionError::ValuesNotComparable(..) => crate::access::NO_SUCH_OVERLOAD.to_owned(),
        ExecutionError::UnexpectedType { got, want } if want == "iterable" => format!(
            "got '{}', expected iterable type",
            crate::access::go_type_name(got)
        ),
        ExecutionError::UnexpectedType { .. } => crate::access::NO_SUCH_OVERLOAD.to_owned(),
        other => other.to_string(),
    }
}

/// Resolves the bindings and Gatekeeper's `variables`, computing each variable once, when it
/// is first used (as Kubernetes' lazy variable map does).
struct Resolver<'a, 'j> {
    program: &'a CelProgram,
    bindings: &'a PreparedBindings<'j>,
    params: &'a PreparedParams,
    slots: Vec<OnceLock<Result<Box<dyn Val>, String>>>,
}

impl<'a, 'j> Resolver<'a, 'j> {
    fn new(
        program: &'a CelProgram,
        bindings: &'a PreparedBindings<'j>,
        params: &'a PreparedParams,
    ) -> Resolver<'a, 'j> {
        let slots = program.variables.iter().map(|_| OnceLock::new()).collect();
        Resolver {
            program,
            bindings,
            params,
            slots,
        }
    }

    /// Runs a compiled expression and hands its value to `read` (the value may borrow from the
    /// evaluation, so it is read in place rather than copied out); the error is the text
    /// Kubernetes' activation gives.
    fn run<T>(
        &self,
        compiled: &Compiled,
        read: impl FnOnce(&dyn Val) -> T,
    ) -> Result<T, EvalError> {
        let expr = compiled
            .expr
            .as_ref()
            .map_err(|detail| EvalError::Compilation {
                detail: detail.clone(),
            })?;
        let mut context = Context::with_env(Arc::clone(&self.program.env));
        context.set_variable_resolver(self);
        let runtime = |e: ExecutionError| EvalError::Runtime {
            expression: compiled.source.clone(),
            detail: error_text(&e),
        };
        // The fast form answers as the exact one unless it fails; then the exact one decides.
        if let Some(fast) = &compiled.fast
            && let Ok(result) = Value::resolve_val(fast, &context)
        {
            return Ok(read(result.as_ref()));
        }
        let result = Value::resolve_val(expr, &context).map_err(runtime)?;
        Ok(read(result.as_ref()))
    }

    /// The decision of one validation, `None` when it passes.
    fn validate(&self, validation: &CompiledValidation) -> Option<Decision> {
        let result = self.run(&validation.expression, |v| {
            match v.downcast_ref::<CelBool>() {
                Some(b) => Ok(*b.inner()),
                None => Err(v.get_type().name().to_owned()),
            }
        });
        match result {
            Ok(Ok(true)) => None,
            Ok(Ok(false)) => Some(Decision::Violation(CelViolation {
                message: self.message(validation),
                reason: validation.reason.clone(),
            })),
            Ok(Err(found)) => Some(Decision::Error(EvalError::Compilation {
                detail: format!("must evaluate to bool but got {found}"),
            })),
            Err(error) => Some(Decision::Error(error)),
        }
    }

    /// The message of a failed validation, by Kubernetes' fallbacks.
    fn message(&self, validation: &CompiledValidation) -> String {
        let computed = validation
            .message_expression
            .as_ref()
            .and_then(|m| {
                self.run(m, |v| {
                    v.downcast_ref::<CelString>()
                        .map(|s| s.inner().trim().to_owned())
                })
                .ok()
            })
            .flatten()
            .filter(|m| m.len() <= MAX_MESSAGE_BYTES && !m.contains('\n'))
            .unwrap_or_default();
        if !computed.is_empty() {
            return computed;
        }
        let message = validation.message.trim();
        if !message.is_empty() {
            return message.to_owned();
        }
        format!("failed expression: {}", validation.expression.source.trim())
    }

    /// The value of the template variable at `index`, computed on first use. The variables it
    /// may read are computed first, earliest first, so no variable's evaluation waits on
    /// another's: a chain of any length needs no more stack than one expression.
    fn variable(&self, index: usize) -> Result<&(dyn Val + 'static), ExecutionError> {
        if self.slots[index].get().is_none() {
            let mut needed = vec![false; index];
            let mut pending = vec![index];
            while let Some(i) = pending.pop() {
                for &j in &self.program.variable_reads[i] {
                    if !needed[j] && self.slots[j].get().is_none() {
                        needed[j] = true;
                        pending.push(j);
                    }
                }
            }
            for (j, _) in needed.iter().enumerate().filter(|(_, n)| **n) {
                let _ = self.computed(j);
            }
        }
        self.computed(index)
    }

    /// The variable at `index`, computed now unless it was.
    fn computed(&self, index: usize) -> Result<&(dyn Val + 'static), ExecutionError> {
        let name = &self.program.variable_names[index];
        let compiled = &self.program.variables[index];
        let slot = self.slots[index].get_or_init(|| match &compiled.expr {
            Err(detail) => Err(format!(
                "composited variable {name:?} fails to compile: {detail}"
            )),
            Ok(_) => match self.run(compiled, value::to_static) {
                Ok(kept) => kept.map_err(|e| error_text(&e)),
                Err(EvalError::Runtime { detail, .. }) => Err(format!(
                    "composited variable {name:?} fails to evaluate: {detail}"
                )),
                Err(other) => Err(other.to_string()),
            },
        });
        match slot {
            Ok(v) => Ok(v.as_ref()),
            Err(text) if text.contains(OUT_OF_BUDGET) => {
                Err(ExecutionError::function_error("variables", OUT_OF_BUDGET))
            }
            Err(text) => Err(ExecutionError::function_error("variables", text)),
        }
    }
}

impl VariableResolver for Resolver<'_, '_> {
    fn resolve<'b>(&'b self, name: &str) -> Option<CowVal<'b, 'b>> {
        let bound: &'b dyn Val = match name {
            "object" => self.bindings.object.value()?,
            "oldObject" => self.bindings.old_object.value()?,
            "request" => self.bindings.request.value()?,
            "params" => self.params.params.as_ref(),
            "namespaceObject" => self.bindings.namespace_object.value()?,
            "variables" => self,
            _ => return None,
        };
        Some(CowVal::Borrowed(bound))
    }
}

// The resolver is also the `variables` binding: a map whose entries are computed when they are
// read. It is handed out borrowed, so selecting `variables.x` borrows the entry; an owned handle
// would make the interpreter copy every entry it selects (the whole object for `anyObject`).
impl std::fmt::Debug for Resolver<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("variables")
    }
}

impl Val for Resolver<'_, '_> {
    fn get_type(&self) -> &Type {
        &MAP_TYPE
    }

    fn cel_type() -> &'static Type {
        &MAP_TYPE
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v>
    where
        Self: 'v,
    {
        Box::new(CelString::from("variables"))
    }

    fn as_indexer<'b, 'v>(&'b self) -> Option<&'b (dyn Indexer + 'v)>
    where
        Self: 'v,
    {
        Some(self)
    }
}

impl Indexer for Resolver<'_, '_> {
    fn get<'b, 'v>(&'b self, idx: &dyn Val) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        let name = idx
            .downcast_ref::<CelString>()
            .ok_or_else(|| ExecutionError::no_such_key("variables"))?;
        let bindings = self.bindings;
        let any_object = || {
            let binding = if bindings.any_object_is_old {
                &bindings.old_object
            } else {
                &bindings.object
            };
            binding
                .value()
                .ok_or_else(|| ExecutionError::function_error("anyObject", "nests too deeply"))
        };
        let val: &'b (dyn Val + 'v) = match name.inner() {
            "anyObject" => any_object()?,
            "params" => self.params.parameters.as_ref(),
            other => {
                let index = self
                    .program
                    .variable_names
                    .iter()
                    .position(|n| n == other)
                    .ok_or_else(|| ExecutionError::no_such_key(other))?;
                self.variable(index)?
            }
        };
        Ok(CowVal::Borrowed(val))
    }

    fn steal<'v>(self: Box<Self>, idx: &dyn Val) -> Result<Box<dyn Val + 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.get(idx).map(CowVal::into_owned)
    }
}
