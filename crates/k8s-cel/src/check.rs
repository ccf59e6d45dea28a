//! Compiling one expression: parse with the shared environment (macros expanded), then the
//! checks cel-go's type checker makes that matter here, then the metering rewrite.
//!
//! cel-rust has no type checker, so this module does the part of it that changes answers:
//! every identifier must be declared (the bindings of the expression's kind, comprehension
//! variables, type names), `variables.<name>` must name an earlier variable, every function
//! must be one Kubernetes declares with that call style and argument count, literal regular
//! expressions must compile, and a validation or match condition must be boolean when its type
//! can be told without the data (`object.metadata.name` cannot: it is `dyn`). A function
//! Kubernetes declares but this crate does not provide is [`Problem::Unsupported`]; anything
//! else is [`Problem::Compilation`] with cel-go's wording, which Gatekeeper reports on every
//! review rather than refusing the template.

use crate::env::{self, NAMESPACES, NOT_PROVIDED, PROVIDED, Style};
use cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue, operators};
use cel::{Env, Program};

/// Why an expression does not compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Problem {
    /// It uses something this crate does not provide (the text names it).
    Unsupported(String),
    /// It is not valid Kubernetes CEL; the text is cel-go's.
    Compilation(String),
}

/// What the checker can tell of an expression's type without the data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StaticType {
    /// `bool`.
    Bool,
    /// Another known type, by its CEL name.
    Named(&'static str),
    /// `dyn`: an untyped binding, or something selected from one.
    Dyn,
    /// Not known here: checked when the expression runs.
    Unknown,
}

/// The names an expression may use.
pub(crate) struct Scope<'a> {
    /// The root bindings (`object`, `request`, …, and `params` for variables).
    pub(crate) roots: &'a [&'a str],
    /// The variables declared before this expression, with their types.
    pub(crate) variables: &'a [(String, StaticType)],
}

/// Type names an expression may use as values (`type(x) == map`).
const TYPE_NAMES: &[&str] = &[
    "bool",
    "bytes",
    "double",
    "int",
    "list",
    "map",
    "null_type",
    "string",
    "type",
    "uint",
];

/// The deepest expression tree accepted: cel-go's parser default (`maxRecursionDepth` 250,
/// which Kubernetes keeps); gator refuses `1 + 1 + …` of 251 terms with the same text. Every
/// later pass (checking, instrumenting, evaluating) recurses per level, so this bound is also
/// what keeps evaluation within the thread's stack.
pub(crate) const MAX_RECURSION_DEPTH: usize = 251;

/// Whether `root` nests deeper than `max`, measured without recursion.
fn depth_exceeds(root: &IdedExpr, max: usize) -> bool {
    let mut pending: Vec<(&IdedExpr, usize)> = vec![(root, 1)];
    while let Some((node, depth)) = pending.pop() {
        if depth > max {
            return true;
        }
        pending.extend(children(node).into_iter().map(|child| (child, depth + 1)));
    }
    false
}

/// The direct sub-expressions of `node`.
pub(crate) fn children(node: &IdedExpr) -> Vec<&IdedExpr> {
    match &node.expr {
        Expr::Call(call) => call
            .target
            .as_deref()
            .into_iter()
            .chain(&call.args)
            .collect(),
        Expr::Comprehension(c) => vec![
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ],
        Expr::Select(select) => vec![&select.operand],
        Expr::List(list) => list.elements.iter().collect(),
        Expr::Map(map) => map
            .entries
            .iter()
            .flat_map(|entry| match &entry.expr {
                EntryExpr::MapEntry(e) => vec![&e.key, &e.value],
                EntryExpr::StructField(f) => vec![&f.value],
            })
            .collect(),
        Expr::Struct(st) => st
            .entries
            .iter()
            .flat_map(|entry| match &entry.expr {
                EntryExpr::MapEntry(e) => vec![&e.key, &e.value],
                EntryExpr::StructField(f) => vec![&f.value],
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// A compiled, instrumented expression and its static type.
pub(crate) struct Checked {
    pub(crate) expr: IdedExpr,
    pub(crate) static_type: StaticType,
}

/// Compiles `source` in `scope`; when `want_bool`, a known non-boolean type is an error.
pub(crate) fn compile(
    env: &Env,
    source: &str,
    scope: &Scope<'_>,
    want_bool: bool,
) -> Result<Checked, Problem> {
    let program = env.compile(source).map_err(|e| {
        Problem::Compilation(format!(
            "compilation failed: {}",
            cel_go_errors(&e.to_string())
        ))
    })?;
    if depth_exceeds(program.expression(), MAX_RECURSION_DEPTH) {
        return Err(Problem::Compilation(
            "compilation failed: ERROR: <input>:-1:0: max recursion depth exceeded".to_owned(),
        ));
    }
    let checker = Checker {
        source,
        program: &program,
        scope,
    };
    let mut bound = Vec::new();
    checker.walk(program.expression(), &mut bound)?;
    let static_type = checker.type_of(program.expression());
    if want_bool {
        match &static_type {
            StaticType::Named(name) => {
                return Err(Problem::Compilation(format!(
                    "must evaluate to bool but got {name}"
                )));
            }
            StaticType::Dyn => {
                return Err(Problem::Compilation(
                    "must evaluate to bool but got dyn".to_owned(),
                ));
            }
            StaticType::Bool | StaticType::Unknown => {}
        }
    }
    Ok(Checked {
        expr: crate::budget::instrument(program.expression().clone()),
        static_type,
    })
}

/// cel-rust's parse errors in cel-go's layout (a space before each snippet bar).
fn cel_go_errors(text: &str) -> String {
    text.replace("\n| ", "\n | ")
}

struct Checker<'a> {
    source: &'a str,
    program: &'a Program,
    scope: &'a Scope<'a>,
}

impl Checker<'_> {
    /// A cel-go compile error at the node `id`.
    fn error(&self, id: u64, message: &str) -> Problem {
        let start = self
            .program
            .source_info()
            .offset_for(id)
            .map_or(0, |(start, _)| start as usize);
        let before: String = self.source.chars().take(start).collect();
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        let snippet = self.source.lines().nth(line - 1).unwrap_or_default();
        Problem::Compilation(format!(
            "compilation failed: ERROR: <input>:{line}:{column}: {message}\n | {snippet}\n | {}^",
            ".".repeat(column - 1)
        ))
    }

    fn walk(&self, node: &IdedExpr, bound: &mut Vec<String>) -> Result<(), Problem> {
        match &node.expr {
            Expr::Ident(name) => self.check_ident(node.id, name, bound),
            Expr::Select(select) => {
                if let Expr::Ident(root) = &select.operand.expr
                    && root == "variables"
                    && !bound.contains(root)
                {
                    return self.check_variable(node.id, &select.field);
                }
                self.walk(&select.operand, bound)
            }
            Expr::Call(call) => self.check_call(node.id, call, bound),
            Expr::List(list) => list.elements.iter().try_for_each(|e| self.walk(e, bound)),
            Expr::Map(map) => map.entries.iter().try_for_each(|entry| match &entry.expr {
                EntryExpr::MapEntry(e) => {
                    self.walk(&e.key, bound)?;
                    self.walk(&e.value, bound)
                }
                EntryExpr::StructField(f) => self.walk(&f.value, bound),
            }),
            Expr::Struct(s) => Err(self.error(
                node.id,
                &format!(
                    "undeclared reference to '{}' (in container '')",
                    s.type_name
                ),
            )),
            Expr::Comprehension(c) => {
                self.walk(&c.iter_range, bound)?;
                self.walk(&c.accu_init, bound)?;
                let depth = bound.len();
                bound.push(c.iter_var.clone());
                bound.extend(c.iter_var2.clone());
                bound.push(c.accu_var.clone());
                let inner = [&c.loop_cond, &c.loop_step, &c.result]
                    .into_iter()
                    .try_for_each(|e| self.walk(e, bound));
                bound.truncate(depth);
                inner
            }
            Expr::Literal(_) | Expr::Unspecified => Ok(()),
        }
    }

    fn check_ident(&self, id: u64, name: &str, bound: &[String]) -> Result<(), Problem> {
        let known = bound.iter().any(|b| b == name)
            || self.scope.roots.contains(&name)
            || TYPE_NAMES.contains(&name)
            || name.starts_with('@');
        if known {
            Ok(())
        } else {
            Err(self.error(
                id,
                &format!("undeclared reference to '{name}' (in container '')"),
            ))
        }
    }

    fn check_variable(&self, id: u64, field: &str) -> Result<(), Problem> {
        if self.scope.roots.contains(&"variables")
            && self.scope.variables.iter().any(|(n, _)| n == field)
        {
            Ok(())
        } else if !self.scope.roots.contains(&"variables") {
            Err(self.error(id, "undeclared reference to 'variables' (in container '')"))
        } else {
            Err(self.error(id, &format!("undefined field '{field}'")))
        }
    }

    /// The name a call resolves to and how it is called: `ns.f` for a namespaced function.
    fn call_name(&self, call: &CallExpr, bound: &[String]) -> (String, Style) {
        match call.target.as_deref().map(|t| &t.expr) {
            Some(Expr::Ident(ns))
                if NAMESPACES.contains(&ns.as_str())
                    && !bound.contains(ns)
                    && !self.scope.roots.contains(&ns.as_str()) =>
            {
                (format!("{ns}.{}", call.func_name), Style::Global)
            }
            Some(_) => (call.func_name.clone(), Style::Member),
            None => (call.func_name.clone(), Style::Global),
        }
    }

    fn check_call(&self, id: u64, call: &CallExpr, bound: &mut Vec<String>) -> Result<(), Problem> {
        let (name, style) = self.call_name(call, bound);
        let arity = call.args.len();
        // Before the arguments: a two-variable comprehension's variables are not declared.
        if let Some((_, _, _, what)) = NOT_PROVIDED
            .iter()
            .find(|(n, s, counts, _)| *n == name && *s == style && counts.contains(&arity))
        {
            return Err(Problem::Unsupported((*what).to_owned()));
        }
        if style == Style::Member
            && let Some(target) = &call.target
        {
            self.walk(target, bound)?;
        }
        for arg in &call.args {
            self.walk(arg, bound)?;
        }
        if env::is_operator(&name) || name.starts_with('@') {
            return Ok(());
        }
        let provided = PROVIDED
            .iter()
            .any(|(n, s, counts)| *n == name && *s == style && counts.contains(&arity));
        if !provided {
            let shown = if style == Style::Member {
                format!("found no matching overload for '{name}'")
            } else {
                format!("undeclared reference to '{name}' (in container '')")
            };
            return Err(self.error(id, &shown));
        }
        self.check_literal_regex(&name, call)
    }

    /// A literal pattern of `matches`, `find` or `findAll` must compile, as cel-go checks.
    fn check_literal_regex(&self, name: &str, call: &CallExpr) -> Result<(), Problem> {
        let pattern = match (name, call.args.as_slice()) {
            ("matches", [_, p]) | ("matches" | "find" | "findAll", [p, ..]) => p,
            _ => return Ok(()),
        };
        let Expr::Literal(LiteralValue::String(text)) = &pattern.expr else {
            return Ok(());
        };
        match crate::library::regex::compile(text.inner()) {
            Ok(_) => Ok(()),
            Err(_) if name == "matches" => Err(self.error(pattern.id, "invalid matches argument")),
            Err(e) => Err(Problem::Compilation(format!(
                "program instantiation failed: error parsing regexp: {e}"
            ))),
        }
    }

    /// The type of `node`, as far as it can be told here.
    fn type_of(&self, node: &IdedExpr) -> StaticType {
        match &node.expr {
            Expr::Literal(LiteralValue::Boolean(_)) => StaticType::Bool,
            Expr::Literal(LiteralValue::Int(_)) => StaticType::Named("int"),
            Expr::Literal(LiteralValue::UInt(_)) => StaticType::Named("uint"),
            Expr::Literal(LiteralValue::Double(_)) => StaticType::Named("double"),
            Expr::Literal(LiteralValue::String(_)) => StaticType::Named("string"),
            Expr::Literal(LiteralValue::Bytes(_)) => StaticType::Named("bytes"),
            Expr::Literal(LiteralValue::Null) => StaticType::Named("null_type"),
            Expr::Ident(name) if ["object", "oldObject", "params"].contains(&name.as_str()) => {
                StaticType::Dyn
            }
            Expr::Select(select) if select.test => StaticType::Bool,
            Expr::Select(select) => match &select.operand.expr {
                Expr::Ident(root) if root == "variables" => self
                    .scope
                    .variables
                    .iter()
                    .find(|(n, _)| *n == select.field)
                    .map_or(StaticType::Unknown, |(_, t)| t.clone()),
                _ if self.type_of(&select.operand) == StaticType::Dyn => StaticType::Dyn,
                _ => StaticType::Unknown,
            },
            Expr::Call(call) => call_type(call),
            Expr::Comprehension(c) => self.comprehension_type(&c.result),
            _ => StaticType::Unknown,
        }
    }

    /// `all`, `exists` and `exists_one` end in a boolean expression of the accumulator.
    fn comprehension_type(&self, result: &IdedExpr) -> StaticType {
        match &result.expr {
            Expr::Call(call) if call_type(call) == StaticType::Bool => StaticType::Bool,
            _ => StaticType::Unknown,
        }
    }
}

/// The result type of a call whose type does not depend on its arguments.
fn call_type(call: &CallExpr) -> StaticType {
    const BOOLEAN: &[&str] = &[
        operators::LOGICAL_AND,
        operators::LOGICAL_OR,
        operators::LOGICAL_NOT,
        operators::EQUALS,
        operators::NOT_EQUALS,
        operators::LESS,
        operators::LESS_EQUALS,
        operators::GREATER,
        operators::GREATER_EQUALS,
        operators::IN,
        operators::NOT_STRICTLY_FALSE,
        "matches",
        "startsWith",
        "endsWith",
        "contains",
        "isSorted",
        "isQuantity",
        "isURL",
        "isIP",
        "isCIDR",
        "isCanonical",
        "hasValue",
        "isInteger",
        "isGreaterThan",
        "isLessThan",
        "containsIP",
        "containsCIDR",
        "isUnspecified",
        "isLoopback",
        "isLinkLocalMulticast",
        "isLinkLocalUnicast",
        "isGlobalUnicast",
    ];
    let name = call.func_name.as_str();
    if BOOLEAN.contains(&name) {
        return StaticType::Bool;
    }
    match name {
        "quantity" if call.target.is_none() => StaticType::Named("kubernetes.Quantity"),
        "url" if call.target.is_none() => StaticType::Named("kubernetes.URL"),
        "cidr" if call.target.is_none() => StaticType::Named("net.CIDR"),
        "size" | "sign" | "indexOf" | "lastIndexOf" | "compareTo" | "asInteger" | "family"
        | "prefixLength" => StaticType::Named("int"),
        "string" | "lowerAscii" | "upperAscii" | "trim" | "charAt" | "substring" | "find"
        | "getScheme" | "getHost" | "getHostname" | "getPort" | "getEscapedPath" => {
            StaticType::Named("string")
        }
        _ => StaticType::Unknown,
    }
}
